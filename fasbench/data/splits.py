"""Deterministic train/dev/test splits.

A task's split is a pure function of its SWE-bench instance id (``meta["instance_id"]``, else its
id): ``u = int(sha256("fasbench-split-v1:" + instance_id)[:16], 16) / 2**64``; test if
``u < 0.3``, dev if ``u < 0.4``, else train. So the split never depends on which other tasks exist,
an instance is in the same split in every source (Lite, Verified, each agent run), and no task is
in two splits. Repositories are shared across splits (by design, as in SWE-bench-style training);
the test split is what every evaluation reports on. These are fasbench's splits, not SWE-bench's: in a
task-set name they are spelled ``fasbench-test`` | ``fasbench-dev`` | ``fasbench-train``
(:mod:`fasbench.data.tasksets`), while ``task.split`` holds ``test`` | ``dev`` | ``train``.
"""

from __future__ import annotations

import hashlib

from fasbench.records import Task

SALT = "fasbench-split-v1:"
FRACTIONS = {"test": 0.3, "dev": 0.1, "train": 0.6}
SPLITS = tuple(FRACTIONS)


def split_of(instance_id: str) -> str:
    if not instance_id:
        raise ValueError("split_of: empty instance id")
    u = int(hashlib.sha256((SALT + instance_id).encode()).hexdigest()[:16], 16) / 2**64
    if u < FRACTIONS["test"]:
        return "test"
    if u < FRACTIONS["test"] + FRACTIONS["dev"]:
        return "dev"
    return "train"


def assign(tasks: list[Task]) -> list[Task]:
    """Set ``task.split`` on every task (in place) and return the tasks."""
    for t in tasks:
        t.split = split_of(str(t.meta.get("instance_id") or t.id))
    return tasks
