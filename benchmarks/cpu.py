"""CPU accounting shared by the concurrency benchmarks: how much CPU a run burned, and on how many
cores, so a script can print the best speed-up ratio the machine allows."""

from __future__ import annotations

import os
import resource


def cpu_s() -> float:
    """CPU seconds (user + system) used so far by this process and its finished children."""
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def cores() -> int:
    """Cores this process may run on."""
    return len(os.sched_getaffinity(0))
