"""One evaluation spread over several machines: deterministic task shards, merged into one run.

``fasbench eval … --shard i/n --out runs/x-i`` runs shard ``i`` (0-based) of ``n``: the tasks at
positions ``i, i+n, i+2n, …`` of the task list (after ``--limit``), so every machine given the same
``--tasks``/``--limit`` gets a disjoint part and the parts cover the list, each of nearly equal size.
The shard is recorded in ``run.json`` of its run directory (``shard``; layout-1 runs kept it in
``shard.json``, read by :func:`fasbench.evaluation.rundir.read_run`): a directory holds one shard.
``fasbench eval-merge OUT DIR…`` (``merge_shards``) checks that the directories are the shards
``0…n-1`` of one run (same ``n``, same configuration in ``run.json``), concatenates their traces
(and ``tasks.jsonl`` / ``skipped.jsonl`` where present), and writes the concatenation of their
summaries, sorted by task id, as ``OUT/summary.parquet``: every row of a summary depends only on its
task and trace, so the merged summary is the summary of the unsharded run (a test checks it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

import polars as pl

from fasbench.evaluation.rundir import load_summary, read_run, write_run
from fasbench.records import append_jsonl, iter_jsonl, repair_jsonl

T = TypeVar("T")


class ShardError(ValueError):
    """A bad shard spec or a set of directories that are not the shards of one run (one line)."""


def parse_shard(spec: str) -> tuple[int, int]:
    """``"i/n"`` → (i, n) with 0 <= i < n."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", spec or "")
    if not m:
        raise ShardError(f"--shard {spec!r}: expected i/n, e.g. 0/4 (shard i of n, 0-based)")
    i, n = int(m.group(1)), int(m.group(2))
    if n < 1 or i >= n:
        raise ShardError(f"--shard {spec!r}: need 0 <= i < n")
    return i, n


def select_shard(tasks: Sequence[T], i: int, n: int) -> list[T]:
    """The tasks of shard ``i`` of ``n``: positions i, i+n, i+2n, …"""
    return list(tasks[i::n])


def shard_record(i: int, n: int, total: int) -> dict:
    """``run.json``'s ``shard``: shard ``i`` of ``n`` of ``total`` tasks (checked on every resume)."""
    return {"index": i, "count": n, "tasks_before_sharding": total}


def _key(row: dict):
    return row.get("task_id", row.get("id"))


def merge_shards(dirs: Sequence[str | Path], out: str | Path):
    """Merge the run directories of shards ``0…n-1`` into ``out``; returns the merged summary."""
    dirs = [Path(d) for d in dirs]
    out = Path(out)
    if not dirs:
        raise ShardError("eval-merge: give the run directories of the shards")
    info, metas = {}, {}
    for d in dirs:
        if not (d / "run.json").exists():
            raise ShardError(f"{d}: no run.json (not a run directory written by `fasbench eval`)")
        metas[d] = read_run(d)
        s = metas[d].shard
        if s is None:
            raise ShardError(f"{d}: not a shard (was it run with `fasbench eval --shard i/n`?)")
        if s["index"] in info:
            raise ShardError(f"{d} and {info[s['index']][0]} are both shard {s['index']}")
        info[s["index"]] = (d, s)
    counts = {(s["count"], s["tasks_before_sharding"]) for _, s in info.values()}
    if len(counts) != 1:
        raise ShardError(f"the directories come from different shardings (count, tasks): {sorted(counts)}")
    n = counts.pop()[0]
    missing = sorted(set(range(n)) - set(info))
    if missing:
        raise ShardError(f"shards {missing} of {n} are missing")
    order = [info[i][0] for i in range(n)]
    configs = [metas[d].config(shard=False) for d in order]
    for d, c in zip(order[1:], configs[1:]):
        if c != configs[0]:
            diff = {k: (configs[0][k], c[k]) for k in c if c[k] != configs[0][k]}
            raise ShardError(f"{d} was run with another configuration than {order[0]}: {diff}")
    for d in order:
        if not (d / "summary.parquet").exists():
            raise ShardError(f"{d}: no summary.parquet (the shard's run has not finished)")
    if out.resolve() in {d.resolve() for d in order}:
        raise ShardError("eval-merge: OUT must be a new directory, not one of the shards")
    if (out / "traces.jsonl").exists() or (out / "summary.parquet").exists():
        raise ShardError(f"{out} already holds a run; choose a new directory")
    out.mkdir(parents=True, exist_ok=True)
    merged = metas[order[0]]
    merged.shard, merged.tasks = None, None  # the merge is the whole run (its tasks: recorded by a resume)
    write_run(out, merged)
    for name in ("traces.jsonl", "tasks.jsonl", "skipped.jsonl"):
        seen: set[str] = set()
        for d in order:
            if (d / name).exists():
                repair_jsonl(d / name)
                rows = [r for r in iter_jsonl(d / name) if _key(r) is None or _key(r) not in seen]
                seen.update(_key(r) for r in rows)
                append_jsonl(out / name, rows)
    frames = [load_summary(d) for d in order]
    df = (
        pl.concat([f for f in frames if f.height], how="diagonal_relaxed")
        if any(f.height for f in frames)
        else frames[0]
    )
    if df.height:
        dup = df["task_id"].is_duplicated().sum()
        if dup:
            raise ShardError(
                f"{dup} summary rows share a task id across shards (were the shards run on different task lists?)"
            )
        df = df.sort("task_id")
    df.write_parquet(out / "summary.parquet")
    (out / "shards.json").write_text(
        json.dumps({"count": n, "dirs": [str(d) for d in order]}, indent=1), encoding="utf-8"
    )
    return df
