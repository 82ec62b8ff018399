"""A scripted searcher for the "where are these symbols defined" tasks (:mod:`fasbench.data.symbols`).

Turn 1 greps ``(def|class) NAME\\b`` for every symbol the query names, all in parallel; turn 2 reports
each file a grep matched with the matched line. It is the inner policy of the miniature's sequential
start, ``sequential:inner=definitions,per_turn=1`` (one grep a turn: ``k + 1`` turns for ``k``
symbols; ``per_turn=k``: the parallel target, 2 turns), the traces the ``sft_mini`` profile trains on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fasbench.harness import Policy
from fasbench.policies.dialect import dialect_for, observations, user_query
from fasbench.policies.terms import task_text
from fasbench.records import Reply

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def query_symbols(query: str) -> list[str]:
    """The symbols a query names: the identifiers of its comma-separated list after the last colon."""
    tail = query.rsplit(":", 1)[-1].strip().rstrip(".")
    return [s.strip() for s in tail.split(",") if _IDENT.fullmatch(s.strip())]


@dataclass
class DefinitionsPolicy(Policy):
    """Parameters (settable from ``sequential:inner=definitions,...``):"""

    calls: int = 12  # most greps in the search turn
    name: str = "definitions"

    def act(self, messages: list[dict], tools: list[dict], *, final: bool) -> Reply:
        d = dialect_for(tools, messages)
        turns = observations(messages, d.name)
        if not turns and not final:
            names = query_symbols(task_text(user_query(messages)))[: self.calls]
            return Reply(
                text="", calls=[d.grep(f"c0_{i}", rf"(def|class) {re.escape(s)}\b") for i, s in enumerate(names)]
            )
        files: dict[str, list[list[int]]] = {}
        for turn in turns:
            for o in turn:
                if not o.is_error:
                    for path, line in o.shown.hits:
                        files.setdefault(path, [[line, line]])
        return d.report(f"c{len(turns)}_r", files, "definitions found")
