"""Spec strings: ``"NAME[:key=value,...]"`` → a name and typed constructor arguments.

One parser for every spec the package reads: policies (``fasbench.policies.make_policy``), the LLM
judge (``fasbench.scoring.judge.make_judge``) and the e2e main agent (``fasbench.e2e.live.parse_main``). It is
a pure value module (layer 0 of docs/design.md section 2), so the scoring and workflow layers use it
without importing the policies.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import typing
from typing import Any


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """``"name:a=1,b=x"`` → ``("name", {"a": "1", "b": "x"})``; a clear error on bad syntax."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"policy spec must be a non-empty string like 'heuristic:turns=3', got {spec!r}")
    name, _, rest = spec.strip().partition(":")
    kw: dict[str, str] = {}
    if rest.strip():
        for part in rest.split(","):
            k, eq, v = part.partition("=")
            if not eq or not k.strip():
                raise ValueError(f"policy spec {spec!r}: expected key=value, got {part!r}")
            kw[k.strip()] = v.strip()
    return name.strip(), kw


def convert(value: str, typ: Any, where: str) -> Any:
    """Convert a spec string to a field's declared type (int, float, bool, str, or optional)."""
    if isinstance(typ, str):
        typ = {"int": int, "float": float, "bool": bool, "str": str}.get(typ.split("|")[0].strip(), str)
    args = [a for a in typing.get_args(typ) if a is not type(None)]
    if args:
        if value.lower() in ("none", "null", ""):
            return None
        typ = args[0]
    try:
        if typ is bool:
            if value.lower() in ("1", "true", "yes", "on"):
                return True
            if value.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(value)
        if typ in (int, float):
            return typ(value)
    except ValueError:
        raise ValueError(f"{where}: {value!r} is not a valid {typ.__name__}") from None
    return value


def build(cls, pname: str, kw: dict[str, str], **fixed):
    """``cls(**fixed, **kw)`` with each spec value converted to the dataclass field's declared type
    (literals guessed for a class that is not a dataclass); an unknown key is a clear error."""
    hints = typing.get_type_hints(cls) if dataclasses.is_dataclass(cls) else {}
    fields = {f.name for f in dataclasses.fields(cls) if f.init} if dataclasses.is_dataclass(cls) else None
    args = dict(fixed)
    for k, v in kw.items():
        if fields is not None and k not in fields:
            raise ValueError(
                f"policy {pname!r} has no parameter {k!r}; it has: "
                f"{', '.join(sorted(f for f in fields if f not in fixed and f not in ('root', 'query')))}"
            )
        args[k] = (
            convert(v, hints.get(k, str), f"policy {pname!r} parameter {k!r}") if fields is not None else _literal(v)
        )
    return cls(**args)


def _literal(v: str):
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            pass
    if v.lower() in ("true", "false"):
        return v.lower() == "true"
    if v.lower() in ("none", "null"):
        return None
    return v


#: Fields a spec never sets: set by make_policy or bind, or Python-only values (a dict, a tokenizer).
HIDDEN_FIELDS = frozenset({"name", "root", "query", "method", "tokenizer", "stats", "extra_body"})


def spec_fields(cls, hidden=HIDDEN_FIELDS) -> list[tuple[str, str, str]]:
    """``(parameter, default, comment)`` of each init field of dataclass ``cls`` a spec may set, the
    comment read from the field's line in the class source."""
    notes = dict(re.findall(r"^\s+(\w+):[^#\n]*#\s*(.+)$", inspect.getsource(cls), re.M))
    out = []
    for f in dataclasses.fields(cls):
        if f.init and f.name not in hidden:
            default = (
                f.default
                if f.default is not dataclasses.MISSING
                else (f.default_factory() if f.default_factory is not dataclasses.MISSING else "(required)")
            )
            out.append((f.name, str(default), notes.get(f.name, "")))
    return out
