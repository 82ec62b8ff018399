"""The replay's boundary with the tools: only ``fasbench/replay/observed.py`` names tools (it also holds
the only parser of their output), and its tool kinds cover every tool of both tool sets (so that a tool added in
``fasbench/tools/`` cannot silently vanish from the overlay)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import fasbench.replay
from fasbench.replay.observed import KINDS, tool_kind
from fasbench.tools import TOOLSETS, make_toolset

REPLAY = Path(fasbench.replay.__file__).parent


def _tool_names(toolset: str, tmp_path) -> set[str]:
    return {s.get("function", s)["name"] for s in make_toolset(toolset, tmp_path).schemas}


@pytest.mark.parametrize("toolset", TOOLSETS)
def test_kinds_cover_every_tool(toolset, tmp_path):
    names = _tool_names(toolset, tmp_path)
    assert set(KINDS[toolset]) == names - {"bash"}  # bash's kind depends on its command line
    assert {tool_kind(toolset, n) for n in names - {"bash"}} <= {"read", "search", "list", "report"}


def test_only_observed_names_tools(tmp_path):
    names = set().union(*(_tool_names(ts, tmp_path) for ts in TOOLSETS))
    quoted = re.compile(r"""["'](%s)["']""" % "|".join(map(re.escape, sorted(names))))
    offenders = []
    for f in sorted(REPLAY.glob("*.py")):
        if f.name == "observed.py":
            continue
        src = f.read_text()
        offenders += [f"{f.name}: names {m.group(1)!r}" for m in quoted.finditer(src)]
    assert not offenders, offenders
