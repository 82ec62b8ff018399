"""Versioned, JSON-serialisable records shared by every part of the workbench.

Line ranges are 1-based and inclusive: ``[start, end]``. Paths are relative to the
workspace root, with ``/`` separators. Every record round-trips through
``to_dict``/``from_dict``; traces are stored one episode per JSONL line.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Iterable

# the records' JSONL I/O and their error, re-exported: `from fasbench.records import append_jsonl` is the API
from fasbench.jsonl import RecordError, append_jsonl, iter_jsonl, repair_jsonl

__all__ = ["RecordError", "append_jsonl", "iter_jsonl", "repair_jsonl"]  # plus the names defined below

# 2: a Trace records every message the policy saw (Turn.notes, Trace.tail_notes); 1: the harness's
# notes were only hinted at by meta["final_note_turn"] (see ``Trace.to_messages`` and ``harness.restore_notes``)
SCHEMA_VERSION = 2

Ranges = list[list[int]]  # [[start, end], ...], 1-based inclusive


def _check_version(d: dict, kind: str) -> None:
    v = d.get("schema_version", SCHEMA_VERSION)
    if v > SCHEMA_VERSION:
        raise RecordError(f"{kind}: schema_version {v} is newer than this fasbench ({SCHEMA_VERSION})")


def _ranges(value: Any, where: str) -> Ranges:
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


def _file_ranges(value: Any, where: str) -> dict[str, Ranges]:
    if value is None:
        return {}
    if isinstance(value, list):  # a bare list of paths: files without line gold
        return {str(p): [] for p in value}
    if not isinstance(value, dict):
        raise RecordError(f"{where}: expected {{path: [[start, end], ...]}}, got {type(value).__name__}")
    return {str(p): _ranges(r, f"{where}[{p!r}]") for p, r in value.items()}


def _entities(value: Any) -> dict[str, list[str]]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, list) for v in value.values()):
        raise RecordError("gold.entities: expected {level: [\"path:Qual.name\", ...]}")
    return {str(k): [str(x) for x in v] for k, v in value.items()}


def _region(r: Any, where: str) -> list:
    if (not isinstance(r, (list, tuple)) or len(r) != 3 or not isinstance(r[0], str)
            or not all(isinstance(x, int) and not isinstance(x, bool) for x in r[1:])):
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
    return out


@dataclass
class Gold:
    """The answer of a search task.

    edited: files the fix changed, with line ranges (empty list = file without line gold).
    viewed: files a reference agent looked at before editing (Relace's hybrid reward), or None.
    source: where the gold came from: "pr" (gold patch), "agent-trace", "git", "manual".
    variants: other line-range labelings of the edited files, e.g. {"hunk": ..., "changed": ...}.
    entities: entity gold on the task's corpus (fasbench.entities): {"file"|"module"|"class"|
        "function": ["path:Qual.name", ...], "added": [...]}; {} when not computed.
    explore: read-region gold in SWE-Explore's form (fasbench.localization), or None:
        {"core_files": [path], "core_regions": [[path, start, end]], "optional_files": [path],
        "optional_regions": [[path, start, end]], "modified_files": [path]}; end -1 = end of file.
    Both are optional in JSON (records without them load as before).
    """

    edited: dict[str, Ranges]
    viewed: set[str] | None = None
    source: str = "pr"
    variants: dict[str, dict[str, Ranges]] = field(default_factory=dict)
    entities: dict[str, list[str]] = field(default_factory=dict)
    explore: dict[str, list] | None = None

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
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Gold":
        if not isinstance(d, dict):
            raise RecordError(f"gold: expected an object, got {type(d).__name__}")
        if "edited" not in d:
            raise RecordError("gold: missing field 'edited'")
        viewed = d.get("viewed")
        if viewed is not None and not isinstance(viewed, (list, set, tuple)):
            raise RecordError(f"gold.viewed: expected a list of paths or null, got {type(viewed).__name__}")
        variants = d.get("variants") or {}
        return cls(
            edited=_file_ranges(d["edited"], "gold.edited"),
            viewed=set(map(str, viewed)) if viewed is not None else None,
            source=str(d.get("source", "pr")),
            variants={k: _file_ranges(v, f"gold.variants[{k!r}]") for k, v in variants.items()},
            entities=_entities(d.get("entities")),
            explore=_explore(d.get("explore")),
        )

    def with_variant(self, name: str | None) -> "Gold":
        """The same gold with its line ranges taken from variant ``name`` (None = as is)."""
        if not name:
            return self
        if name not in self.variants:
            raise RecordError(f"gold has no line-range variant {name!r} (has {sorted(self.variants)})")
        edited = {p: self.variants[name].get(p, []) for p in self.edited}
        return Gold(edited, self.viewed, self.source, self.variants, self.entities, self.explore)


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
    schema_version: int = SCHEMA_VERSION

    def to_dict(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["gold"] = self.gold.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Task":
        if not isinstance(d, dict):
            raise RecordError(f"task: expected an object, got {type(d).__name__}")
        _check_version(d, "task")
        for k in ("id", "query", "repo", "gold"):
            if k not in d:
                raise RecordError(f"task {d.get('id', '?')}: missing field {k!r}")
        known = {f.name for f in fields(cls)}
        kw = {k: v for k, v in d.items() if k in known}
        kw["gold"] = Gold.from_dict(d["gold"])
        kw["schema_version"] = SCHEMA_VERSION
        return cls(**kw)


def parse_arguments(args):
    """Tool-call arguments as a dict when they are (a JSON string of) an object; anything else
    is kept as given, so that the harness can tell the model its arguments were malformed."""
    if isinstance(args, str):
        try:
            parsed = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError:
            return args
        return parsed if isinstance(parsed, dict) else args
    return args


@dataclass
class ToolCall:
    """A tool call as the model emitted it. ``arguments`` is a dict, or the raw string when it
    was not valid JSON (the harness answers that with an error observation)."""

    id: str
    name: str
    arguments: dict[str, Any] | str

    @classmethod
    def from_dict(cls, d: dict) -> "ToolCall":
        return cls(id=str(d.get("id", "")), name=str(d.get("name", "")), arguments=d.get("arguments", {}))

    def arguments_json(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


@dataclass
class ToolResult:
    call_id: str
    output: str
    is_error: bool = False
    started_at: float | None = None
    ended_at: float | None = None

    @property
    def duration(self) -> float:
        if self.started_at is None or self.ended_at is None:
            return 0.0
        return self.ended_at - self.started_at

    @classmethod
    def from_dict(cls, d: dict) -> "ToolResult":
        return cls(**{k: d[k] for k in ("call_id", "output", "is_error", "started_at", "ended_at") if k in d})


@dataclass
class Reply:
    """What a policy returns for one turn: assistant text and zero or more tool calls."""

    text: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    requests: list[dict] = field(default_factory=list)  # one record per HTTP attempt (remote policies)


@dataclass
class Turn:
    """One assistant turn and the observations of its (concurrently executed) calls."""

    index: int
    text: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    results: list[ToolResult] = field(default_factory=list)
    # the messages the harness put in the chat after the previous turn's results and before this
    # reply (the no-call reminder, the last-turn note), exactly as the policy saw them
    notes: list[dict] = field(default_factory=list)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    model_started_at: float | None = None
    model_ended_at: float | None = None
    tools_started_at: float | None = None
    tools_ended_at: float | None = None
    # one record per model-server attempt of this turn: attempt, status, error, started_at, latency_s,
    # prompt_tokens, completion_tokens (empty for local policies; absent in older traces)
    requests: list[dict] = field(default_factory=list)

    @property
    def model_time(self) -> float:
        if self.model_started_at is None or self.model_ended_at is None:
            return 0.0
        return self.model_ended_at - self.model_started_at

    @property
    def tool_time(self) -> float:
        if self.tools_started_at is None or self.tools_ended_at is None:
            return 0.0
        return self.tools_ended_at - self.tools_started_at

    @classmethod
    def from_dict(cls, d: dict) -> "Turn":
        known = {f.name for f in fields(cls)}
        kw = {k: v for k, v in d.items() if k in known}
        kw["calls"] = [ToolCall.from_dict(c) for c in d.get("calls", [])]
        kw["results"] = [ToolResult.from_dict(r) for r in d.get("results", [])]
        return cls(**kw)


@dataclass
class Report:
    """The searcher's answer: files with line ranges, and an explanation."""

    files: dict[str, Ranges] = field(default_factory=dict)
    explanation: str = ""
    confidence: float | None = None  # optional self-confidence in [0, 1] (budget-aware best-of-N feature)

    def to_dict(self) -> dict:
        d = {"files": self.files, "explanation": self.explanation}
        if self.confidence is not None:
            d["confidence"] = self.confidence
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Report":
        if not isinstance(d, dict):
            raise RecordError(f"report: expected an object, got {type(d).__name__}")
        return cls(files=_file_ranges(d.get("files"), "report.files"), explanation=str(d.get("explanation", "")),
                   confidence=parse_confidence(d.get("confidence")))


def parse_confidence(v) -> float | None:
    """A report's optional self-confidence: a number (or numeric string, or a percentage) in [0, 1];
    anything else is ``None`` (a model's malformed confidence must not void its report)."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, str):
        t = v.strip().rstrip("%")
        try:
            x = float(t) / (100.0 if v.strip().endswith("%") else 1.0)
        except ValueError:
            return None
    elif isinstance(v, (int, float)):
        x = float(v)
    else:
        return None
    if x != x or x < 0:
        return None
    if 1 < x <= 100:  # "80" meant as a percentage
        x /= 100.0
    return x if x <= 1 else None


STOP_REASONS = ("reported", "max_turns", "policy_error")


@dataclass
class Trace:
    """One episode of a search policy on a task."""

    task_id: str
    policy: str
    toolset: str
    turns: list[Turn] = field(default_factory=list)
    report: Report | None = None
    stop_reason: str = "reported"
    started_at: float | None = None
    ended_at: float | None = None
    prompt: list[dict] = field(default_factory=list)  # the messages before the first turn
    # notes the harness added after the last recorded turn (seen by a policy call that then failed)
    tail_notes: list[dict] = field(default_factory=list)
    error: str | None = None
    trace_id: str = field(default_factory=lambda: uuid.uuid4().hex[:16])
    meta: dict[str, Any] = field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION

    @property
    def n_turns(self) -> int:
        return len(self.turns)

    @property
    def n_calls(self) -> int:
        return sum(len(t.calls) for t in self.turns)

    @property
    def wall_time(self) -> float:
        if self.started_at is None or self.ended_at is None:
            return 0.0
        return self.ended_at - self.started_at

    def to_dict(self) -> dict:
        d = asdict(self)
        d["report"] = self.report.to_dict() if self.report is not None else None
        for t in d["turns"]:  # absent when empty: a trace without requests or notes keeps its old JSON
            for k in ("requests", "notes"):
                if not t.get(k):
                    t.pop(k, None)
        if not d["tail_notes"]:
            d.pop("tail_notes")
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Trace":
        if not isinstance(d, dict):
            raise RecordError(f"trace: expected an object, got {type(d).__name__}")
        _check_version(d, "trace")
        for k in ("task_id", "policy", "toolset"):
            if k not in d:
                raise RecordError(f"trace: missing field {k!r}")
        known = {f.name for f in fields(cls)}
        kw = {k: v for k, v in d.items() if k in known}
        kw["turns"] = [Turn.from_dict(t) for t in d.get("turns", [])]
        kw["report"] = Report.from_dict(d["report"]) if d.get("report") is not None else None
        kw["schema_version"] = int(d.get("schema_version", 1))  # as written: 1 = notes not recorded
        return cls(**kw)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    def notes_unrecorded(self) -> bool:
        """True for a schema-1 trace in which the harness did add notes the trace does not hold (a
        last-turn note, or a reminder after a turn with neither calls nor answer):
        ``harness.restore_notes`` puts them back."""
        if self.schema_version >= 2:
            return False
        last = len(self.turns) - 1
        return self.meta.get("final_note_turn") is not None or any(
            not t.calls and (i < last or self.stop_reason == "policy_error") for i, t in enumerate(self.turns))

    def to_messages(self, include_prompt: bool = True, last_results: bool | None = None) -> list[dict]:
        """The conversation the policy saw, as OpenAI-style chat messages: the prompt, then per turn
        the harness's notes, the assistant message (with ``tool_calls``) and one ``tool`` message per
        result in call order. It ends with the policy's last reply: the results of the last turn
        (and notes after it) were never shown to it, unless a later policy call failed
        (``stop_reason == "policy_error"``); ``last_results=True``/``False`` overrides. The harness
        builds each turn's chat from this method, so it is the chat by construction."""
        if self.notes_unrecorded():
            raise RecordError(f"trace {self.trace_id}: written by schema 1, which did not record the harness's "
                              "notes; use fasbench.harness.restore_notes(trace) first")
        if last_results is None:
            last_results = self.stop_reason == "policy_error"
        msgs = [dict(m) for m in self.prompt] if include_prompt else []
        for i, t in enumerate(self.turns):
            msgs.extend(dict(m) for m in t.notes)
            tm = turn_messages(t)
            msgs.extend(tm if last_results or i < len(self.turns) - 1 else tm[:1])
        if last_results:
            msgs.extend(dict(m) for m in self.tail_notes)
        return msgs


def turn_messages(turn: Turn) -> list[dict]:
    """The chat messages of one turn: the assistant message, then its tool results."""
    msg: dict[str, Any] = {"role": "assistant", "content": turn.text or ""}
    if turn.calls:
        msg["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments_json()}}
            for c in turn.calls
        ]
    out = [msg]
    names = {c.id: c.name for c in turn.calls}
    for r in turn.results:
        out.append({"role": "tool", "tool_call_id": r.call_id, "name": names.get(r.call_id, ""), "content": r.output})
    return out


# ---------------------------------------------------------------- JSONL I/O

def read_traces(path: str | os.PathLike) -> list[Trace]:
    return [Trace.from_dict(d) for d in iter_jsonl(path)]


def read_tasks(path: str | os.PathLike) -> list[Task]:
    out = []
    for i, d in enumerate(iter_jsonl(path)):
        try:
            out.append(Task.from_dict(d))
        except RecordError as e:
            raise RecordError(f"{path}: record {i + 1}: {e}") from e
    return out


def write_tasks(path: str | os.PathLike, tasks: Iterable[Task]) -> None:
    path = Path(path)
    if path.exists():
        path.unlink()
    append_jsonl(path, tasks)


def now() -> float:
    return time.time()
