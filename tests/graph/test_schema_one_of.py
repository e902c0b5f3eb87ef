"""oneOf whose alternatives may overlap as schemas but not as layouts (schema.SchemaCompiler
._separate): every value the compiled spec accepts matches exactly one alternative (jsonschema
agrees, brute force over a universe of objects), each alternative keeps values, byte walks never
dead-end, and a oneOf that cannot be separated is still refused."""
from __future__ import annotations

import itertools
import random
from typing import Any

import jsonschema
import pytest

from factorspec.errors import EmptySchema, SpecError
from factorspec.graph import compile_spec
from factorspec.graph.textstate import TextMachine
from tests.graph.walks import byte_walks

_I = {"type": "integer", "minimum": 0, "maximum": 2}
SCHEMAS: list[dict] = [
    # the common shape: properties beside oneOf, alternatives that differ by what they require
    {"type": "object", "properties": {"radius": _I, "length": _I, "width": _I},
     "oneOf": [{"required": ["radius"]}, {"required": ["length", "width"]}]},
    {"type": "object", "properties": {"a": _I, "b": _I, "c": _I},
     "oneOf": [{"required": ["a"]}, {"required": ["b"]}, {"required": ["c"]}]},
    # closed layouts: each alternative declares only its own key
    {"oneOf": [{"type": "object", "properties": {"a": _I}, "required": ["a"]},
               {"type": "object", "properties": {"b": {"type": "boolean"}}, "required": ["b"]}]},
    # properties both beside oneOf and in an alternative: merged exactly (an allOf of the two)
    {"type": "object", "properties": {"a": _I, "b": _I, "c": _I},
     "oneOf": [{"required": ["a", "b"]}, {"required": ["c"], "properties": {"c": {"const": 1}}}]},
]


def _universe() -> list[Any]:
    out: list[Any] = []
    for n in range(5):
        for ks in itertools.combinations(["a", "b", "c", "radius", "length", "width"], n):
            for vs in itertools.product([0, 1, True], repeat=n):
                out.append(dict(zip(ks, vs)))
    return out


UNIVERSE = _universe()


def _alt_of(schema: dict, v: Any) -> list[int]:
    base = {k: x for k, x in schema.items() if k != "oneOf"}
    return [i for i, a in enumerate(schema["oneOf"])
            if jsonschema.Draft202012Validator({"allOf": [base, a]}).is_valid(v)]


@pytest.mark.parametrize("k", range(len(SCHEMAS)))
def test_accepted_values_match_exactly_one_alternative(k: int) -> None:
    schema = SCHEMAS[k]
    cs = compile_spec(schema)
    validator = jsonschema.Draft202012Validator(schema)
    hit: set[int] = set()
    for v in UNIVERSE:
        if cs.check(v) == []:
            assert validator.is_valid(v), (schema, v)
            alts = _alt_of(schema, v)
            assert len(alts) == 1, (schema, v, alts)
            hit |= set(alts)
    assert hit == set(range(len(schema["oneOf"]))), (schema, hit)


@pytest.mark.parametrize("k", range(len(SCHEMAS)))
def test_byte_walks_never_dead_end(k: int) -> None:
    schema = SCHEMAS[k]
    validator = jsonschema.Draft202012Validator(schema)
    tm = TextMachine(compile_spec(schema))
    assert byte_walks(tm, validator.is_valid, random.Random(k), prefer='{}",: 012abcrlwt') > 0


def test_a_one_of_whose_negation_does_not_compile_is_still_refused() -> None:
    """integer vs even integer: "an integer that is not a multiple of 2" has no layout (negation.py)."""
    with pytest.raises(SpecError) as e:
        compile_spec({"oneOf": [{"type": "integer"}, {"type": "integer", "multipleOf": 2}]})
    assert "may both match one value" in e.value.message and "multipleOf" in e.value.message


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"a": _I}, "oneOf": [{"required": ["a"]}, {"required": ["a"]}]},
    {"type": "object", "properties": {"a": _I}, "required": ["a"], "oneOf": [{"required": ["a"]}, {}]},
])
def test_a_one_of_that_no_value_matches_exactly_once_admits_nothing(schema: dict) -> None:
    """Every value matches both alternatives or neither: exactly-one by negation admits nothing."""
    with pytest.raises(EmptySchema):
        compile_spec(schema)


def test_overlapping_alternatives_are_exact_by_negation() -> None:
    """Alternative #1 admits every value of #0 with a = 0: no property presence separates them, the
    negation does (exactly one: b present and a != 0, or b absent and a = 0)."""
    schema = {"type": "object", "properties": {"a": _I, "b": _I}, "required": ["a"], "additionalProperties": False,
              "oneOf": [{"required": ["b"]}, {"properties": {"a": {"const": 0}}}]}
    cs = compile_spec(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for a in range(3):
        for b in [None, 0, 1, 2]:
            v = {"a": a} if b is None else {"a": a, "b": b}
            assert (cs.check(v) == []) == validator.is_valid(v), v


def test_a_type_two_alternatives_admit_whole_is_outside_the_one_of() -> None:
    """Github_ultra/o65417's shape: an untyped oneOf admits no null or string (both alternatives
    admit every one, so none matches exactly once), which makes the outer oneOf's alternatives
    disjoint by type: compiled, equal to the validator, walked without a dead end."""
    inner = {"oneOf": [{"properties": {"t": {"const": "x"}, "n": {"type": "integer", "minimum": 0, "maximum": 1}},
                        "additionalProperties": False},
                       {"properties": {"t": {"const": "y"}}, "additionalProperties": False}]}
    schema = {"$defs": {"inner": inner}, "oneOf": [{"type": ["string", "null"], "maxLength": 2},
                                                   {"$ref": "#/$defs/inner"}]}
    from factorspec.graph.disjoint import Overlaps
    from factorspec.graph.schema import _VOCABULARY, SchemaCompiler

    ov = Overlaps(_VOCABULARY, SchemaCompiler(schema)._resolve, False)
    assert [ov.restrict(inner, t) for t in ("null", "string", "object")] == [False, False, None]
    cs = compile_spec(schema)
    validator = jsonschema.Draft202012Validator(schema)
    values: list[Any] = [None, "", "ab", "abc", 0, 1.5, True, [], [1]]
    for n in range(4):
        for ks in itertools.combinations(["t", "n", "z"], n):
            for vs in itertools.product(["x", "y", 0], repeat=n):
                values.append(dict(zip(ks, vs)))
    for v in values:
        assert (cs.check(v) == []) == validator.is_valid(v), (v, cs.check(v))
    assert byte_walks(TextMachine(cs), validator.is_valid, random.Random(3), prefer='{}",: 01xytnz') > 0
