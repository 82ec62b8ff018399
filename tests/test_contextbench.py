"""ContextBench as a task source (issue 29 item 2): rows in ContextBench's published format (the
parquet/JSONL rows its evaluator reads: ``instance_id``, ``original_inst_id``, ``repo``,
``base_commit``, ``gold_context`` as a JSON string of ``{file, start_line, end_line, content}``) for
real ContextBench Verified instances that are shipped SWE-bench Verified tasks (ids and commits from
ContextBench's ``selected_500_instances.csv``), imported, placed on the real offline sdist (astropy
5.0.4, downloaded once into the cache), run by the heuristic policy through ``fasbench eval``, and
scored with ContextBench's metrics; one episode computed by hand against the definitions.

The annotated gold contexts themselves are not in this repository (ContextBench's parquet files are
not in the code snapshot we read): the regions below are written by us, in its format, on the real
source text. One region is given at line numbers 3 lines off the sdist's (as a base commit with three
more lines above would give them) so that placement by content is exercised."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from fasbench.cli import app
from fasbench.data import corpus
from fasbench.data.contextbench_tasks import import_contextbench
from fasbench.data.corpus import CorpusError, materialize
from fasbench.evaluation.episodes import episode_row
from fasbench.harness import Limits, run_episode
from fasbench.policies.scripted import ScriptedPolicy
from fasbench.records import Reply, Trace, iter_jsonl, read_tasks
from fasbench.scoring.contextbench import CONTEXTBENCH_COLUMNS, contextbench_row
from fasbench.scoring.process import process_row
from fasbench.tools import calls_for, tool_kind

SW = "astropy/wcs/wcsapi/wrappers/sliced_wcs.py"
BASE = "astropy/wcs/wcsapi/wrappers/base.py"
IRT = "astropy/coordinates/builtin_frames/intermediate_rotation_transforms.py"
PRO = "instance_ansible__ansible-fb144c44144f8bd3542e71f5db62b6d322c7bd85-vba6da65a0f3baefda7a058ebbd0a8dcafb8512f5"


@pytest.fixture(scope="module")
def tree():
    return corpus.sdist_tree("astropy", "5.0.4")


@pytest.fixture
def cache(tmp_path, tree, monkeypatch):
    """A cache holding only the astropy 5.0.4 sdist (nothing else can be downloaded into it unseen)."""
    c = tmp_path / "cache"
    shutil.copytree(tree, c / "corpora" / "sdist" / "astropy-5.0.4", symlinks=True)
    shutil.copy(tree.parent / "astropy-5.0.4.json", c / "corpora" / "sdist")
    monkeypatch.setenv("FASBENCH_CACHE", str(c))
    return c


def _text(tree: Path, path: str, s: int, e: int) -> str:
    return "\n".join((tree / path).read_text().splitlines()[s - 1 : e])


def _rows(tree: Path) -> list[dict]:
    return [
        {
            "instance_id": "SWE-Bench-Verified__python__maintenance__bugfix__71f348da",
            "original_inst_id": "astropy__astropy-13579",
            "repo": "astropy/astropy",
            "repo_url": "",
            "base_commit": "0df94ff7097961e92fd7812036a24b145bc13ca8",
            "source": "Verified",
            "language": "python",
            "gold_context": json.dumps(
                [
                    {
                        "file": "/testbed/" + SW,
                        "start_line": 212,
                        "end_line": 227,
                        "content": _text(tree, SW, 212, 227),
                    },
                    {"file": SW, "start_line": 245, "end_line": 269, "content": _text(tree, SW, 245, 269)},
                    # base.py is in no patch: placed by its content alone (sdist lines 71-76)
                    {"file": BASE, "start_line": 74, "end_line": 79, "content": _text(tree, BASE, 71, 76)},
                ]
            ),
        },
        {
            "instance_id": "SWE-Bench-Verified__python__maintenance__bugfix__deb49033",
            "original_inst_id": "astropy__astropy-13398",
            "repo": "astropy/astropy",
            "base_commit": "6500928dc0e57be8f06d1162eacc3ba5e2eff692",
            "source": "Verified",
            "language": "python",
            "gold_context": json.dumps(
                [
                    {
                        "file": IRT,
                        "start_line": 146,
                        "end_line": 154,
                        "content": "",
                    },  # no content: by the hunk's offset
                    {"file": IRT, "start_line": 60, "end_line": 82, "content": _text(tree, IRT, 60, 82)},
                ]
            ),
        },
        # a SWE-bench Pro row (not a shipped task) without a problem statement: not a task
        {
            "instance_id": "SWE-Bench-Pro__python__maintenance__bugfix__512d556b",
            "original_inst_id": PRO,
            "repo": "ansible/ansible",
            "base_commit": "662d34b9a7a1b3ab1d4847eeaef201a005826aef",
            "gold_context": json.dumps([{"file": "lib/ansible/x.py", "start_line": 1, "end_line": 2}]),
        },
        {
            "instance_id": "bad",
            "original_inst_id": "astropy__astropy-12907",
            "gold_context": json.dumps([{"file": SW, "start_line": 9, "end_line": 3}]),
        },
    ]


def _write(tmp_path: Path, rows: list[dict], kind: str = "parquet") -> Path:
    f = tmp_path / f"contextbench.{kind}"
    if kind == "parquet":
        pl.DataFrame(rows).write_parquet(f)
    else:
        f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return f


def test_import_reads_contextbench_rows(tmp_path, tree):
    for kind in ("parquet", "jsonl"):
        tasks, dropped = import_contextbench(_write(tmp_path, _rows(tree), kind))
        assert [t.id for t in tasks] == ["astropy__astropy-13579", "astropy__astropy-13398"]
        assert {d["id"]: d["reason"] for d in dropped} == {
            PRO: "no-query",
            "astropy__astropy-12907": "bad-gold-context",
        }
        t = tasks[0]
        # the shipped Verified task: its query, repository, version, patch and split; the gold as annotated
        assert t.repo == "astropy/astropy" and t.version == "5.0" and t.split == "test" and t.meta["patch"]
        assert t.gold.context == {"regions": [[SW, 212, 227], [SW, 245, 269], [BASE, 74, 79]]}  # /testbed/ dropped
        cb = t.meta["contextbench"]
        assert cb["instance_id"] == "SWE-Bench-Verified__python__maintenance__bugfix__71f348da"
        assert cb["content"][2] == _text(tree, BASE, 71, 76) and tasks[1].meta["contextbench"]["content"][0] is None
    # the task record carries the gold through JSONL
    out = tmp_path / "tasks.jsonl"
    r = CliRunner().invoke(
        app, ["data", "import", "contextbench", str(_write(tmp_path, _rows(tree))), "--out", str(out), "--no-check"]
    )
    assert r.exit_code == 0, r.output
    assert read_tasks(out)[0].gold.context == tasks[0].gold.context


def test_gold_lands_on_the_offline_sdist_by_content(tmp_path, cache, tree):
    tasks, _ = import_contextbench(_write(tmp_path, _rows(tree)))
    t = materialize(tasks[0], mode="offline")
    assert t.meta["corpus"]["release"] == "5.0.4"
    assert t.gold.context["regions"] == [[SW, 212, 227], [SW, 245, 269], [BASE, 71, 76]]
    assert t.meta["context_relocation"]["how"] == {"difflib": 3}
    # without content, a region inside a gold-patch hunk moves by that hunk's offset (+1 here)
    t2 = materialize(tasks[1], mode="offline")
    assert t2.gold.context["regions"] == [[IRT, 147, 155], [IRT, 60, 82]]
    assert t2.meta["context_relocation"]["how"] == {"hunk-offset": 1, "difflib": 1}
    # a region that cannot be placed (no content, a file outside the patch) drops the task, with the reason
    rows = _rows(tree)[:1]
    g = json.loads(rows[0]["gold_context"])
    g[2]["content"] = None
    rows[0]["gold_context"] = json.dumps(g)
    (bad,), _ = import_contextbench(_write(tmp_path, rows))
    with pytest.raises(CorpusError) as e:
        materialize(bad, mode="offline")
    assert (
        e.value.reason == "region-not-relocated" and "1/3 gold-context regions: region-not-anchored" in e.value.detail
    )


def test_import_says_per_task_whether_it_is_usable_offline_and_online(tmp_path, cache, tree):
    rows = _rows(tree)
    rows[1]["gold_context"] = json.dumps([{"file": "astropy/no_such_file.py", "start_line": 1, "end_line": 3}])
    out = tmp_path / "tasks.jsonl"
    r = CliRunner().invoke(app, ["data", "import", "contextbench", str(_write(tmp_path, rows)), "--out", str(out)])
    assert r.exit_code == 0, r.output
    lines = {ln.split("\t")[0]: ln.split("\t")[1:] for ln in r.stdout.splitlines() if "\t" in ln}
    assert lines["astropy__astropy-13579"][0] == "offline: usable (regions placed: difflib 3)"
    assert lines["astropy__astropy-13579"][1].startswith("online: usable at the exact commit 0df94ff70979")
    assert lines["astropy__astropy-13398"][0].startswith(
        "offline: region-not-relocated: 1/1 gold-context regions: file-missing"
    )
    assert "usable offline: 1/2" in r.stdout
    assert read_tasks(out)[0].meta["gold_import"]["usable"]["offline"].startswith("usable")


def test_metrics_of_a_hand_computed_episode(tmp_path, cache, tree):
    """Every ContextBench column of one episode through the real harness and tools, by hand.

    Gold (placed): sliced_wcs.py 212-227 (16 lines), 245-269 (25), base.py 71-76 (6): 47 lines, 2 files;
    blocks (definitions the gold overlaps, ast on the sdist): class SlicedLowLevelWCS 105-308,
    _pixel_to_world_values_all 212-227, world_to_pixel_values 245-269; class BaseWCSWrapper 6-82,
    pixel_to_world_values 71-72, world_to_pixel_values 75-76: 6 blocks."""
    tasks, _ = import_contextbench(_write(tmp_path, _rows(tree)))
    task = materialize(tasks[0], mode="offline")
    c = calls_for("relace")
    script = [
        # a read of a file that does not exist shows nothing: no step (ContextBench skips blocks without spans)
        Reply(calls=[c.read("c1", SW, 200, 230), c.read("c0", "astropy/nope.py", 1, 5), c.read("c2", BASE, 1, 20)]),
        Reply(calls=[c.read("c3", SW, 240, 260), c.read("c4", SW, 200, 230)]),
        # the report: 212-227 and 250-269 of sliced_wcs.py, 300-320 (past its 308 lines: ContextBench clips
        # nothing, 21 lines), an invented file (not a corpus file: dropped before scoring)
        c.report("c5", {SW: [[212, 227], [250, 269], [300, 320]], "astropy/ghost.py": [[1, 5]]}, "found"),
    ]
    tr = run_episode(task, ScriptedPolicy(script), "relace", Limits(max_turns=5))
    assert tr.stop_reason == "reported"
    pr = process_row(tr, task)
    assert pr["search_calls"] == 5 and pr["lines_shown"] == 31 + 20 + 21  # the 4 steps showed what they asked for
    row = contextbench_row(task, tr)
    assert set(row) == set(CONTEXTBENCH_COLUMNS)
    exp = {
        # final context: files {sliced_wcs.py}: recall 1/2, precision 1/1
        "cb_file_recall": 1 / 2,
        "cb_file_precision": 1.0,
        "cb_file_f1": 2 * 0.5 / 1.5,
        # lines 16 + 20 + 21 = 57, of them gold 16 + 20 = 36
        "cb_line_recall": 36 / 47,
        "cb_line_precision": 36 / 57,
        "cb_line_f1": 2 * (36 / 47) * (36 / 57) / (36 / 47 + 36 / 57),
        # blocks of the final spans: SlicedLowLevelWCS, _pixel_to_world_values_all, world_to_pixel_values,
        # pixel_bounds 291-304 and axis_correlation_matrix 307-308 (300-320 clipped to 308): 5, 3 gold
        "cb_block_recall": 3 / 6,
        "cb_block_precision": 3 / 5,
        "cb_block_f1": 2 * 0.5 * 0.6 / 1.1,
        # 4 steps; line coverage of the union after each: 16, 16, 32, 32 of 47
        "cb_efficiency_line": (16 + 16 + 32 + 32) / 47 / 4,
        # file coverage: 1/2, 1, 1, 1
        "cb_efficiency_file": (0.5 + 1 + 1 + 1) / 4,
        # block coverage: {Sliced, _p2wva} 2, + BaseWCSWrapper 3, + world_to_pixel_values 4, 4 (of 6)
        "cb_efficiency_block": (2 + 3 + 4 + 4) / 6 / 4,
        # seen gold: 212-227 and 245-260 = 32 lines; kept in the final context 16 + 11 (250-260) = 27
        "cb_gold_lines": 47,
        "cb_gold_seen_lines": 32,
        "cb_evidence_drop": 1 - 27 / 32,
        # the last turn's steps (240-260 and 200-230) saw 245-260 and 212-227: 32, kept 27
        "cb_evidence_drop_last": 1 - 27 / 32,
    }
    assert row == pytest.approx(exp)
    # ContextBench's redundancy is process.py's column: 31 of the 103 lines the steps showed were seen before
    full = episode_row(tr, task)
    assert full["context_redundancy"] == pytest.approx(31 / 103)
    assert {k: full[k] for k in CONTEXTBENCH_COLUMNS} == row
    # an empty report: ContextBench's no_context_extracted (left out of averages), the trajectory still scored
    empty = Trace.from_dict({**tr.to_dict(), "report": None})
    e = contextbench_row(task, empty)
    assert e["cb_line_recall"] is None and e["cb_file_precision"] is None
    assert e["cb_efficiency_line"] == exp["cb_efficiency_line"] and e["cb_evidence_drop"] == 1.0


def _independent(task, trace: Trace) -> dict:
    """File and line ContextBench metrics from the trace's recorded observations, written again with
    plain (path, line) sets (no block level, no suffix rule: the heuristic's paths are corpus paths)."""
    gold = {(p, n) for p, s, e in task.gold.context["regions"] for n in range(s, e + 1)}
    gold_files = {p for p, _, _ in task.gold.context["regions"]}
    steps = []
    for turn in trace.turns:
        res = {r.call_id: r for r in turn.results}
        for call in turn.calls:
            if tool_kind(trace.toolset, call.name) == "report":
                continue
            r = res.get(call.id)
            sh = r.shown if r is not None and not r.is_error else None
            got = (
                set()
                if sh is None
                else (
                    {(p, n) for p, rs in sh.ranges.items() for a, b in rs for n in range(a, b + 1)}
                    | {(p, int(n)) for p, n in sh.hits}
                )
            )
            if got:  # a call that showed no line is no step
                steps.append(got)
    n_lines = {p: len((Path(task.root) / p).read_text().splitlines()) for p in trace.report.files}
    fin = {
        (p, n) for p, rs in trace.report.files.items() for a, b in (rs or [[1, n_lines[p]]]) for n in range(a, b + 1)
    }
    union, auc = set(), 0.0
    for s in steps:
        union |= s
        auc += len(union & gold) / len(gold)
    seen = union & gold
    return {
        "cb_line_recall": len(fin & gold) / len(gold),
        "cb_line_precision": len(fin & gold) / len(fin) if fin else 1.0,
        "cb_file_recall": len(set(trace.report.files) & gold_files) / len(gold_files),
        "cb_efficiency_line": auc / len(steps),
        "cb_gold_seen_lines": len(seen),
        "cb_evidence_drop": 1 - len(fin & seen) / len(seen) if seen else 1.0,
    }


def test_end_to_end_import_eval_heuristic_offline(tmp_path, cache, tree):
    tf = tmp_path / "tasks.jsonl"
    r = CliRunner().invoke(
        app, ["data", "import", "contextbench", str(_write(tmp_path, _rows(tree))), "--out", str(tf)]
    )
    assert r.exit_code == 0 and "usable offline: 2/2" in r.stdout, r.output
    out = tmp_path / "run"
    r = CliRunner().invoke(
        app,
        [
            "eval",
            "--tasks",
            str(tf),
            "--policy",
            "heuristic",
            "--out",
            str(out),
            "--workers",
            "1",
            "--backend",
            "serial",
        ],
    )
    assert r.exit_code == 0, r.output
    df = pl.read_parquet(out / "summary.parquet")
    assert df.height == 2 and set(CONTEXTBENCH_COLUMNS) <= set(df.columns)
    assert df["cb_gold_lines"].to_list() == [47, 32]
    # the end-of-run table shows ContextBench's columns
    assert any(ln.startswith("cb_line_recall ") for ln in r.stdout.splitlines()), r.stdout
    tasks = {t.id: t for t in read_tasks(out / "tasks.jsonl")}
    traces = {d["task_id"]: Trace.from_dict(d) for d in iter_jsonl(out / "traces.jsonl")}
    for row in df.iter_rows(named=True):
        task = materialize(tasks[row["task_id"]], mode="offline")
        tr = traces[row["task_id"]]
        assert tr.report is not None and tr.report.files
        ind = _independent(task, tr)
        assert {k: row[k] for k in ind} == pytest.approx(ind), row["task_id"]
    # the heuristic reads sliced_wcs.py but cites none of the gold lines of 13579: evidence it never kept
    one = df.filter(pl.col("task_id") == "astropy__astropy-13579").row(0, named=True)
    assert one["cb_file_recall"] == 0.5 and one["cb_line_recall"] == 0.0


def test_bad_files_give_one_line_errors(tmp_path):
    bad = tmp_path / "broken.parquet"
    bad.write_text("not parquet")
    empty = tmp_path / "none.jsonl"
    empty.write_text(json.dumps({"instance_id": "x", "gold_context": "[]"}) + "\n")
    for f, want in (
        (bad, "not a readable parquet file"),
        (tmp_path / "missing.jsonl", "does not exist"),
        (empty, "no record could be imported as a contextbench task (dropped 1: {'empty-gold-context': 1})"),
    ):
        r = CliRunner().invoke(app, ["data", "import", "contextbench", str(f), "--out", str(tmp_path / "o.jsonl")])
        assert r.exit_code == 2 and "Traceback" not in r.output, r.output
        (line,) = [ln for ln in r.output.splitlines() if ln.strip()]
        assert line.startswith("error: ") and want in line, line


def test_block_edges_as_tree_sitter(tmp_path):
    """extract_defs (tree-sitter-python): a definition's block runs on over the trailing comments
    indented as deep as its body (the expected lines are tree-sitter-python 0.25.0's, node.start_point /
    end_point + 1); a span on such a comment overlaps the definition. Before, ast's end_lineno stopped
    at the last statement. A file that does not parse has no definitions here (stated deviation)."""
    from fasbench.scoring.contextbench import blocks, definitions

    (tmp_path / "m.py").write_text(
        "class A:\n    def m(self):\n        pass\n        # m's\n    # A's\n\n# col 0\nx = 1\n"
        "def f():\n    y = 2\n\n    # f's, after a blank line\n  # shallower: not f's\nz = 3\n"
        "def g(): pass\n    # one-line def: not g's\n"
    )
    got = sorted((d[1], d[2], d[4]) for d in definitions(str(tmp_path), "m.py"))
    assert got == [
        ("class_definition", 1, 5),
        ("function_definition", 2, 4),
        ("function_definition", 9, 12),
        ("function_definition", 15, 15),
    ]
    assert {(d[2], d[4]) for d in blocks(str(tmp_path), {"m.py": [(12, 12)]})} == {(9, 12)}
    assert blocks(str(tmp_path), {"m.py": [(16, 16)]}) == set()
    (tmp_path / "bad.py").write_text("def f():\n    return 1\n\ndef g(:\n")
    assert definitions(str(tmp_path), "bad.py") == ()  # tree-sitter recovers f; ast gives nothing
