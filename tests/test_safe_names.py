"""Names from data become paths through one function (issue 36 item 5): ``fasbench.base.paths.safe_name``,
``name_key`` and ``Names``; the attacks of issue 36 on the places that name files after data
(``trajectories export-atif``'s ``OUT/<trace_id>.json``, e2e's ``OUT/work/<arm>/<task>``, the corpus
cache's ``<repo>@<commit>`` worktrees)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from fasbench.base.paths import Names, UnsafeName, child, name_key, safe_name
from fasbench.cli import app
from fasbench.records import read_traces
from fasbench.records.jsonl import append_jsonl
from fasbench.trajectories.atif_trace import to_atif

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "data" / "examples" / "heuristic-swebench-lite"
HOSTILE = [
    "..",
    ".",
    "",
    "../escape",
    "/tmp/abs",
    "a/b",
    "a\\b",
    "nul\x00x",
    "line\nbreak",
    "x" * 300,
    "\udc80lone",
    None,
    7,
]


@pytest.mark.parametrize("bad", HOSTILE)
def test_safe_name_refuses_what_cannot_be_one_component_with_one_line(bad):
    with pytest.raises(UnsafeName) as e:
        safe_name(bad, "trace id")
    msg = str(e.value)
    assert msg.startswith("trace id ") and "\n" not in msg and len(msg) < 160


@pytest.mark.parametrize("good", ["django__django-11099", "run-1.2@abc", ".hidden", "ünïcode", "a b"])
def test_safe_name_keeps_a_plain_name(good, tmp_path):
    assert safe_name(good) == good and child(tmp_path, good, ".json").parent == tmp_path


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_name_key_is_always_one_safe_component(s):
    k = name_key(s)
    assert safe_name(k) == k and Path("/base", k).parent == Path("/base")
    assert k == s or k.rsplit("-", 1)[1] != "" and len(k.rsplit("-", 1)[1]) == 16


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40), st.text(max_size=40))
def test_name_key_is_distinct_for_distinct_strings(a, b):
    if a != b:
        assert name_key(a) != name_key(b)


def test_name_key_keeps_two_ids_apart_that_the_old_substitution_merged():
    assert name_key("a/b") != name_key("a_b") and name_key("a_b") == "a_b"
    assert name_key("..") not in ("..", ".") and name_key("..") != name_key("...")


def test_names_refuse_a_repeat_also_one_that_differs_only_in_case():
    n = Names("trace id")
    assert n.claim("t1") == "t1"
    for again in ("t1", "T1"):
        with pytest.raises(UnsafeName, match="repeats"):
            n.claim(again)


def test_export_atif_writes_only_under_out_never_over_a_repeat(tmp_path):
    """Before: ``../x`` and an absolute id wrote outside OUT and a repeated id overwrote silently."""
    good = read_traces(RUN / "traces.jsonl.gz")[:2]
    outside = tmp_path / "outside"
    ids = ["../escaped", str(outside / "abs"), good[0].trace_id, good[0].trace_id, "a\x00b", good[1].trace_id]
    traces = [dataclasses.replace(good[i % 2], trace_id=t) for i, t in enumerate(ids)]
    src = tmp_path / "traces.jsonl"
    append_jsonl(src, traces)
    out = tmp_path / "sub" / "atif"
    r = CliRunner().invoke(app, ["trajectories", "export-atif", str(src), "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "Traceback" not in r.output
    assert not (tmp_path / "sub" / "escaped.json").exists() and not outside.exists()
    written = sorted(p.name for p in out.glob("*.json"))
    assert written == sorted({good[0].trace_id + ".json", good[1].trace_id + ".json"})
    first = json.loads((out / (good[0].trace_id + ".json")).read_text())
    assert first["session_id"] == good[0].trace_id  # the first of the repeated id, not the later one
    assert first["steps"] == json.loads(json.dumps(to_atif(traces[2])))["steps"]
    skipped = [json.loads(ln) for ln in (out / "skipped.jsonl").read_text().splitlines()]
    assert len(skipped) == 4 and "wrote 2 ATIF" in r.output
    reasons = " | ".join(s["reason"] for s in skipped)
    assert "path separator" in reasons and "repeats" in reasons and "control character" in reasons


@pytest.mark.parametrize("tid", ["..", ".", "../../x", "/abs/path", "a\x00b", "x" * 400])
def test_e2e_task_key_stays_one_folder_under_work(tid, tmp_path):
    """Before: the id ``..`` gave ``OUT/work/<arm>/..``, and e2e's fresh copy deleted ``OUT/work``."""
    from fasbench.e2e.runner import task_key  # local import: polars and the e2e stack, for two tests only

    work = tmp_path / "work" / "none"
    ep = work / task_key(tid)
    assert ep.parent == work and ep.name not in (".", "..") and ep.resolve().parent == work.resolve()


def test_e2e_refuses_a_task_whose_key_another_task_names(tmp_path):
    from fasbench.e2e.runner import _claim_keys, task_key  # local import: as above
    from fasbench.records import Gold, Task

    crafted = task_key("a/b")  # an id chosen to be another task's key
    tasks = [Task(id=i, query="q", repo="o/r", gold=Gold(edited={})) for i in ("a/b", crafted, "a_b", "a/b")]
    refused = _claim_keys(tasks, tmp_path / "skipped.jsonl")
    assert refused == {crafted} and len({task_key(t) for t in ("a/b", "a_b")}) == 2
    rows = [json.loads(ln) for ln in (tmp_path / "skipped.jsonl").read_text().splitlines()]
    assert rows == [{"task_id": crafted, "reason": "task-key", "detail": rows[0]["detail"]}]
    assert "repeats" in rows[0]["detail"]
    assert _claim_keys(tasks, tmp_path / "skipped.jsonl") == {crafted}  # a rerun: no second row
    assert len((tmp_path / "skipped.jsonl").read_text().splitlines()) == 1


@pytest.mark.parametrize(
    "repo, commit", [("o/r", "/../../../.."), ("..", "a" * 40), ("o/r", "ab/../../x"), ("/", "a" * 40)]
)
def test_a_record_cannot_make_the_corpus_cache_name_a_folder_outside(repo, commit, tmp_path, monkeypatch):
    """Before: ``base_commit`` ``/../../../..`` made ``worktrees/o__r@/../../../..`` (the cache's parent)
    a task's corpus, or deleted it (issue 36)."""
    from fasbench.data.corpus import checkout_names, try_materialize  # local import: the data stack, for this test only
    from fasbench.records import Gold, Task

    monkeypatch.setenv("FASBENCH_CACHE", str(tmp_path / "cache"))
    (tmp_path / "keep").mkdir()
    t = Task(id="t", query="q", repo=repo, gold=Gold(edited={"a.py": [[1, 1]]}), base_commit=commit)
    with pytest.raises(UnsafeName):
        checkout_names(t)
    got, why = try_materialize(t, mode="online")
    # refused at the record boundary (fasbench.records.fields) before any folder is named
    assert got is None and why["reason"] == "bad-task" and ("repo" in why["detail"] or "base_commit" in why["detail"])
    assert (tmp_path / "keep").is_dir() and not (tmp_path / "cache" / "corpora" / "git").exists()


@pytest.mark.parametrize("name", ["../x", "/abs", "..", "a\nb", ".hidden"])
def test_pool_and_figure_names_are_one_component(name, tmp_path):
    from fasbench.bon.pool import pool_path  # local import: the best-of-N stack, for this test only
    from fasbench.stats.figures import save  # local import: plotly, for this test only

    if name != ".hidden":
        with pytest.raises(UnsafeName):
            pool_path(name)
    with pytest.raises(UnsafeName):
        save(None, name, directory=tmp_path)
    assert list(tmp_path.iterdir()) == []
