"""Issue 36's acceptance, tried by a red team with attacks the other suites do not have: hostile
imported records (JSON nested past the recursion limit inside one field, a repeated id), hostile
repositories and corpora, traces and run folders, pages. Each attack must end as a one-line skip or
refusal with the batch going on: no command run, nothing read or written outside, no hang, no traceback."""

from __future__ import annotations

import json

import pytest

from fasbench.data.importers import import_gold

DEEP = "[" * 50_000 + "]" * 50_000  # a JSON text past Python's recursion limit, inside one string field


def _jsonl(path, recs):
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


GOOD_PRO = {
    "instance_id": "good__pro-1",
    "repo": "octo/good",
    "base_commit": "a" * 40,
    "problem_statement": "fix",
    "patch": "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1,1 +1,1 @@\n-a\n+b\n",
}
GOOD_CB = {
    "instance_id": "cb-good",
    "original_inst_id": "octo__good-7",
    "repo": "octo/good",
    "base_commit": "b" * 40,
    "problem_statement": "q",
    "gold_context": [{"file": "a.py", "start_line": 1, "end_line": 2}],
}


@pytest.mark.parametrize(
    "fmt,bad,good",
    [
        ("swebench-pro", dict(GOOD_PRO, instance_id="bad__deep-1", fail_to_pass=DEEP), GOOD_PRO),
        ("contextbench", dict(GOOD_CB, original_inst_id="octo__deep-1", gold_context=DEEP), GOOD_CB),
    ],
    ids=["swebench-pro-list-field", "contextbench-gold-context"],
)
def test_a_field_nested_past_the_recursion_limit_skips_its_record_only(tmp_path, fmt, bad, good):
    """Old code: RecursionError out of json.loads of one record's field stopped the whole import."""
    tasks, dropped = import_gold(fmt, _jsonl(tmp_path / "in.jsonl", [bad, good]))
    assert [t.id for t in tasks] == [good.get("original_inst_id") or good["instance_id"]]
    assert [(d["reason"], d["detail"]) for d in dropped] == [("bad-record", "a field is nested too deeply")]


def test_a_repeated_record_id_is_a_skip_not_the_end_of_the_import(tmp_path):
    """Old code: ContextBench raised 'task ... appears twice' and imported nothing."""
    recs = [GOOD_CB, dict(GOOD_CB), dict(GOOD_CB, original_inst_id="octo__other-2")]
    tasks, dropped = import_gold("contextbench", _jsonl(tmp_path / "in.jsonl", recs))
    assert [t.id for t in tasks] == ["octo__good-7", "octo__other-2"]
    assert [(d["id"], d["reason"]) for d in dropped] == [("octo__good-7", "duplicate-id")]


# --- hostile traces: a field of the wrong type is a skip of that trace where it enters -------------

from fasbench.records import RecordError, Trace, iter_traces  # noqa: E402

GOOD_TRACE = {
    "task_id": "t1",
    "policy": "p",
    "toolset": "relace",
    "trace_id": "a1",
    "started_at": 1.0,
    "ended_at": 2.0,
    "turns": [
        {
            "index": 0,
            "text": "look",
            "prompt_tokens": 10,
            "model_started_at": 1.0,
            "model_ended_at": 1.5,
            "calls": [{"id": "c0", "name": "view_file", "arguments": {"path": "a.py"}}],
            "results": [{"call_id": "c0", "output": "x", "is_error": False}],
        }
    ],
    "report": {"files": {"a.py": [[1, 2]]}, "explanation": ""},
}


def _mutated(path, value):
    d = json.loads(json.dumps(GOOD_TRACE))
    *head, last = path
    o = d
    for k in head:
        o = o[k]
    o[last] = value
    return d


# each was an internal error (AttributeError/TypeError) of `fasbench replay` on the old code, or made
# the whole run unreadable (task_id a list or null: the run's episodes sorted/grouped by it)
WRONG_TYPES = [
    (("policy",), ["a"]),
    (("task_id",), None),
    (("task_id",), ["x"]),
    (("started_at",), "yesterday"),
    (("ended_at",), float("nan")),
    (("stop_reason",), 5),
    (("meta",), "str"),
    (("tail_notes",), "x"),
    (("prompt",), [1, "x"]),
    (("trace_id",), {"a": 1}),
    (("turns", 0, "prompt_tokens"), "many"),
    (("turns", 0, "text"), {"a": 1}),
    (("turns", 0, "index"), "zero"),
    (("turns", 0, "model_started_at"), "a"),
    (("turns", 0, "requests"), "r"),
    (("turns", 0, "notes"), [1]),
    (("turns", 0, "results", 0, "output"), 5),
    (("turns", 0, "results", 0, "call_id"), [1]),
    (("turns", 0, "results", 0, "is_error"), "no"),
    (("turns", 0, "results", 0), "result"),
    (("turns", 0), 7),
]


@pytest.mark.parametrize(
    "path,value", WRONG_TYPES, ids=["/".join(map(str, p)) + f"={v!r}"[:20] for p, v in WRONG_TYPES]
)
def test_a_trace_field_of_the_wrong_type_is_refused_where_the_trace_enters(path, value):
    Trace.from_dict(GOOD_TRACE)  # the unmutated trace is fine
    with pytest.raises(RecordError) as e:
        Trace.from_dict(_mutated(path, value))
    assert "\n" not in str(e.value)


def test_a_run_of_hostile_traces_reads_its_one_good_trace(tmp_path):
    """Every wrong-typed trace of one file is skipped with a one-line warning; the good one is read."""
    run = tmp_path / "evil"
    run.mkdir()
    good = dict(json.loads(json.dumps(GOOD_TRACE)), task_id="good")
    lines = [json.dumps(_mutated(p, v), allow_nan=True) for p, v in WRONG_TYPES] + [json.dumps(good)]
    (run / "traces.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.warns(UserWarning) as w:
        got = list(iter_traces(run / "traces.jsonl"))
    assert [t.task_id for t in got] == ["good"]
    assert len(w) == len(WRONG_TYPES) and all("skipped" in str(x.message) for x in w)


# --- hostile trajectory files: the skip listing stays one printable, bounded line per file ---------


def test_a_hostile_file_name_or_value_cannot_forge_or_flood_the_skip_listing(tmp_path):
    """Old code: a file named with a newline and a terminal escape printed them raw (a forged
    'skipped' line, a cleared screen), and an ATIF timestamp of 5,000 digits was printed whole."""
    from pathlib import Path

    from typer.testing import CliRunner

    from fasbench.cli import app

    src = tmp_path / "in"
    src.mkdir()
    atif = json.loads((Path(__file__).parent / "data" / "atif" / "multiagent_v1_7.json").read_text())
    (src / "good.json").write_text(json.dumps(atif))
    atif["steps"][0]["timestamp"] = "9" * 5000
    (src / "long.json").write_text(json.dumps(atif))
    (src / "evil\nskipped other.json: fine \x1b[2J.json").write_text('{"x": 1}')
    r = CliRunner().invoke(app, ["trajectories", "analyze", str(src), "--out", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    lines = [x for x in r.output.splitlines() if x.startswith("  skipped ")]
    assert len(lines) == 2 and all(len(x) < 600 for x in lines), lines
    assert "\x1b" not in r.output and "\\x1b" in r.output


def test_replay_text_prints_no_terminal_escape_of_a_trace(tmp_path):
    """Old code: a model's text and a tool's output holding OSC sequences (set the terminal's title, make
    a hyperlink) and CSI sequences (clear the screen) reached the terminal of whoever replayed the run."""
    import gzip
    import shutil
    from pathlib import Path

    from typer.testing import CliRunner

    from fasbench.cli import app

    src = Path(__file__).parents[1] / "data" / "examples" / "heuristic-swebench-lite"
    run = tmp_path / "esc"
    shutil.copytree(src, run)
    with gzip.open(run / "traces.jsonl.gz", "rt", encoding="utf-8") as f:
        traces = [json.loads(x) for x in f]
    t = traces[0]
    t["turns"][0]["text"] = "hello \x1b]0;pwned\x07\x1b[2J\u202eevil"
    t["turns"][0]["results"][0]["output"] = "out \x1b[31mred\x1b[0m \x1b]8;;http://evil\x07link\x1b]8;;\x07"
    with gzip.open(run / "traces.jsonl.gz", "wt", encoding="utf-8") as f:
        f.writelines(json.dumps(x) + "\n" for x in traces)
    r = CliRunner().invoke(app, ["replay", str(run), t["task_id"], "--width", "200"])
    assert r.exit_code == 0, r.output
    assert "pwned" in r.output and "\x1b" not in r.output and "\x07" not in r.output and "\u202e" not in r.output
    assert "\\x1b]0;pwned" in r.output


def test_runs_and_compare_tables_print_no_terminal_escape_of_a_run_file(tmp_path):
    """Old code: a run.json whose policy held an OSC title sequence and a newline printed them raw in
    `fasbench runs` (a forged table row, the terminal's title set)."""
    import polars as pl

    from fasbench.evaluation.runs import format_table

    out = format_table(pl.DataFrame({"run": ["a"], "policy": ["\x1b]0;pwned\x07evil\nfake row"]}))
    assert "\x1b" not in out and "\x07" not in out and len(out.splitlines()) == 3, out
    assert "\\x1b]0;pwned\\x07evil\\nfake row" in out


# --- property test: hostile values at every field of a trace (issue 36 item 9, traces) -------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()
    | st.text(max_size=12)
    | st.sampled_from(["../../x", "\x1b[2J", "<script>", "-x", "x" * 3000]),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3),
    max_leaves=8,
)
_PATHS = (
    [(k,) for k in GOOD_TRACE if k != "turns"]
    + [("report", "files"), ("report", "confidence"), ("report", "explanation"), ("turns",), ("turns", 0)]
    + [("turns", 0, k) for k in GOOD_TRACE["turns"][0]]
    + [("turns", 0, "calls", 0), ("turns", 0, "results", 0)]
    + [("turns", 0, "calls", 0, k) for k in ("id", "name", "arguments")]
    + [("turns", 0, "results", 0, k) for k in ("call_id", "output", "is_error", "started_at", "shown")]
    + [("turns", 0, "results", 0, "shown", k) for k in ("paths", "ranges", "hits")]
    + [(k,) for k in ("schema_version", "prompt", "tail_notes", "meta", "error", "stop_reason")]
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(where=st.sampled_from(_PATHS), value=_JSON)
def test_any_value_at_any_trace_field_is_a_trace_or_one_record_error(where, value):
    """Whatever a field holds, Trace.from_dict gives a trace or a RecordError (one line); never another
    exception, which a reader downstream would meet as an internal error."""
    d = json.loads(json.dumps(GOOD_TRACE))
    d["turns"][0]["results"][0]["shown"] = {"paths": ["a.py"], "ranges": {"a.py": [[1, 2]]}, "hits": [["a.py", 1]]}
    try:
        d = _mutated(where, value) if where[-1] != "shown" and "shown" not in where else _set(d, where, value)
    except (KeyError, IndexError, TypeError):
        return
    try:
        tr = Trace.from_dict(d)
    except RecordError as e:
        assert "\n" not in str(e)
        return
    for t in tr.turns:  # what came through is what readers expect
        assert isinstance(t.index, int) and all(isinstance(r.output, str) for r in t.results)
        for r in t.results:
            if r.shown is not None:
                assert all(isinstance(p, str) and isinstance(n, int) for p, n in r.shown.hits)
    assert all(isinstance(x, str) for x in (tr.task_id, tr.policy, tr.toolset, tr.trace_id, tr.stop_reason))


def _set(d, path, value):
    o = d
    for k in path[:-1]:
        o = o[k]
    o[path[-1]] = value
    return d


def test_bon_reverify_skips_a_broken_kept_trace_and_verifies_the_rest(tmp_path):
    """Old code: one kept trace whose turns were a string (an AttributeError in Trace.from_dict) stopped
    `fasbench bon reverify` for the whole pool; now that trace is skipped with a warning and its pool
    line verified without it, as a missing trace is."""
    from fasbench.bon.pool import reverify
    from fasbench.policies.toy import make_corpus, toy_tasks
    from fasbench.records import iter_jsonl

    task = toy_tasks(make_corpus(tmp_path / "corpus"))[0]
    pool = _jsonl(
        tmp_path / "pool.jsonl",
        [{"task_id": task.id, "trace_id": "bad", "files": {}}, {"task_id": task.id, "trace_id": "good", "files": {}}],
    )
    good = dict(json.loads(json.dumps(GOOD_TRACE)), task_id=task.id, trace_id="good")
    bad = dict(good, trace_id="bad", turns="not turns")
    traces = _jsonl(tmp_path / "traces.jsonl", [bad, good])
    with pytest.warns(UserWarning, match="skipped"):
        out = reverify(pool, [task], traces, tmp_path / "out.jsonl", progress=False)
    rows = list(iter_jsonl(out))
    assert [r["trace_id"] for r in rows] == ["bad", "good"] and all("verify" in r for r in rows)
    assert "tool_time" in rows[1] and "tool_time" not in rows[0]


# --- hostile run folders: a FIFO or junk summary is refused and the table goes on -------------------


@pytest.fixture(scope="module")
def a_run(tmp_path_factory):
    from fasbench.evaluation.evaluate import run_eval
    from fasbench.policies.toy import make_corpus, toy_tasks

    base = tmp_path_factory.mktemp("runs")
    mp = pytest.MonkeyPatch()
    mp.setenv("FASBENCH_CACHE", str(tmp_path_factory.mktemp("cache")))
    run_eval(
        toy_tasks(make_corpus(base / "corpus"))[:2],
        "heuristic:turns=2",
        "relace",
        base / "good",
        workers=1,
        progress=False,
    )
    mp.undo()
    return base / "good"


def _unblock_later(fifo, after=5.0):
    """Open ``fifo`` for writing after ``after`` s (so that a reader blocked on it returns: the old code)."""
    import os
    import threading
    import time

    def go():
        time.sleep(after)
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass

    threading.Thread(target=go, daemon=True).start()


def test_runs_table_skips_a_run_with_a_fifo_or_junk_summary(a_run, tmp_path):
    """Old code: `fasbench runs` blocked on a summary.parquet that is a FIFO (read by polars), and a
    summary that is not parquet stopped the table of every run; now each is one warning line."""
    import os
    import shutil
    import time

    from fasbench.evaluation.runs import runs_table

    fifo, junk = tmp_path / "fifo", tmp_path / "junk"
    for d in (fifo, junk):
        shutil.copytree(a_run, d)
        (d / "summary.parquet").unlink()
    os.mkfifo(fifo / "summary.parquet")
    (junk / "summary.parquet").write_text("junk")
    _unblock_later(fifo / "summary.parquet")
    t0 = time.monotonic()
    with pytest.warns(UserWarning) as w:
        t = runs_table([a_run, fifo, junk])
    assert time.monotonic() - t0 < 4
    assert t["run"].to_list() == ["good"]
    assert sorted(str(x.message).split(":")[0] for x in w if "skipped" in str(x.message)) == [
        "run fifo skipped",
        "run junk skipped",
    ]


def test_a_gzip_bomb_of_labels_beside_trajectories_stops_at_the_cap(tmp_path, monkeypatch):
    """Old code: resolved.json.gz beside the trajectories (and --labels) was gunzipped whole
    (gzip.decompress): a bomb of a few MB became gigabytes of memory. Now it stops at the trajectory
    files' cap and the trajectories are analysed without labels, saying why."""
    import gzip
    import zlib
    from pathlib import Path

    import fasbench.trajectories.raw as raw
    from fasbench.trajectories.analysis import analyze_paths

    monkeypatch.setattr(raw, "MAX_FILE_BYTES", 1 << 20)  # the cap, small here: a 64 MiB bomb is over it
    src = tmp_path / "set"
    src.mkdir()
    (src / "t.json").write_text((Path(__file__).parent / "data" / "atif" / "multiagent_v1_7.json").read_text())
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    body = b'{"x": "' + b"a" * (64 << 20) + b'"}'
    (src / "resolved.json.gz").write_bytes(z.compress(body) + z.flush())
    assert len(gzip.decompress((src / "resolved.json.gz").read_bytes())) > 64 << 20  # a real bomb
    a = analyze_paths([src], progress=False)
    assert a.files.parsed and any("labels unreadable" in r and "gunzipped" in r for _, r in a.files.skipped)
