"""Scoring cost on hostile reports (issue 14): huge line ranges and many cited files.

Measured in this run (CPU time via time.process_time; peak Python allocations via tracemalloc, in a
separate pass so that tracing does not slow the timed one):

1. ``line-f1`` of a report citing ``[1, 2147483647]`` (with and without a workspace root) and the
   eval summary row of the same report.
2. Side by side on a range of ``--lines`` lines (default 1,000,000, still feasible for the old way):
   line precision/recall from per-line ``(path, line)`` sets (what ``metrics.line_set`` did before)
   against the interval arithmetic of ``fasbench.base.lines``.
3. The eval summary row (every reward, file/line PRF, Acc@k) of reports citing 10k, 40k and 100k
   files, and a FastContext final answer with 200k ranges, to show linear growth.
4. Issue 25: the summary row of a FastContext answer of 200k citations (100k ranges of one file of
   1,000 functions, 100k more files; over 600 s before), SWE-Explore metrics of a region
   ``[1, 3·10⁷]`` (a MemoryError before), and the line count of a 2 GB sparse file under the root
   (read up to ``contain.MAX_READ_BYTES``, then unknown).

The last line is ``line_sets/intervals=X`` (CPU time ratio at ``--lines`` lines; higher is better).

    python benchmarks/scoring_bounds.py [--lines 1000000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
import tracemalloc
from pathlib import Path

from fasbench.base.lines import file_lines
from fasbench.evaluation.episodes import episode_row
from fasbench.records import Gold, Report, Task, Trace
from fasbench.scoring.localization import explore_metrics
from fasbench.scoring.reward import score_report
from fasbench.stats.metrics import line_prf, normalize_files
from fasbench.tools.fastcontext import parse_final_answer

HUGE = 2147483647


def measure(fn):
    """(CPU seconds, peak MiB of Python allocations) of fn()."""
    t = time.process_time()
    fn()
    cpu = time.process_time() - t
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return cpu, peak


def line_prf_sets(pred, gold, root):
    """The old way: one (path, line) entry per cited line."""

    def lines(files):
        return {(p, i) for p, rs in normalize_files(files, root).items() for a, b in rs for i in range(a, b + 1)}

    p, g = lines(pred), lines(gold)
    hit = len(p & g)
    return hit / len(p), hit / len(g)


def row_for(task: Task, files: dict) -> dict:
    tr = Trace(task_id=task.id, policy="p", toolset="relace")
    tr.report = Report(files=files)
    return episode_row(tr, task)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=1_000_000)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        (root / "a.py").write_text("".join(f"x{i} = {i}\n" for i in range(500)))
        gold = Gold(edited={"a.py": [[10, 20]]})
        task = Task(id="t", query="q", repo="r", root=str(root), gold=gold)
        rep = Report(files={"a.py": [[1, HUGE]], "missing.py": [[1, HUGE]]})
        for label, r in (("no root", None), ("with root", str(root))):
            cpu, mem = measure(lambda r=r: score_report("line-f1", gold, rep, root=r))
            print(f"line-f1 of [1, {HUGE}] ({label}): {cpu * 1e3:.2f} ms CPU, peak {mem:.2f} MiB")
        cpu, mem = measure(lambda: row_for(task, rep.files))
        print(f"eval summary row of the same report: {cpu * 1e3:.1f} ms CPU, peak {mem:.2f} MiB")

        with open(root / "big.py", "w") as f:  # a file as long as the range, so nothing is clipped
            f.writelines("x = 1\n" for _ in range(a.lines))
        pred, gl = {"big.py": [[1, -1]]}, {"big.py": [[a.lines // 2, a.lines // 2 + 99]]}
        r = str(root)
        assert line_prf_sets(pred, gl, r) == (lambda p: (p.precision, p.recall))(line_prf(pred, gl, r))
        cpu_sets, mem_sets = measure(lambda: line_prf_sets(pred, gl, r))
        cpu_int, mem_int = measure(lambda: line_prf(pred, gl, r))
        print(
            f"line P/R of a {a.lines:,}-line range: per-line sets {cpu_sets:.3f} s CPU, peak {mem_sets:.0f} MiB; "
            f"intervals {cpu_int * 1e6:.0f} us CPU, peak {mem_int * 1024:.1f} KiB"
        )

        prev = None
        for n in (10_000, 40_000, 100_000):
            files = {f"pkg/m{i}.py": [[1, 5]] for i in range(n)}
            cpu, mem = measure(lambda files=files: row_for(task, files))
            grow = f" (x{cpu / prev[1]:.1f} for x{n / prev[0]:.0f} files)" if prev else ""
            print(f"eval summary row citing {n:,} files: {cpu:.2f} s CPU, peak {mem:.0f} MiB{grow}")
            prev = (n, cpu)
        text = "<final_answer>\n" + "\n".join(f"src/a.py:{i}-{i}" for i in range(200_000, 0, -1)) + "\n</final_answer>"
        cpu, mem = measure(lambda: parse_final_answer(text))
        print(f"FastContext answer with 200,000 ranges parsed: {cpu:.2f} s CPU, peak {mem:.0f} MiB")

        (root / "src").mkdir()
        (root / "src" / "a.py").write_text("".join(f"def f{i}():\n    return {i}\n" for i in range(1000)))
        cites = [f"src/a.py:{i}-{i}" for i in range(100_000, 0, -1)] + [f"src/m{i}.py:1-2" for i in range(100_000)]
        tr = Trace(task_id=task.id, policy="p", toolset="fastcontext")
        tr.report = parse_final_answer("<final_answer>\n" + "\n".join(cites) + "\n</final_answer>")
        t = time.process_time()
        episode_row(tr, task)
        print(f"eval summary row of a 200,000-citation answer: {time.process_time() - t:.1f} s CPU")
        ex = {"core_regions": [["a.py", 1, 30_000_000]], "core_files": ["a.py"]}
        cpu, mem = measure(lambda: explore_metrics([("a.py", 1, 30_000_000)], ex, {"a.py": 500}))
        print(f"SWE-Explore metrics of a [1, 30,000,000] region: {cpu * 1e3:.2f} ms CPU, peak {mem:.2f} MiB")
        with open(root / "sparse.py", "wb") as f:
            f.truncate(2 << 30)
        t = time.perf_counter()
        n = file_lines(str(root), "sparse.py")
        print(f"line count of a 2 GB sparse file: {n} (unknown past the read cap) in {time.perf_counter() - t:.2f} s")
    print(f"line_sets/intervals={cpu_sets / max(cpu_int, 1e-9):.0f}")


if __name__ == "__main__":
    main()
