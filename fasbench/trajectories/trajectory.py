"""What every trajectory parser returns: a ``Trajectory`` of turns (``AgentTurn``: one model call of
a main agent, not the harness's ``records.Turn``) of calls (``Call``) (``fasbench.trajectories.parsers``
and the per-format modules beside it), and ``TrajectoryError``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: format name → what it is, for error messages and --help (here, not in parsers: the CLI's help
#: must not load the tokenizer that parsers imports)
FORMAT_NAMES = {
    "mini-swe-agent-1": "mini-swe-agent v1 .traj.json (```bash blocks)",
    "mini-swe-agent-tools": "mini-swe-agent v1.1/v2 and other OpenAI-style `messages` with tool_calls",
    "swe-agent": "SWE-agent .traj",
    "claude-code": "Claude Code session JSONL",
    "openhands": "OpenHands event lists (saved trajectory JSON, evaluation output.jsonl)",
    "fasbench-trace": "fasbench traces.jsonl",
    "atif": "Harbor ATIF trajectory JSON (ATIF-v1.0 … v1.8: main agent and embedded subagents)",
}
FORMATS = tuple(FORMAT_NAMES)
SUPPORTED = "supported formats: " + "; ".join(FORMAT_NAMES.values())


class TrajectoryError(ValueError):
    """A trajectory file could not be parsed; the message is the reason."""


@dataclass(slots=True)
class Call:
    """One action: a tool name, the raw action text, and the parsed arguments (None for shell text).
    ``subagent``: the trajectory of the subagent this call delegated to (a Claude Code ``Task``/``Agent``
    sidechain, an ATIF embedded subagent, an OpenHands delegate), nested under the call that started it."""

    tool: str
    action: str
    args: dict | None = None
    subagent: Trajectory | None = None


@dataclass(slots=True)
class AgentTurn:
    """One model call (1-based ``index``) and the calls it made.

    prompt/completion tokens are the model call's; ``reasoning_tokens`` are completion tokens that are
    not fed back into the next prompt. ``obs_tokens`` is set only where the format gives or estimates
    the observation directly; otherwise the analysis takes the growth of the next prompt.
    """

    index: int
    calls: list[Call] = field(default_factory=list)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reasoning_tokens: int = 0
    obs_tokens: int | None = None
    estimated: bool = False


@dataclass
class Trajectory:
    trajectory_id: str
    instance_id: str
    agent: str
    model: str
    format: str
    turns: list[AgentTurn]
    submission: str | None = None
    resolved: bool | None = None
    exit_status: str | None = None
    path: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    # subagents that ran before the first turn and whose report the task text carries (fasbench e2e's
    # hand-off; an ATIF subagent referred to from a step without a tool call)
    handed_off: list[Trajectory] = field(default_factory=list)


def subagents(traj: Trajectory, depth: int = 1):
    """Every delegated subagent under ``traj``, depth first: (depth, turn index, call index, call,
    subagent trajectory); depth 1 is a subagent of the main agent. A hand-off before the first turn
    has turn 0 and no call (call index and call None)."""
    for sub in traj.handed_off:
        yield depth, 0, None, None, sub
        yield from subagents(sub, depth + 1)
    for t in traj.turns:
        for ci, c in enumerate(t.calls):
            if c.subagent is not None:
                yield depth, t.index, ci, c, c.subagent
                yield from subagents(c.subagent, depth + 1)


@dataclass
class ParsedFile:
    trajectories: list[Trajectory]
    format: str
    partial: str | None = None  # why some of the file was left out (a truncated last JSONL line)
    dropped_lines: int = 0  # e.g. Claude Code side-chain lines no delegation call starts
