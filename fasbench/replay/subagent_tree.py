"""A main agent and its search subagents as one tree (issue 39): each subagent nested under the call
that delegated to it (or under the task text, for a hand-off before the first turn), with per-node
turns, calls, tokens and wall time.

- ``agent_tree(traj, traces)``: the tree of a reader ``Trajectory`` (``Call.subagent``,
  ``Trajectory.handed_off``: Claude Code sidechains, ATIF embedded subagents, OpenHands delegates,
  fasbench search episodes); a node whose trajectory is a fasbench search episode carries its
  ``Trace`` (``traces`` by trajectory id) so that the replay can open it.
- ``with_episodes(main, handoffs, delegated)``: a main agent's trajectory with fasbench search
  episodes attached: ``handoffs`` before its first turn, ``delegated`` under its calls.
- ``e2e_tree(out, task_id)`` (``e2e_main``: its trajectory and episodes): fasbench e2e's live path: the main agent's trajectory of the ``search``
  arm with the search episode whose hand-off its task text carried (``records.jsonl``,
  ``search_traces.jsonl``, ``trajs/``; the trajectory path the record names is read through
  ``fasbench.base.contain``, inside the run folder only).
- ``tree_rows``, ``tree_text``, ``tree_html``: the tree as rows (one per node, depth first), as
  terminal text and as static HTML (nested lists, every value from the data HTML-escaped).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from fasbench.base.markup import Markup, html, join
from fasbench.records import Trace
from fasbench.replay.timeline import fmt_s
from fasbench.trajectories.e2e_runs import e2e_main, with_episodes  # noqa: F401 (with_episodes: part of the tree API here)
from fasbench.trajectories.parsers import trace_trajectory
from fasbench.trajectories.trajectory import Trajectory

VIA_CHARS = 80


@dataclass
class AgentNode:
    """One agent of the tree. ``via``: how it was started (the delegating call's tool and argument
    excerpt, or ``hand-off``); ``turn``/``call``: where in its parent (turn 0: before the first turn)."""

    name: str
    role: str
    model: str
    turns: int
    calls: int
    tokens: int
    wall_s: float | None
    via: str = ""
    turn: int | None = None
    call: int | None = None
    children: list[AgentNode] = field(default_factory=list)
    trace: Trace | None = None
    trajectory_id: str = ""
    estimated: bool = False  # some turn's tokens are estimated (offline tokenizer), not recorded


def _via(call) -> str:
    args = call.args if isinstance(call.args, dict) else {}
    what = (
        args.get("subagent_type") or args.get("agent") or args.get("description") or args.get("prompt") or call.action
    )
    text = f"{call.tool}: {what}" if what else call.tool
    return text if len(text) <= VIA_CHARS else text[: VIA_CHARS - 1] + "…"


def agent_tree(
    traj: Trajectory,
    traces: dict[str, Trace] | None = None,
    role: str = "main",
    via: str = "",
    turn: int | None = None,
    call: int | None = None,
) -> AgentNode:
    """The tree of ``traj`` (module doc)."""
    traces = traces or {}
    trace = traces.get(traj.trajectory_id) or traces.get(str(traj.meta.get("trace_id") or ""))
    # a fasbench episode's numbers come from its trace (the same wherever the tree was read from: an
    # ATIF file re-estimates tokens a trace did not record from its own step texts)
    src = trace_trajectory(trace) if trace is not None else traj
    wall = src.meta.get("wall_s")
    node = AgentNode(
        name=traj.agent or traj.trajectory_id,
        role=role,
        model=traj.model,
        turns=len(src.turns),
        calls=sum(len(t.calls) for t in src.turns),
        tokens=int(sum((t.prompt_tokens or 0) + (t.completion_tokens or 0) for t in src.turns)),
        wall_s=float(wall) if isinstance(wall, (int, float)) else None,
        via=via,
        turn=turn,
        call=call,
        trace=trace,
        trajectory_id=traj.trajectory_id,
        estimated=any(t.estimated for t in src.turns),
    )
    for sub in traj.handed_off:
        node.children.append(agent_tree(sub, traces, "subagent", "hand-off in the task text", 0, None))
    for t in traj.turns:
        for ci, c in enumerate(t.calls):
            if c.subagent is not None:
                node.children.append(agent_tree(c.subagent, traces, "subagent", _via(c), t.index, ci))
    return node


def e2e_tree(out: str | Path, task_id: str) -> AgentNode:
    """The live e2e main agent of ``task_id`` (arm ``search``) with its search episode (module doc).
    Raises ValueError naming what is missing."""
    main, traces = e2e_main(out, task_id)
    return agent_tree(main, traces)


def tree_rows(node: AgentNode, depth: int = 0) -> list[dict]:
    """One row per node, depth first: depth, name, role, via, turn, call, turns, calls, tokens, wall_s."""
    rows = [
        {
            "depth": depth,
            "name": node.name,
            "role": node.role,
            "via": node.via,
            "turn": node.turn,
            "call": node.call,
            "turns": node.turns,
            "calls": node.calls,
            "tokens": node.tokens,
            "tokens_estimated": node.estimated,
            "wall_s": node.wall_s,
            "episode": node.trace.trace_id if node.trace is not None else None,
        }
    ]
    for ch in node.children:
        rows += tree_rows(ch, depth + 1)
    return rows


def _where(n: AgentNode) -> str:
    if n.turn is None:
        return ""
    return "before turn 1" if n.turn == 0 else f"turn {n.turn}, call {n.call + 1 if n.call is not None else '?'}"


def _stats(n: AgentNode) -> str:
    wall = fmt_s(n.wall_s) if n.wall_s is not None else "n/a"
    return f"{n.turns} turns · {n.calls} calls · {'~' if n.estimated else ''}{n.tokens:,} tokens · {wall}"


def tree_text(node: AgentNode, prefix: str = "", last: bool = True, root: bool = True) -> str:
    """The tree as terminal text (one line per node)."""
    head = f"{node.role} {node.name}" + (f" [{node.model}]" if node.model else "")
    where = f" ← {_where(node)}: {node.via}" if node.via else ""
    line = (head if root else prefix + ("└─ " if last else "├─ ") + head) + f" — {_stats(node)}{where}"
    out = [line]
    child_prefix = "" if root else prefix + ("   " if last else "│  ")
    for i, ch in enumerate(node.children):
        out.append(tree_text(ch, child_prefix, i == len(node.children) - 1, False))
    return "\n".join(out)


def _node_html(n: AgentNode, episode_html) -> Markup:
    where = html("<span style='color:#555'> ← {}: <code>{}</code></span>", _where(n), n.via) if n.via else ""
    model = html(" <i>[{}]</i>", n.model) if n.model else ""
    head = html("<b>{}</b> {}{} — {}{}", n.role, n.name, model, _stats(n), where)
    inner = ""
    if n.trace is not None and episode_html is not None:
        # episode_html is a fasbench page builder (the replay's static page): Markup, its values escaped there
        inner = html(
            "<details><summary>replay of episode {}</summary>{}</details>", n.trace.trace_id, episode_html(n.trace)
        )
    kids = join(html("<li>{}</li>", _node_html(c, episode_html)) for c in n.children)
    return html(
        "<span class='fasbench-tree-node'>{}</span>{}{}", head, inner, html("<ul>{}</ul>", kids) if kids else ""
    )


def tree_html(node: AgentNode, episode_html=None) -> str:
    """The tree as static HTML (nested lists; every value escaped); ``episode_html(trace)``, when
    given, renders each search episode's replay under its node (collapsed)."""
    return html(
        "<div class='fasbench-static fasbench-static-tree' style='font-size:13px'>"
        "<ul style='list-style:none;padding-left:0'><li>{}</li></ul></div>",
        _node_html(node, episode_html),
    )
