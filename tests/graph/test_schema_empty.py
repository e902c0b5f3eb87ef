"""Schema nodes that admit no value (errors.EmptySchema): left out exactly where they are
optional (a property not required must be absent, a union alternative is dropped, an array whose
items admit nothing is empty), refused where a value is needed, and refused with a clear message
in an open object (which would take the key back as an extra member). Brute force against
`jsonschema` over a universe of values."""
from __future__ import annotations

import itertools
from typing import Any

import jsonschema
import pytest

from factorspec.errors import EmptySchema, SpecError
from factorspec.graph import compile_spec
from factorspec.graph.textstate import TextMachine

_I = {"type": "integer", "minimum": 0, "maximum": 2}
SCHEMAS: list[dict] = [
    {"type": "object", "properties": {"a": {"type": "object", "enum": ["X"]}, "b": _I}, "additionalProperties": False},
    {"type": "object", "properties": {"a": False, "b": _I}, "required": ["b"], "additionalProperties": False},
    {"type": "object", "properties": {"a": {"type": "array", "items": False}, "b": _I},
     "additionalProperties": False},
    {"type": "object", "properties": {"a": {"type": "object", "properties": {"x": False}, "required": ["x"]},
                                      "b": _I}, "additionalProperties": False},
    {"anyOf": [{"type": "string", "enum": [1, 2]}, _I, {"type": "integer", "minimum": 5, "maximum": 4}]},
    {"type": "object", "properties": {"a": {"type": "number", "minimum": 3, "exclusiveMaximum": 3}, "b": _I},
     "additionalProperties": False},
]


def _universe() -> list[Any]:
    vals: list[Any] = [0, 1, 2, 3, "X", [], [0], {}, {"x": 0}, None]
    out: list[Any] = list(vals)
    for n in range(3):
        for ks in itertools.combinations("ab", n):
            for vs in itertools.product(vals, repeat=n):
                out.append(dict(zip(ks, vs)))
    return out


@pytest.mark.parametrize("k", range(len(SCHEMAS)))
def test_check_equals_the_validator(k: int) -> None:
    schema = SCHEMAS[k]
    cs = compile_spec(schema)
    validator = jsonschema.Draft202012Validator(schema)
    valid = 0
    for v in _universe():
        want = validator.is_valid(v)
        assert (cs.check(v) == []) == want, (schema, v)
        valid += want
    assert valid > 0
    assert validator.is_valid(cs.solve())


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"a": False}, "required": ["a"]},
    {"type": "array", "items": False, "minItems": 1},
    {"anyOf": [{"type": "string", "enum": [1]}, False]},
])
def test_a_needed_value_that_cannot_exist_is_refused(schema: dict) -> None:
    with pytest.raises(EmptySchema):
        compile_spec(schema)


def test_open_objects_keep_an_absent_only_property_out_exactly() -> None:
    """An optional property no value fits, in an open object: its name is kept out of the extra
    members (the key space of patterned objects), so it is absent as JSON Schema says."""
    cs = compile_spec({"type": "object", "properties": {"a": False}, "additionalProperties": True})
    assert cs.check({"b": 1}) == [] and cs.check({}) == [] and cs.check({"a": 1}) != []
    tm = TextMachine(cs)
    c = tm.initial()
    for b in b'{"a"':
        c = tm.step(c, b)
    assert not c  # no member named "a" can be written
