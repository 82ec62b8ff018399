"""Attacks of issue 36 items 7 and 8 (bounded everything, per-item failure), each failing on main at
23d8001 (checked by running this file against that commit's package).

- a corpus file holding a 6,000-term expression (``ast.parse`` raises RecursionError; a 900-term one
  parses but breaks ``ast.dump``/``compile``): every parser of corpus text goes on (``parse_python``);
- ranges from records, traces and reports ([1, 2**31 − 1], [1, 10**10], start 10**9) are clipped
  before they become line sets (``fasbench.base.lines.line_set``), under a 1 GiB address-space limit;
- the best-of-N judge's cited files: a FIFO is refused, never waited on, a 2 GB sparse file costs one
  line cap; its JSON reply search is linear;
- the report's stderr and number scans on lines built to make the old regexes backtrack (n^4, n^2);
- FIFOs where a run's ``traces.jsonl`` or ``run.json`` or a trajectory file should be, a gzip bomb, a
  150 MB-style observation (strings capped per field), a JSONL line over its cap;
- perturb on a corpus whose ``pyproject.toml`` points rope's ``source_folders`` outside, beside a
  6 GiB sparse ``.toml`` and a FIFO;
- one trace whose ``turns`` is a string, a non-notebook JSON and a malformed plotly figure given to
  the report, an ATIF file without tool calls, a tool call named null.

Cases that could hang or take memory on an unbounded reader run in a child process under an
address-space limit with a generous timeout, or under pytest-timeout: hang guards, not speed tests
(nothing here asserts a duration)."""

from __future__ import annotations

import copy
import gzip
import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

import fasbench
from fasbench.cli import app

PKG_ROOT = str(Path(fasbench.__file__).resolve().parents[1])
DEEP = "x = " + "+".join(["1"] * 6000) + "\n"  # ast.parse: RecursionError
DEEPISH = "y = " + "+".join(["1"] * 900) + "\n"  # parses; ast.dump and compile of it overflow
ATIF_FIXTURE = Path(__file__).resolve().parent / "data" / "atif" / "multiagent_v1_7.json"


def child(code: str, timeout: float = 240, mem: int = 1 << 30, env: dict | None = None) -> dict:
    """Run ``code`` (which sets ``OUT``) in a child python under an address-space limit; ``OUT``."""
    pre = f"import json, resource\nresource.setrlimit(resource.RLIMIT_AS, ({mem}, {mem}))\n"
    post = "\nprint(json.dumps({'out': OUT}))\n"
    try:
        r = subprocess.run(
            [sys.executable, "-c", pre + textwrap.dedent(code) + post],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "PYTHONPATH": PKG_ROOT, **(env or {})},
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running after {timeout} s (a hang)")
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])["out"]


@pytest.fixture()
def corpus(tmp_path) -> Path:
    root = tmp_path / "corpus"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "deep.py").write_text(DEEP + "def after():\n    return 1\n")
    (root / "pkg" / "deepish.py").write_text(DEEPISH)
    (root / "pkg" / "ok.py").write_text("def f():\n    return 1\n\n\ndef g():\n    return 2\n")
    os.mkfifo(root / "pkg" / "pipe.py")
    return root


# ---------------------------------------------------------------- item 8: a file that does not parse


def test_parse_python_refuses_what_would_overflow():
    from fasbench.base.entities import parse_python

    assert parse_python(DEEP) is None and parse_python(DEEPISH) is None
    assert parse_python("def f():\n    return 1\n").body[0].name == "f"
    assert parse_python("x = (1\n") is None and parse_python("\x00") is None


def test_every_parser_of_corpus_text_goes_on_past_a_file_that_overflows_ast(corpus):
    import random

    from fasbench.base.entities import parse_entities
    from fasbench.data.perturb import _imports, _private_defs
    from fasbench.data.pyedit import reorder_text
    from fasbench.e2e.localize import functions_at
    from fasbench.policies.rag import build_chunks, chunk_python
    from fasbench.scoring.contextbench import definitions

    for text in (DEEP, DEEPISH):
        assert parse_entities(text) == []
        assert functions_at(text, [1]) == {"<module>"}
        assert _imports(corpus, "pkg/deep.py", text) == {"*"}
        assert _private_defs(text) == []
        assert reorder_text(text, random.Random(0)) is None
        assert [c.start for c in chunk_python("pkg/deep.py", text)][:1] == [1]  # windows, not a crash
    assert definitions(str(corpus), "pkg/deep.py") == ()
    assert definitions(str(corpus), "pkg/deepish.py") == ()
    assert {d[0] for d in definitions(str(corpus), "pkg/ok.py")} == {"pkg/ok.py"}
    chunks = build_chunks(corpus)  # the BM25 index's chunks: the FIFO is not read, the deep file is windows
    assert {c.path for c in chunks} >= {"pkg/deep.py", "pkg/ok.py"} and "pkg/pipe.py" not in {c.path for c in chunks}


@pytest.mark.timeout(120)
def test_symbol_definitions_skip_a_fifo_and_a_deep_file(corpus):
    from fasbench.data.symbols import definitions

    (corpus / "pkg" / "named.py").write_text("def compute_total():\n    return 1\n")
    found = definitions(corpus)  # the FIFO would block a plain read for ever
    assert found == {"compute_total": ("pkg/named.py", 1, 2)}


# ---------------------------------------------------------------- item 7: ranges become line sets clipped


def test_huge_ranges_from_records_and_traces_are_clipped_before_they_become_line_sets(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\ny = 2\n")
    out = child(
        f"""
        from fasbench.base.lines import LINE_CAP
        from fasbench.scoring.contextbench import _as_lines
        from fasbench.data.perturb_gold import PerturbMap
        from fasbench.data.relocate import relocate_regions
        from fasbench.e2e.counterfactual import covered
        from fasbench.e2e.looked import Look
        from fasbench.e2e.localize import _changed_lines
        from fasbench.scoring.process import call_lines
        from fasbench.records import Shown, ToolCall, ToolResult
        from fasbench.tools import observation

        big = 2 ** 31 - 1
        call = ToolCall("c", "view_file", {{"path": "a.py"}})
        res = ToolResult("c", "text", shown=Shown(ranges={{"a.py": [[1, big]] * 50}}))
        shown = call_lines("relace", call, res)  # a replayed shown range
        hits = ToolResult("c", "text", shown=Shown(ranges={{"a.py": [[1, big]]}}, hits=[["a.py", 1]]))
        grep = observation("relace", ToolCall("c", "grep_search", {{"query": "x"}}), hits, lines=False).grep_lines()
        cb = _as_lines({{"a.py": [(10 ** 9, 10 ** 9 + 5), (1, 10 ** 10)]}})  # ContextBench start_line 10^9
        pm = PerturbMap({{"reorders": {{"a.py": [[1, 2, 5]]}}}}).ranges("a.py", [[1, 10 ** 9]])  # perturbed gold
        looked = covered(Look("a.py", ((1, 10 ** 10),), "display"), {{"a.py": [[1, 10 ** 10]]}})
        changed = _changed_lines([[1, 10 ** 10]])
        rel = relocate_regions([["a.py", 1, 10 ** 10]], r"{tmp_path}", old_texts={{"a.py": "x = 1\\ny = 2\\n"}})
        OUT = {{"shown": len(shown["a.py"]), "grep": len(grep), "cb": len(cb["a.py"]), "pm": sum(b - a + 1 for a, b in pm),
               "looked": looked, "changed": len(changed), "kept": len(rel.regions) + len(rel.dropped),
               "cap": LINE_CAP}}
    """,
        timeout=240,
        mem=1 << 30,
    )
    cap = out["cap"]
    assert out["shown"] == out["cb"] == out["changed"] == cap
    assert out["pm"] == cap - 2  # lines 1-2 moved onto 5-6, which the range holds already
    assert out["grep"] == cap + 1 and out["looked"] is True and out["kept"] == 1


def test_line_set_keeps_what_range_walks_kept():
    from fasbench.base.lines import LINE_CAP, clamp, line_set

    assert line_set([[5, 3], [7, -1], [0, 2], [4, 4]]) == {1, 2, 4}  # reversed and [s, -1] empty, as range() was
    assert line_set([[1, 10**10]] * 1000) == set(range(1, LINE_CAP + 1))
    assert line_set([[3, 10**9]], n_lines=5) == {3, 4, 5} and clamp(2, 2**31 - 1, 10) == (2, 10)


# ---------------------------------------------------------------- item 7: the best-of-N judge


@pytest.fixture()
def judged(tmp_path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("".join(f"line {i}\n" for i in range(1, 30)))
    os.mkfifo(root / "pipe.py")
    with open(root / "big.py", "wb") as f:
        f.truncate(2 << 30)  # 2 GB sparse: no disk, all NUL bytes, no newline
    (tmp_path / "secret.txt").write_text("TOPSECRET\n")
    os.symlink(tmp_path / "secret.txt", root / "link.py")
    return root


def test_the_best_of_n_judge_reads_cited_files_through_contain(judged):
    out = child(
        f"""
        from fasbench.bon.pool_judge import LLMJudge
        from fasbench.records import Gold, Task
        task = Task(id="t", repo="o/r", query="q", root=r"{judged}", gold=Gold(edited={{}}))
        j = LLMJudge(client=None, tasks={{"t": task}})
        OUT = [j._snippet(task, p, a, b) for p, a, b in
               [("pipe.py", 1, 5), ("big.py", 1, 2), ("link.py", 1, 1), ("../secret.txt", 1, 1),
                ("a.py", 10 ** 9, 10 ** 9 + 3), ("a.py", 3, 4)]]
    """,
        timeout=120,
        mem=1 << 30,
    )
    pipe, big, link, outside, far, near = out
    assert pipe == ["(file not found)"]  # refused, never waited on
    assert len(big) == 1 and len(big[0]) <= 4096  # one line cap of NULs, not 2 GB read whole
    assert link == [] and outside == [] and "TOPSECRET" not in json.dumps(out)
    assert far == [] and near == ["line 3", "line 4"]


def test_judge_snippets_are_the_cited_lines(judged):
    from fasbench.bon.pool_judge import LLMJudge
    from fasbench.records import Gold, Task

    task = Task(id="t", repo="o/r", query="q", root=str(judged), gold=Gold(edited={}))
    j = LLMJudge(client=None, tasks={"t": task}, snippet_lines=2)
    assert j._snippet(task, "a.py", 3, 5) == ["line 3", "line 4"]
    assert j._snippet(task, "a.py", 28, -1) == ["line 28", "line 29"]
    assert j._snippet(task, "nope.py", 1, 2) == ["(file not found)"]


@pytest.mark.timeout(60)
def test_the_judge_reply_parse_is_linear_and_survives_nesting():
    from fasbench.bon.pool_judge import LLMJudge

    j = LLMJudge(client=None, tasks={})
    assert j.parse("{" * 300_000, 2) is None  # the old r"\{.*\}" search: quadratic on this
    assert j.parse("[" * 200_000 + "{" + "]" * 200_000 + "}", 2) is None
    assert j.parse('{"best": ' + "[" * 100_000 + "}", 2) is None  # nesting: RecursionError caught
    assert j.parse('noise {"best": 1, "scores": [0.2, 0.9]} tail', 2) == [0.2, 0.9]


# ---------------------------------------------------------------- item 7: regular expressions over data


@pytest.mark.timeout(60)
def test_report_stderr_filter_and_number_scan_finish_on_hostile_lines():
    import nbformat

    from fasbench.mainjob import report

    nasty = "1%|" * 1500 + "[]" * 1500 + "x"  # 7.5 KB: the old progress regex backtracks ~n^4 (hours)
    text = (
        "\n".join(
            [
                nasty,
                " 42%|████      | 42/100 [00:01<00:02, 30.1it/s]",
                "/x/y.py:12: DeprecationWarning: old",
                "  import thing",
                "a:1: " * 4000,
                "kept line",
            ]
        )
        + "\n"
    )
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [nbformat.v4.new_output("stream", name="stderr", text=text)]
    nb.cells.append(cell)
    assert report._quiet_stderr(nb) == 3  # the bar, the warning and its source line; the rest kept
    assert nb.cells[0].outputs[0]["text"].splitlines() == [nasty, "a:1: " * 4000, "kept line"]
    got = report._numbers("1" * 200_000 + "x1 " + ",111" * 30_000 + " " + "1" * 100_000 + "% CI 0.5")
    assert [w for w, *_ in got] == ["0.5"]
    assert report._numbers("95% CI 0.45 and 1,234.5 of 1.15.0 and 12%") == [
        ("0.45", 0.45, 2, False),
        ("1,234.5", 1234.5, 1, False),
        ("12%", 12.0, 0, True),
    ]


# ---------------------------------------------------------------- item 7: FIFOs and sizes of files named by data


@pytest.mark.timeout(60)
def test_replay_refuses_a_fifo_traces_jsonl_and_run_json(tmp_path):
    from fasbench.evaluation.rundir import read_run

    run = tmp_path / "run"
    run.mkdir()
    os.mkfifo(run / "traces.jsonl")
    r = CliRunner().invoke(app, ["replay", str(run)])
    assert r.exit_code == 2 and "FIFO" in r.output and "Traceback" not in r.output, r.output
    os.mkfifo(run / "run.json")
    with pytest.raises(ValueError, match="FIFO"):
        read_run(run)


@pytest.mark.timeout(60)
def test_jsonl_lines_are_capped_and_streamed(tmp_path, monkeypatch):
    from fasbench.records import RecordError, iter_jsonl, jsonl

    monkeypatch.setattr(jsonl, "MAX_LINE_BYTES", 1000)
    p = tmp_path / "t.jsonl"
    p.write_text(json.dumps({"a": 1}) + "\n" + json.dumps({"b": "x" * 5000}) + "\n")
    it = iter_jsonl(p)
    assert next(it) == {"a": 1}
    with pytest.raises(RecordError, match="line 2 is longer than 1000 bytes"):
        next(it)


@pytest.mark.timeout(120)
def test_trajectory_files_are_bounded_and_a_fifo_is_skipped(tmp_path, monkeypatch):
    from fasbench.trajectories import raw
    from fasbench.trajectories.analysis import parse_paths
    from fasbench.trajectories.trajectory import TrajectoryError

    d = json.loads(ATIF_FIXTURE.read_text())
    big = copy.deepcopy(d)
    step = next(s for s in big["steps"] if s.get("observation"))
    step["observation"]["results"][0]["content"] = "y" * (3 << 20)  # one 3 MB observation
    folder = tmp_path / "trajs"
    folder.mkdir()
    (folder / "big.json").write_text(json.dumps(big))
    os.mkfifo(folder / "pipe.json")
    got = raw.load_json(folder / "big.json")
    content = next(s for s in got["steps"] if s.get("observation"))["observation"]["results"][0]["content"]
    assert len(content) < (1 << 20) + 100 and content.endswith("characters cut by fasbench]")  # 1 Mi characters
    trajs, files = parse_paths([folder], progress=False)
    assert [Path(p).name for p in files.parsed] == ["big.json"] and trajs
    assert [(Path(f).name, "FIFO" in why) for f, why in files.skipped] == [("pipe.json", True)]
    monkeypatch.setattr(raw, "MAX_FILE_BYTES", 1 << 20)
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(b" " * (4 << 20)))  # 4 MiB of text from ~4 KB
    with pytest.raises(TrajectoryError, match="larger than"):
        raw.read_text(bomb)
    with pytest.raises(TrajectoryError, match="FIFO"):
        raw.read_text(folder / "pipe.json")


# ---------------------------------------------------------------- perturb on a hostile corpus


def _perturb_corpus(tmp_path: Path, hostile_files: bool = False) -> Path:
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("from pkg.util import _helper\n")
    (root / "pkg" / "util.py").write_text("def _helper():\n    return 1\n\n\ndef _other():\n    return _helper()\n")
    if hostile_files:
        (root / "pkg" / "deep.py").write_text(DEEP)
        os.mkfifo(root / "pkg" / "pipe.py")
    return root


def _perturb(tmp_path: Path, root: Path) -> dict:
    return child(
        f"""
        from fasbench.data.perturb import perturb_corpus
        tree, rec = perturb_corpus(r"{root}", "perturb:seed=1,private=2")
        OUT = {{"renames": [r["old"] for r in rec["renames"]], "tree": str(tree)}}
    """,
        timeout=300,
        mem=2 << 30,
        env={"FASBENCH_CACHE": str(tmp_path / "cache")},
    )


def test_perturb_ignores_the_corpus_rope_config(tmp_path):
    root = _perturb_corpus(tmp_path)
    (tmp_path / "outside").mkdir()
    (root / "pyproject.toml").write_text('[tool.rope]\nsource_folders = ["../outside", "/"]\n')
    out = _perturb(tmp_path, root)
    assert out["renames"], out  # rope ran on the corpus with its default preferences


def test_perturb_goes_on_past_a_file_that_overflows_ast_and_a_fifo(tmp_path):
    out = _perturb(tmp_path, _perturb_corpus(tmp_path, hostile_files=True))
    assert out["renames"], out


def test_perturb_does_not_read_a_huge_sparse_toml_whole(tmp_path):
    root = _perturb_corpus(tmp_path)
    with open(root / "huge.toml", "wb") as f:
        f.truncate(6 << 30)  # a 6 GiB sparse .toml
    out = _perturb(tmp_path, root)
    assert out["renames"], out
    assert Path(out["tree"], "huge.toml").stat().st_size == 6 << 30  # left as it is (a hard link)


# ---------------------------------------------------------------- item 8: one bad item, the rest go on


def test_a_trace_whose_turns_is_a_string_is_skipped_with_its_reason(tmp_path):
    from fasbench.records import Trace, read_traces

    good = Trace(task_id="t1", policy="p", toolset="relace").to_dict()
    bad = {**good, "task_id": "t2", "turns": "abc"}
    p = tmp_path / "traces.jsonl"
    p.write_text(json.dumps(bad) + "\n" + json.dumps(good) + "\n")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = read_traces(p)
    assert [t.task_id for t in got] == ["t1"]
    assert len(w) == 1 and "trace 1 skipped" in str(w[0].message) and "\n" not in str(w[0].message)


@pytest.mark.timeout(600)
def test_report_skips_a_non_notebook_and_notes_a_bad_plotly_figure(tmp_path, capsys):
    import nbformat

    from fasbench.mainjob import report

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("fig")
    cell.outputs = [nbformat.v4.new_output("display_data", data={report.PLOTLY: {"data": "zzz", "layout": 5}})]
    nb.cells.append(cell)
    good = tmp_path / "01_good.ipynb"
    nbformat.write(nb, good)
    (tmp_path / "02_other.ipynb").write_text(json.dumps({"a": 1}))
    (tmp_path / "03_list.ipynb").write_text("[1, 2]")
    assert report.main([str(tmp_path), "--out", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert "skipped: " in err and "02_other.ipynb: not a notebook" in err and "03_list.ipynb" in err
    page = (tmp_path / "out" / "index.html").read_text()
    assert "a plotly figure that could not be rendered" in page
    assert report.main([str(tmp_path / "02_other.ipynb"), "--out", str(tmp_path / "o2")]) == 2
    assert capsys.readouterr().err.startswith("error: ")


def test_analyze_an_atif_file_without_tool_calls(tmp_path):
    d = json.loads(ATIF_FIXTURE.read_text())

    def strip(doc):
        for s in doc["steps"]:
            s.pop("tool_calls", None)
            s.pop("observation", None)
        for sub in doc.get("subagent_trajectories") or []:
            strip(sub)

    strip(d)
    (tmp_path / "nocalls.json").write_text(json.dumps(d))
    r = CliRunner().invoke(
        app, ["trajectories", "analyze", str(tmp_path / "nocalls.json"), "--out", str(tmp_path / "o"), "--quiet"]
    )
    assert r.exit_code == 0, r.output
    assert "no tool calls" in r.output and "internal error" not in r.output


def test_a_tool_call_named_null_is_an_unknown_tool(tmp_path):
    from fasbench.evaluation.episodes import episode_row
    from fasbench.harness import Limits, run_episode
    from fasbench.policies.scripted import ScriptedPolicy
    from fasbench.records import Gold, Reply, Task, ToolCall, Trace
    from fasbench.tools import TOOLSETS

    (tmp_path / "a.py").write_text("x = 1\n")
    task = Task(id="t", repo="o/r", query="q", root=str(tmp_path), gold=Gold(edited={"a.py": [[1, 1]]}))
    for ts in TOOLSETS:
        tr = run_episode(task, ScriptedPolicy([Reply(calls=[ToolCall(None, None, {})])]), ts, Limits(max_turns=2))
        assert tr.turns[0].results[0].is_error and "unknown tool" in tr.turns[0].results[0].output
        assert episode_row(tr, task)["search_calls"] == 1
        back = Trace.from_dict(json.loads(json.dumps(tr.to_dict())))
        assert episode_row(back, task)["search_calls"] == 1
