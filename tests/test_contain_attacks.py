"""Attacks on the readers of model- and task-named paths (issue 25): the judge's contents and
``fasbench score --reward fastcontext --judge`` against a real judge server, the hand-off's three
renderings, scoring with ``--root``, the replay overlay, the best-of-N verifier, e2e's gold functions
and looked lines, SWE-Explore ranges and a report of 200k citations.

A hostile corpus holds a symlink to a file and one to a folder outside it, a FIFO and a 2 GB sparse
file; a secret lies beside the corpus. Every reader must leave the secret unread, give a named error
or an empty citation for a path outside the root, never hang on the FIFO and stay bounded on the
sparse file. Cases that could hang or take memory on a reader without those bounds run in a child
process with an address-space limit (2 GiB) and a generous timeout (a hang guard, not a speed test)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from servers import free_port, server, wait_http
from typer.testing import CliRunner

import fasbench
from fasbench.cli import app
from fasbench.records import Gold, Report, Trace
from fasbench.scoring.judge import citation_contents
from fasbench.studies.handoff import FORMATS, render

SECRET = "TOPSECRET-5f0c"
SPARSE = 2 << 30
PKG_ROOT = str(Path(fasbench.__file__).resolve().parents[1])


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("hostile")
    (base / "secret.txt").write_text(f"{SECRET}\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\n")
    (base / "secret_mod.py").write_text(f"def leaked():\n    return '{SECRET}'\n")
    (base / "outside").mkdir()
    (base / "outside" / "secret2.txt").write_text(SECRET + "\n")
    root = base / "ws"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("def target():\n    return 1\n")
    os.symlink(base / "secret.txt", root / "link_file.py")
    os.symlink(base / "outside", root / "link_dir")
    os.mkfifo(root / "pipe.py")
    with open(root / "big.py", "wb") as f:
        f.truncate(SPARSE)  # a 2 GB sparse file: no disk, all NUL bytes
    return root


def outside_paths(root: Path) -> list[str]:
    base = root.parent
    return [
        "../secret.txt",
        "/repo/../secret.txt",
        str(base / "secret.txt"),
        "../../../../etc/passwd",
        "link_file.py",
        "link_dir/secret2.txt",
        f"{root}/../secret.txt",
        "../../../../dev/zero",
        "/repo/link_file.py",
        "/repo/link_dir/secret2.txt",
        "/repo/../../../../etc/passwd",
    ]


def child(code: str, timeout: float = 240, mem: int = 2 << 30) -> dict:
    """Run ``code`` (which prints one JSON line last) in a child python under an address-space
    limit; its result, seconds and peak RSS (MiB)."""
    pre = textwrap.dedent(f"""
        import json, resource, sys, time
        resource.setrlimit(resource.RLIMIT_AS, ({mem}, {mem}))
        t0 = time.monotonic()
    """)
    # The peak RSS of this process image: VmHWM, which starts anew at exec (ru_maxrss does not: a child
    # forked from a pytest process of 1 GB reported 1 GB before running anything, in a full suite run).
    post = textwrap.dedent("""
        hwm = next(int(ln.split()[1]) for ln in open("/proc/self/status") if ln.startswith("VmHWM:"))
        print(json.dumps({"out": OUT, "s": time.monotonic() - t0, "rss_mib": hwm / 1024}))
    """)
    env = {**os.environ, "PYTHONPATH": PKG_ROOT}
    try:
        r = subprocess.run(
            [sys.executable, "-c", pre + textwrap.dedent(code) + post],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running after {timeout} s (a hang)")
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------- the judge


def test_judge_contents_never_read_outside_the_root(hostile):
    files = {p: [[1, 5]] for p in outside_paths(hostile)}
    c = citation_contents(files, hostile)
    assert SECRET not in c and "root:" not in c
    blocks = c.split("```\n")[:-1]
    assert len(blocks) == len(files)
    assert all(b.endswith("\nError: the file does not exist.\n") for b in blocks), c


def test_judge_contents_fifo_device_and_sparse_file_are_bounded(hostile):
    r = child(f"""
        from fasbench.scoring.judge import citation_contents
        c = citation_contents({{"pipe.py": [[1, 3]], "../../../../dev/zero": [[1, 3]], "big.py": [[1, 2], [1, -1]]}},
                              {str(hostile)!r})
        OUT = c
    """)
    blocks = r["out"].split("```\n")[:-1]
    assert blocks[0] == "```pipe.py:1-3\nError: the file does not exist.\n"  # a FIFO is not a regular file
    assert blocks[1].endswith("Error: the file does not exist.\n")
    assert all(len(b) < 1200 for b in blocks[2:])  # the first 500 characters of a line of NULs, or an error
    print(f"judge contents of a 2 GB sparse file: {r['s']:.1f} s, peak RSS {r['rss_mib']:.0f} MiB")
    assert r["rss_mib"] < 1024


JUDGE_LOGGING_SERVER = textwrap.dedent("""
    import json, sys
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    log = sys.argv[2]
    class H(BaseHTTPRequestHandler):
        def log_message(self, *a): pass
        def _send(self, obj):
            out = json.dumps(obj).encode()
            self.send_response(200); self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out))); self.end_headers(); self.wfile.write(out)
        def do_GET(self):
            self._send({"ok": True})
        def do_POST(self):
            raw = self.rfile.read(int(self.headers["Content-Length"]))
            with open(log, "ab") as f:
                f.write(raw + b"\\n")
            text = "```json\\n" + json.dumps({"justification": "x", "score": 5}) + "\\n```"
            self._send({"choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]})
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
""")


def test_cli_score_with_a_judge_sends_no_outside_file(hostile, tmp_path):
    (tmp_path / "srv.py").write_text(JUDGE_LOGGING_SERVER)
    log, port = tmp_path / "bodies.jsonl", free_port()
    with server([sys.executable, str(tmp_path / "srv.py"), str(port), str(log)], tmp_path / "srv.log") as proc:
        wait_http(f"http://127.0.0.1:{port}/", proc, 30, tmp_path / "srv.log")
        spec = f"openai:model=j,base_url=http://127.0.0.1:{port}/v1,retries=0,cache={tmp_path / 'cache'}"
        gold = json.dumps({"edited": {"pkg/a.py": [[1, 2]]}})
        for p in outside_paths(hostile):
            # the released judge opens only /repo/… paths (a relative one reads as missing: judge._released_rel)
            rep = json.dumps({"files": {p: [[1, 5]], "/repo/pkg/a.py": [[1, 2]]}})
            r = CliRunner().invoke(
                app,
                [
                    "score",
                    "--reward",
                    "fastcontext",
                    "--judge",
                    spec,
                    "--query",
                    "find target",
                    "--root",
                    str(hostile),
                    "--gold",
                    gold,
                    "--report",
                    rep,
                ],
            )
            assert r.exit_code == 0, r.output
    bodies = log.read_text()
    assert bodies.count("\n") == len(outside_paths(hostile))  # every request reached the server
    assert SECRET not in bodies and "root:x:0:0" not in bodies
    assert "def target():" in bodies  # the cited file inside the root was sent


# ---------------------------------------------------------------- the hand-off


def trace_citing(files: dict) -> Trace:
    tr = Trace(task_id="t", policy="p", toolset="fastcontext")
    tr.report = Report(files=files, explanation="why")
    return tr


def test_handoff_renderings_never_show_outside_files(hostile):
    tr = trace_citing({p: [[1, 5]] for p in outside_paths(hostile)} | {"link_dir/secret2.txt": []})
    for fmt in FORMATS:
        text = render(tr, hostile, fmt)
        assert SECRET not in text and "root:x:0:0" not in text, fmt
        if fmt != "citations":
            assert "outside the repository" in text  # a named reason instead of code


def test_handoff_fifo_and_sparse_file_do_not_hang_or_blow_up(hostile):
    r = child(f"""
        from fasbench.studies.handoff import FORMATS, render
        from fasbench.records import Report, Trace
        tr = Trace(task_id="t", policy="p", toolset="fastcontext")
        tr.report = Report(files={{"pipe.py": [[1, 3]], "big.py": [[1, 40]], "pkg/a.py": []}})
        OUT = [render(tr, {str(hostile)!r}, fmt) for fmt in FORMATS]
    """)
    code = r["out"][1]
    assert "## pipe.py\n(not shown: not a regular file (a FIFO))" in code
    assert "## big.py\n(not shown: a binary file)" in code and "def target():" in code
    print(f"hand-off of a 2 GB sparse file and a FIFO: {r['s']:.1f} s, peak RSS {r['rss_mib']:.0f} MiB")
    assert r["rss_mib"] < 1024


# ---------------------------------------------------------------- scoring, replay, BoN, e2e


def test_score_with_root_reads_a_bounded_part_of_a_sparse_file(hostile):
    r = child(f"""
        def rchar():
            return int(next(l for l in open("/proc/self/io") if l.startswith("rchar")).split()[1])
        from fasbench.records import Gold, Report
        from fasbench.scoring.reward import score_report
        before = rchar()
        s = score_report("line-f1", Gold(edited={{"big.py": [[1, 5]]}}), Report(files={{"big.py": [[1, -1]], "pipe.py": [[1, -1]]}}),
                         root={str(hostile)!r})
        OUT = [s.value, rchar() - before]
    """)
    assert r["out"][1] < 256 << 20, f"read {r['out'][1] / 2**20:.0f} MiB of a 2 GB sparse file"


def test_replay_overlay_does_not_count_outside_files_or_hang(hostile):
    r = child(
        f"""
        from fasbench.replay.overlay import file_overlay
        from fasbench.records import Report, Trace, Turn
        tr = Trace(task_id="t", policy="p", toolset="fastcontext")
        tr.turns = [Turn(index=0, text="")]
        tr.report = Report(files={{"../secret.txt": [[1, -1]], "link_file.py": [[1, -1]], "pipe.py": [[1, -1]],
                                   "../../../../dev/zero": [[1, -1]]}})
        OUT = {{f.path: f.cited for f in file_overlay(tr, root={str(hostile)!r})}}
    """,
        timeout=120,
    )
    # the secret's 7 lines are not counted: an end of -1 on an unreadable file keeps the first line only
    assert all(rs == [[1, 1]] for rs in r["out"].values()), r["out"]


def test_bon_verifier_reads_inside_the_root_only_and_bounded(hostile):
    r = child(f"""
        from pathlib import Path
        from fasbench.bon.verify import TaskProbe
        pr = TaskProbe(root=Path({str(hostile)!r}), idents=["leaked"], messages=[], independent=[])
        OUT = [pr.lines(p) for p in ("../secret.txt", "link_file.py", "link_dir/secret2.txt", "pipe.py", "big.py")]
    """)
    assert r["out"][:4] == [None] * 4
    assert r["rss_mib"] < 1024


def test_e2e_gold_functions_stay_inside_the_copy(hostile):
    from fasbench.e2e.localize import localization

    diff = (
        "--- a/../secret_mod.py\n+++ b/../secret_mod.py\n@@ -1,2 +1,2 @@\n def leaked():\n"
        f"-    return '{SECRET}'\n+    return 'x'\n"
    )
    out = localization(
        diff, Gold(edited={"../secret_mod.py": [[2, 2]], "link_dir/../../secret_mod.py": [[2, 2]]}), hostile
    )
    assert out["gold_functions"] == 0  # the file outside the copy was not parsed


def test_e2e_looked_lines_of_a_huge_range(hostile):
    r = child(
        """
        from fasbench.e2e.counterfactual import coverage
        from fasbench.e2e.looked import Look
        looks = [Look("a.py", ((1, 30_000_000),), "display"), Look("b.py", ((5, 9),), "display")]
        OUT = coverage(looks, {"a.py": [[1, 10]]})
    """,
        timeout=180,
    )
    assert r["out"]["looked_lines"] == 30_000_005 and r["out"]["line_coverage"] == pytest.approx(10 / 30_000_005)


def test_swe_explore_range_of_30_million_lines(hostile):
    r = child(
        """
        from fasbench.scoring.localization import explore_metrics
        ex = {"core_regions": [["pkg/a.py", 1, 30_000_000]], "core_files": ["pkg/a.py"]}
        OUT = explore_metrics([("pkg/a.py", 1, 30_000_000), ("pkg/a.py", 10, 20)], ex, {"pkg/a.py": 2})
    """,
        timeout=180,
    )
    assert r["out"]["explore_line_precision"] == 1.0 and r["out"]["explore_line_recall"] == 1.0


@pytest.mark.slow
def test_episode_row_of_200k_citations(tmp_path):
    """100k ranges of one file and 100k more files: over 600 s before (quadratic rank building, an
    entity scan per region, a thrashed path cache); the guard here is only against a hang."""
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("".join(f"def f{i}():\n    return {i}\n" for i in range(500)))
    r = child(
        f"""
        from fasbench.evaluation.episodes import episode_row
        from fasbench.records import Gold, Task, Trace
        from fasbench.tools.fastcontext import parse_final_answer
        cites = [f"src/a.py:{{i}}-{{i}}" for i in range(100_000, 0, -1)] + [f"src/m{{i}}.py:1-2" for i in range(100_000)]
        text = "<final_answer>\\n" + "\\n".join(cites) + "\\n</final_answer>"
        task = Task(id="t", query="q", repo="r", root={str(root)!r}, gold=Gold(edited={{"src/a.py": [[10, 20]]}}))
        tr = Trace(task_id="t", policy="p", toolset="fastcontext")
        tr.report = parse_final_answer(text)
        row = episode_row(tr, task)
        OUT = [row["n_regions_reported"], row["n_files_reported"]]
    """,
        timeout=300,
        mem=4 << 30,
    )
    print(f"episode_row of 200k citations: {r['s']:.1f} s, peak RSS {r['rss_mib']:.0f} MiB")
    assert r["out"] == [200_000, 100_001]
