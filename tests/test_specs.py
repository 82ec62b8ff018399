"""fasbench.base.specs: the one spec-string parser (policies, judge, e2e main agent)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from fasbench.base.specs import build, convert, parse_spec


def test_parse_spec():
    assert parse_spec("heuristic") == ("heuristic", {})
    assert parse_spec(" openai: model = m , base_url=http://x:1/v1 ") == (
        "openai",
        {"model": "m", "base_url": "http://x:1/v1"},
    )
    for bad in ("", "   ", None, "x:a", "x:=1"):
        with pytest.raises(ValueError):
            parse_spec(bad)


def test_convert_to_declared_types():
    assert convert("3", int, "w") == 3 and convert("0.5", float, "w") == 0.5
    assert convert("yes", bool, "w") is True and convert("off", "bool", "w") is False
    assert convert("none", int | None, "w") is None and convert("7", "int | None", "w") == 7
    with pytest.raises(ValueError, match="w: 'x' is not a valid int"):
        convert("x", int, "w")
    with pytest.raises(ValueError, match="not a valid bool"):
        convert("maybe", bool, "w")


@dataclass
class _Cfg:
    turns: int = 1
    temperature: float = 0.0
    name: str = ""


def test_build_converts_and_names_unknown_keys():
    c = build(_Cfg, "demo", {"turns": "4", "temperature": "0.5"}, name="demo:turns=4")
    assert c == _Cfg(4, 0.5, "demo:turns=4")
    with pytest.raises(ValueError, match="has no parameter 'turn'; it has: temperature, turns"):
        build(_Cfg, "demo", {"turn": "4"}, name="x")
