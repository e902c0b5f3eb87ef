"""graph/disjoint.py: every disjointness it claims holds on a universe of values (jsonschema as the
oracle, all pairs of a pool of small schemas), `restrict` is exact where it answers, and oneOfs
that are disjoint only by such a reason (or that drop a type every value of which matches two
alternatives) compile exactly: check == jsonschema, byte walks finish valid and never dead-end."""
from __future__ import annotations

import itertools
import random
from typing import Any

import jsonschema
import pytest

from factorspec.errors import EmptySchema
from factorspec.graph import compile_spec
from factorspec.graph.disjoint import TYPES, Overlaps
from factorspec.graph.schema import _VOCABULARY, SchemaCompiler
from factorspec.graph.textstate import TextMachine
from tests.graph.walks import byte_walks

DEFS = {"s": {"type": "string", "enum": ["a", "b"]}, "o": {"type": "object", "required": ["k"],
        "properties": {"k": {"const": "a"}}}}
POOL: list[Any] = [
    True, False, {}, {"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": ["string", "null"]},
    {"enum": ["a", 1, None]}, {"const": "b"}, {"type": "string", "pattern": "^a"}, {"pattern": "b$"},
    {"type": "string", "minLength": 2}, {"maxLength": 1}, {"minimum": 1}, {"exclusiveMaximum": 1},
    {"type": "integer", "minimum": 0, "maximum": 1}, {"required": ["a"]}, {"required": ["b"]},
    {"properties": {"a": {"type": "string"}}, "required": ["a"]}, {"properties": {"a": {"type": "integer"}}},
    {"properties": {"a": {"type": "integer"}}, "additionalProperties": False},
    {"properties": {"k": {"const": "b"}}, "required": ["k"]}, {"$ref": "#/$defs/o"}, {"$ref": "#/$defs/s"},
    {"not": {"$ref": "#/$defs/s"}}, {"type": "string", "not": {"enum": ["a"]}},
    {"allOf": [{"type": "object"}, {"required": ["a"]}]}, {"anyOf": [{"type": "null"}, {"const": "a"}]},
    {"oneOf": [{"type": "null"}, {"type": "boolean"}]}, {"type": "array", "items": {"type": "string"}, "minItems": 1},
    {"type": "array", "items": {"type": "integer"}}, {"maxItems": 0}, {"minProperties": 2}, {"maxProperties": 1},
    {"if": {"type": "string"}, "then": {"maxLength": 1}},
    # untyped alternatives that both admit every non-object: the oneOf admits only objects
    {"oneOf": [{"properties": {"a": {"type": "integer"}}}, {"properties": {"k": {"const": "a"}}}]},
]
UNIVERSE: list[Any] = [None, True, False, 0, 1, 2, -1, 0.5, 1.5, "", "a", "b", "ab", "ba", "abc", [], [0], ["a"],
                       [0, "a"], ["a", "b"], {}, {"a": 0}, {"a": "x"}, {"b": 1}, {"a": 0, "b": 1}, {"k": "a"},
                       {"k": "b"}, {"k": "a", "a": "x"}, {"a": 1.5}]


def _type(v: Any) -> str:
    return {type(None): "null", bool: "boolean", int: "number", float: "number", str: "string", list: "array",
            dict: "object"}[type(v)]


def _valid(s: Any, v: Any) -> bool:
    return jsonschema.Draft202012Validator({"$defs": DEFS, "allOf": [s]}).is_valid(v)


@pytest.fixture(scope="module")
def ov() -> Overlaps:
    c = SchemaCompiler({"$defs": DEFS})
    return Overlaps(_VOCABULARY, c._resolve, False)


def test_restrict_is_exact_where_it_answers(ov: Overlaps) -> None:
    for s in POOL:
        for t in TYPES:
            r = ov.restrict(s, t)
            vs = [v for v in UNIVERSE if _type(v) == t]
            if r is True:
                assert all(_valid(s, v) for v in vs), (s, t)
            elif r is False:
                assert not any(_valid(s, v) for v in vs), (s, t)


def test_claimed_disjointness_holds_on_the_universe(ov: Overlaps) -> None:
    valid = {i: {j for j, v in enumerate(UNIVERSE) if _valid(s, v)} for i, s in enumerate(POOL)}
    claims = 0
    for i, a in enumerate(POOL):
        for j, b in enumerate(POOL):
            for t in TYPES:
                if ov.disjoint(a, b, t):
                    claims += 1
                    both = [UNIVERSE[k] for k in valid[i] & valid[j] if _type(UNIVERSE[k]) == t]
                    assert not both, (a, b, t, both)
    assert claims > 100  # the test proves something: most pairs are disjoint on most types


_I = {"type": "integer", "minimum": 0, "maximum": 2}
ONE_OF: list[dict] = [
    # no type beside oneOf: every non-object matches all alternatives (dropped), objects by discriminator
    {"oneOf": [{"required": ["k"], "properties": {"k": {"const": "a"}, "n": _I}},
               {"required": ["k"], "properties": {"k": {"const": "b"}}}]},
    # closed objects: one requires a key the other does not declare
    {"oneOf": [{"type": "object", "properties": {"a": _I, "b": _I}, "required": ["a", "b"],
                "additionalProperties": False},
               {"type": "object", "properties": {"a": _I, "c": _I}, "required": ["a", "c"],
                "additionalProperties": False}]},
    # number ranges, string patterns and a string enum against a pattern
    {"oneOf": [{"type": "integer", "minimum": 0, "maximum": 3}, {"type": "integer", "minimum": 4, "maximum": 6}]},
    {"oneOf": [{"type": "string", "pattern": "^a", "maxLength": 2}, {"type": "string", "pattern": "^b", "maxLength": 2},
               {"enum": ["ccc", "c"]}]},
    # a required property whose value schemas have different types, through $ref and allOf
    {"$defs": {"x": {"properties": {"v": {"type": "string", "maxLength": 1}}, "required": ["v"]}},
     "type": "object", "oneOf": [{"$ref": "#/$defs/x"},
                                 {"allOf": [{"properties": {"v": {"type": "boolean"}}}, {"required": ["v"]}]}]},
    # an enum against a 'not' over the same values
    {"$defs": {"p": {"type": "string", "enum": ["a", "b"]}},
     "oneOf": [{"$ref": "#/$defs/p"}, {"type": "string", "maxLength": 2, "not": {"$ref": "#/$defs/p"}}]},
    # a nested oneOf whose members are each disjoint from the other alternative
    {"oneOf": [{"type": "null"}, {"oneOf": [{"type": "boolean"}, {"type": "integer", "minimum": 0, "maximum": 1}]}]},
]
WALK_UNIVERSE = UNIVERSE + ["c", "ccc", "aa", "bb", 3, 4, 6, 7, {"a": 0, "b": 1, "c": 2}, {"a": 0, "c": 1},
                            {"a": 1, "b": 2}, {"v": "x"}, {"v": True}, {"v": "xy"}, {"k": "a", "n": 1},
                            {"k": "b", "n": 1}, {"k": "c"}]


@pytest.mark.parametrize("k", range(len(ONE_OF)))
def test_disjoint_one_of_compiles_exactly(k: int) -> None:
    schema = ONE_OF[k]
    cs = compile_spec(schema)
    validator = jsonschema.Draft202012Validator(schema)
    accepted = 0
    for v in WALK_UNIVERSE:
        if cs.check(v) == []:
            assert validator.is_valid(v), (schema, v)
            accepted += 1
        elif validator.is_valid(v):  # refused but valid: only by the closed-object layout policy
            assert isinstance(v, dict), (schema, v)
    assert accepted > 0
    assert byte_walks(TextMachine(cs), validator.is_valid, random.Random(k), walks=30) > 0


def test_a_type_every_value_of_which_matches_two_alternatives_is_excluded() -> None:
    """oneOf [object-only keywords, object-only keywords]: strings match both, so none is valid."""
    schema = {"oneOf": [{"required": ["a"], "properties": {"a": {"const": 1}}},
                        {"required": ["a"], "properties": {"a": {"const": 2}}}]}
    cs = compile_spec(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for v in ["x", 3, None, [], {"a": 1}, {"a": 2}, {"a": 3}]:
        assert (cs.check(v) == []) == validator.is_valid(v), v


def test_no_type_left_is_an_empty_schema_that_says_why() -> None:
    with pytest.raises(EmptySchema) as e:
        compile_spec({"type": "string", "oneOf": [{"maxItems": 1}, {"minimum": 3}]})
    assert "admits no value" in e.value.message and "every string value" in e.value.message



def test_one_of_whose_alternatives_the_siblings_all_imply_admits_nothing_and_says_so() -> None:
    """The corpus shape (Glaiveai2K calculate_area_*): the object beside oneOf requires every
    property, so every object matches every alternative: truly empty (jsonschema agrees on every
    set of keys, values of the declared type, plus an undeclared key) and the error says why."""
    num = {"type": "number"}
    schema = {"type": "object", "properties": {"radius": num, "length": num, "width": num},
              "required": ["radius", "length", "width"],
              "oneOf": [{"required": ["radius"]}, {"required": ["length", "width"]}]}
    validator = jsonschema.Draft202012Validator(schema)
    names = ["radius", "length", "width", "other"]
    for n in range(len(names) + 1):
        for ks in itertools.combinations(names, n):
            assert not validator.is_valid(dict.fromkeys(ks, 1)), ks
    with pytest.raises(EmptySchema) as e:
        compile_spec(schema)
    assert "admits no value" in e.value.message and "matches alternatives #0, #1" in e.value.message
    # one alternative the siblings do not imply: the other is then exactly "not that one"
    ok = {**schema, "required": ["radius"]}
    cs = compile_spec(ok)
    v2 = jsonschema.Draft202012Validator(ok)
    for n in range(len(names)):
        for ks in itertools.combinations(names[:3], n):
            val = dict.fromkeys(ks, 1)
            assert (cs.check(val) == []) == v2.is_valid(val), val
