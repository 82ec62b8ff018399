"""Harness benchmark on a large real tree (this environment's site-packages).

1. One turn of 8 mixed Grep / Read / Glob calls (FastContext tool set) executed concurrently
   through ``fasbench.harness.execute_calls`` vs one after another (``Toolset.execute``).
2. The harness's ``grep_search`` (Relace tool set: schema validation, sandbox, subprocess, output
   formatting) vs raw ``rg`` with the same flags on the same query.

Both are measured side by side in one run, interleaved, median of ``--reps`` repetitions after a
warm-up. The script also prints the CPU time of both turns (this process's threads and its
rg children, all waited for): a turn that needs ``cpu`` CPU seconds cannot finish on C cores in
less than ``cpu / C`` seconds, so ``cpu_concurrent / (C * sequential)`` is the lowest X this
machine allows at the CPU time the concurrent turn measurably needs. The last line is
``concurrent/sequential=X harness_grep/raw_rg=Y concurrent/ceiling=Z`` (targets: X <= 0.6,
Y <= 1.15). Z is the measured speed-up (sequential / concurrent) as a fraction of the most this
machine allows: ``min(calls, C * sequential / cpu_concurrent)``; 1.0 = the cores are the limit, so
Z stays meaningful on any core count.

    .venv/bin/python benchmarks/harness_concurrency.py [--root DIR] [--reps 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sysconfig
import time
from pathlib import Path

from cpu import cores as n_cores  # benchmarks/cpu.py
from cpu import cpu_s

from fasbench.harness import execute_calls
from fasbench.records import ToolCall
from fasbench.tools import ToolLimits, make_toolset
from fasbench.tools.bash.pipeline import tool_env
from fasbench.tools.rg import ignore_flags, rg_argv


def turn_calls(root: Path) -> list[ToolCall]:
    """8 mixed calls a search policy might make in one turn; each names paths that exist."""
    calls = [
        ("Grep", {"pattern": r"def forward\(", "path": "torch/nn/modules", "output_mode": "content", "head_limit": 50}),
        (
            "Grep",
            {"pattern": r"class \w+Config\(", "path": "transformers/models/bert", "output_mode": "files_with_matches"},
        ),
        ("Grep", {"pattern": "import numpy", "glob": "*.py", "output_mode": "files_with_matches", "head_limit": 100}),
        ("Glob", {"pattern": "**/modeling_llama.py"}),
        ("Glob", {"pattern": "*.pyi", "directory": "torch"}),
        ("Read", {"path": "torch/nn/modules/linear.py", "offset": 1, "limit": 200}),
        ("Read", {"path": "transformers/__init__.py", "offset": 100, "limit": 300}),
        ("Read", {"path": "typer/main.py", "offset": 1, "limit": 150}),
    ]
    for _, a in calls:
        p = a.get("path") or a.get("directory")
        if p and not (root / p).exists():
            raise SystemExit(
                f"{root / p} does not exist: this benchmark expects torch, transformers and typer installed"
            )
    return [ToolCall(f"c{i}", n, a) for i, (n, a) in enumerate(calls)]


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=Path(sysconfig.get_paths()["purelib"]))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--query", default="class ThreadPoolExecutor")
    args = ap.parse_args()
    root = args.root.resolve()
    limits = ToolLimits(timeout_s=300)
    fc = make_toolset("fastcontext", root, limits)
    rel = make_toolset("relace", root, limits)
    n_files = sum(1 for _ in root.rglob("*"))
    print(f"tree: {root} ({n_files} entries); reps={args.reps}")

    calls = turn_calls(root)
    for r in execute_calls(fc, calls):  # warm-up (page cache) and sanity
        if r.is_error:
            raise SystemExit(f"call {r.call_id} failed: {r.output}")

    grep_call = ToolCall("g", "grep_search", {"query": args.query, "include_pattern": "*.py"})
    # the same search as grep_search runs, straight from the command line (rg's default parallel walk)
    raw = rg_argv(
        *ignore_flags(root),
        "--line-number",
        "--with-filename",
        "--no-heading",
        "--case-sensitive",
        "--glob",
        "*.py",
        "--regexp",
        args.query,
        "./",
    )
    env = tool_env(rel.ws)
    out = rel.execute(grep_call)
    if out.is_error:
        raise SystemExit(out.output)
    n_matches = len([ln for ln in out.output.splitlines() if not ln.startswith("[")])
    print(f"grep_search {args.query!r}: {n_matches} matches")

    def run_raw(argv):
        subprocess.run(argv, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False)

    t_seq, t_con, t_h, t_raw, c_seq, c_con = [], [], [], [], [], []

    def seq():
        c = cpu_s()
        for call in calls:
            fc.execute(call)
        c_seq.append(cpu_s() - c)

    def con():
        c = cpu_s()
        execute_calls(fc, calls)  # returns when every call's rg has been waited for
        c_con.append(cpu_s() - c)

    for i in range(args.reps):
        pair = [("seq", seq), ("con", con)]
        if i % 2:
            pair.reverse()
        for name, fn in pair:
            (t_seq if name == "seq" else t_con).append(timed(fn))
        g = [("h", lambda: rel.execute(grep_call)), ("raw", lambda: run_raw(raw))]
        if i % 2:
            g.reverse()
        for name, fn in g:
            (t_h if name == "h" else t_raw).append(timed(fn))
        print(
            f"rep {i + 1}: sequential {t_seq[-1]:.3f}s concurrent {t_con[-1]:.3f}s | "
            f"grep_search {t_h[-1]:.3f}s raw rg {t_raw[-1]:.3f}s"
        )

    med = statistics.median
    x = med(t_con) / med(t_seq)
    y = med(t_h) / med(t_raw)
    print(
        f"median: sequential {med(t_seq):.3f}s concurrent {med(t_con):.3f}s grep_search {med(t_h):.3f}s "
        f"raw rg {med(t_raw):.3f}s"
    )
    cores = n_cores()
    print(
        f"CPU time (this process's threads and its rg children), median: sequential turn {med(c_seq):.3f} s "
        f"({med(c_seq) / med(t_seq):.2f} of {cores} cores busy), concurrent turn {med(c_con):.3f} s "
        f"({med(c_con) / med(t_con):.2f} cores busy)"
    )
    print(
        f"at the concurrent turn's CPU time, {cores} cores need >= {med(c_con) / cores:.3f} s: "
        f"concurrent/sequential >= {med(c_con) / (cores * med(t_seq)):.3f} on this machine"
    )
    # the ceiling: the speed-up this machine allows the concurrent turn at the CPU time it needs
    # (C cores cannot do c_con CPU seconds in under c_con / C), and no more than one call per thread
    ceiling = min(len(calls), cores * med(t_seq) / med(c_con))
    print(f"speed-up {med(t_seq) / med(t_con):.3f}, ceiling on {cores} cores {ceiling:.3f}")
    print(
        f"concurrent/sequential={x:.3f} harness_grep/raw_rg={y:.3f} "
        f"concurrent/ceiling={(med(t_seq) / med(t_con)) / ceiling:.3f}"
    )


if __name__ == "__main__":
    main()
