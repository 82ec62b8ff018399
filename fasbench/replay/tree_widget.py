"""``SubagentTree``: a main agent and its search subagents as a tree in Jupyter (``fasbench.replay.subagent_tree``),
each node with its turns, calls, tokens and wall time; picking a search episode opens its replay
(:class:`~fasbench.replay.widgets.TraceReplay`) below the tree. Without a kernel (``fasbench.mainjob.report``) the
page shows the static tree with each episode's static replay under its node."""

from __future__ import annotations

import ipywidgets as W

from fasbench.replay.static import display_bundle, replay_html
from fasbench.replay.subagent_tree import AgentNode, tree_html, tree_rows
from fasbench.replay.widgets import TraceReplay


def _nodes(node: AgentNode, depth: int = 0):
    yield depth, node
    for ch in node.children:
        yield from _nodes(ch, depth + 1)


class SubagentTree:
    """The tree of ``node`` (``fasbench.replay.subagent_tree.agent_tree`` / ``e2e_tree``). State for code and tests:
    ``rows`` (one per node), ``episodes`` (the picker's options: node label → trace), ``replay`` (the
    open :class:`TraceReplay` or None); ``open(label)`` opens one."""

    def __init__(self, node: AgentNode):
        self.node = node
        self.rows = tree_rows(node)
        self.episodes = {
            f"{'  ' * d}{n.role} {n.name} ({n.trace.trace_id})": n.trace for d, n in _nodes(node) if n.trace is not None
        }
        self.tree = W.HTML(tree_html(node))
        self.picker = W.Dropdown(
            options=["(pick a search episode)", *self.episodes],
            description="episode",
            layout=W.Layout(width="98%"),
            disabled=not self.episodes,
        )
        self.holder = W.VBox([])
        self.replay: TraceReplay | None = None
        self.picker.observe(lambda ch: self.open(ch["new"]), "value")
        self.widget = W.VBox([self.tree, self.picker, self.holder])
        self.widget.add_class("fasbench-subagent-tree")

    def open(self, label: str) -> TraceReplay | None:
        trace = self.episodes.get(label)
        self.replay = TraceReplay(trace) if trace is not None else None
        self.holder.children = [self.replay.widget] if self.replay is not None else []
        return self.replay

    def static_html(self) -> str:
        return tree_html(self.node, replay_html)

    def _repr_mimebundle_(self, include=None, exclude=None):
        return display_bundle(self.widget, self.static_html(), include, exclude)
