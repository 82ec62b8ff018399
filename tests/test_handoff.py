"""Handoff renderings and their token counts with the offline SmolLM2 tokenizer."""

from __future__ import annotations

import pytest

from fasbench.harness import run_episode
from fasbench.policies import make_policy
from fasbench.policies.toy import make_corpus, toy_tasks
from fasbench.studies.handoff import FORMATS, handoff_tokens, render


def test_three_renderings_grow_and_are_counted(tmp_path):
    tasks = toy_tasks(make_corpus(tmp_path))[:2]
    traces = [run_episode(t, make_policy("heuristic"), "relace") for t in tasks]
    t, tr = tasks[0], traces[0]
    cit, code, full = (render(tr, t.root, f) for f in FORMATS)
    path = next(iter(tr.report.files))
    assert path in cit and "Relevant locations" in cit
    assert code.startswith(cit) and "def _encode_params" in code
    assert full.startswith(code) and "How the search went" in full and "grep" in full
    df = handoff_tokens(traces, tasks)
    assert df.height == 2 * len(FORMATS)
    per = {f: df.filter(df["format"] == f)["tokens"].sum() for f in FORMATS}
    assert 0 < per["citations"] < per["code"] < per["code+search"]
    with pytest.raises(ValueError, match="unknown handoff format"):
        render(tr, t.root, "everything")


def test_code_search_keeps_the_searchers_reasoning_with_token_counts(tmp_path):
    """Relace hands the main agent a compressed trace that keeps the searcher's reasoning steps."""
    from fasbench.policies.scripted import ScriptedPolicy
    from fasbench.studies.handoff import handoff_tokens, reasoning

    task = toy_tasks(make_corpus(tmp_path))[0]
    path = next(iter(task.gold.edited))
    why1 = "<think>The issue names _encode_params, so grep for its definition first.</think>"
    why2 = "The definition is in models.py; RequestEncodingMixin is what the issue calls."
    why3 = "Enough evidence: report the encoder."
    script = [
        {"text": why1, "calls": [{"name": "grep_search", "arguments": {"query": "def _encode_params"}}]},
        {"text": why2, "calls": [{"name": "view_file", "arguments": {"path": path, "view_range": [1, 40]}}]},
        {
            "text": why3,
            "calls": [{"name": "report_back", "arguments": {"explanation": "the encoder", "files": {path: [[1, 40]]}}}],
        },
    ]
    tr = run_episode(task, ScriptedPolicy(script), "relace")
    assert tr.report is not None
    full, code = render(tr, task.root, "code+search"), render(tr, task.root, "code")
    for step in ("The issue names _encode_params, so grep for its definition first.", why2, why3):
        assert step in full and step not in code
    assert "<think>" not in full
    acc = full.split("How the search went:\n", 1)[1]
    assert acc.index(why2) < acc.index("viewed")  # the reasoning of a turn comes before its calls
    df = handoff_tokens([tr], [task])
    row = {r["format"]: r for r in df.iter_rows(named=True)}
    assert row["code+search"]["reasoning_turns"] == 3 and row["code"]["reasoning_tokens"] == 0
    assert row["code+search"]["reasoning_tokens"] > 20
    assert row["code+search"]["tokens"] - row["code"]["tokens"] > row["code+search"]["reasoning_tokens"]
    capped = render(tr, task.root, "code+search", max_reasoning_chars=20)
    assert "more characters]" in capped and why2 not in capped
    # FastContext's answer block is the report, not reasoning: it stays out of the account
    assert reasoning("Found it.\n<final_answer>\na.py:1-3 (x)\n</final_answer>") == "Found it."


def test_fastcontext_handoff_keeps_reasoning_but_not_the_answer_block(tmp_path):
    task = toy_tasks(make_corpus(tmp_path))[0]
    tr = run_episode(task, make_policy("heuristic"), "fastcontext")
    full = render(tr, task.root, "code+search")
    acc = full.split("How the search went:\n", 1)[1]
    assert "Reasoning: Searching for the identifiers" in acc and "<final_answer>" not in acc


def test_relace_documented_handoff_is_the_integration_template(tmp_path):
    """docs.relace.ai/docs/fast-agentic-search/integration, "Subagent Formatting": the contextWithSearch
    template literal, with the code rendering as formatResultsForLLM(searchResults)."""
    task = toy_tasks(make_corpus(tmp_path))[0]
    tr = run_episode(task, make_policy("heuristic"), "relace")
    out = render(tr, task.root, "relace-docs", query="How is X computed?")
    code = render(tr, task.root, "code")
    assert out == (
        "\n  User Query: How is X computed?\n\n  [System Note: Automated Search Results]\n"
        "  Fast Agentic Search found the following relevant code:\n  " + code + "\n"
    )
    assert "relace-docs" not in FORMATS
    with pytest.raises(ValueError, match="pass query="):
        render(tr, task.root, "relace-docs")
