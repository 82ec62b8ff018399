"""fasbench: a research workbench for fast agentic code search.

The three published systems it reproduces (with their formulas, numbers and where each is
implemented), the layers of the package and what may import what, and how to add a tool set, a
policy, a reward or a trajectory format: ``docs/design.md``. The map of the folders: ``README.md``; the modules: ``fasbench/README.md``.
"""

__version__ = "0.1.0"

import os as _os

# torch's CPU threads wait at every op's barrier; libgomp's default policy spins there, and on a busy
# machine (2 cores, load 8-14) each of a decode step's ~400 ops then waits for a descheduled partner:
# SmolLM2-135M, fp32, 2 threads, load 12: 625 ms of CPU a token with the default, 136 ms with PASSIVE,
# 98 ms with GOMP_SPINCOUNT=0, 107 ms with 1 thread (benchmarks/README.md, "Rollouts"). PASSIVE (sleep at
# barriers) is fasbench's default; an idle machine loses a little wall time to it (RL-ON-CPU.md: 47 vs
# ~70 ms a token), so a user's own setting wins. libgomp reads it once, when torch loads: this module is
# imported before any fasbench path loads torch.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
