"""The TRL environment of a GRPO run: the harness's tools as methods, and the episode of a rollout.

The environment's public methods ARE the harness tools: each is generated from the tool set's
:class:`~fasbench.tools.base.Tool` (name, Google-style docstring and type hints derived from its JSON
schema) and calls ``Toolset.execute``, so a call's observation is exactly what evaluation returns
(same sandbox, validation, truncation, error text).

Per rollout the episode is rebuilt from the completion messages exactly as ``run_episode`` reads
it (one assistant message = one turn; the first turn holding a report ends it):
:meth:`HarnessEnv._episode`. :meth:`HarnessEnv._final_note` is the harness's last-turn note, which
:class:`fasbench.rl.train.HarnessGRPOTrainer` appends after the tool results of the turn before the
last (see :mod:`fasbench.rl` for where TRL's loop differs from ``run_episode``).
"""

from __future__ import annotations

import inspect
import json
import tempfile
import time
from pathlib import Path
from typing import Any, Literal, Optional

from fasbench.harness import Limits, turn_budget
from fasbench.records import Task, ToolCall, ToolResult, Trace, Turn
from fasbench.scoring.reward import Score
from fasbench.tools import make_toolset
from fasbench.tools.base import Tool, too_many_calls
from fasbench.tools.contract import IdLedger, answer_cites, final_note_addendum

_JSON_TYPES = {"string": str, "integer": int, "number": float, "boolean": bool, "null": type(None)}


def _hint(schema: dict) -> Any:
    """A Python type hint whose ``transformers.get_json_schema`` rendering is the JSON schema's type."""
    if "enum" in schema:
        return Literal[tuple(schema["enum"])]
    typ = schema.get("type")
    if isinstance(typ, list):
        hints = [_hint({**schema, "type": t}) for t in typ if t != "null"]
        h = hints[0]
        for x in hints[1:]:
            h = h | x
        return Optional[h] if "null" in typ else h  # noqa: UP045 (a runtime hint: typing.Optional, as written before)
    if typ == "array" and isinstance(schema.get("prefixItems"), list):  # a fixed-length tuple
        return tuple[tuple(_hint(x) for x in schema["prefixItems"])]
    if typ == "array":
        return list[_hint(schema["items"])] if isinstance(schema.get("items"), dict) else list
    if typ == "object":
        ap = schema.get("additionalProperties")
        return dict[str, _hint(ap)] if isinstance(ap, dict) else dict
    if typ in _JSON_TYPES:
        return _JSON_TYPES[typ]
    return Any


def _docstring(tool: Tool) -> str:
    props = tool.parameters.get("properties", {})
    lines = [tool.description.strip(), "", "Args:"]
    for name, s in props.items():
        if name.isidentifier():
            lines.append(f"    {name}: {' '.join(str(s.get('description', name)).split())}")
    return "\n".join(lines)


def _tool_method(tool: Tool):
    """An environment method for ``tool``: its signature and docstring mirror the tool's schema
    (parameters that are not Python identifiers, like Grep's ``-i``, stay reachable through
    ``**arguments``), and its body runs the harness's ``Toolset.execute``."""
    name = tool.name

    def method(self, **arguments):
        return self._call(name, arguments)

    shown = tool.schema()["function"]["parameters"]  # what the model sees (the published schema)
    props = shown.get("properties", {})
    required = set(shown.get("required", []))
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    ann = {}
    for p, s in props.items():
        if not p.isidentifier():
            continue
        default = inspect.Parameter.empty if p in required else s.get("default")
        ann[p] = _hint(s)
        params.append(inspect.Parameter(p, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=ann[p]))
    ann["return"] = str
    method.__name__ = method.__qualname__ = name
    method.__doc__ = _docstring(tool)
    method.__annotations__ = ann
    method.__signature__ = inspect.Signature(params, return_annotation=str)
    return method


class HarnessEnv:
    """Base of the generated environment classes; see :func:`environment_class`.

    ``reset(task=...)`` binds the tool set to the task's corpus; each tool method call is one
    harness call, recorded with the turn it belongs to. Private state only (TRL exposes every
    public method as a tool)."""

    _toolset_name: str = "relace"
    _limits: Limits = Limits()

    def __init__(self):
        self._toolset = None
        self._task: Task | None = None
        self._turn = -1
        self._in_turn = 0
        self._log: list[tuple[int, ToolCall, ToolResult]] = []
        self._reported_turn: int | None = None  # the turn whose calls included a valid report
        self._score: Score | None = None
        self._note_turn: int | None = None  # the turn told to stop exploring and answer

    def reset(self, **row) -> None:
        if "task" not in row:
            raise ValueError(f"environment reset: the dataset row has no 'task' column (columns: {sorted(row)})")
        t = row["task"]
        self._task = Task.from_dict(json.loads(t) if isinstance(t, str) else t)
        if not self._task.root or not Path(self._task.root).is_dir():
            raise ValueError(f"task {self._task.id}: corpus root {self._task.root!r} is not a directory")
        self._toolset = make_toolset(self._toolset_name, self._task.root, self._limits.tool)
        self._turn, self._in_turn, self._log, self._reported_turn, self._score = -1, 0, [], None, None
        self._note_turn = None
        self._ledger = IdLedger() if self._limits.report_contract == "ids" else None  # as run_episode
        return None

    # -- called by HarnessGRPOTrainer at every generation: calls after it belong to a new turn
    def _begin_turn(self) -> None:
        self._turn += 1
        self._in_turn = 0

    def _final_note(self) -> str | None:
        """The harness's last-turn note when the turn whose results were just returned is the one
        before the last allowed turn (run_episode appends it as a user message there); None
        otherwise, or once the search has ended with a report."""
        if (
            self._toolset is None
            or self._reported_turn is not None
            or self._turn != turn_budget(self._toolset, self._limits) - 2
        ):
            return None
        self._note_turn = self._turn + 1
        return self._toolset.final_turn_note() + (final_note_addendum() if self._ledger is not None else "")

    def _call(self, name: str, arguments: dict) -> str:
        if self._toolset is None:
            raise RuntimeError("environment used before reset()")
        turn = max(self._turn, 0)
        call = ToolCall(id=f"call_{turn}_{self._in_turn}", name=name, arguments=dict(arguments))
        self._in_turn += 1
        if self._reported_turn is not None and turn > self._reported_turn:  # run_episode would have stopped
            t = time.time()
            res = ToolResult(
                call.id,
                f"Error: the search already ended with {self._toolset.answer_tool}; call {name} was not run",
                True,
                t,
                t,
            )
        elif self._in_turn > self._limits.max_calls_per_turn:
            res = too_many_calls(call, self._limits.max_calls_per_turn)
        else:
            res = self._toolset.execute(call)
            if self._ledger is not None:  # the ids contract: the result lists the IDs of its ranges
                self._ledger.annotate(turn, [res])
        self._log.append((turn, call, res))
        if self._toolset.answer_tool == name and not res.is_error and self._reported_turn is None:
            self._reported_turn = turn
        return res.output

    # -- episode reconstruction, as run_episode reads it
    def _episode(self, completion: list[dict], policy: str = "grpo", prompt: list[dict] | None = None) -> Trace:
        """The harness Trace of this rollout from its prompt and completion messages: each assistant
        message is a turn (its results are the calls this environment ran for that turn), each user
        message the trainer inserted (the last-turn note) is a note of the turn that follows, so
        ``trace.to_messages()`` is the rollout's chat up to the reply that ends the episode."""
        ts, task = self._toolset, self._task
        trace = Trace(
            task_id=task.id,
            policy=policy,
            toolset=ts.name,
            stop_reason="max_turns",
            prompt=[dict(m) for m in prompt or [] if isinstance(m, dict)],
        )
        # The query this rollout's explorer was given (build_dataset's prompt: a FastContext generated query
        # where the task has one), recorded as run_episode records it: the judge is asked about it, as the
        # release's judge is asked about the rollout's own <query> message.
        query, source = ts.episode_query(task)
        trace.meta["query_source"] = source
        if query != task.query:
            trace.meta["query"] = query
        ledger = getattr(self, "_ledger", None)
        if ledger is not None:
            trace.meta.update(report_contract="ids", cite_ids=ledger.ids)
        results_by_turn: dict[int, list[ToolResult]] = {}
        for turn, _, res in self._log:
            results_by_turn.setdefault(turn, []).append(res)
        i, notes = 0, []
        for m in completion:
            if m.get("role") == "user":
                notes.append(dict(m))
            if m.get("role") != "assistant":
                continue
            calls = []
            for k, c in enumerate(m.get("tool_calls") or []):
                fn = c.get("function", c)
                calls.append(
                    ToolCall(id=f"call_{i}_{k}", name=str(fn.get("name", "")), arguments=fn.get("arguments", {}))
                )
            text = m.get("content") or ""
            if not isinstance(text, str):
                text = " ".join(p.get("text", "") for p in text if isinstance(p, dict))
            turn = Turn(index=i, text=text, calls=calls, results=results_by_turn.get(i, []), notes=notes)
            notes = []
            trace.turns.append(turn)
            report = ts.parse_report(text, calls[: self._limits.max_calls_per_turn])  # refused calls never answer
            if report is not None and ledger is not None:  # fasbench renders the paths from the IDs
                report, trace.meta["citation"] = ledger.render(answer_cites(report, text, ts.answer_tool), i, report)
            if report is not None:
                trace.report, trace.stop_reason = report, "reported"
                break
            i += 1
        trace.tail_notes = notes  # a note after the last reply (the rollout ended before another generation)
        trace.meta["tool_errors"] = sum(r.is_error for t in trace.turns for r in t.results)
        if self._note_turn is not None and len(trace.turns) > self._note_turn:  # the note's turn was generated
            trace.meta["final_note_turn"] = self._note_turn
        return trace


def environment_class(toolset: str, limits: Limits) -> type:
    """A :class:`HarnessEnv` subclass whose public methods are the tools of ``toolset``."""
    with tempfile.TemporaryDirectory() as d:
        tools = make_toolset(toolset, d, limits.tool).tools
    ns = {name: _tool_method(tool) for name, tool in tools.items()}
    ns.update(_toolset_name=toolset, _limits=limits, __doc__=f"The {toolset} harness tools as a TRL environment.")
    return type(f"{toolset.capitalize()}HarnessEnv", (HarnessEnv,), ns)


def harness_schemas(toolset: str, limits: Limits) -> list[dict]:
    with tempfile.TemporaryDirectory() as d:
        return make_toolset(toolset, d, limits.tool).schemas
