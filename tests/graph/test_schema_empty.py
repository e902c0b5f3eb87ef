"""Schema nodes that admit no value (errors.EmptySchema): left out exactly where they are
optional (a property not required must be absent, a union alternative is dropped, an array whose
items admit nothing is empty), refused where a value is needed, and refused with a clear message
in an open object (which would take the key back as an extra member). Brute force against
`jsonschema` over a universe of values."""
from __future__ import annotations

import itertools
import random
from typing import Any

import jsonschema
import pytest

from factorspec.errors import EmptySchema, SpecError
from factorspec.graph import compile_spec
from factorspec.graph.schema import canonical_text
from factorspec.graph.textstate import TextMachine
from tests.graph.walks import byte_walks

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
    # open objects: a declared property that admits no value must be absent, and must not come
    # back as an extra member (the key-space path keeps declared keys out of the extras)
    {"type": "object", "properties": {"a": False, "b": _I}, "additionalProperties": True},
    {"type": "object", "properties": {"a": {"type": "integer", "enum": ["X"]}, "b": _I},
     "additionalProperties": {"type": "integer"}},
    {"type": "object", "properties": {"a": False}, "additionalProperties": _I, "required": ["b"]},
    # no additionalProperties, a required empty property under an anyOf branch: the closed and the
    # open reading both admit no object there; the other branch stays (cf. the prometheus schema)
    {"type": "object", "anyOf": [{"properties": {"a": {"allOf": [{"const": None}, {"not": {"const": None}}]},
                                                 "b": {"const": None, "type": "integer"}},
                                  "required": ["a"]},
                                 {"properties": {"b": _I}, "required": ["b"], "additionalProperties": False}]},
]


def _universe() -> list[Any]:
    vals: list[Any] = [0, 1, 2, 3, "X", [], [0], {}, {"x": 0}, None]
    out: list[Any] = list(vals)
    for n in range(3):
        for ks in itertools.combinations("abc", n):
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


def test_open_objects_refuse_an_absent_only_property_beside_dependencies_clearly() -> None:
    with pytest.raises(SpecError) as e:
        compile_spec({"type": "object", "properties": {"a": False, "b": _I}, "additionalProperties": True,
                      "dependencies": {"b": ["c"]}})
    # the key-space path takes dependencies between declared properties only: 'c' is named
    assert not isinstance(e.value, EmptySchema) and "'c'" in e.value.message
    assert e.value.pointer == "/dependencies/b"


_OPEN = [k for k, s in enumerate(SCHEMAS) if s.get("type") == "object"
         and (s.get("additionalProperties", False) is not False or "anyOf" in s)]


@pytest.mark.parametrize("k", _OPEN)
def test_open_objects_with_an_absent_only_property_walk_and_accept(k: int) -> None:
    """Byte walks never dead-end and finish valid (never the absent key, never a bad extra), and
    the canonical text of every valid universe value is accepted."""
    schema = SCHEMAS[k]
    cs = compile_spec(schema)
    tm = TextMachine(cs)
    validator = jsonschema.Draft202012Validator(schema)
    assert byte_walks(tm, validator.is_valid, random.Random(k), walks=40, prefer='{}",: 0123abc') > 0
    for v in _universe():
        if validator.is_valid(v):
            assert cs.check(v) == []
            c = tm.initial()
            for b in canonical_text(cs.template, v).encode():
                c = tm.step(c, b)
                assert c, (schema, v)
            assert tm.is_final(c), (schema, v)
    c = tm.initial()
    for b in b'{"a"':
        c = tm.step(c, b) if c else c
    assert not c, "the absent-only key 'a' must be refused as a member"


# a root without `type` read as the type its keywords imply (like xgrammar), when that reading
# admits no value: by the standard the root still admits every value of the other types (the
# object keywords constrain only objects), so it compiles to those (corpus: Github_medium/o74424,
# Github_hard/o10346, Github_easy/o21833 and four more), and says so in the report
_EMPTY_OBJECT_READING: list[dict] = [
    {"properties": {"a": False}, "required": ["a"]},
    {"properties": {"a": {"type": "string", "pattern": "/^x$/"}}, "required": ["a"]},
    {"$defs": {"n": {"properties": {"next": {"$ref": "#/$defs/n"}}, "required": ["next"]}},
     "properties": {"next": {"$ref": "#/$defs/n"}}, "required": ["next"]},
    {"properties": {"a": False}, "required": ["a"], "minItems": 1, "maxLength": 1},
]


@pytest.mark.parametrize("k", range(len(_EMPTY_OBJECT_READING)))
def test_an_untyped_root_whose_implied_type_admits_nothing_takes_the_other_types(k: int) -> None:
    schema = _EMPTY_OBJECT_READING[k]
    cs = compile_spec(schema)
    assert any(p == "/type" and "value fits its keywords" in n for p, _kw, n in cs.schema_report)
    validator = jsonschema.Draft202012Validator(schema)
    universe = _universe() + ["", "ab", True, 2.5, [[0]], {"a": "x"}, {"next": {}}]
    valid = 0
    for v in universe:
        want = validator.is_valid(v)
        assert (cs.check(v) == []) == want, (schema, v)
        valid += want
    assert valid > 0 and validator.is_valid(cs.solve())
    assert byte_walks(TextMachine(cs), validator.is_valid, random.Random(k), walks=20) > 0


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"a": False}, "required": ["a"]},  # typed: no other type to take
    {"properties": {"a": False}, "required": ["a"], "enum": [{"a": 1}]},  # decided by its enum
    {"properties": {"a": False}, "required": ["a"],  # relations name its fields
     "x-factorspec": {"relations": ["a == 1"]}},
])
def test_a_typed_or_decided_root_that_admits_nothing_is_still_refused(schema: dict) -> None:
    with pytest.raises(EmptySchema):
        compile_spec(schema)
