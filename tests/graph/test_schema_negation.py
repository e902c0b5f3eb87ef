"""`not` and `if`/`then`/`else` (factorspec/graph/negation.py): rewritten into positive keywords,
the compiled check equals the `jsonschema` validator on every value of a small universe, byte
walks never dead-end and finish valid, the canonical text of every valid value is accepted, and
a complement FactorSpec cannot compile is refused naming its JSON Pointer."""
from __future__ import annotations

import json
import random

import jsonschema
import pytest

from factorspec.errors import SpecError
from factorspec.graph import compile_spec
from factorspec.graph.schema import canonical_text
from factorspec.graph.textstate import TextMachine
from tests.graph.test_schema_all_of import UNIVERSE, _run
from tests.graph.walks import byte_walks

_ABC = {"a": {"type": "integer", "minimum": 0, "maximum": 3}, "b": {"type": "boolean"}, "c": {"type": "null"}}

SCHEMAS: list[dict] = [
    {"not": {"type": "string"}},
    {"type": "integer", "minimum": -3, "maximum": 12, "not": {"minimum": 3, "maximum": 8}},
    {"enum": [1, 2, 3, "a", None], "not": {"enum": [2, "a"]}},
    {"type": "boolean", "not": {"const": True}},
    {"type": ["boolean", "null"], "not": {"enum": [False]}},
    {"type": "object", "properties": _ABC, "additionalProperties": False, "not": {"required": ["a", "b"]}},
    {"type": "object", "properties": _ABC, "additionalProperties": False,
     "not": {"anyOf": [{"required": ["a"]}, {"required": ["b"]}]}},
    {"type": "object", "properties": {"a": {"enum": [1, 2]}, "b": {"type": "boolean"}, "c": {"type": "null"}},
     "additionalProperties": False, "if": {"properties": {"a": {"const": 1}}}, "then": {"required": ["b"]},
     "else": {"required": ["c"]}},
    {"type": "object", "properties": {"a": {"enum": [1, 2]}, "b": {"type": "null"}}, "additionalProperties": False,
     "if": {"properties": {"a": {"const": 1}}, "required": ["a"]}, "then": {"required": ["b"]},
     "else": {"not": {"required": ["b"]}}},
    {"type": "object", "properties": {"a": {"not": {}}, "b": {"type": "null"}}, "additionalProperties": False},
    {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 3, "not": {"const": 2}}, "maxItems": 2},
    {"type": "object", "properties": {"a": {"enum": [1, 2, 3]}, "b": {"type": "integer", "minimum": 0, "maximum": 3}},
     "required": ["a"], "additionalProperties": False,
     "allOf": [{"if": {"properties": {"a": {"const": 1}}}, "then": {"properties": {"b": {"maximum": 1}}}},
               {"if": {"properties": {"a": {"const": 2}}}, "then": {"required": ["b"]}},
               {"if": {"properties": {"a": {"const": 3}}}, "then": {"not": {"required": ["b"]}}}]},
    {"type": "number", "multipleOf": 0.5, "minimum": 0, "maximum": 5, "not": {"exclusiveMaximum": 2}},
    {"type": "integer", "minimum": 0, "maximum": 9, "not": {"not": {"maximum": 4}}},
    {"type": "string", "maxLength": 3, "not": {"minLength": 2}},
    {"type": "object", "properties": {"a": {"enum": [1, 2]}}, "additionalProperties": False,
     "not": {"properties": {"a": {"const": 1}}}},
    {"$defs": {"small": {"maximum": 2}}, "type": "integer", "minimum": 0, "maximum": 6,
     "not": {"$ref": "#/$defs/small"}},
    # oneOf whose alternatives overlap: "exactly one" by negation (schema.SchemaCompiler._exclusive)
    {"oneOf": [{"type": "integer", "minimum": 0, "maximum": 6}, {"type": "integer", "minimum": 4, "maximum": 10}]},
    {"oneOf": [{"type": "string"}, {"type": "string", "maxLength": 1}]},
    {"type": "object", "properties": _ABC, "additionalProperties": False,
     "oneOf": [{"required": ["a"]}, {"required": ["b", "c"]}]},
    {"type": "object", "additionalProperties": False,
     "properties": {"shape": {"enum": ["sq", "ci"]}, "a": {"type": "integer", "minimum": 0, "maximum": 3},
                    "b": {"type": "boolean"}},
     "oneOf": [{"properties": {"shape": {"const": "sq"}}, "required": ["a"]},
               {"properties": {"shape": {"const": "ci"}}, "required": ["b"]}]},
    # negated and combined patterns: the product automaton (regex_lang.regular_lang)
    {"type": "string", "maxLength": 3, "not": {"pattern": "a"}},
    {"type": "string", "maxLength": 3, "not": {"enum": ["a", "ab", 3]}},
    {"type": "string", "maxLength": 3, "pattern": "^[ab]+$", "not": {"pattern": "ab"}},
    {"type": "string", "maxLength": 3, "allOf": [{"pattern": "a"}, {"pattern": "b"}]},
    {"oneOf": [{"type": "string", "pattern": "^a", "maxLength": 3},
               {"type": "string", "pattern": "b$", "maxLength": 3}]},
    {"anyOf": [{"type": "integer", "minimum": 0, "maximum": 4, "not": {"enum": [1, 3]}},
               {"type": "array", "maxItems": 1, "items": {"type": "boolean"}, "not": {"minItems": 1}}]},
]


def _declared(schema: object) -> set[str]:
    """Every property name a schema declares anywhere."""
    out: set[str] = set()
    if isinstance(schema, dict):
        if isinstance(schema.get("properties"), dict):
            out |= set(schema["properties"])
        for v in schema.values():
            out |= _declared(v)
    elif isinstance(schema, list):
        for v in schema:
            out |= _declared(v)
    return out


def _undeclared_keys(v: object, declared: set[str]) -> bool:
    if isinstance(v, dict):
        return not set(v) <= declared or any(_undeclared_keys(x, declared) for x in v.values())
    return isinstance(v, list) and any(_undeclared_keys(x, declared) for x in v)


@pytest.mark.parametrize("k", range(len(SCHEMAS)))
def test_check_equals_the_validator(k: int) -> None:
    """check == jsonschema on the universe; a value with keys no object declares is only held to
    soundness (the layout policy closes objects without additionalProperties: docs/spec.md)."""
    schema = SCHEMAS[k]
    cs = compile_spec(schema)
    validator = jsonschema.Draft202012Validator(schema)
    declared = _declared(schema)
    valid = 0
    for v in UNIVERSE:
        want = validator.is_valid(v)
        got = cs.check(v) == []
        if _undeclared_keys(v, declared):
            assert not got or want, (schema, v)
            continue
        assert got == want, (schema, v, cs.check(v))
        valid += want
    assert valid > 0


@pytest.mark.parametrize("k", range(len(SCHEMAS)))
def test_byte_walks_never_dead_end(k: int) -> None:
    schema = SCHEMAS[k]
    validator = jsonschema.Draft202012Validator(schema)
    assert byte_walks(TextMachine(compile_spec(schema)), validator.is_valid, random.Random(k), walks=30) > 0


@pytest.mark.parametrize("k", range(len(SCHEMAS)))
def test_the_machine_accepts_every_valid_value(k: int) -> None:
    schema = SCHEMAS[k]
    cs = compile_spec(schema)
    tm = TextMachine(cs)
    validator = jsonschema.Draft202012Validator(schema)
    for v in UNIVERSE:
        if validator.is_valid(v) and cs.check(v) == []:
            text = canonical_text(cs.template, v)
            assert tm.is_final(_run(tm, text.encode())), (schema, v, text)


@pytest.mark.parametrize("schema, pointer, fragment", [
    ({"type": "integer", "not": {"multipleOf": 2}}, "/not/multipleOf", "'not' over 'multipleOf'"),
    ({"type": "array", "not": {"prefixItems": [{"type": "integer"}]}}, "/not/prefixItems", "'not' over 'prefixItems'"),
    ({"not": {}}, "/not", "admits no value"),
    ({"$defs": {"r": {"not": {"$ref": "#/$defs/r"}}}, "$ref": "#/$defs/r"}, "/$defs/r", "recursive"),
])
def test_uncompilable_complements_are_refused(schema: dict, pointer: str, fragment: str) -> None:
    with pytest.raises(SpecError) as e:
        compile_spec(schema)
    assert e.value.pointer.startswith(pointer) and fragment in e.value.message, (e.value.pointer, e.value.message)


def test_many_if_then_members_of_one_allof_are_distributed_in_linear_time() -> None:
    """Twelve `if`/`then` members keyed on one required discriminator (the shape of the Minecraft
    schemas in JSONSchemaBench): 2^12 combinations, of which the merge keeps 13; the compiled
    check equals jsonschema on every discriminator value."""
    names = [f"t{i}" for i in range(12)]
    schema = {"type": "object", "required": ["kind"], "additionalProperties": False,
              "properties": {"kind": {"enum": names + ["other"]}, "n": {"type": "integer", "minimum": 0,
                                                                      "maximum": 20}},
              "allOf": [{"if": {"properties": {"kind": {"const": t}}},
                         "then": {"properties": {"n": {"maximum": i}}, "required": ["n"]}}
                        for i, t in enumerate(names)]}
    cs = compile_spec(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for kind in names + ["other"]:
        for n in [None, 0, 3, 11, 20]:
            v = {"kind": kind} if n is None else {"kind": kind, "n": n}
            assert (cs.check(v) == []) == validator.is_valid(v), v


def test_not_integer_leaves_the_fractional_values() -> None:
    """not {type: integer} over a multipleOf range keeps exactly the non-integers; over an integer
    range it admits nothing."""
    schema = {"type": "number", "multipleOf": 0.5, "minimum": 0, "maximum": 3, "not": {"type": "integer"}}
    cs = compile_spec(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for k in range(-2, 9):
        v = k / 2
        assert (cs.check(v) == []) == validator.is_valid(v), v
    assert cs.check(1.5) == [] and cs.check(2) != []
    with pytest.raises(SpecError):
        compile_spec({"type": "integer", "minimum": 0, "maximum": 3, "not": {"type": "integer"}})


@pytest.mark.parametrize("k", [k for k, x in enumerate(SCHEMAS)
                               if x.get("type") == "string" or "pattern" in json.dumps(x)])
def test_patterns_equal_the_validator_on_every_short_string(k: int) -> None:
    """Every string over a, b, c up to length 4: check == jsonschema."""
    import itertools
    schema = SCHEMAS[k]
    cs = compile_spec(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for n in range(5):
        for t in itertools.product("abc", repeat=n):
            v = "".join(t)
            assert (cs.check(v) == []) == validator.is_valid(v), (schema, v)


def test_then_or_else_without_if_constrains_nothing() -> None:
    """`then`/`else` without `if` have no effect (JSON Schema 2020-12, 10.2.2.2-3); once they
    raised StopIteration while the compiler named the keyword being rewritten (fuzz case 185)."""
    import jsonschema

    from factorspec.graph.spec import compile_spec

    for doc in ({"type": "integer", "minimum": 0, "maximum": 9, "then": {"maximum": 3}},
                {"type": "integer", "minimum": 0, "maximum": 9, "else": {"minimum": 5}}):
        cs = compile_spec(doc)
        for v in range(-2, 12):
            assert (cs.check(v) == []) == jsonschema.Draft202012Validator(doc).is_valid(v), (doc, v)


# large or unbounded ranges and free numbers minus finitely many values (schema._punctured)
PUNCTURED: list[dict] = [
    {"type": "integer", "minimum": -3, "not": {"enum": [0, 2.0, "x", 1.5]}},
    {"type": "integer", "not": {"const": 1}},
    {"type": "integer", "minimum": 0, "maximum": 100_000, "not": {"enum": [3, 10, 100_000]}},
    {"type": "number", "maximum": 3, "not": {"enum": [0, 1.5]}},
    {"type": "number", "exclusiveMinimum": 0, "not": {"enum": [0, 10]}},
    {"type": "number", "multipleOf": 0.5, "not": {"enum": [1, 2.5]}},
    {"type": "array", "items": {"type": "integer", "not": {"enum": [0]}}, "maxItems": 2},
]
_NUMS: list = [None, "x", -4, -3, -2, -1, 0, 0.0, -0.0, 0.5, 1, 1.0, 1.5, 2, 2.5, 3, 3.5, 9, 10, 10.5, 11, 99,
               100, 1e3, 99_999, 100_000, 100_001, [0], [1, 0], [2, -1], [5]]


@pytest.mark.parametrize("k", range(len(PUNCTURED)))
def test_punctured_ranges_equal_the_validator(k: int) -> None:
    schema = PUNCTURED[k]
    cs = compile_spec(schema)
    tm = TextMachine(cs)
    validator = jsonschema.Draft202012Validator(schema)
    for v in _NUMS:
        want = validator.is_valid(v)
        assert (cs.check(v) == []) == want, (schema, v)
        if want:
            assert tm.is_final(_run(tm, canonical_text(cs.template, v).encode())), (schema, v)
        for text in {json.dumps(v), json.dumps(v).replace(".0", "")}:  # every text accepted is valid
            c = _run(tm, text.encode())
            assert not (c and tm.is_final(c)) or validator.is_valid(json.loads(text)), (schema, text)
    assert byte_walks(tm, validator.is_valid, random.Random(k), walks=60, prefer="0123456789.-e[],") > 0


@pytest.mark.parametrize("schema", [
    {"not": {"type": "integer"}},
    {"type": "number", "minimum": 0, "not": {"anyOf": [{"const": 1.5}, {"type": "integer"}]}},
])
def test_numbers_minus_integers_compile_exactly(schema: dict) -> None:
    """Once refused ("excluding values"): a free number minus every integer (Scalar.non_integer)."""
    cs = compile_spec(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for v in [0, 1, -2, 0.5, 1.5, 2.25, -0.75, "a", None, True, [], {}]:
        assert (cs.check(v) == []) == validator.is_valid(v), (schema, v)


# linked lists: `loose` has v in 1..3 or absent at every node, `strict` v in 1..2 present everywhere
_LISTS = {"loose": {"type": "object", "properties": {"v": {"enum": [1, 2, 3]}, "next": {"$ref": "#/$defs/loose"}},
                    "additionalProperties": False},
          "strict": {"type": "object", "properties": {"v": {"enum": [1, 2]}, "next": {"$ref": "#/$defs/strict"}},
                     "required": ["v"], "additionalProperties": False}}
RECURSIVE_COMPLEMENTS = [
    {"$defs": _LISTS, "$ref": "#/$defs/loose", "not": {"$ref": "#/$defs/strict"}},
    {"$defs": _LISTS, "oneOf": [{"$ref": "#/$defs/strict"}, {"$ref": "#/$defs/loose"}]},
    {"$defs": {**_LISTS, "deps": {"type": "object", "properties": {"v": {"enum": [1, 2]}, "w": {"const": 0},
                                                                   "next": {"$ref": "#/$defs/deps"}},
                                  "dependentRequired": {"v": ["w"]}, "additionalProperties": False}},
     "$ref": "#/$defs/deps", "not": {"$ref": "#/$defs/strict"}},
]


def _lists(depth: int) -> list:
    """Every list of up to `depth` nodes, each node with v in {absent, 1, 2, 3} and w in {absent, 0}."""
    if depth == 0:
        return []
    out = []
    for v in (None, 1, 2, 3):
        for w in (None, 0):
            for nxt in [None] + _lists(depth - 1):
                node = {k: x for k, x in (("v", v), ("w", w), ("next", nxt)) if x is not None}
                out.append(node)
    return out


@pytest.mark.parametrize("k", range(len(RECURSIVE_COMPLEMENTS)))
def test_complements_of_recursive_refs_are_exact(k: int) -> None:
    """`not` over a recursive $ref (also oneOf by negation over one) is a recursive complement
    (negation.NegationTable), exact on every list of up to 3 nodes, walked without a dead end."""
    schema = RECURSIVE_COMPLEMENTS[k]
    cs = compile_spec(schema)
    validator = jsonschema.Draft202012Validator(schema)
    values = _lists(3) + [{"u": 1}, {"v": 1, "next": 5}, 7, "s", None, []]
    valid = 0
    for v in values:
        want = validator.is_valid(v)
        assert (cs.check(v) == []) == want, (schema, v, cs.check(v))
        valid += want
    assert 0 < valid < len(values)
    assert byte_walks(TextMachine(cs), validator.is_valid, random.Random(k), walks=30) > 0
