"""Handoff renderings and their token counts with the offline SmolLM2 tokenizer."""

from __future__ import annotations

import pytest

from fasbench.handoff import FORMATS, handoff_tokens, render
from fasbench.harness import run_episode
from fasbench.policies import make_policy
from fasbench.policies.toy import make_corpus, toy_tasks


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
