"""Concurrent episodes against a model server: episodes per second against the server-bound ideal.

A real local HTTP server (``fasbench scripted-server``, its own process) speaks the OpenAI
chat-completions protocol, answers every request after ``--delay-s`` (default 0.25 s) with scripted
tool calls (two cheap reads a turn, ``report_back`` on the last of ``--turns`` turns) and serves at
most ``--max-concurrent`` requests at once (default 32; the rest wait for a slot). The same
episodes (toy tasks on a copy of the installed ``requests`` source) run through
``fasbench.evaluation.evaluate.run_eval`` with the ``openai`` policy, with 1 worker and with ``--workers``
(default 64), each into a fresh run directory (traces appended, summary written: the whole run is
timed). The ideal is the rate the server allows: ``min(workers, S) / (turns × delay)`` episodes per
second. ``--mode async`` runs the many-worker side as one asyncio loop instead (``httpx.AsyncClient``,
tool calls in the harness's shared tool pool) — the measurement behind the choice of threads.

Each run also prints the CPU it needed per episode (this process, its finished children such as
ripgrep, and the server process) and the ceiling that CPU allows: C cores finish at most
``C / cpu_per_episode`` episodes a second, so the ratio cannot pass ``min(1, C / (cpu_per_episode ×
ideal))``; a ratio near that ceiling says the machine's cores, not the harness's waiting, are the limit.

Last line: ``episodes_per_s/ideal=X`` for the many-worker run (target X >= 0.8); the 1-worker ratio
and the load average are printed above it.

    python benchmarks/server_eval_throughput.py [--workers 64] [--episodes 256] [--delay-s 0.25]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import httpx
from cpu import cores as n_cores  # benchmarks/cpu.py
from cpu import cpu_s

from fasbench.evaluation.evaluate import run_eval
from fasbench.harness import _POOL, Limits, execute_calls, initial_messages
from fasbench.policies.openai_compat import OpenAIPolicy, parse_tool_calls
from fasbench.policies.toy import make_corpus, toy_tasks
from fasbench.records import Turn, turn_messages
from fasbench.tools import make_toolset


def start_server(args) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fasbench.cli",
            "scripted-server",
            "--port",
            "0",
            "--delay-s",
            str(args.delay_s),
            "--max-concurrent",
            str(args.max_concurrent),
            "--turns",
            str(args.turns),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline().split()
    if not line or line[0] != "ready":
        raise RuntimeError("the scripted server did not start")
    return proc, f"http://127.0.0.1:{line[1]}/v1"


def proc_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) a running process has used so far (``/proc/PID/stat``)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def spec(url: str) -> str:
    return f"openai:model=scripted,base_url={url},timeout_s=60,retries=2,backoff_s=0.1,api_key_env="


async def _async_episode(client: httpx.AsyncClient, pol: OpenAIPolicy, task, limits: Limits) -> bool:
    """The harness loop of ``run_episode`` with an awaited request per turn (for the comparison)."""
    ts = make_toolset("relace", task.root, limits.tool)
    msgs = initial_messages(ts, task.query, limits)
    loop = asyncio.get_running_loop()
    for i in range(limits.max_turns):
        r = await client.post(f"{pol.base_url}/chat/completions", json=pol.request_body(msgs, ts.schemas))
        r.raise_for_status()
        m = r.json()["choices"][0]["message"]
        turn = Turn(index=i, text=m.get("content") or "", calls=parse_tool_calls(m))
        turn.results = await loop.run_in_executor(_POOL, execute_calls, ts, turn.calls, limits.max_calls_per_turn)
        msgs.extend(turn_messages(turn))
        if ts.parse_report(turn.text, turn.calls) is not None:
            return True
    return False


async def _async_run(tasks, url: str, workers: int, limits: Limits) -> int:
    pol = OpenAIPolicy(model="scripted", base_url=url, api_key_env="")
    sem = asyncio.Semaphore(workers)
    lim = httpx.Limits(max_connections=workers, max_keepalive_connections=workers)
    async with httpx.AsyncClient(timeout=60, limits=lim) as client:

        async def one(t):
            async with sem:
                return await _async_episode(client, pol, t, limits)

        done = await asyncio.gather(*(one(t) for t in tasks))
    return sum(done)


def timed_eval(tasks, url: str, workers: int, out: Path, limits: Limits, mode: str) -> tuple[float, int]:
    t0 = time.perf_counter()
    if mode == "async" and workers > 1:
        ok = asyncio.run(_async_run(tasks, url, workers, limits))
    else:
        df = run_eval(tasks, spec(url), "relace", out, limits, workers=workers, backend="thread", progress=False)
        ok = int((df["stop_reason"] == "reported").sum())
    return time.perf_counter() - t0, ok


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workers", type=int, default=64)
    ap.add_argument("--episodes", type=int, default=256, help="episodes of the many-worker run")
    ap.add_argument("--serial-episodes", type=int, default=8, help="episodes of the 1-worker run")
    ap.add_argument("--delay-s", type=float, default=0.25)
    ap.add_argument("--max-concurrent", type=int, default=32)
    ap.add_argument("--turns", type=int, default=3)
    ap.add_argument("--mode", choices=("thread", "async"), default="thread")
    args = ap.parse_args()
    limits = Limits(max_turns=args.turns)
    with tempfile.TemporaryDirectory(prefix="fasbench-srv-") as tmp:
        base = toy_tasks(make_corpus(Path(tmp) / "corpus"))
        n = max(args.episodes, args.serial_episodes)
        tasks = [replace(base[i % len(base)], id=f"{base[i % len(base)].id}-{i}") for i in range(n)]
        proc, url = start_server(args)
        try:
            timed_eval(tasks[:2], url, 2, Path(tmp) / "warm", limits, "thread")  # imports, connections
            res = {}
            cores = n_cores()
            for w, k in ((1, args.serial_episodes), (args.workers, args.episodes)):
                c0, s0 = cpu_s(), proc_cpu_s(proc.pid)
                wall, ok = timed_eval(tasks[:k], url, w, Path(tmp) / f"w{w}", limits, args.mode)
                harness, server = (cpu_s() - c0) / k, (proc_cpu_s(proc.pid) - s0) / k
                ideal = min(w, args.max_concurrent) / (args.turns * args.delay_s)
                res[w] = (k / wall) / ideal
                ceiling = min(1.0, cores / ((harness + server) * ideal)) if harness + server > 0 else 1.0
                print(
                    f"workers={w} mode={args.mode if w > 1 else 'thread'} episodes={k} reported={ok} wall_s={wall:.2f} "
                    f"episodes_per_s={k / wall:.2f} ideal={ideal:.2f} ratio={res[w]:.3f}",
                    flush=True,
                )
                print(
                    f"  cpu per episode {1000 * (harness + server):.1f} ms (harness {1000 * harness:.1f}, server "
                    f"{1000 * server:.1f}): {cores} cores allow {cores / (harness + server):.1f} episodes/s, "
                    f"ratio ceiling {ceiling:.3f}",
                    flush=True,
                )
        finally:
            proc.terminate()
            proc.wait(10)
    print(
        f"cores={n_cores()} load={' '.join(f'{x:.1f}' for x in os.getloadavg())} delay_s={args.delay_s} "
        f"max_concurrent={args.max_concurrent} turns={args.turns}; 1 worker: episodes_per_s/ideal={res[1]:.3f}"
    )
    print(f"episodes_per_s/ideal={res[args.workers]:.3f}")


if __name__ == "__main__":
    main()
