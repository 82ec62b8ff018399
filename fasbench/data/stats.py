"""Frames for the statistics of the task sets (notebooks/02_tasks.ipynb)."""

from __future__ import annotations

import csv
import gzip
import re

import polars as pl

from fasbench.base.lines import file_lines
from fasbench.data.locations import find_data
from fasbench.records import Task


def _n_lines(ranges_by_file: dict) -> int:
    return sum(e - s + 1 for rs in ranges_by_file.values() for s, e in rs)


def names_file(query: str, path: str) -> str:
    """How the query names ``path``: ``path`` (the relative path or its dotted module), ``basename``
    (the file name, e.g. ``validators.py``), ``stem`` (the module name as a word, ≥ 4 letters, not
    ``__init__``), else ``none``."""
    q = query
    mod = path[:-3].replace("/", ".") if path.endswith(".py") else None
    if path in q or (mod and mod in q):
        return "path"
    base = path.rsplit("/", 1)[-1]
    if re.search(rf"(?<![\w.]){re.escape(base)}\b", q):
        return "basename"
    stem = base.rsplit(".", 1)[0]
    if stem != "__init__" and len(stem) >= 4 and re.search(rf"\b{re.escape(stem)}\b", q):
        return "stem"
    return "none"


_RANK = {"path": 3, "basename": 2, "stem": 1, "none": 0}


def task_frame(tasks: list[Task], source: str) -> pl.DataFrame:
    """One row per task: repo, split, sizes of the gold, and whether the query names a gold file."""
    rows = []
    for t in tasks:
        line_files = [p for p, r in t.gold.edited.items() if r]
        named = max((names_file(t.query, p) for p in t.gold.edited), key=_RANK.get, default="none")
        rows.append(
            {
                "source": source,
                "id": t.id,
                "instance_id": t.meta.get("instance_id", t.id),
                "repo": t.repo,
                "version": t.version,
                "split": t.split,
                "difficulty": t.meta.get("difficulty"),
                "n_files": len(t.gold.edited),
                "n_created": len(t.gold.edited) - len(line_files),
                "lines_hunk": _n_lines(t.gold.variants.get("hunk", t.gold.edited)),
                "lines_changed": _n_lines(t.gold.variants.get("changed", {})),
                "n_viewed": len(t.gold.viewed) if t.gold.viewed is not None else None,
                "mean_depth": sum(p.count("/") + 1 for p in t.gold.edited) / max(len(t.gold.edited), 1),
                "query_names_gold": named,
            }
        )
    return pl.DataFrame(rows)


def gold_file_frame(tasks: list[Task]) -> pl.DataFrame:
    """One row per (materialised task, gold file): depth and size in lines of the file in its corpus."""
    rows = []
    for t in tasks:
        if not t.root:
            continue
        for p, rs in t.gold.edited.items():
            n = file_lines(t.root, p) if rs else None  # fasbench.base.contain's rule: inside the corpus, bounded
            if n is None:
                continue
            rows.append(
                {
                    "id": t.id,
                    "repo": t.repo,
                    "path": p,
                    "depth": p.count("/") + 1,
                    "file_lines": n,
                    "first_gold_line": min(s for s, _ in rs),
                    "gold_lines": sum(e - s + 1 for s, e in rs),
                }
            )
    return pl.DataFrame(rows)


def agentless_frame() -> pl.DataFrame:
    """Agentless' manual classification of SWE-bench Lite (where the issue text gives the location)."""
    with gzip.open(find_data("swebench/agentless_lite_classifications.csv.gz"), "rt", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return pl.DataFrame(rows).rename({"instance_id": "id"})


def manifest_frame(rows: list[dict]) -> pl.DataFrame:
    """Corpus manifest rows -> frame with an ``outcome`` column (located status or drop reason)."""
    df = pl.DataFrame(rows, infer_schema_length=None)
    return df.with_columns(
        pl.when(pl.col("located")).then(pl.col("status")).otherwise(pl.col("reason")).alias("outcome")
    )
