"""Argument validation against the tools' JSON schemas: the keywords our schemas use, with the
messages and the choice of error of ``jsonschema.validate`` (Draft 2020-12, jsonschema 4.x).

Why not jsonschema itself: ``import jsonschema`` cost 1.7-3.0 s of CPU here (its format checkers
import ``rfc3987_syntax``, installed by jupyterlab's ``jsonschema[format-nongpl]``, which builds a
grammar at import), and the tools run in every ``fasbench tool`` call and every worker.
``tests/test_tool_schema.py`` checks, over generated arguments for every schema of every tool set,
that :func:`validate` finds the same error (message and path) as ``jsonschema.validate``; a schema
with a keyword outside :data:`KEYWORDS` is refused when checked (:func:`check_keywords`).
"""

from __future__ import annotations

import numbers
from collections.abc import Iterator
from typing import Any

# keywords that validate, and annotations that do not
KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "prefixItems",
        "minItems",
        "maxItems",
        "minimum",
        "maximum",
        "enum",
    }
)
ANNOTATIONS = frozenset({"description", "default", "title", "examples"})


class SchemaError(Exception):
    """The arguments do not match the schema: ``message`` as jsonschema words it, at ``path``."""

    def __init__(
        self, message: str, path: tuple = (), keyword: str | None = None, schema: Any = None, instance: Any = None
    ):
        super().__init__(message)
        self.message, self.path, self.keyword, self.schema, self.instance = message, path, keyword, schema, instance


def check_keywords(schema: Any) -> None:
    """Raise ``ValueError`` when a schema uses a keyword this module does not implement."""
    if isinstance(schema, bool):
        return
    unknown = set(schema) - KEYWORDS - ANNOTATIONS
    if unknown:
        raise ValueError(f"tool schema keyword(s) {', '.join(sorted(unknown))} not supported by fasbench.tools.schema")
    for prop in schema.get("properties", {}).values():
        check_keywords(prop)
    for key in ("additionalProperties", "items"):
        if isinstance(schema.get(key), dict):
            check_keywords(schema[key])
    for sub in schema.get("prefixItems", []):
        check_keywords(sub)


def is_type(instance: Any, name: str) -> bool:
    """Draft 2020-12's type checker (a bool is no number; 1.0 is an integer)."""
    if name == "string":
        return isinstance(instance, str)
    if name == "object":
        return isinstance(instance, dict)
    if name == "array":
        return isinstance(instance, list)
    if name == "boolean":
        return isinstance(instance, bool)
    if name == "null":
        return instance is None
    if isinstance(instance, bool):
        return False
    if name == "integer":
        return isinstance(instance, int) or (isinstance(instance, float) and instance.is_integer())
    if name == "number":
        return isinstance(instance, numbers.Number)
    raise ValueError(f"unknown JSON schema type {name!r}")


def _equal(one: Any, two: Any) -> bool:
    """jsonschema's ``equal``: True is not 1, False is not 0, recursively."""
    if one is two:
        return True
    if isinstance(one, str) or isinstance(two, str):
        return one == two
    if isinstance(one, list) and isinstance(two, list):
        return len(one) == len(two) and all(_equal(a, b) for a, b in zip(one, two))
    if isinstance(one, dict) and isinstance(two, dict):
        return one.keys() == two.keys() and all(_equal(one[k], two[k]) for k in one)
    if isinstance(one, bool) or isinstance(two, bool):
        return isinstance(one, bool) and isinstance(two, bool) and one == two
    return one == two


def _errors(instance: Any, schema: Any, path: tuple) -> Iterator[SchemaError]:
    """Every error, in jsonschema's order (the schema's keyword order, descending in place)."""
    if schema is True:
        return
    if schema is False:
        yield SchemaError(f"False schema does not allow {instance!r}", path, None, schema, instance)
        return
    for key, value in schema.items():
        msg = None
        if key == "type":
            types = [value] if isinstance(value, str) else value
            if not any(is_type(instance, t) for t in types):
                msg = f"{instance!r} is not of type {', '.join(repr(t) for t in types)}"
        elif key == "properties" and isinstance(instance, dict):
            for prop, sub in value.items():
                if prop in instance:
                    yield from _errors(instance[prop], sub, path + (prop,))
        elif key == "required" and isinstance(instance, dict):
            for prop in value:
                if prop not in instance:
                    yield SchemaError(f"{prop!r} is a required property", path, key, schema, instance)
        elif key == "additionalProperties" and isinstance(instance, dict):
            extras = [p for p in instance if p not in schema.get("properties", {})]
            if isinstance(value, dict):
                for extra in extras:
                    yield from _errors(instance[extra], value, path + (extra,))
            elif not value and extras:
                extras = sorted(extras, key=str)
                msg = (
                    f"Additional properties are not allowed ({', '.join(repr(e) for e in extras)} "
                    f"{'was' if len(extras) == 1 else 'were'} unexpected)"
                )
        elif key == "items" and isinstance(instance, list):
            prefix = len(schema.get("prefixItems", []))
            if value is False and len(instance) > prefix:
                extra = len(instance) - prefix
                rest = instance[prefix:] if extra != 1 else instance[prefix]
                msg = (
                    f"Expected at most {prefix} {'items' if prefix != 1 else 'item'} but found {extra} extra: {rest!r}"
                )
            else:
                for i in range(prefix, len(instance)):
                    yield from _errors(instance[i], value, path + (i,))
        elif key == "prefixItems" and isinstance(instance, list):
            for i, (item, sub) in enumerate(zip(instance, value)):
                yield from _errors(item, sub, path + (i,))
        elif key == "minItems" and isinstance(instance, list) and len(instance) < value:
            msg = f"{instance!r} {'should be non-empty' if value == 1 else 'is too short'}"
        elif key == "maxItems" and isinstance(instance, list) and len(instance) > value:
            msg = f"{instance!r} {'is expected to be empty' if value == 0 else 'is too long'}"
        elif key == "minimum" and is_type(instance, "number") and instance < value:
            msg = f"{instance!r} is less than the minimum of {value!r}"
        elif key == "maximum" and is_type(instance, "number") and instance > value:
            msg = f"{instance!r} is greater than the maximum of {value!r}"
        elif key == "enum" and all(not _equal(e, instance) for e in value):
            msg = f"{instance!r} is not one of {value!r}"
        if msg is not None:
            yield SchemaError(msg, path, key, schema, instance)


def _matches_type(e: SchemaError) -> bool:
    try:
        expected = e.schema["type"]
    except (KeyError, TypeError):
        return False
    return any(is_type(e.instance, t) for t in ([expected] if isinstance(expected, str) else expected))


def _relevance(e: SchemaError) -> tuple:
    """jsonschema's ``relevance`` key (no anyOf/oneOf here, so no weak keywords)."""
    return (-len(e.path), e.path, True, False, not _matches_type(e))


def validate(instance: Any, schema: Any) -> None:
    """Raise :class:`SchemaError` with the error ``jsonschema.validate`` would raise, if any."""
    best = max(_errors(instance, schema, ()), key=_relevance, default=None)
    if best is not None:
        raise best
