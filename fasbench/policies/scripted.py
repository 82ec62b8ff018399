"""A policy that replays given turns: for tests, the quickstart and golden traces."""

from __future__ import annotations

from dataclasses import dataclass, field

from fasbench.harness import Policy
from fasbench.records import Reply, ToolCall


@dataclass
class ScriptedPolicy(Policy):
    """Replays ``turns`` in order; each turn is a Reply, ``{"text": str, "calls": [{"name",
    "arguments"}]}``, or a function ``(messages, tools) -> Reply`` called with the chat (an answer that
    cites the IDs the chat showed under the ids report contract: ``dialect_for(tools, messages).report``).
    Past the script it replies with empty text (no calls, no answer)."""

    turns: list
    name: str = "scripted"
    _i: int = field(default=0, init=False)

    def reset(self) -> None:
        self._i = 0

    def act(self, messages: list[dict], tools: list[dict], *, final: bool) -> Reply:
        if self._i >= len(self.turns):
            return Reply(text="")
        t = self.turns[self._i]
        self._i += 1
        if isinstance(t, Reply):
            return t
        if callable(t):
            return t(messages, tools)
        calls = [
            ToolCall(id=f"call_{self._i}_{j}", name=c["name"], arguments=c.get("arguments", {}))
            for j, c in enumerate(t.get("calls", []))
        ]
        text = t.get("text", "")
        return Reply(text=text, calls=calls)  # a script has no token counts
