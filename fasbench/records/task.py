"""Tasks and their gold: what a search should find (``Gold``) for one query on one repository (``Task``)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from fasbench.records.base import TASK_SCHEMA_VERSION, Ranges, check_version, file_ranges
from fasbench.records.fields import check_task
from fasbench.records.jsonl import RecordError, append_jsonl, iter_jsonl


def _entities(value: Any) -> dict[str, list[str]]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, list) for v in value.values()):
        raise RecordError('gold.entities: expected {level: ["path:Qual.name", ...]}')
    return {str(k): [str(x) for x in v] for k, v in value.items()}


def _region(r: Any, where: str) -> list:
    if (
        not isinstance(r, (list, tuple))
        or len(r) != 3
        or not isinstance(r[0], str)
        or not all(isinstance(x, int) and not isinstance(x, bool) for x in r[1:])
    ):
        raise RecordError(f"{where}: each region must be [path, start, end] with integer lines, got {r!r}")
    return [r[0], int(r[1]), int(r[2])]


def _explore(value: Any) -> dict | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise RecordError(f"gold.explore: expected an object, got {type(value).__name__}")
    out: dict[str, list] = {}
    for k in ("core_files", "optional_files", "modified_files"):
        out[k] = [str(p) for p in value.get(k) or []]
    for k in ("core_regions", "optional_regions"):
        out[k] = [_region(r, f"gold.explore.{k}") for r in value.get(k) or []]
    if value.get("count_paths") is not None:
        out["count_paths"] = [str(p) for p in value["count_paths"]]
    whole = value.get("whole_files")
    if whole is not None:
        if not isinstance(whole, dict) or not all(
            isinstance(n, int) and not isinstance(n, bool) for n in whole.values()
        ):
            raise RecordError("gold.explore.whole_files: expected {path: line count on the record's snapshot}")
        out["whole_files"] = {str(p): int(n) for p, n in whole.items()}
    return out


def _context(value: Any) -> dict | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise RecordError(f"gold.context: expected an object, got {type(value).__name__}")
    return {"regions": [_region(r, "gold.context.regions") for r in value.get("regions") or []]}


@dataclass
class Gold:
    """The answer of a search task.

    edited: files the fix changed, with line ranges (empty list = file without line gold).
    viewed: files a reference agent looked at before editing (Relace's hybrid reward), or None.
    source: where the gold came from: "pr" (gold patch), "agent-trace", "git", "manual".
    variants: other line-range labelings of the edited files, e.g. {"hunk": ..., "changed": ...}.
    entities: entity gold on the task's corpus (fasbench.base.entities): {"file"|"module"|"class"|
        "function": ["path:Qual.name", ...], "added": [...]}; {} when not computed.
    explore: read-region gold in SWE-Explore's form (fasbench.scoring.localization), or None:
        {"core_files": [path], "core_regions": [[path, start, end]], "optional_files": [path],
        "optional_regions": [[path, start, end]], "modified_files": [path]}; end -1 = end of file.
        Optional keys: "whole_files" {path: the record's line count} (whole-file reads, written
        ``[path, 1, -1]``) and "count_paths" [path] (the paths whose line counts scoring uses).
    context: ContextBench's gold context (fasbench.scoring.contextbench), or None: {"regions": [[path,
        start, end]]}, its annotated line ranges (files = their paths; blocks = the definitions
        they overlap on the corpus, found when scored).
    All are optional in JSON (records without them load as before).
    """

    edited: dict[str, Ranges]
    viewed: set[str] | None = None
    source: str = "pr"
    variants: dict[str, dict[str, Ranges]] = field(default_factory=dict)
    entities: dict[str, list[str]] = field(default_factory=dict)
    explore: dict[str, list] | None = None
    context: dict[str, list] | None = None

    def to_dict(self) -> dict:
        d = {
            "edited": self.edited,
            "viewed": sorted(self.viewed) if self.viewed is not None else None,
            "source": self.source,
            "variants": self.variants,
        }
        if self.entities:
            d["entities"] = self.entities
        if self.explore is not None:
            d["explore"] = self.explore
        if self.context is not None:
            d["context"] = self.context
        return d

    @classmethod
    def from_dict(cls, d: dict) -> Gold:
        if not isinstance(d, dict):
            raise RecordError(f"gold: expected an object, got {type(d).__name__}")
        if "edited" not in d:
            raise RecordError("gold: missing field 'edited'")
        viewed = d.get("viewed")
        if viewed is not None and not isinstance(viewed, (list, set, tuple)):
            raise RecordError(f"gold.viewed: expected a list of paths or null, got {type(viewed).__name__}")
        variants = d.get("variants") or {}
        return cls(
            edited=file_ranges(d["edited"], "gold.edited"),
            viewed=set(map(str, viewed)) if viewed is not None else None,
            source=str(d.get("source", "pr")),
            variants={k: file_ranges(v, f"gold.variants[{k!r}]") for k, v in variants.items()},
            entities=_entities(d.get("entities")),
            explore=_explore(d.get("explore")),
            context=_context(d.get("context")),
        )

    def with_variant(self, name: str | None) -> Gold:
        """The same gold with its line ranges taken from variant ``name`` (None = as is)."""
        if not name:
            return self
        if name not in self.variants:
            raise RecordError(f"gold has no line-range variant {name!r} (has {sorted(self.variants)})")
        edited = {p: self.variants[name].get(p, []) for p in self.edited}
        return Gold(edited, self.viewed, self.source, self.variants, self.entities, self.explore, self.context)


@dataclass
class Task:
    """One search task: a query over a repository at a commit, with its gold answer."""

    id: str
    query: str
    repo: str
    gold: Gold
    base_commit: str | None = None
    version: str | None = None
    root: str | None = None  # local path of the materialised corpus, when known
    split: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    schema_version: int = TASK_SCHEMA_VERSION

    def to_dict(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["gold"] = self.gold.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict) -> Task:
        if not isinstance(d, dict):
            raise RecordError(f"task: expected an object, got {type(d).__name__}")
        check_version(d, "task", TASK_SCHEMA_VERSION)
        for k in ("id", "query", "repo", "gold"):
            if k not in d:
                raise RecordError(f"task {d.get('id', '?')}: missing field {k!r}")
        known = {f.name for f in fields(cls)}
        kw = {k: v for k, v in d.items() if k in known}
        try:
            kw["gold"] = Gold.from_dict(d["gold"])
        except (TypeError, AttributeError, ValueError) as e:  # a field of the wrong shape inside the gold
            if isinstance(e, RecordError):
                raise
            raise RecordError(
                f"task {d.get('id', '?')!r}: gold: a field of the wrong type ({type(e).__name__})"
            ) from None
        kw["schema_version"] = TASK_SCHEMA_VERSION
        if not isinstance(kw.get("meta", {}), dict):
            raise RecordError(f"task {d.get('id', '?')!r}: meta: expected an object")
        return check_task(cls(**kw))  # the fields from outside: fasbench.records.fields


def read_tasks(path: str | os.PathLike, skipped: list[dict] | None = None) -> list[Task]:
    """The tasks of a Task JSONL file, each checked at the boundary (``Task.from_dict``). A bad
    record raises :class:`RecordError` naming it, or, when ``skipped`` is a list, is appended to it
    as ``{"record": N, "id", "reason"}`` (one line) and the other records are read."""
    out = []
    for i, d in enumerate(iter_jsonl(path)):
        try:
            out.append(Task.from_dict(d))
        except RecordError as e:
            if skipped is None:
                raise RecordError(f"{path}: record {i + 1}: {e}") from e
            rid = d.get("id") if isinstance(d, dict) and isinstance(d.get("id"), str) else None
            skipped.append(
                {"record": i + 1, "id": rid, "reason": str(e).splitlines()[0][:300] if str(e) else "bad record"}
            )
    return out


def write_tasks(path: str | os.PathLike, tasks: Iterable[Task]) -> None:
    path = Path(path)
    if path.exists():
        path.unlink()
    append_jsonl(path, tasks)
