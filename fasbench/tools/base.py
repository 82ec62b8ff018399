"""The machinery every tool set shares: schemas, argument validation, dispatch, timing.

A tool is a plain function ``fn(ws: Workspace, **arguments) -> str``. It raises
:class:`ToolError` with a message for the model when the call is wrong; the toolset turns
every failure (bad JSON, unknown tool, schema violation, tool error, unexpected exception)
into a :class:`ToolResult` with ``is_error=True``. No exception leaves :meth:`Toolset.execute`.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fasbench.records import Report, Shown, ToolCall, ToolResult
from fasbench.tools.calls import Calls
from fasbench.tools.schema import SchemaError, validate

if TYPE_CHECKING:
    from fasbench.tools.observed import Seen


class ToolError(Exception):
    """A failed tool call; the message is shown to the model as the observation."""


class ToolText(ToolError):
    """A failed tool call whose message is a published tool's own text, shown as is (no ``Error: ``
    prefix): FastContext's released tools answer a bad call with their own sentences."""


#: The protocols a tool set can show the model (ToolLimits.prompt).
PROMPTS = ("published", "compact")


@dataclass
class ToolLimits:
    """Limits applied to every tool call."""

    timeout_s: float = 10.0  # wall-clock limit of one call (subprocesses are killed)
    max_output_chars: int = 20_000  # observations longer than this are cut, with a note (not FastContext:
    # its release has no such cap, Toolset.caps_output)
    max_file_bytes: int = 2_000_000  # files larger than this are not read whole
    max_calls_per_turn: int = 12  # only harness.execute_calls without max_calls reads this; in an episode
    # harness.Limits.max_calls_per_turn rules (run_episode and the RL environment pass that one)
    max_memory_bytes: int = 2 << 30  # address space of each tool subprocess (RLIMIT_AS)
    max_cpu_s: int | None = None  # CPU seconds of each tool subprocess (None: 4 x timeout_s + 1)
    max_read_bytes: int = 64 << 20  # bytes one file view may read (skipping, showing, counting lines)
    # the protocol shown to the model: "published" (the tool set's published prompts and schemas, verbatim)
    # or "compact" (a short system prompt and short tool descriptions for the same tools: the CPU RL
    # miniature's stated deviation, fasbench/tools/compact.py). Not a limit: it rides here because every
    # path that builds a tool set (harness, evaluation, SFT data, RL) passes these ToolLimits.
    prompt: str = "published"

    def __post_init__(self):
        if self.prompt not in PROMPTS:
            raise ValueError(f"tool limits: prompt {self.prompt!r} unknown; choose one of {', '.join(PROMPTS)}")


@dataclass
class Workspace:
    """The sandbox root a tool set works in, with its limits."""

    root: Path
    limits: ToolLimits = field(default_factory=ToolLimits)

    def __post_init__(self):
        self.root = Path(self.root).resolve()
        if not self.root.is_dir():
            raise ValueError(f"workspace root {self.root} is not a directory")


@dataclass
class Tool:
    name: str
    description: str
    parameters: dict  # JSON schema of the arguments object
    fn: Callable[..., str]

    def schema(self) -> dict:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


def cap_output(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit]
    nl = cut.rfind("\n")
    if nl > limit // 2:
        cut = cut[: nl + 1]
    return cut + f"\n[output truncated: {len(text) - len(cut)} more characters; narrow the request]"


class Toolset:
    """A named set of tools bound to one workspace.

    Subclasses (one per published tool set) define ``name``, ``tools``, ``answer_tool`` (the
    tool name that ends the episode, or None when the answer is a text block), ``kinds`` (each
    tool's kind: read, search, list or report), ``shell_tool`` (the tool that runs the ``command``
    argument as a shell command line, or None), ``observe`` (the tool set's one parser of its own
    outputs), ``calls`` (its call shapes), the prompts, ``parse_report`` and ``shown_of``. A class is
    registered by one line of ``fasbench.tools.TOOLSETS``.
    """

    name: str = ""
    answer_tool: str | None = None
    kinds: dict[str, str] = {}
    shell_tool: str | None = None
    # observe(name, args, text) -> Seen: what a successful call's output showed (paths as written, made
    # root-relative); a staticmethod, read by fasbench.tools.seen on traces without a recorded `shown`
    observe: Callable[[str, dict, str], Seen] | None = None
    calls: type[Calls] = Calls  # the call shapes of each kind (fasbench.tools.calls_for)
    # the episode loop (fasbench.harness) and the observation cap; FastContext's release differs in all three
    extra_final_turn: bool = False  # True: the last-turn note comes on an extra turn max_turns + 1
    silent_reply_ends: bool = False  # True: a reply with neither calls nor answer ends the episode
    caps_output: bool = True  # False: no limits.max_output_chars cut (the tools' own limits only)
    prompts: tuple[str, ...] = ("published",)  # the protocols it has (ToolLimits.prompt)

    def __init__(self, root: str | Path, limits: ToolLimits | None = None):
        self.ws = Workspace(Path(root), limits or ToolLimits())
        if self.ws.limits.prompt not in self.prompts:
            raise ValueError(
                f"tool set {self.name}: prompt {self.ws.limits.prompt!r} is not available; it has "
                f"{', '.join(self.prompts)}"
            )
        self.tools: dict[str, Tool] = {t.name: t for t in self.make_tools()}

    # -- to override
    def make_tools(self) -> list[Tool]:
        raise NotImplementedError

    def system_prompt(self, max_turns: int, max_calls: int) -> str:
        raise NotImplementedError

    def user_prompt(self, query: str) -> str:
        raise NotImplementedError

    def final_turn_note(self) -> str:
        raise NotImplementedError

    def parse_report(self, text: str, calls: list[ToolCall]) -> Report | None:
        """The report in an assistant reply, or None when the reply holds none."""
        raise NotImplementedError

    def episode_query(self, task) -> tuple[str, str]:
        """The query the policy is given for ``task`` (a Task), and where it came from."""
        return task.query, "task"

    def shown_of(self, name: str, args: dict, text: str) -> Shown:
        """What the output ``text`` of a successful call showed (the tool set's own parser, with
        paths resolved in this workspace)."""
        return Shown()

    # -- shared
    @property
    def root(self) -> Path:
        return self.ws.root

    @property
    def limits(self) -> ToolLimits:
        return self.ws.limits

    @property
    def schemas(self) -> list[dict]:
        return [t.schema() for t in self.tools.values()]

    def call(self, name: str, arguments: dict | str) -> tuple[str, bool]:
        """Run one call; returns (observation, is_error)."""
        r = self.execute(ToolCall(id="cli", name=name, arguments=arguments))
        return r.output, r.is_error

    def execute(self, call: ToolCall) -> ToolResult:
        start = time.time()
        try:
            out, err = self._dispatch(call), False
        except ToolText as e:
            out, err = str(e), True
        except ToolError as e:
            out, err = f"Error: {e}", True
        except Exception as e:  # a bug in a tool must not end the episode
            out, err = f"Error: {call.name} failed unexpectedly: {type(e).__name__}: {e}", True
        if self.caps_output:
            out = cap_output(out, self.limits.max_output_chars)
        end = time.time()
        shown = Shown()
        if not err:  # what the text the model gets showed, after the cap
            try:
                shown = self.shown_of(call.name, self._arguments(call), out)
            except Exception:  # noqa: BLE001 — a parser bug must not end the episode (tests cover every tool)
                shown = Shown()
        return ToolResult(call_id=call.id, output=out, is_error=err, started_at=start, ended_at=end, shown=shown)

    def _arguments(self, call: ToolCall) -> dict:
        args = call.arguments
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except json.JSONDecodeError as e:
                raise ToolError(f"arguments of {call.name} are not valid JSON ({e.msg} at position {e.pos})") from e
            except RecursionError:
                raise ToolError(f"arguments of {call.name} are nested too deeply to be read") from None
        if not isinstance(args, dict):
            raise ToolError(f"arguments of {call.name} must be a JSON object, got {type(args).__name__}")
        return args

    def _dispatch(self, call: ToolCall) -> str:
        tool = self.tools.get(call.name)
        if tool is None:
            raise ToolError(f"unknown tool {call.name!r}; available tools: {', '.join(self.tools)}")
        args = self._arguments(call)
        for key, value in args.items():  # json reads NaN and Infinity, and JSON schema's "number" takes them
            if isinstance(value, float) and not math.isfinite(value):
                raise ToolError(f"invalid arguments for {call.name} at {key}: {value!r} is not a finite number")
        try:
            validate(args, tool.parameters)
        except SchemaError as e:
            where = "/".join(map(str, e.path))
            raise ToolError(f"invalid arguments for {call.name}{' at ' + where if where else ''}: {e.message}") from e
        except RecursionError:
            raise ToolError(f"arguments of {call.name} are nested too deeply to be checked") from None
        return tool.fn(self.ws, **args)


def too_many_calls(call: ToolCall, limit: int) -> ToolResult:
    t = time.time()
    return ToolResult(
        call_id=call.id,
        output=f"Error: more than {limit} tool calls in one turn; call {call.name} was not run",
        is_error=True,
        started_at=t,
        ended_at=t,
        shown=Shown(),
    )


def obj(properties: dict[str, Any], required: list[str]) -> dict:
    """A JSON schema for an arguments object that allows no unknown keys."""
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}
