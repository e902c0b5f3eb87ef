"""`allOf` members with patternProperties beside other members' object keywords, merged as object
layers (all_of.py OBJECT_LAYERS, schema.py `_patterned`): every member judges every key as it
wrote it. Compared with the `jsonschema` validator on every object of up to 2 members over a key
universe that hits each pattern, each declared name and neither; byte walks never dead-end."""
from __future__ import annotations

import itertools
import json
import random
from typing import Any

import jsonschema
import pytest

from factorspec.errors import SpecError
from factorspec.graph import compile_spec
from factorspec.graph.all_of import merge_all_of
from factorspec.graph.negation import OBJECT_LAYERS
from factorspec.graph.schema import VALIDATION_KEYWORDS, Obj, canonical_text
from factorspec.graph.textstate import TextMachine
from tests.graph.test_schema_all_of import _run
from tests.graph.walks import byte_walks

KEYS = ["a", "b", "a1", "ab", "b1", "c", "1"]
VALUES: list[Any] = [1, -1, "x", None]

# every schema has an explicit additionalProperties in some layer, so no key is left to the
# layout policy that closes objects without the keyword (docs/spec.md): the check must be exact
SCHEMAS: list[dict] = [
    # a key matching member 1's pattern and listed in member 2 satisfies both; member 2's
    # additionalProperties judges the keys member 2 does not list, whatever member 1 says
    {"type": "object", "allOf": [{"patternProperties": {"^a": {"type": "integer"}}},
                                 {"properties": {"a1": {"minimum": 0}}, "additionalProperties": {"enum": [1, "x", None]}}]},
    # additionalProperties false in one layer closes the keys its own patterns do not cover
    {"allOf": [{"type": "object", "patternProperties": {"^a": {"type": "integer"}}, "additionalProperties": False},
               {"patternProperties": {"1$": {"minimum": 0}}, "additionalProperties": {"type": "integer"}}]},
    # required beside the layers; a required key a closed layer covers by a pattern only
    {"allOf": [{"type": "object", "required": ["b1"], "patternProperties": {"^b": {"type": "integer"}},
                "additionalProperties": {"type": "string"}},
               {"properties": {"b1": {"minimum": 0}, "c": {"const": "x"}}, "additionalProperties": True}]},
    # propertyNames in one member, patterns in another
    {"allOf": [{"type": "object", "propertyNames": {"maxLength": 1}},
               {"patternProperties": {"^[ab]": {"type": "integer"}}, "additionalProperties": {"type": "null"}},
               {"properties": {"a": {"maximum": 0}}}]},
    # layers in each alternative of a distributed anyOf
    {"allOf": [{"type": "object", "patternProperties": {"^a": {"type": "integer"}}, "additionalProperties": True},
               {"anyOf": [{"properties": {"b": {"type": "string"}}, "required": ["b"]},
                          {"properties": {"a": {"const": -1}}, "required": ["a"], "additionalProperties": False}]}]},
    # two pattern members: a key matching both takes both schemas
    {"allOf": [{"type": "object", "patternProperties": {"^a": {"type": "integer"}, "^b": {"type": "null"}},
                "additionalProperties": False},
               {"patternProperties": {"1$": {"minimum": 0}, "b$": {"maximum": 0}},
                "additionalProperties": True}]},
    # a negated member check over the layers ($fsSomeMember, some_member.py): b present and negative
    {"type": "object", "allOf": [{"patternProperties": {"^a": {"type": "integer"}}},
                                 {"properties": {"b": {"type": "integer"}, "a1": {}}, "additionalProperties": False}],
     "not": {"properties": {"b": {"minimum": 0}}}},
    # a required key a closed layer forbids: the alternative admits nothing and is dropped
    {"anyOf": [{"allOf": [{"type": "object", "required": ["c"], "patternProperties": {"^a": True},
                           "additionalProperties": False}, {"properties": {"c": {}}, "additionalProperties": True}]},
               {"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["b"],
                "additionalProperties": False}]},
]


def _objects() -> list[dict]:
    out: list[dict] = []
    for n in range(3):
        for ks in itertools.combinations(KEYS, n):
            for vs in itertools.product(VALUES, repeat=n):
                out.append(dict(zip(ks, vs)))
    return out


OBJECTS = _objects()


def _layout_text(node: Any, value: dict) -> str:
    declared = [f.key for f in node.fields]
    keys = [k for k in declared if k in value] + sorted(k for k in value if k not in declared)
    return "{" + ", ".join(f"{json.dumps(k)}: {json.dumps(value[k])}" for k in keys) + "}"


@pytest.mark.parametrize("k", range(len(SCHEMAS)))
def test_layers_equal_the_validator(k: int) -> None:
    """The record check accepts an object iff jsonschema does; where the layout is one object the
    machine accepts its text iff valid, else the canonical text of every valid value."""
    schema = SCHEMAS[k]
    cs = compile_spec(schema)
    tm = TextMachine(cs)
    validator = jsonschema.Draft202012Validator(schema)
    accepted = 0
    for v in OBJECTS:
        want = validator.is_valid(v)
        assert (cs.check(v) == []) == want, (schema, v, cs.check(v))
        if isinstance(cs.template, Obj):
            assert tm.is_final(_run(tm, _layout_text(cs.template, v).encode())) == want, (schema, v)
        elif want:
            assert tm.is_final(_run(tm, canonical_text(cs.template, v).encode())), (schema, v)
        accepted += want
    assert accepted > 1
    assert validator.is_valid(cs.solve())


@pytest.mark.parametrize("k", range(len(SCHEMAS)))
def test_layers_never_dead_end(k: int) -> None:
    schema = SCHEMAS[k]
    validator = jsonschema.Draft202012Validator(schema)
    assert byte_walks(TextMachine(compile_spec(schema)), validator.is_valid, random.Random(300 + k), walks=30) > 0


def test_the_merge_keeps_each_member_as_a_layer() -> None:
    """The merged schema holds the members' object keywords apart (one layer each, pointers kept),
    not a union of their patterns, which would let member 1's pattern override member 2's
    additionalProperties."""
    s = {"allOf": [{"patternProperties": {"^a": {"type": "integer"}}},
                   {"properties": {"b": {}}, "additionalProperties": False}]}
    merged = merge_all_of(s, "", lambda r, p: (None, ""), lambda m: m, VALIDATION_KEYWORDS)
    assert "patternProperties" not in merged and "additionalProperties" not in merged
    assert [x["at"] for x in merged[OBJECT_LAYERS]] == ["/allOf/0", "/allOf/1"]
    cs = compile_spec({"type": "object", **s})
    assert cs.check({"b": 1}) == [] and cs.check({"a": 1}) != []  # member 2 forbids "a"


def test_a_property_no_value_fits_stays_out_of_an_open_object() -> None:
    """Members whose const values for a key differ: the key is declared `false`, not dropped (an
    open object would otherwise take it back as an extra member of any value)."""
    s = {"type": "object", "allOf": [{"properties": {"a": {"const": 1}}}, {"properties": {"a": {"const": 2}}}]}
    cs = compile_spec(s)
    assert cs.check({}) == [] and cs.check({"a": 5}) != [] and cs.check({"a": 1}) != []
    for ap in (True, {"type": "integer"}):
        s2 = {**s, "additionalProperties": ap}
        cs, validator = compile_spec(s2), jsonschema.Draft202012Validator(s2)
        assert isinstance(cs.template, Obj) and cs.template.keys is not None  # declared names kept out
        for v in OBJECTS:
            assert (cs.check(v) == []) == validator.is_valid(v), (s2, v)
        tm = TextMachine(cs)
        assert not _run(tm, b'{"a') or not _run(tm, b'{"a"')  # no extra member named "a"
        assert tm.is_final(_run(tm, b'{"b": 1}'))


def test_typed_enum_parts_prune_contradicting_alternatives() -> None:
    """A discriminator beside typed enums: `type` filters the const/enum values while merging, so
    the many if/then members of one allOf cost about their number (not 2 to that power)."""
    members = [{"if": {"properties": {"k": {"const": f"v{i}"}}},
                "then": {"properties": {f"p{i}": {"anyOf": [{"type": "integer"}, {"type": "string"}]}}}}
               for i in range(12)]
    s = {"type": "object", "properties": {"k": {"type": "string", "enum": [f"v{i}" for i in range(12)]}},
         "required": ["k"], "additionalProperties": True, "allOf": members}
    cs = compile_spec(s)
    validator = jsonschema.Draft7Validator(s)
    for v in [{"k": "v3", "p3": 1}, {"k": "v3", "p3": None}, {"k": "v3", "p4": None}, {"k": "x"}, {"k": 3}]:
        assert (cs.check(v) == []) == validator.is_valid(v), v
