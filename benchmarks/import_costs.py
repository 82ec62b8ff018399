"""CPU seconds of importing each heavy module, side by side: the one place fasbench's import costs are
measured (the ``# local import:`` comments of the package say why in words only; issue 37).

Each module is imported ``--repeat`` times, each time in a fresh interpreter (the one running this
script, with this checkout first on ``PYTHONPATH``). The child reads its own CPU (user + system,
``resource.getrusage(RUSAGE_SELF)``) just before and just after the import, so the figure is the
import alone, without the interpreter's start-up, whatever the load of the machine (wall time on a
shared machine measures the neighbours). A module that is not installed is reported as such.

Prints one line per module (median, min, max CPU s, and median wall s) in the order given, and last
``heaviest=MODULE cpu_s=X fasbench_cli_cpu_s=Y`` (Y: ``import fasbench.cli``, what ``fasbench --help``
pays before it runs).

    python benchmarks/import_costs.py [--repeat 3] [MODULE ...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: The libraries and fasbench modules kept out of start-up paths by function-local imports.
MODULES = (
    "fasbench.cli",
    "fasbench.harness",
    "fasbench.tools",
    "fasbench.policies",
    "fasbench.scoring.reward",
    "fasbench.evaluation.evaluate",
    "fasbench.evaluation.runs",
    "fasbench.replay",
    "polars",
    "httpx",
    "tqdm.auto",
    "bashlex",
    "bm25s",
    "rope.base.project",
    "jsonschema",
    "plotly.graph_objects",
    "ipywidgets",
    "kaleido",
    "sklearn.linear_model",
    "markupsafe",
    "torch",
    "transformers",
    "datasets",
    "peft",
    "trl",
    "sentence_transformers",
)

CHILD = r"""
import json, resource, sys, time
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
c0, w0 = cpu(), time.perf_counter()
try:
    __import__(sys.argv[1])
except ImportError as e:
    print(json.dumps({"missing": str(e)[:200]}))
    sys.exit(0)
print(json.dumps({"cpu_s": cpu() - c0, "wall_s": time.perf_counter() - w0}))
"""


def measure(module: str, repeat: int) -> dict:
    """Median, min and max CPU seconds and median wall seconds of importing ``module`` in ``repeat`` fresh
    interpreters; ``{"missing": why}`` when it is not installed."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH", "")]))}
    cpus, walls = [], []
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, "-c", CHILD, module], capture_output=True, text=True, env=env, cwd=REPO, timeout=600
        )
        if out.returncode:
            return {"missing": (out.stderr.strip().splitlines() or ["failed"])[-1][:200]}
        r = json.loads(out.stdout.strip().splitlines()[-1])
        if "missing" in r:
            return r
        cpus.append(r["cpu_s"])
        walls.append(r["wall_s"])
    return {"cpu_s": statistics.median(cpus), "min": min(cpus), "max": max(cpus), "wall_s": statistics.median(walls)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("modules", nargs="*", default=list(MODULES), help="modules to import (default: the heavy ones)")
    ap.add_argument("--repeat", type=int, default=3, help="fresh interpreters per module (median reported)")
    a = ap.parse_args()
    res = {}
    print(f"{'module':<30} {'cpu_s':>7} {'min':>7} {'max':>7} {'wall_s':>7}")
    for m in a.modules:
        r = res[m] = measure(m, a.repeat)
        if "missing" in r:
            print(f"{m:<30} not installed ({r['missing']})")
        else:
            print(f"{m:<30} {r['cpu_s']:7.3f} {r['min']:7.3f} {r['max']:7.3f} {r['wall_s']:7.3f}", flush=True)
    done = {m: r for m, r in res.items() if "cpu_s" in r}
    if done:
        top = max(done, key=lambda m: done[m]["cpu_s"])
        cli = done.get("fasbench.cli", {}).get("cpu_s", float("nan"))
        print(f"heaviest={top} cpu_s={done[top]['cpu_s']:.3f} fasbench_cli_cpu_s={cli:.3f}")


if __name__ == "__main__":
    main()
