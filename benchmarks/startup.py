"""CPU seconds one start of a fasbench entry point costs, beside a bare ``python -c pass``.

Each case is started ``--repeat`` times as a fresh interpreter (the one running this script, with
this checkout first on ``PYTHONPATH``); the CPU of each start (user + system, read with
``resource.getrusage(RUSAGE_CHILDREN)`` before and after it) is what the start-up costs, whatever
the load of the machine (wall time on a shared machine measures the neighbours). Cases:

- ``python -c pass``: the interpreter alone (site packages, .pth files);
- ``import fasbench.harness``: what every worker and every script that runs an episode pays;
- ``import fasbench.cli``: what every ``fasbench`` command pays before it runs (``--help`` included);
- ``fasbench tool`` (one call): ``python -m fasbench.cli tool`` running one ``view_file`` in a small
  workspace, the call a caller outside Python makes per tool call.

Prints one line per case (median, min, max CPU s and median wall s) and, last, the targets of issue
#28: ``tool_cpu_s=X harness_import_cpu_s=Y`` (targets X <= 0.5, Y <= 0.3).

    python benchmarks/startup.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def child_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def one_start(argv: list[str], env: dict) -> tuple[float, float]:
    """(CPU s, wall s) of one run of ``argv`` to its end; fails loudly if it fails."""
    c0, t0 = child_cpu_s(), time.perf_counter()
    p = subprocess.run(argv, env=env, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - t0, child_cpu_s() - c0
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {p.returncode}: {p.stderr.strip()[-500:]}")
    return cpu, wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5, help="starts per case (the median is reported)")
    args = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    env.pop("PYTHONPROFILEIMPORTTIME", None)
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="fasbench-startup-") as tmp:
        root = Path(tmp)
        (root / "a.py").write_text("".join(f"line {i}\n" for i in range(1, 201)), encoding="utf-8")
        call = json.dumps({"name": "view_file", "arguments": {"path": "/repo/a.py", "view_range": [1, 20]}})
        cases = {
            "python -c pass": [py, "-c", "pass"],
            "import fasbench.harness": [py, "-c", "import fasbench.harness"],
            "import fasbench.cli": [py, "-c", "import fasbench.cli"],
            "fasbench tool (one call)": [py, "-m", "fasbench.cli", "tool", "--root", str(root), call],
        }
        for argv in cases.values():  # warm the page cache and the bytecode caches once
            one_start(argv, env)
        res: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in cases}
        for _ in range(args.repeat):  # interleaved, so a burst of load touches every case alike
            for name, argv in cases.items():
                cpu, wall = one_start(argv, env)
                res[name][0].append(cpu)
                res[name][1].append(wall)
    base = statistics.median(res["python -c pass"][0])
    print(
        f"CPU s per start over {args.repeat} starts (cores={len(os.sched_getaffinity(0))}, "
        f"load={os.getloadavg()[0]:.1f}):"
    )
    for name, (cpu, wall) in res.items():
        med = statistics.median(cpu)
        extra = "" if name == "python -c pass" else f"  (+{med - base:.3f} over python -c pass)"
        print(
            f"  {name:26s} cpu median {med:.3f} s  min {min(cpu):.3f}  max {max(cpu):.3f}  "
            f"wall median {statistics.median(wall):.3f} s{extra}"
        )
    tool = statistics.median(res["fasbench tool (one call)"][0])
    harness = statistics.median(res["import fasbench.harness"][0])
    print(
        f"tool_cpu_s={tool:.3f} harness_import_cpu_s={harness:.3f} python_pass_cpu_s={base:.3f} "
        f"(targets: tool <= 0.5, harness import <= 0.3)"
    )


if __name__ == "__main__":
    main()
