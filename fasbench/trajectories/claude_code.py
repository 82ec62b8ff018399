"""Claude Code session JSONL → a main-agent ``Trajectory`` with its subagents nested under the calls
that delegated to them.

The format (Claude Code writes no schema; what the public readers of it agree on, cited in
``fasbench/trajectories/README.md``): one JSON object per line with ``type`` (``user`` | ``assistant``
| ``summary`` | …), ``uuid``, ``parentUuid``, ``sessionId``, ``isSidechain``, ``timestamp`` and the API
``message`` (``content`` blocks ``text`` / ``tool_use`` {id, name, input} / ``tool_result``
{tool_use_id, content}; ``usage``). A tool result's line may carry ``toolUseResult``, the tool's
structured result; for the ``Task`` tool (renamed ``Agent`` in newer versions) it names the subagent
(``agentId``).

A subagent's own lines have ``isSidechain: true`` and are kept in one of two places:

- older versions: inline in the session file, a chain of ``parentUuid`` links starting at the
  subagent's prompt (a sidechain line whose parent is not a sidechain line), possibly with
  ``agentId``;
- newer versions: their own file ``<session dir>/<sessionId>/subagents/agent-<agentId>.jsonl``
  (lines with ``isSidechain: true``, ``agentId``, the parent's ``sessionId``), given here as
  ``subagent_files`` by ``parsers`` (which reads them beside the session file).

Each subagent is read as a trajectory (one turn per API message id, as the main agent) and nested
under the delegation call it belongs to: the call whose result names its ``agentId``; else the call
whose ``prompt`` is the subagent's first user message; else the next delegation call in order.
Sidechain lines no delegation call claims are left out and counted (``ParsedFile.dropped_lines``).
Every value read here comes from the file: ids are used only when they are short plain strings,
token counts only when they are numbers (their range is checked by ``guard``), timestamps only when ISO 8601.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

from fasbench.trajectories.tokens import count_tokens
from fasbench.trajectories.trajectory import AgentTurn, Call, Trajectory, TrajectoryError

DELEGATION_TOOLS = ("Task", "Agent")  # Claude Code's subagent tool (``Agent`` since v2.1)
_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")


def _id(v) -> str | None:
    """A short plain id from the file, else None (ids name nothing outside the file)."""
    return v if isinstance(v, str) and _ID.match(v) else None


def _int(v):
    """A usage count as the file gives it (absent: 0); not a number: TrajectoryError. Its range is
    checked with every other agent's by ``guard.check_parsed`` (the file is skipped, with the reason)."""
    if v is None:
        return 0
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return v
    raise TrajectoryError(f"claude-code: a usage count is not a number ({str(v)[:40]!r})")


def _time(v) -> float | None:
    if not isinstance(v, str):
        return None
    try:
        return datetime.fromisoformat(v.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text") or "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def _agent(lines: list[dict]) -> tuple[list[AgentTurn], dict[str, Call], str, float | None]:
    """The turns of one agent's lines (one per API message id), its calls by tool_use id, its model
    and its wall time (first to last timestamp, seconds)."""
    turns: list[AgentTurn] = []
    by_id: dict[str, AgentTurn] = {}
    calls: dict[str, Call] = {}
    model = ""
    times = [t for t in (_time(o.get("timestamp")) for o in lines) if t is not None]
    for o in lines:
        if o.get("type") != "assistant":
            continue
        msg = o.get("message") if isinstance(o.get("message"), dict) else {}
        mid = str(_id(msg.get("id")) or _id(o.get("requestId")) or _id(o.get("uuid")) or f"#{len(turns)}")
        t = by_id.get(mid)
        if t is None:
            t = by_id[mid] = AgentTurn(len(turns) + 1)
            turns.append(t)
        model = str(msg.get("model") or model)
        content = msg.get("content")
        for b in content if isinstance(content, list) else []:
            if isinstance(b, dict) and b.get("type") == "tool_use":
                args = b.get("input") if isinstance(b.get("input"), dict) else {}
                name = str(b.get("name", ""))
                action = args.get("command") if name == "Bash" else json.dumps(args, ensure_ascii=False)
                c = Call(name, str(action or ""), args)
                t.calls.append(c)
                if _id(b.get("id")):
                    calls[b["id"]] = c
        u = msg.get("usage")
        if isinstance(u, dict):
            p = sum(_int(u.get(k)) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
            t.prompt_tokens = max(t.prompt_tokens or 0, p)
            t.completion_tokens = max(t.completion_tokens or 0, _int(u.get("output_tokens")))
    for t in turns:
        if t.prompt_tokens is None:
            t.prompt_tokens, t.completion_tokens, t.estimated = (
                0,
                count_tokens(" ".join(c.action for c in t.calls)),
                True,
            )
    return turns, calls, model, (max(times) - min(times)) if times else None


def _sidechains(lines: list[dict]) -> list[list[dict]]:
    """The subagents among inline sidechain lines: grouped by ``agentId`` where the lines carry one,
    else by ``parentUuid`` chains (a line whose parent is no sidechain line starts a subagent)."""
    groups: dict[str, list[dict]] = {}
    owner: dict[str, str] = {}  # sidechain uuid → group key
    for o in lines:
        aid, uid, parent = _id(o.get("agentId")), _id(o.get("uuid")), _id(o.get("parentUuid"))
        key = f"agent:{aid}" if aid else owner.get(parent or "") or f"chain:{len(groups)}"
        groups.setdefault(key, []).append(o)
        if uid:
            owner[uid] = key
    return list(groups.values())


def _first_prompt(lines: list[dict]) -> str:
    for o in lines:
        if o.get("type") == "user" and isinstance(o.get("message"), dict):
            text = _text(o["message"].get("content")).strip()
            if text:
                return text
    return ""


def parse(lines: list[dict], path: Path, stem: str, subagent_files: list[list[dict]] = ()) -> tuple[Trajectory, int]:
    """The session's main agent with its subagents nested (module doc) and the number of sidechain
    lines no delegation call claims."""
    main = [o for o in lines if o.get("type") in ("user", "assistant") and not o.get("isSidechain")]
    side = [o for o in lines if o.get("type") in ("user", "assistant") and o.get("isSidechain")]
    session = next((str(o["sessionId"]) for o in main if _id(o.get("sessionId"))), "")
    turns, calls, model, wall = _agent(main)
    if not turns:
        raise TrajectoryError("claude-code: no assistant messages")
    root = stem
    groups = _sidechains(side) + [[o for o in f if o.get("type") in ("user", "assistant")] for f in subagent_files]
    groups = [g for g in groups if g]
    agent_of: dict[str, str] = {}  # tool_use id → the agentId its result names
    for o in main:
        tur = o.get("toolUseResult")
        content = (o.get("message") or {}).get("content") if isinstance(o.get("message"), dict) else None
        if not isinstance(tur, dict) or not _id(tur.get("agentId")) or not isinstance(content, list):
            continue
        for b in content:
            if isinstance(b, dict) and b.get("type") == "tool_result" and _id(b.get("tool_use_id")):
                agent_of[b["tool_use_id"]] = tur["agentId"]
    delegations = [(tid, c) for tid, c in calls.items() if c.tool in DELEGATION_TOOLS]
    by_agent = {}
    for g in groups:
        aid = next((o["agentId"] for o in g if _id(o.get("agentId"))), None)
        if aid:
            by_agent.setdefault(aid, g)
    free = list(groups)
    links: list[tuple[Call, list[dict], str | None]] = []
    pending = []
    for tid, c in delegations:  # 1. the agentId the call's result names
        g = by_agent.get(agent_of.get(tid, ""))
        if g is not None and g in free:
            free.remove(g)
            links.append((c, g, agent_of[tid]))
        else:
            pending.append(c)
    for c in list(pending):  # 2. the subagent whose first prompt is the call's prompt
        prompt = str((c.args or {}).get("prompt") or "").strip()
        g = next((g for g in free if prompt and _first_prompt(g) == prompt), None)
        if g is not None:
            free.remove(g)
            pending.remove(c)
            links.append((c, g, None))
    for c, g in zip(pending, list(free)):  # 3. in order
        free.remove(g)
        links.append((c, g, None))
    for k, (c, g, aid) in enumerate(links):
        aid = aid or next((o["agentId"] for o in g if _id(o.get("agentId"))), None)
        sub_turns, _, sub_model, sub_wall = _agent(g)
        if not sub_turns:
            free.append(g)  # a subagent that never answered: its lines are left out, counted
            continue
        c.subagent = Trajectory(
            trajectory_id=f"{root}/{aid or f'subagent-{k + 1}'}",
            instance_id=session or stem,
            agent=f"claude-code {(c.args or {}).get('subagent_type') or 'subagent'}",
            model=sub_model,
            format="claude-code",
            turns=sub_turns,
            path=str(path),
            meta={
                "role": "subagent",
                "parent": root,
                "agent_id": aid,
                "wall_s": sub_wall,
                "subagent_type": (c.args or {}).get("subagent_type"),
            },
        )
    traj = Trajectory(
        trajectory_id=root,
        instance_id=session or stem,
        agent="claude-code",
        model=model,
        format="claude-code",
        turns=turns,
        path=str(path),
        meta={"role": "main", "wall_s": wall},
    )
    return traj, sum(len(g) for g in free)
