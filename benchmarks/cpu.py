"""CPU accounting shared by the concurrency benchmarks: how much CPU a run burned, and on how many
cores, so a script can print the best speed-up ratio the machine allows."""

from __future__ import annotations

import os
import resource


def cpu_s() -> float:
    """CPU seconds (user + system) used so far by this process and its finished children."""
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def machine_cpu_s() -> float:
    """CPU seconds the whole machine has been busy (``/proc/stat``: every state but idle and
    iowait, summed over cores). Counts work this process cannot see through ``getrusage``, such
    as pool workers forked by a forkserver that outlives the run; exact on an idle machine."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    user, nice, system, idle, iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def cores() -> int:
    """Cores this process may run on."""
    return len(os.sched_getaffinity(0))
