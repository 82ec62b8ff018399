"""fasbench.tools.schema finds the error jsonschema.validate finds (message and path), for every
schema of every tool set, over generated arguments: near-valid objects (known keys with values of any
type, unknown keys, missing required keys) and any JSON value. jsonschema is the reference here; the
tools no longer import it (its import cost 1.7-3.0 s of CPU, tests/test_startup.py)."""

from __future__ import annotations

import tempfile

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fasbench.tools import TOOLSETS, make_toolset
from fasbench.tools.schema import SchemaError, check_keywords, validate


def _schemas() -> list[tuple[str, dict]]:
    with tempfile.TemporaryDirectory() as tmp:
        return [
            (f"{ts}.{name}", tool.parameters) for ts in TOOLSETS for name, tool in make_toolset(ts, tmp).tools.items()
        ]


SCHEMAS = _schemas()

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from([1.0, 2.5, -1.0, 0.0]), st.text(max_size=3)
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=3), inner, max_size=3)),
    max_leaves=8,
)


def near_valid(schema: dict):
    """Objects over the schema's own keys (values of any JSON type, integer pairs likely) plus strays."""
    keys = list(schema.get("properties", {})) + ["stray", "path"]
    pairs = st.lists(st.one_of(st.integers(-3, 300), st.text(max_size=2), st.none()), max_size=3)
    value = st.one_of(
        json_values,
        st.lists(st.integers(-2, 5), max_size=3),
        pairs,
        st.dictionaries(st.sampled_from(["a.py", "b.py"]), st.lists(pairs, max_size=3), max_size=2),
    )
    return st.dictionaries(st.sampled_from(keys), value, max_size=len(keys))


def reference(args, schema) -> tuple[str, list] | None:
    """What ``jsonschema.validate(args, schema)`` raises (its best match), the schema checked once."""
    e = jsonschema.exceptions.best_match(_validator(id(schema), schema).iter_errors(args))
    return None if e is None else (e.message, list(e.absolute_path))


_VALIDATORS: dict[int, object] = {}


def _validator(key: int, schema: dict):
    if key not in _VALIDATORS:
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        _VALIDATORS[key] = cls(schema)
    return _VALIDATORS[key]


def ours(args, schema) -> tuple[str, list] | None:
    try:
        validate(args, schema)
    except SchemaError as e:
        return e.message, list(e.path)
    return None


@pytest.mark.parametrize("name,schema", SCHEMAS, ids=[n for n, _ in SCHEMAS])
def test_every_tool_schema_uses_supported_keywords(name, schema):
    check_keywords(schema)


@pytest.mark.parametrize("name,schema", SCHEMAS, ids=[n for n, _ in SCHEMAS])
@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_same_error_as_jsonschema(name, schema, data):
    args = data.draw(st.one_of(near_valid(schema), json_values))
    assert ours(args, schema) == reference(args, schema), args


def test_known_messages():
    """A few cases spelled out (the words the model sees in the tool's error)."""
    ((_, view),) = [(n, s) for n, s in SCHEMAS if n == "relace.view_file"]
    assert ours({}, view) == ("'path' is a required property", [])
    assert ours({"path": 3}, view) == ("3 is not of type 'string'", ["path"])
    assert ours({"path": "a", "x": 1, "y": 2}, view) == (
        "Additional properties are not allowed ('x', 'y' were unexpected)",
        [],
    )
    assert ours({"path": "a", "view_range": [1, True]}, view) == ("True is not of type 'integer'", ["view_range", 1])
    assert ours({"path": "a", "view_range": [1.0, 2]}, view) is None  # 1.0 is an integer in JSON schema
    with pytest.raises(ValueError, match="patternProperties"):
        check_keywords({"type": "object", "patternProperties": {}})
