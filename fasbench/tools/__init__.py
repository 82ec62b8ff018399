"""Harness tools: the registered tool sets (:data:`TOOLSETS`), each sandboxed to one workspace root.

- ``relace``: view_file, view_directory, grep_search, bash (read-only), report_back (Relace FAS).
- ``fastcontext``: Read, Glob, Grep; the answer is a ``<final_answer>`` block (FastContext, Microsoft's
  release as its models were trained with it).
- ``fastcontext-fork``: the same names and prompts with the fork's fixed Read, Glob, Grep
  (``T0mSIlver/fastcontext`` @058b710).

:data:`TOOLSETS` is the one registry, tool set name → its :class:`~fasbench.tools.base.Toolset` class
as ``module:Class``, imported by :func:`toolset_class` on first use (importing this package imports no
tool set). The class carries everything else: its tools' kinds, its answer tool, its shell tool, its
parser of its own outputs (``observe``) and its call shapes (``calls``). The CLI's help, evaluation,
RL, the replay and the tests' parametrizations read the registry; adding a tool set is one file and
one line here (docs/design.md section 3).

Tool names belong here. Code outside ``fasbench/tools/`` asks about tools by **kind** and reads what
a result showed from its structured record:

- :func:`tool_kind` (``"read"`` | ``"search"`` | ``"list"`` | ``"report"``, :data:`KINDS`),
  :func:`shell_command` (the command line of a call of the tool set's shell tool, for the trajectory
  rubric), :func:`answer_tool`, :func:`tool_names`, :func:`toolset_of` (which tool set a list of schemas is);
- :func:`shown` (a result's :class:`~fasbench.records.Shown`: paths listed, line ranges viewed,
  match lines; parsed from the text for traces written before it was recorded) and
  :func:`observation` (that record with the text of each content line it showed, the call, its kind
  and error flag: a :class:`~fasbench.tools.observed.Seen`, the one observation type that policies,
  the replay and the process measures read; :func:`seen` is the tool set's parse of the text);
- :class:`~fasbench.tools.calls.Calls` (:func:`calls_for`): build a call of a kind (search, read, list,
  find files, report) in a tool set's own names and arguments, for scripted policies.
"""

from __future__ import annotations

import functools
import importlib
import json
from collections.abc import Iterable
from pathlib import Path

from fasbench.records import Shown, ToolCall, ToolResult
from fasbench.tools.base import ToolError, ToolLimits, Toolset
from fasbench.tools.calls import Calls
from fasbench.tools.contract import strip_ids
from fasbench.tools.observed import Seen

#: The one tool set registry: name → its Toolset class as ``module:Class`` (imported on first use).
TOOLSETS: dict[str, str] = {
    "relace": "fasbench.tools.relace:RelaceToolset",
    "fastcontext": "fasbench.tools.fastcontext:FastContextToolset",
    "fastcontext-fork": "fasbench.tools.fastcontext_fork:FastContextForkToolset",
}
KINDS = ("read", "search", "list", "report")

MAIN_AGENT_SHELL = "bash"  # the one tool of the live main agent, mini-swe-agent (fasbench e2e): not a search tool set's


@functools.cache
def _load(ref: str) -> type[Toolset]:
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


def _class_or_none(toolset: str) -> type[Toolset] | None:
    """The registered class of ``toolset`` (imported on first use), None for a name not registered."""
    ref = TOOLSETS.get(toolset) if isinstance(toolset, str) else None
    return _load(ref) if ref is not None else None


def _check(toolset: str) -> type[Toolset]:
    cls = _class_or_none(toolset)
    if cls is None:
        raise ValueError(f"unknown tool set {toolset!r}; choose one of {', '.join(TOOLSETS)}")
    return cls


def toolset_class(name: str) -> type[Toolset]:
    """The class of tool set ``name`` (its schemas and loop flags without a workspace)."""
    return _check(name)


def make_toolset(name: str, root: str | Path, limits: ToolLimits | None = None) -> Toolset:
    """The tool set ``name`` bound to workspace ``root``."""
    return _check(name)(root, limits)


def tool_kind(toolset: str, name: str) -> str | None:
    """The kind of tool ``name`` in ``toolset`` (one of :data:`KINDS`); None for a tool, or a tool set,
    fasbench does not have (a trace of a foreign tool set has no kinds)."""
    cls = _class_or_none(toolset)
    return cls.kinds.get(name) if cls is not None else None


def shell_command(toolset: str, call: ToolCall) -> str | None:
    """The shell command line ``call`` runs when it calls ``toolset``'s shell tool (relace's bash);
    None for any other tool, a tool set without one, or one fasbench does not have. The trajectory
    analysis classifies such a call by its command, as it does an agent's shell action."""
    cls = _class_or_none(toolset)
    if cls is None or cls.shell_tool is None or call.name != cls.shell_tool:
        return None
    cmd = _args(call).get("command")
    return cmd if isinstance(cmd, str) else None


def tool_names(toolset: str | None = None) -> list[str]:
    """The tool names of ``toolset`` in schema order (of every tool set when None, each name once:
    ``fastcontext-fork`` has ``fastcontext``'s names)."""
    sets = [toolset] if toolset is not None else list(TOOLSETS)
    return list(dict.fromkeys(n for ts in sets for n in _check(ts).kinds))


def calls_for(toolset: str) -> Calls:
    """The call builder of ``toolset``: its class's call shapes (a clear error for an unknown one)."""
    if _class_or_none(toolset) is None:
        raise ValueError(f"no call builder for tool set {toolset!r}; choose one of {', '.join(TOOLSETS)}")
    return _check(toolset).calls(toolset)


def answer_tool(toolset: str) -> str | None:
    """The tool whose call is the answer (None when the answer is a text block)."""
    return _check(toolset).answer_tool


def toolset_of(tools: Iterable) -> str | None:
    """Which tool set a list of tool schemas (OpenAI format) or tool names is: the one whose every
    tool is present (``fastcontext`` and ``fastcontext-fork`` share their names: schemas equal to the
    fork's are the fork, names alone ``fastcontext``); None when none is."""
    names, schemas = set(), {}
    for t in tools or []:
        fn = t.get("function", t) if isinstance(t, dict) else None
        name = fn.get("name") if isinstance(fn, dict) else str(t)
        names.add(name)
        if isinstance(fn, dict) and "parameters" in fn:
            schemas[name] = (fn.get("description"), fn.get("parameters"))
    found = [ts for ts in TOOLSETS if set(_check(ts).kinds) <= names]
    for ts in found:
        fns = [t.schema()["function"] for t in _templates(ts)]
        if schemas and all(schemas.get(f["name"]) == (f.get("description"), f.get("parameters")) for f in fns):
            return ts
    return found[0] if found else None


def _templates(toolset: str):
    """The Tool objects of ``toolset`` (schemas only; bound to no workspace)."""
    return _check(toolset).make_tools(None)


def _args(call: ToolCall) -> dict:
    a = call.arguments
    if isinstance(a, str):
        try:
            a = json.loads(a) if a.strip() else {}
        except json.JSONDecodeError:
            return {}
    return a if isinstance(a, dict) else {}


def seen(toolset: str, call: ToolCall, result: ToolResult) -> Seen:
    """The tool set's parse of ``result``'s text: its Shown and the text of each line it showed, with
    the call, its kind and error flag (nothing shown for an error or a call of an unknown tool or tool
    set)."""
    kind = tool_kind(toolset, call.name)
    if result.is_error or kind is None:
        return Seen(kind=kind, is_error=result.is_error, call=call)
    parse = _check(toolset).observe
    if parse is None:
        return Seen(kind=kind, is_error=False, call=call)
    s = parse(call.name, _args(call), strip_ids(result.output))
    s.kind, s.call = kind, call
    return s


def observation(toolset: str, call: ToolCall, result: ToolResult | None, *, lines: bool = True) -> Seen:
    """What ``call`` showed, as recorded: ``result``'s recorded ``shown`` (the tool set's parse of its
    text for traces written before it was recorded) with the text of each line it showed; with
    ``lines=False`` the record alone (``text`` empty, and no parse where ``shown`` is recorded). A call
    without a result, of an unknown tool or whose result is an error showed nothing."""
    if result is None:
        return Seen(kind=tool_kind(toolset, call.name), call=call)
    if lines or result.shown is None:
        s = seen(toolset, call, result)
    else:
        s = Seen(kind=tool_kind(toolset, call.name), is_error=result.is_error, call=call)
    if result.shown is not None and s.kind is not None and not s.is_error:
        s.shown = result.shown
    return s


def shown(toolset: str, call: ToolCall, result: ToolResult) -> Shown:
    """What ``result`` showed: its recorded ``shown``, or (traces written before it was recorded)
    the tool set's own parse of its text."""
    if result.shown is not None:
        return result.shown
    return seen(toolset, call, result).shown


__all__ = [
    "KINDS",
    "MAIN_AGENT_SHELL",
    "TOOLSETS",
    "Calls",
    "Seen",
    "ToolError",
    "ToolLimits",
    "Toolset",
    "answer_tool",
    "calls_for",
    "make_toolset",
    "observation",
    "seen",
    "shell_command",
    "shown",
    "tool_kind",
    "tool_names",
    "toolset_class",
    "toolset_of",
]
