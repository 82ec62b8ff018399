"""Throughput of `fasbench eval` for the heuristic policy: episodes per second over 50 tasks,
parallel (a process pool, and a thread pool) vs serial, measured side by side in one run.

Tasks: ``--tasks FILE`` (JSONL with materialised roots), else the SWE-bench Lite test tasks whose
offline corpora are already in the cache, else the toy corpus's issues repeated. Last line:
``episodes_per_s_parallel/serial=X parallel/ceiling=Z`` (target X > 1.5 on 2 cores), using the faster
parallel backend; Z is X as a fraction of ``min(workers, C * serial_s / cpu_parallel)``, the most
this machine's C cores allow at the CPU time the parallel run needs (1.0 = the cores are the limit).
Every tree is read once before the timed runs (page cache), and each backend runs ``--rounds``
times in rotated order (medians). The script prints the CPU time of every run (this process and its
children for the serial and thread runs; ``/proc/stat`` for the process pool, whose workers it
cannot account otherwise, so that one is exact only on an idle machine): the serial run already keeps
most cores busy (the calls of a turn run concurrently and rg walks a tree with several threads),
and a parallel run that needs ``cpu`` CPU seconds cannot finish on C cores in under ``cpu / C``.

    python benchmarks/eval_throughput.py [--tasks FILE] [--n 50] [--workers 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from cpu import cores as n_cores  # benchmarks/cpu.py
from cpu import cpu_s, machine_cpu_s

from fasbench.evaluation.evaluate import run_eval
from fasbench.harness import Limits
from fasbench.records import read_tasks


def cached_swebench_tasks(n: int) -> list:
    """Lite/Verified test tasks whose offline corpus is already materialised (no download here)."""
    from fasbench.data import load_tasks
    from fasbench.data.corpus import CorpusError, materialize, pick_for, root_dir

    have = {p.name.lower() for p in (root_dir() / "sdist").iterdir()} if (root_dir() / "sdist").exists() else set()
    out = []
    for source in ("swebench-lite", "swebench-verified"):
        for t in load_tasks(source, "test"):
            pk = pick_for(t)
            if pk is None or f"{pk[0]}-{pk[1]}".lower() not in have or any(o.id == t.id for o in out):
                continue
            try:
                out.append(materialize(t, mode="offline"))
            except CorpusError:
                continue
            if len(out) >= n:
                return out
    return out


def toy(n: int, tmp: Path) -> list:
    from fasbench.policies.toy import make_corpus, toy_tasks

    base = toy_tasks(make_corpus(tmp / "toy"))
    return [replace(base[i % len(base)], id=f"{base[i % len(base)].id}-{i}") for i in range(n)]


def warm(tasks) -> None:
    """Read every file of every task's tree once, so that no backend pays for a colder page
    cache than another (the backends run one after another on the same trees)."""
    import subprocess

    from fasbench.tools.rg import rg_argv

    for root in sorted({t.root for t in tasks}):
        subprocess.run(
            rg_argv("-uuu", "--count", "--fixed-strings", "--regexp", "\x01warm\x01", root),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", help="tasks JSONL with corpus roots")
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--policy", default="heuristic:turns=3")
    ap.add_argument("--rounds", type=int, default=2, help="runs of each backend, in rotated order")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        tasks = read_tasks(a.tasks)[: a.n] if a.tasks else []
        if not tasks:
            try:
                tasks = cached_swebench_tasks(a.n)
            except Exception as e:  # no data package / manifest: fall back to the toy corpus
                print(f"(no cached SWE-bench corpora: {e})")
        if len(tasks) < a.n:
            print(f"(only {len(tasks)} SWE-bench tasks with cached corpora; using the toy corpus)")
            tasks = toy(a.n, tmp)
        print(f"{len(tasks)} tasks, policy {a.policy}, {a.workers} workers, {a.rounds} rounds")
        limits = Limits(max_turns=6)
        warm(tasks)
        run_eval(tasks[:2], a.policy, "relace", tmp / "warm", limits, workers=1, progress=False)  # imports, indexes
        backends = ["serial", "process", "thread"]
        times: dict[str, list[float]] = {b: [] for b in backends}
        cpu: dict[str, list[float]] = {b: [] for b in backends}
        for r in range(a.rounds):
            order = backends[r % 3 :] + backends[: r % 3]  # each backend takes its turn going first
            for backend in order:
                t0, c0, s0 = time.perf_counter(), machine_cpu_s(), cpu_s()
                run_eval(
                    tasks,
                    a.policy,
                    "relace",
                    tmp / f"{backend}{r}",
                    limits,
                    workers=1 if backend == "serial" else a.workers,
                    backend=backend,
                    progress=False,
                )
                times[backend].append(time.perf_counter() - t0)
                # serial and thread runs: this process's threads and its rg children, exact on a shared
                # machine; a process pool's workers are the forkserver's children, so /proc/stat (the
                # whole machine: exact only when nothing else runs)
                cpu[backend].append(machine_cpu_s() - c0 if backend == "process" else cpu_s() - s0)
                print(
                    f"round {r + 1} {backend:8s} {times[backend][-1]:7.2f} s  "
                    f"{len(tasks) / times[backend][-1]:6.2f} episodes/s  {cpu[backend][-1]:6.1f} CPU s "
                    f"({cpu[backend][-1] / times[backend][-1]:.2f} cores busy)"
                )
        med = {b: statistics.median(times[b]) for b in backends}
        mcpu = {b: statistics.median(cpu[b]) for b in backends}
        best = min(("process", "thread"), key=lambda b: med[b])
        cores = n_cores()
        print("median: " + ", ".join(f"{b} {med[b]:.2f} s / {mcpu[b]:.1f} CPU s" for b in backends))
        print(
            f"serial keeps {mcpu['serial'] / med['serial']:.2f} of {cores} cores busy; the {best} run needs "
            f"{mcpu[best]:.1f} CPU s, which {cores} cores cannot do in under {mcpu[best] / cores:.2f} s: "
            f"parallel/serial <= {med['serial'] * cores / mcpu[best]:.2f} at that CPU time"
        )
        # the ceiling: the speed-up this machine allows at the parallel run's CPU time, and no more
        # than one episode per worker
        ceiling = min(a.workers, med["serial"] * cores / mcpu[best])
        print(f"best parallel backend: {best}; speed-up ceiling on {cores} cores {ceiling:.2f}")
        print(
            f"episodes_per_s_parallel/serial={med['serial'] / med[best]:.2f} "
            f"parallel/ceiling={(med['serial'] / med[best]) / ceiling:.2f}"
        )


if __name__ == "__main__":
    main()
