"""Throughput of `fasbench eval` for the heuristic policy: episodes per second over 50 tasks,
parallel (a process pool, and a thread pool) vs serial, measured side by side in one run.

Tasks: ``--tasks FILE`` (JSONL with materialised roots), else the SWE-bench Lite test tasks whose
offline corpora are already in the cache, else the toy corpus's issues repeated. Last line:
``episodes_per_s_parallel/serial=X`` (target X > 1.5 on 2 cores), using the faster parallel backend.
It also prints how many cores the serial run already keeps busy (the calls of a turn run
concurrently and rg walks a tree with several threads): with C cores and a serial run using U of
them on average, a backend that needs the same CPU time cannot beat ``C / U``. This is an estimate,
not a bound: runs measured here beat it (1.36 against 1.25), so the parallel runs spent less CPU
or the serial one waited on something other than CPU.

    python benchmarks/eval_throughput.py [--tasks FILE] [--n 50] [--workers 2]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from cpu import cores as n_cores, cpu_s  # benchmarks/cpu.py
from fasbench.evaluate import run_eval
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", help="tasks JSONL with corpus roots")
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--policy", default="heuristic:turns=3")
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
        print(f"{len(tasks)} tasks, policy {a.policy}, {a.workers} workers")
        limits = Limits(max_turns=6)
        run_eval(tasks[:2], a.policy, "relace", tmp / "warm", limits, workers=1, progress=False)  # warm caches
        times, cpu = {}, {}
        for backend in ("serial", "process", "thread"):
            t0, c0 = time.perf_counter(), cpu_s()
            run_eval(tasks, a.policy, "relace", tmp / backend, limits, workers=1 if backend == "serial" else a.workers,
                     backend=backend, progress=False)
            times[backend] = time.perf_counter() - t0
            cpu[backend] = cpu_s() - c0
            print(f"{backend:8s} {times[backend]:7.2f} s  {len(tasks) / times[backend]:6.2f} episodes/s")
        best = min(("process", "thread"), key=lambda b: times[b])
        cores = n_cores()
        busy = cpu["serial"] / times["serial"]
        print(f"serial run: {cpu['serial']:.1f} CPU s in {times['serial']:.1f} s = {busy:.2f} of {cores} cores busy "
              f"-> at the same CPU time, parallel/serial <= {cores / busy:.2f}")
        print(f"best parallel backend: {best}")
        print(f"episodes_per_s_parallel/serial={times['serial'] / times[best]:.2f}")


if __name__ == "__main__":
    main()
