"""Search policies: who chooses the tool calls. Each is a class with ``name`` and
``act(messages, tools, *, final) -> Reply`` (the ``fasbench.harness.Policy`` protocol)."""

from fasbench.policies.scripted import ScriptedPolicy

__all__ = ["ScriptedPolicy"]
