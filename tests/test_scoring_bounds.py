"""Scoring is bounded (issue 14) and reads ``[s, -1]`` as "to the end of the file" (issue 15, item 4):
ranges are intervals clipped to the file's length (or ``LINE_CAP`` without a workspace), citations
are handled in linear time, and a refused over-limit ``report_back`` never becomes the report.

Cases that blew up before run in a subprocess with an address-space limit and a timeout, so a
regression fails the test instead of taking the machine's memory."""

import json
import os
import resource
import subprocess
import sys
import textwrap

import pytest

from fasbench.base.lines import LINE_CAP, capped_ranges, file_lines, merge_ranges, overlap, total
from fasbench.harness import Limits, run_episode
from fasbench.policies import ScriptedPolicy
from fasbench.records import Gold, Report, Task
from fasbench.scoring.reward import score_report
from fasbench.stats.metrics import line_prf, normalize_files

HUGE = 2147483647
MEM_LIMIT = 1 << 30  # 1 GiB of address space for the child: one entry per line of HUGE needs > 100 GiB


def _limited():
    resource.setrlimit(resource.RLIMIT_AS, (MEM_LIMIT, MEM_LIMIT))


def run_limited(args, timeout=120, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, preexec_fn=_limited, **kw)


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("".join(f"line {i}\n" for i in range(1, 21)))  # 20 lines
    (root / "pkg" / "b.py").write_text("x = 1\ny = 2\nz = 3")  # 3 lines, no final newline
    return root


# ---------------------------------------------------------------- intervals and -1


def test_end_of_file_is_not_a_reversed_range():
    assert merge_ranges([[5, -1]], n_lines=20) == [[5, 20]]  # was [[1, 5]]
    assert merge_ranges([[5, -1]]) == [[5, LINE_CAP]]  # no length known: up to the documented cap
    assert merge_ranges([[30, -1]], n_lines=20) == []  # starts past the end: no line
    assert merge_ranges([[10, 9], [0, 1], [5, 7], [3, 4]]) == [[1, 1], [3, 7], [9, 10]]  # as before


def test_clipping_and_interval_arithmetic():
    assert merge_ranges([[1, HUGE]], n_lines=20) == [[1, 20]]
    assert merge_ranges([[1, HUGE]]) == [[1, LINE_CAP]]
    a, b = merge_ranges([[1, 10], [20, 30], [40, 50]]), merge_ranges([[5, 25], [45, 60]])
    assert total(a) == 32 and overlap(a, b) == 6 + 6 + 6 and overlap(b, a) == 18


def test_file_lines_and_containment(ws, tmp_path):
    assert file_lines(str(ws), "pkg/a.py") == 20 and file_lines(ws, "pkg/b.py") == 3
    assert file_lines(ws, "missing.py") is None and file_lines(None, "pkg/a.py") is None
    (tmp_path / "outside.py").write_text("1\n2\n")
    assert file_lines(ws, "../outside.py") is None  # never measured outside the workspace
    (ws / "link.py").symlink_to(tmp_path / "outside.py")
    assert file_lines(ws, "link.py") is None
    assert file_lines(ws, "pkg") is None  # a folder has no lines
    assert file_lines(ws, str(tmp_path / "outside.py")) is None  # an absolute path out of the root
    if hasattr(os, "mkfifo"):
        os.mkfifo(ws / "pipe.py")
        assert file_lines(ws, "pipe.py") is None  # never opened (an open would block)


def test_line_prf_resolves_end_of_file_against_the_workspace(ws):
    gold = {"pkg/a.py": [[15, 20]]}
    p = line_prf({"pkg/a.py": [[11, -1]]}, gold, root=str(ws))
    assert (p.n_pred, p.n_gold, p.n_hit) == (10, 6, 6) and p.precision == 0.6 and p.recall == 1.0
    assert normalize_files({str(ws / "pkg/b.py"): [[2, -1]]}, root=str(ws)) == {"pkg/b.py": [[2, 3]]}
    # without a workspace the same report is counted up to LINE_CAP, and line-f1 says so
    p = line_prf({"pkg/a.py": [[11, -1]]}, gold)
    assert p.n_pred == LINE_CAP - 10 and p.n_hit == 6
    s = score_report("line-f1", Gold(edited=gold), Report(files={"pkg/a.py": [[11, -1]]}))
    assert f"counted up to line {LINE_CAP}" in s.reason and "--root" in s.reason
    assert capped_ranges({"pkg/a.py": [[11, -1]]}, str(ws)) == 0


@pytest.mark.slow
def test_score_cli_with_root_scores_end_of_file(ws):
    gold = json.dumps({"edited": {"pkg/a.py": [[15, 20]]}})
    report = json.dumps({"files": {"pkg/a.py": [[11, -1]]}, "explanation": ""})
    base = [sys.executable, "-m", "fasbench.cli", "score", "--reward", "line-f1", "--gold", gold, "--report", report]
    r = run_limited(base + ["--root", str(ws)])
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["parts"] == {"precision": 0.6, "recall": 1.0} and out["score"] == pytest.approx(0.75)
    r = run_limited(base)  # no root: clipped to the cap, with a note
    out = json.loads(r.stdout)
    assert out["parts"]["recall"] == 1.0 and out["parts"]["precision"] == pytest.approx(6 / (LINE_CAP - 10))
    assert "counted up to line" in out["reason"]
    r = run_limited(base + ["--root", str(ws / "pkg" / "a.py")])
    assert r.returncode == 2 and "is not a directory" in r.stderr and "Traceback" not in r.stderr


# ---------------------------------------------------------------- huge ranges, many citations


@pytest.mark.slow
def test_score_cli_huge_range_is_bounded(ws):
    gold = json.dumps({"edited": {"pkg/a.py": [[1, 2]]}})
    report = json.dumps({"files": {"pkg/a.py": [[1, HUGE]], "gone.py": [[1, HUGE]]}})
    for extra in ([], ["--root", str(ws)]):
        r = run_limited(
            [
                sys.executable,
                "-m",
                "fasbench.cli",
                "score",
                "--reward",
                "line-f1",
                "--gold",
                gold,
                "--report",
                report,
                *extra,
            ]
        )
        assert r.returncode == 0, r.stderr[-500:]
        assert json.loads(r.stdout)["parts"]["recall"] == 1.0


def test_eval_summary_huge_range_is_bounded(ws):
    """The eval summary row (rescored on every resume) under a 1 GiB address-space limit."""
    code = textwrap.dedent(f"""
        from fasbench.evaluation.episodes import episode_row
        from fasbench.records import Gold, Report, Task, Trace
        t = Task(id="t", query="q", repo="r", root={str(ws)!r}, gold=Gold(edited={{"pkg/a.py": [[1, 2]]}}))
        tr = Trace(task_id="t", policy="p", toolset="relace")
        tr.report = Report(files={{"pkg/a.py": [[1, {HUGE}]], "pkg/b.py": [[2, -1]], "gone.py": [[1, {HUGE}]]}})
        row = episode_row(tr, t)
        print(row["line_precision"], row["line_recall"])
    """)
    r = run_limited([sys.executable, "-c", code])
    assert r.returncode == 0, r.stderr[-500:]
    prec, rec = map(float, r.stdout.split())
    assert rec == 1.0 and prec == pytest.approx(2 / (20 + 2 + LINE_CAP))


@pytest.mark.slow
def test_many_citations_are_linear():
    """200k ranges in one FastContext answer and 200k cited files in one summary: a membership test
    per item made these quadratic (hours); linear code finishes in seconds."""
    code = textwrap.dedent("""
        from fasbench.evaluation.episodes import ranked_files
        from fasbench.records import Report, Trace
        from fasbench.tools.fastcontext import parse_final_answer
        n = 200_000
        rep = parse_final_answer("<final_answer>\\n" + "\\n".join(f"src/a.py:{i}-{i}" for i in range(n, 0, -1))
                                 + "\\n</final_answer>")
        assert len(rep.files["src/a.py"]) == n and rep.files["src/a.py"][0] == [n, n]  # as written (released)
        tr = Trace(task_id="t", policy="p", toolset="relace")
        tr.report = Report(files={f"./m{i}.py": [[1, 2]] for i in range(n)})
        r = ranked_files(tr)
        assert len(r) == n and r[0] == "m0.py"
        print("ok")
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.stdout.strip() == "ok", r.stderr[-500:]


# ---------------------------------------------------------------- over-limit report_back


def test_refused_report_back_is_not_the_report(tmp_path):
    """The 13th call of a turn is refused; when it is report_back it must not end the episode."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("print(1)\n")
    answer = {"name": "report_back", "arguments": {"explanation": "x", "files": {"a.py": [[1, 1]]}}}
    views = [{"name": "view_file", "arguments": {"path": "a.py"}}] * 12
    policy = ScriptedPolicy([{"calls": views + [answer]}, {"calls": [answer]}])
    task = Task(id="t", query="q", repo="r", root=str(root), gold=Gold(edited={"a.py": [[1, 1]]}))
    tr = run_episode(task, policy, "relace", Limits(max_turns=3, max_calls_per_turn=12))
    first = tr.turns[0]
    assert first.results[12].is_error and "more than 12 tool calls" in first.results[12].output
    assert tr.n_turns == 2 and tr.stop_reason == "reported"  # the report came from the second turn
    policy = ScriptedPolicy([{"calls": views + [answer]}])
    tr = run_episode(task, policy, "relace", Limits(max_turns=1, max_calls_per_turn=12))
    assert tr.report is None and tr.stop_reason == "max_turns"
