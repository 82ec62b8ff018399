"""A sequential searcher: another policy's calls released ``per_turn`` at a time.

Relace's base model "more often searched sequentially" before RL (20 and 10 turns on its two data
sets) and RL cut that to 5 and 4 turns at equal accuracy by rewarding parallel calls (the turn
penalty P = clip((24 − n)/(24 − 4), 0, 1)). ``SequentialPolicy`` makes that starting point with a
known answer: it issues exactly the calls of the wrapped policy, so it finds and reports the same
things, but one call (``per_turn``) a turn, so its episodes are long. It is the reference policy of
the long-episode SFT warm-up that the long RL profiles start from (``fasbench/configs/*_long_*``)
and a baseline for the incentive landscape (same accuracy, more turns, lower Relace reward).

The wrapped policy sees the conversation as if it had run its own turns: the released turns that
came from one of its turns are merged back into one assistant message (call ids carry the inner
turn, ``g<k>:<id>``). Nothing is stored between calls, so one instance serves any number of
episodes and threads; this needs a wrapped policy that answers the same conversation the same way
(the heuristic and RAG policies; a sampling LLM would change its mind between released turns).

``make_policy("sequential:per_turn=1,turns=4,calls=6")`` wraps the heuristic policy; every
parameter other than ``per_turn`` is the heuristic's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fasbench.base.specs import convert
from fasbench.harness import Policy
from fasbench.policies.definitions import DefinitionsPolicy
from fasbench.policies.heuristic import HeuristicPolicy
from fasbench.records import Reply, ToolCall
from fasbench.tools import tool_kind, toolset_of

_ID = re.compile(r"^g(\d+):(.*)$", re.S)


def _answers(calls: list[ToolCall], toolset: str | None) -> bool:
    """Whether ``calls`` hold the answer call of the tool set (its tool of kind "report")."""
    return toolset is not None and any(tool_kind(toolset, c.name) == "report" for c in calls)


def _group(call: dict) -> tuple[int | None, str]:
    m = _ID.match(str(call.get("id", "")))
    return (int(m.group(1)), m.group(2)) if m else (None, str(call.get("id", "")))


def merged(messages: list[dict]) -> tuple[list[dict], int, int]:
    """(the conversation as the wrapped policy ran it, its number of turns so far, calls released
    from its last turn). Released assistant messages of one inner turn become one message."""
    out: list[dict] = []
    groups: dict[int, dict] = {}
    released: dict[int, int] = {}
    for m in messages:
        if m.get("role") == "assistant":
            calls = m.get("tool_calls") or []
            g = _group(calls[0])[0] if calls else None
            plain = [{**c, "id": _group(c)[1]} for c in calls]
            if g is not None and g in groups:
                groups[g]["tool_calls"].extend(plain)
            else:
                msg = {**m, "tool_calls": plain} if calls else dict(m)
                out.append(msg)
                if g is not None:
                    groups[g] = msg
            if g is not None:
                released[g] = released.get(g, 0) + len(calls)
        elif m.get("role") == "tool":
            out.append({**m, "tool_call_id": _group({"id": m.get("tool_call_id", "")})[1]})
        else:
            out.append(m)
    n = sum(1 for m in out if m.get("role") == "assistant")
    last = max(groups) if groups else None
    return out, n, released.get(last, 0) if last is not None and last == n - 1 else 0


_INNER = {"heuristic": HeuristicPolicy, "definitions": DefinitionsPolicy}  # the policies sequential can wrap


@dataclass
class SequentialPolicy(Policy):
    """Releases the wrapped policy's calls ``per_turn`` at a time (see the module doc)."""

    inner: Policy  # a deterministic Policy (act(messages, tools, final=...) -> Reply)
    per_turn: int = 1  # calls released a turn
    name: str = "sequential"
    backend = "thread"  # the heuristic's

    def __post_init__(self):
        if int(self.per_turn) < 1:
            raise ValueError(f"sequential: per_turn must be >= 1, got {self.per_turn}")

    def bind(self, task):
        inner = self.inner.bind(task)
        return self if inner is self.inner else SequentialPolicy(inner, self.per_turn, self.name)

    @classmethod
    def from_spec(cls, family, params, **fixed):
        """``sequential:per_turn=N,inner=NAME,<inner parameters>``: the inner policy's calls (the
        heuristic's, or ``definitions``: the searcher of the RL miniature's ``symbols`` tasks),
        ``per_turn`` a turn."""
        params = dict(params)
        per_turn = convert(params.pop("per_turn", "1"), int, f"policy {family!r} parameter 'per_turn'")
        name = params.pop("inner", "heuristic")
        if name not in _INNER:
            raise ValueError(f"policy {family!r} parameter 'inner': {name!r} unknown; choose {' or '.join(_INNER)}")
        inner = _INNER[name].from_spec(family, params, name=fixed.get("name", family))
        return cls(inner, per_turn, fixed.get("name", family))

    @classmethod
    def spec_parameters(cls, family):
        return [
            ("per_turn", "1", "calls a turn"),
            ("inner", "heuristic", "the wrapped policy: heuristic | definitions"),
        ] + HeuristicPolicy.spec_parameters(family)

    def _tag(self, k: int, reply: Reply, calls: list[ToolCall], text: str) -> Reply:
        return Reply(
            text=text,
            calls=[ToolCall(f"g{k}:{c.id}", c.name, c.arguments) for c in calls],
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
        )

    def act(self, messages: list[dict], tools: list[dict], *, final: bool) -> Reply:
        conv, n, released = merged(messages)
        ts = toolset_of(tools)
        if released and not final:  # the last inner turn may still have calls to release
            before = conv[: max(i for i, m in enumerate(conv) if m.get("role") == "assistant")]
            full = self.inner.act(before, tools, final=False)
            rest = full.calls[released:]
            if rest and not _answers(rest, ts):
                return self._tag(n - 1, full, rest[: self.per_turn], "")
        reply = self.inner.act(conv, tools, final=final)
        if final or not reply.calls or _answers(reply.calls, ts):
            return self._tag(n, reply, reply.calls, reply.text)  # an answer (or nothing) goes out whole
        return self._tag(n, reply, reply.calls[: self.per_turn], reply.text)
