"""Build the shipped task files ``data/tasks/<source>.jsonl.gz`` and the offline-corpus manifest
``data/tasks/offline_manifest.jsonl.gz`` (one row per SWE-bench instance of Lite ∪ Verified, and
one per agent-trace task: id, corpus release, located, status or drop reason)."""

from __future__ import annotations

import gzip
import json
from collections import Counter

from fasbench.base.paths import data_dir
from fasbench.data import SOURCES, build_tasks, tasks_path
from fasbench.data.agent_traces import build as build_traces
from fasbench.data.corpus import materialize_many
from fasbench.data.splits import assign


def _write_gz(path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r.to_dict() if hasattr(r, "to_dict") else r, ensure_ascii=False) + "\n")


def ship(corpora: bool = False):
    """Yield progress lines while writing the files."""
    built = {}
    for s in SOURCES:
        if s == "agent-traces":
            built[s], dropped = build_traces()
            assign(built[s])
        else:
            built[s] = build_tasks(s)
        _write_gz(tasks_path(s), built[s])
        yield f"{s}: {len(built[s])} tasks -> {tasks_path(s)}"
    _write_gz(data_dir() / "tasks" / "agent-traces_dropped.jsonl.gz", dropped)
    yield f"agent-traces dropped: {dict(Counter(d['reason'] for d in dropped))}"
    if not corpora:
        return
    union = {t.id: t for t in built["swebench-verified"]}
    union.update({t.id: t for t in built["swebench-lite"]})
    todo = sorted(union.values(), key=lambda t: (t.repo, t.version or "", t.id)) + built["agent-traces"]
    _, rows = materialize_many(todo)
    _write_gz(data_dir() / "tasks" / "offline_manifest.jsonl.gz", rows)
    yield f"offline: {sum(r['located'] for r in rows)}/{len(rows)} located; " + str(
        dict(Counter(r["reason"] for r in rows if not r["located"]))
    )
