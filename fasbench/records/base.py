"""What every record shares: the schema version and the validation of line ranges."""

from __future__ import annotations

from typing import Any

from fasbench.records.jsonl import RecordError

# Each record kind has its own schema version. Traces: 2 = a Trace records every message the policy
# saw (Turn.notes, Trace.tail_notes); 1 = the harness's notes were only hinted at by
# meta["final_note_turn"] (see ``Trace.to_messages`` and ``harness.restore_notes``). Tasks: 1.
SCHEMA_VERSION = 2  # traces
TASK_SCHEMA_VERSION = 1

Ranges = list[list[int]]  # [[start, end], ...], 1-based inclusive


def check_version(d: dict, kind: str, current: int = SCHEMA_VERSION) -> None:
    v = d.get("schema_version", current)
    if isinstance(v, bool) or not isinstance(v, int):
        raise RecordError(f"{kind}: schema_version must be an integer, got {type(v).__name__}")
    if v > current:
        raise RecordError(f"{kind}: schema_version {v} is newer than this fasbench ({current})")


def parse_ranges(value: Any, where: str) -> Ranges:
    if value is None:
        return []
    if not isinstance(value, list):
        raise RecordError(f"{where}: expected a list of [start, end] pairs, got {type(value).__name__}")
    out = []
    for r in value:
        if (
            not isinstance(r, (list, tuple))
            or len(r) != 2
            or not all(isinstance(x, int) and not isinstance(x, bool) for x in r)
        ):
            raise RecordError(f"{where}: each range must be [start, end] with integers, got {r!r}")
        out.append([int(r[0]), int(r[1])])
    return out


def file_ranges(value: Any, where: str) -> dict[str, Ranges]:
    if value is None:
        return {}
    if isinstance(value, list):  # a bare list of paths: files without line gold
        return {str(p): [] for p in value}
    if not isinstance(value, dict):
        raise RecordError(f"{where}: expected {{path: [[start, end], ...]}}, got {type(value).__name__}")
    return {str(p): parse_ranges(r, f"{where}[{p!r}]") for p, r in value.items()}
