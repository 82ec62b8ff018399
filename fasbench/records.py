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
import warnings
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Iterable, Iterator

SCHEMA_VERSION = 1

Ranges = list[list[int]]  # [[start, end], ...], 1-based inclusive


class RecordError(ValueError):
    """A record could not be built from the given data; the message says which field."""


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
class Shown:
    """What one tool result showed, beside its text (filled by the tool when it runs; for traces
    written before, ``fasbench.tools.shown`` parses the text). Paths are root-relative.

    - ``paths``: files (and directories, with a trailing ``/``) a listing, glob or find showed;
    - ``ranges``: per file, the 1-based inclusive line ranges of its content shown other than match
      lines (a view; the context lines around search matches);
    - ``hits``: ``[path, line]`` of each search match line shown, in output order."""

    paths: list[str] = field(default_factory=list)
    ranges: dict[str, Ranges] = field(default_factory=dict)
    hits: list[list] = field(default_factory=list)

    def files(self) -> list[str]:
        """Every file the result showed (listed, viewed or matched), first appearance first."""
        out = dict.fromkeys(p for p in self.paths if not p.endswith("/"))
        out.update(dict.fromkeys(self.ranges))
        out.update(dict.fromkeys(p for p, _ in self.hits))
        return list(out)

    def to_dict(self) -> dict:
        return {"paths": list(self.paths), "ranges": {p: [list(r) for r in rs] for p, rs in self.ranges.items()},
                "hits": [[str(p), int(n)] for p, n in self.hits]}

    @classmethod
    def from_dict(cls, d: dict) -> "Shown":
        if not isinstance(d, dict):
            raise RecordError(f"shown: expected an object, got {type(d).__name__}")
        return cls(paths=[str(p) for p in d.get("paths") or []],
                   ranges=_file_ranges(d.get("ranges"), "shown.ranges"),
                   hits=[[str(h[0]), int(h[1])] for h in d.get("hits") or []])


@dataclass
class ToolResult:
    call_id: str
    output: str
    is_error: bool = False
    started_at: float | None = None
    ended_at: float | None = None
    shown: Shown | None = None  # what the output showed (None: not recorded, traces written before)

    @property
    def duration(self) -> float:
        if self.started_at is None or self.ended_at is None:
            return 0.0
        return self.ended_at - self.started_at

    def to_dict(self) -> dict:
        """The JSON object; ``shown`` left out when None, so results without it stay as before."""
        d = {k: getattr(self, k) for k in ("call_id", "output", "is_error", "started_at", "ended_at")}
        if self.shown is not None:
            d["shown"] = self.shown.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "ToolResult":
        kw = {k: d[k] for k in ("call_id", "output", "is_error", "started_at", "ended_at") if k in d}
        if d.get("shown") is not None:
            kw["shown"] = Shown.from_dict(d["shown"])
        return cls(**kw)


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
        for t in d["turns"]:  # local policies make no requests: their JSON stays as before
            if not t.get("requests"):
                t.pop("requests", None)
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
        kw["schema_version"] = SCHEMA_VERSION
        return cls(**kw)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    def to_messages(self, include_prompt: bool = True) -> list[dict]:
        """OpenAI-style chat messages: assistant messages with ``tool_calls``, one ``tool``
        message per result, in call order."""
        msgs = [dict(m) for m in self.prompt] if include_prompt else []
        for t in self.turns:
            msgs.extend(turn_messages(t))
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

def append_jsonl(path: str | os.PathLike, records: Iterable[Any]) -> None:
    """Append records (anything with ``to_dict`` or plain dicts), one per line, flushed and
    fsynced so that a killed run loses at most the line being written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        for r in records:
            d = r.to_dict() if hasattr(r, "to_dict") else r
            f.write(json.dumps(d, ensure_ascii=False) + "\n")
        f.flush()
        os.fsync(f.fileno())


def iter_jsonl(path: str | os.PathLike) -> Iterator[dict]:
    """Yield the JSON objects of a JSONL file (``.gz`` accepted). A truncated last line (a run
    killed mid-write) is skipped with a warning; a corrupt line elsewhere is an error."""
    import gzip

    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    if path.is_dir():
        raise RecordError(f"{path}: is a folder, not a JSONL file")
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            lines = f.readlines()
    except UnicodeDecodeError as e:
        raise RecordError(f"{path}: not UTF-8 text, not a JSONL file ({e.reason} at byte {e.start})") from None
    except (gzip.BadGzipFile, EOFError) as e:
        raise RecordError(f"{path}: corrupt gzip ({e})") from None
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except RecursionError:
            raise RecordError(f"{path}: line {i + 1} is JSON nested too deeply") from None
        except json.JSONDecodeError as e:
            if i == len(lines) - 1 and not line.endswith("\n"):
                warnings.warn(f"{path}: skipping truncated last line {i + 1} ({e})")
                continue
            raise RecordError(f"{path}: line {i + 1} is not valid JSON: {e}") from e


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


def repair_jsonl(path: str | os.PathLike) -> int:
    """Cut a truncated last line off a JSONL file (before resuming appends). Returns bytes cut."""
    path = Path(path)
    if not path.exists():
        return 0
    data = path.read_bytes()
    if not data or data.endswith(b"\n"):
        return 0
    keep = data.rfind(b"\n") + 1
    with open(path, "r+b") as f:
        f.truncate(keep)
    return len(data) - keep


def now() -> float:
    return time.time()
