"""One episode: tool calls, their results and what they showed, turns, the report, and the
``Trace`` that records every message the policy saw (``Trace.to_messages``)."""

from __future__ import annotations

import json
import os
import time
import uuid
import warnings
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from fasbench.records.base import SCHEMA_VERSION, Ranges, check_version, file_ranges
from fasbench.records.jsonl import RecordError, iter_jsonl


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


# The types of a trace's scalar fields, checked where a trace enters (Trace/Turn/ToolResult.from_dict):
# a field of another type (a ``policy`` list, a ``started_at`` string, an ``output`` number) is a
# RecordError naming it, so that no reader downstream meets it (iter_traces skips that trace).
_KINDS = {
    "str": (lambda v: isinstance(v, str), "a string"),
    "str?": (lambda v: v is None or isinstance(v, str), "a string or null"),
    "int?": (lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool)), "an integer or null"),
    "int": (lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer"),
    "num?": (
        lambda v: (
            v is None or (isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and abs(v) != float("inf"))
        ),
        "a finite number or null",
    ),
    "bool": (lambda v: isinstance(v, bool), "true or false"),
    "dict": (lambda v: isinstance(v, dict), "an object"),
    "dicts": (lambda v: isinstance(v, list) and all(isinstance(x, dict) for x in v), "a list of objects"),
}


def check_types(kw: dict, spec: dict[str, str], where: str) -> dict:
    """``kw`` when each of its fields named in ``spec`` is of its kind (:data:`_KINDS`), else RecordError."""
    for k, kind in spec.items():
        if k in kw:
            ok, what = _KINDS[kind]
            if not ok(kw[k]):
                raise RecordError(f"{where}: {k} must be {what}, got {type(kw[k]).__name__}")
    return kw


@dataclass
class ToolCall:
    """A tool call as the model emitted it. ``arguments`` is a dict, or the raw string when it
    was not valid JSON (the harness answers that with an error observation)."""

    id: str
    name: str
    arguments: dict[str, Any] | str

    def __post_init__(self):  # a model's call named null (or 3) is a call of an unknown tool, never a crash
        self.id = self.id if isinstance(self.id, str) else "" if self.id is None else str(self.id)
        self.name = self.name if isinstance(self.name, str) else "" if self.name is None else str(self.name)

    @classmethod
    def from_dict(cls, d: dict) -> ToolCall:
        if not isinstance(d, dict):
            raise RecordError(f"call: expected an object, got {type(d).__name__}")
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
        return {
            "paths": list(self.paths),
            "ranges": {p: [list(r) for r in rs] for p, rs in self.ranges.items()},
            "hits": [[str(p), int(n)] for p, n in self.hits],
        }

    @classmethod
    def from_dict(cls, d: dict) -> Shown:
        if not isinstance(d, dict):
            raise RecordError(f"shown: expected an object, got {type(d).__name__}")
        paths, hits = d.get("paths") or [], d.get("hits") or []
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            raise RecordError("shown.paths: expected a list of strings")
        if not isinstance(hits, list) or not all(
            isinstance(h, list)
            and len(h) == 2
            and isinstance(h[0], str)
            and isinstance(h[1], int)
            and not isinstance(h[1], bool)
            for h in hits
        ):
            raise RecordError("shown.hits: expected a list of [path, line] pairs")
        return cls(paths=list(paths), ranges=file_ranges(d.get("ranges"), "shown.ranges"), hits=[list(h) for h in hits])


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
    def from_dict(cls, d: dict) -> ToolResult:
        if not isinstance(d, dict):
            raise RecordError(f"result: expected an object, got {type(d).__name__}")
        if "call_id" not in d or "output" not in d:
            raise RecordError("result: call_id and output are required")
        kw = check_types(
            {k: d[k] for k in ("call_id", "output", "is_error", "started_at", "ended_at") if k in d},
            {"call_id": "str", "output": "str", "is_error": "bool", "started_at": "num?", "ended_at": "num?"},
            "result",
        )
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


TURN_TYPES = {
    "index": "int",
    "text": "str?",
    "calls": "dicts",
    "results": "dicts",
    "prompt_tokens": "int?",
    "completion_tokens": "int?",
    "model_started_at": "num?",
    "model_ended_at": "num?",
    "tools_started_at": "num?",
    "tools_ended_at": "num?",
    "requests": "dicts",
    "notes": "dicts",
}


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
    # the messages the harness put in the chat after the previous turn's results and before this
    # reply (the no-call reminder, the last-turn note), exactly as the policy saw them
    notes: list[dict] = field(default_factory=list)

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
    def from_dict(cls, d: dict) -> Turn:
        if not isinstance(d, dict):
            raise RecordError(f"turn: expected an object, got {type(d).__name__}")
        if "index" not in d:
            raise RecordError("turn: index is required")
        known = {f.name for f in fields(cls)}
        kw = check_types({k: v for k, v in d.items() if k in known}, TURN_TYPES, "turn")
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
    def from_dict(cls, d: dict) -> Report:
        if not isinstance(d, dict):
            raise RecordError(f"report: expected an object, got {type(d).__name__}")
        return cls(
            files=file_ranges(d.get("files"), "report.files"),
            explanation=str(d.get("explanation", "")),
            confidence=parse_confidence(d.get("confidence")),
        )


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


TRACE_TYPES = {
    "task_id": "str",
    "policy": "str",
    "toolset": "str",
    "turns": "dicts",
    "stop_reason": "str",
    "started_at": "num?",
    "ended_at": "num?",
    "prompt": "dicts",
    "error": "str?",
    "trace_id": "str",
    "meta": "dict",
    "tail_notes": "dicts",
}
STOP_REASONS = ("reported", "max_turns", "policy_error", "no_answer")  # no_answer: FastContext's loop (harness)


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
    # notes the harness added after the last recorded turn (seen by a policy call that then failed)
    tail_notes: list[dict] = field(default_factory=list)

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
            for r in t["results"]:  # a result of a trace written before Shown existed stays as it was
                if r.get("shown") is None:
                    r.pop("shown", None)
        if not d["tail_notes"]:
            d.pop("tail_notes")
        return d

    @classmethod
    def from_dict(cls, d: dict) -> Trace:
        if not isinstance(d, dict):
            raise RecordError(f"trace: expected an object, got {type(d).__name__}")
        check_version(d, "trace")
        for k in ("task_id", "policy", "toolset"):
            if k not in d:
                raise RecordError(f"trace: missing field {k!r}")
        known = {f.name for f in fields(cls)}
        kw = check_types({k: v for k, v in d.items() if k in known}, TRACE_TYPES, "trace")
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
            not t.calls and (i < last or self.stop_reason == "policy_error") for i, t in enumerate(self.turns)
        )

    def to_messages(self, include_prompt: bool = True, last_results: bool | None = None) -> list[dict]:
        """The conversation the policy saw, as OpenAI-style chat messages: the prompt, then per turn
        the harness's notes, the assistant message (with ``tool_calls``) and one ``tool`` message per
        result in call order. It ends with the policy's last reply: the results of the last turn
        (and notes after it) were never shown to it, unless a later policy call failed
        (``stop_reason == "policy_error"``); ``last_results=True``/``False`` overrides. The harness
        builds each turn's chat from this method, so it is the chat by construction."""
        if self.notes_unrecorded():
            raise RecordError(
                f"trace {self.trace_id}: written by schema 1, which did not record the harness's "
                "notes; use fasbench.harness.restore_notes(trace) first"
            )
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


def iter_traces(path: str | os.PathLike) -> Iterator[Trace]:
    """The traces of a JSONL file; a line that is no trace (``turns`` a string, a field of the wrong
    type, ...) is skipped with a one-line warning naming it and why, and the file goes on."""
    for i, d in enumerate(iter_jsonl(path), 1):
        try:
            yield Trace.from_dict(d)
        except (RecordError, ValueError, TypeError, AttributeError, KeyError, IndexError, RecursionError) as e:
            warnings.warn(f"{path}: trace {i} skipped (not a trace: {type(e).__name__}: {str(e)[:200]})", stacklevel=2)


def read_traces(path: str | os.PathLike) -> list[Trace]:
    return list(iter_traces(path))


def now() -> float:
    return time.time()
