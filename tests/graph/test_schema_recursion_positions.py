"""Recursive `$ref` in the positions the layout compiler used to refuse or unfold without end
(schema.py `_alternative`, `_referenced`, `_all_of`): an anyOf/oneOf alternative that is a
recursive `$ref` with keywords beside the anyOf/oneOf (the WashingtonPost shape: `items: {"type":
"object", "anyOf": [{"$ref": "#/definitions/content_json"}, ...]}` under patternProperties), the same
where the siblings narrow the target (compiled under a reference key of its own), an allOf whose
members' `$ref`s recurse through the merge, and shared recursive targets.

Checked against the `jsonschema` validator: every byte prefix the machine accepts (all 256 bytes,
up to a length) extends to a valid value within a small depth limit and conversely (brute force,
as in test_schema_recursion.py); hypothesis values: the layout's `check` agrees with the validator,
a valid value's canonical text is a complete record, an invalid value's text never is; random byte
walks at MAX_DEPTH (no dead end, every record valid) where the keys are free text. Regression tests
for the crashes (RecursionError in the layout walks) and the nesting refusals."""
from __future__ import annotations

import json
import random
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from factorspec.errors import EmptySchema
from factorspec.graph import compile_spec
from factorspec.graph.limits import MAX_DEPTH, depth_of
from factorspec.graph.schema import _entails
from factorspec.graph.textstate import TextMachine
from tests.graph.test_schema_recursion import _text, byte_walks_at_max_depth, prefixes_and_valid_texts
from tests.graph.walks import accepts_text

# siblings entailed by the target: the alternative is the plain reference
ENTAILED = {"type": "object", "additionalProperties": False,
            "patternProperties": {"^a$": {"type": "array", "maxItems": 2,
                                          "items": {"type": "object", "anyOf": [{"$ref": "#"}]}}}}
# siblings that narrow the target (type object of an object-or-null root; the const alternative
# admits nothing beside them): the merged schema is its own reference key
NARROWED = {"type": ["object", "null"], "additionalProperties": False,
            "patternProperties": {"^a$": {"type": "array", "maxItems": 2,
                                          "items": {"anyOf": [{"$ref": "#"}, {"const": 0}], "type": "object"}}}}
# oneOf under a property, an alternative recursive (the Github_hard o39210 shape)
LOGICAL = {"$defs": {"c": {"type": "object", "oneOf": [
    {"type": "object", "properties": {"v": {"const": 1}}, "required": ["v"], "additionalProperties": False},
    {"type": "object", "properties": {"not": {"type": "object", "oneOf": [{"$ref": "#/$defs/c"}, {"const": 0}]}},
     "required": ["not"], "additionalProperties": False}]}}, "$ref": "#/$defs/c"}
# an allOf whose member's property recurses through another member (the Github_ultra o69206 shape:
# CommandInputArraySchema = allOf[InputArraySchema, {items: CommandInputType}])
_CWL = {"anyOf": [{"const": 0}, {"type": "object", "properties": {"items": {"$ref": "#/$defs/cwl"}},
                                 "required": ["items"], "additionalProperties": False}]}
ALL_OF = {"$defs": {
    "cwl": _CWL,
    "ia": {"type": "object", "properties": {"items": {"$ref": "#/$defs/cwl"}, "b": {"const": 1}}, "required": ["items"],
           "additionalProperties": False},
    "cia": {"allOf": [{"$ref": "#/$defs/ia"}, {"properties": {"items": {"$ref": "#/$defs/cit"}}}]},
    "cit": {"anyOf": [{"$ref": "#/$defs/cwl"}, {"$ref": "#/$defs/cia"}]}}, "$ref": "#/$defs/cit"}
# a recursive target met again outside its own cycle (shared by a reference node) and narrowed by
# siblings in one place only
SHARED = {"$defs": {"n": {"type": ["object", "null"], "additionalProperties": False,
                          "properties": {"k": {"type": "array", "maxItems": 2, "items": {"$ref": "#/$defs/n"}}}}},
          "type": "object", "additionalProperties": False,
          "properties": {"x": {"$ref": "#/$defs/n"}, "y": {"anyOf": [{"$ref": "#/$defs/n"}], "type": "object"}}}

# (schema, depth limit, atoms, keys of the universe, longest prefix enumerated)
CASES: list[tuple[dict, int, list, list[str], int]] = [
    (ENTAILED, 3, [], ["a"], 24),
    (NARROWED, 3, [None, 0], ["a"], 24),
    (LOGICAL, 3, [0, 1], ["v", "not"], 26),
    (ALL_OF, 3, [0, 1], ["items", "b"], 28),
    (SHARED, 3, [None], ["x", "y", "k"], 22),
]
# free-text keys (patternProperties ".*", additionalProperties): walked, and hypothesis-checked
FREE = [
    {"type": "object", "patternProperties": {".*": {"type": "array", "items": {
        "type": "object", "anyOf": [{"$ref": "#/definitions/content"}, {"$ref": "#/definitions/ref"}]}}},
     "definitions": {
         "content": {"type": "object", "additionalProperties": {}, "required": ["type"],
                     "properties": {"type": {"type": "string", "maxLength": 3}, "related": {"$ref": "#"}}},
         "ref": {"type": "object", "additionalProperties": False, "required": ["id"],
                 "properties": {"id": {"enum": ["a", "b"]}}}}},
    {"type": "object", "maxProperties": 2,
     "additionalProperties": {"anyOf": [{"$ref": "#"}, {"type": "null"}], "minProperties": 1}},
]
HYPO = [s for s, *_ in CASES] + FREE
_KEYS = ["a", "v", "not", "items", "b", "x", "y", "k", "type", "id", "related"]


@pytest.mark.parametrize("k", range(len(CASES)))
def test_prefixes_are_exactly_those_of_valid_values(k: int) -> None:
    schema, limit, atoms, keys, n = CASES[k]
    seen, finals, valid, want = prefixes_and_valid_texts(schema, limit, atoms, keys, n)
    validator = jsonschema.Draft202012Validator(schema)
    # a pattern key may also be spelled with escapes ("\u0061" for "a"): the universe has the plain
    # spelling only, so escaped texts are compared by their decoded value
    plain = {t for t in seen if b"\\" not in t}
    assert plain == want, (sorted(plain - want)[:5], sorted(want - plain)[:5])
    assert {t for t in finals if b"\\" not in t} == {t for t in valid if len(t) <= n}
    for t in finals - plain:
        v = json.loads(t)
        assert validator.is_valid(v) and depth_of(v) <= limit, t
    assert len(finals) >= 3  # not vacuous


_VALUES = st.recursive(st.sampled_from([None, 0, 1, True, "a", "b", "xyzw"]),
                       lambda ch: st.lists(ch, max_size=3) | st.dictionaries(st.sampled_from(_KEYS), ch, max_size=3),
                       max_leaves=10)
_COMPILED: dict[int, tuple[Any, TextMachine, Any]] = {}


def _compiled(k: int) -> tuple[Any, TextMachine, Any]:
    if k not in _COMPILED:
        cs = compile_spec(HYPO[k])
        _COMPILED[k] = (cs, TextMachine(cs), jsonschema.Draft202012Validator(HYPO[k]))
    return _COMPILED[k]


@pytest.mark.parametrize("k", range(len(HYPO)))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=_VALUES)
def test_values_agree_with_the_validator(k: int, value: Any) -> None:
    cs, tm, validator = _compiled(k)
    valid = validator.is_valid(value) and depth_of(value) <= MAX_DEPTH
    assert (not cs.check(value)) == valid, (value, [str(v) for v in cs.check(value)][:3])
    if valid:
        assert accepts_text(tm, cs.canonical_text(value).encode()), value
    else:
        assert not accepts_text(tm, _text(value).encode()), value


def test_small_values_are_valid_and_invalid() -> None:
    """Values of the kind the strategy draws include valid and invalid ones of each schema (the
    comparison above is not one-sided)."""
    rng = random.Random(1)
    values = _small_values(rng, 3000)
    for k in range(len(HYPO)):
        _, _, validator = _compiled(k)
        ok = sum(1 for v in values if validator.is_valid(v))
        assert 0 < ok < len(values), (k, ok)


def _small_values(rng: random.Random, n: int) -> list[Any]:
    def one(d: int) -> Any:
        r = rng.random()
        if d == 0 or r < 0.3:
            return rng.choice([None, 0, 1, "a"])
        if r < 0.5:
            return [one(d - 1) for _ in range(rng.randrange(3))]
        return {rng.choice(_KEYS): one(d - 1) for _ in range(rng.randrange(3))}
    return [one(3) for _ in range(n)]


@pytest.mark.parametrize("k", range(len(HYPO)))
def test_byte_walks_at_max_depth(k: int) -> None:
    assert byte_walks_at_max_depth(HYPO[k], k) >= 8


def test_narrowed_alternative_is_compiled_under_its_own_key() -> None:
    """NARROWED: an item must be an object (never null, never 0), the root may be null."""
    tm = TextMachine(compile_spec(NARROWED), max_depth=4)
    assert accepts_text(tm, b"null") and accepts_text(tm, b'{"a": [{}, {"a": []}]}')
    assert not accepts_text(tm, b'{"a": [null]}') and not accepts_text(tm, b'{"a": [0]}')
    assert not accepts_text(tm, b'{"a": [{"a": [null]}]}')


def test_shared_target_keeps_its_own_language() -> None:
    """SHARED: `y` is n narrowed to objects, `x` and the items inside both are n itself (null allowed)."""
    tm = TextMachine(compile_spec(SHARED), max_depth=4)
    assert accepts_text(tm, b'{"x": null}') and accepts_text(tm, b'{"y": {"k": [null]}}')
    assert accepts_text(tm, b'{"x": {"k": [null, {}]}, "y": {}}')
    assert not accepts_text(tm, b'{"y": null}')


def test_entails() -> None:
    """allOf(siblings, target) is the target only where each sibling is the target's own keyword."""
    t = {"type": "object", "properties": {"a": {}}, "additionalProperties": False, "minProperties": 1}
    assert _entails(t, {"type": "object"}) and _entails(t, {"type": ["object", "null"]})
    assert _entails(t, {"minProperties": 1}) and _entails({"type": "integer"}, {"type": "number"})
    assert not _entails(t, {"type": "array"}) and not _entails({"type": ["object", "null"]}, {"type": "object"})
    assert not _entails(t, {"minProperties": 2}) and not _entails(t, {"maxProperties": 3})
    assert not _entails({"properties": {"a": {}}}, {"type": "object"})  # the target's type is not known
    # additionalProperties means something else beside other properties
    assert not _entails(t, {"additionalProperties": False})
    assert _entails(t, {"additionalProperties": False, "properties": {"a": {}}})
    assert not _entails({"minimum": 1}, {"minimum": True}) and not _entails(True, {"type": "object"})


# -- regressions ------------------------------------------------------------------------------------
def test_many_reference_nodes_to_one_target_compile() -> None:
    """Was a RecursionError (spec.unique_relations walked each reference node's target again, so
    600 references to the root nested 600 deep; Github_hard/o27039): now each target once."""
    schema = {"type": "object", "additionalProperties": False,
              "properties": {f"p{i}": {"$ref": "#"} for i in range(600)}}
    tm = TextMachine(compile_spec(schema))
    assert accepts_text(tm, b'{"p3": {"p599": {}}}')
    assert not accepts_text(tm, b'{"p600": {}}')


def test_many_unique_arrays_through_references_compile() -> None:
    """The same with uniqueItems arrays inside (spec._canonical_items also walked each target per
    reference node)."""
    schema = {"type": "object", "additionalProperties": False,
              "properties": {f"p{i}": {"type": "array", "uniqueItems": True, "maxItems": 2, "items": {"$ref": "#"}}
                             for i in range(400)}}
    tm = TextMachine(compile_spec(schema))
    assert accepts_text(tm, b'{"p1": [{}, {"p0": []}]}')
    assert not accepts_text(tm, b'{"p1": [{}, {}]}')


@pytest.mark.parametrize("schema", [NARROWED, ALL_OF, {"$defs": {"n": {"type": "object", "properties": {
    "k": {"type": "array", "items": {"type": "object", "anyOf": [{"$ref": "#/$defs/n"}]}}}}}, "$ref": "#/$defs/n"}])
def test_formerly_refused_recursions_compile(schema: dict) -> None:
    """Were 'schema nests deeper than 64 levels' (the merge with the siblings, or allOf, inlined the
    target at every level) or 'recursive reference ... is not supported'."""
    cs = compile_spec(schema)
    assert jsonschema.Draft202012Validator(schema).is_valid(cs.solve())


def test_mutual_recursion_is_compiled_once_per_definition() -> None:
    """Many mutually recursive definitions, each reachable from every other: compiled under every
    path through the cycles this was exponential (the WashingtonPost schemas took minutes)."""
    n = 12
    defs = {f"d{i}": {"type": "object", "additionalProperties": False,
                      "properties": {f"to{j}": {"type": "array", "maxItems": 1,
                                                "items": {"type": "object", "anyOf": [{"$ref": f"#/$defs/d{j}"}]}}
                                     for j in range(n) if j != i}} for i in range(n)}
    schema = {"$defs": defs, "$ref": "#/$defs/d0"}
    from factorspec.graph.schema import SchemaCompiler
    calls = 0
    node = SchemaCompiler.node

    def counted(self: Any, s: Any, ptr: str, depth: int) -> Any:
        nonlocal calls
        calls += 1
        return node(self, s, ptr, depth)

    SchemaCompiler.node = counted  # type: ignore[method-assign]
    try:
        cs = compile_spec(schema)
    finally:
        SchemaCompiler.node = node  # type: ignore[method-assign]
    assert calls < 20 * n * n, calls
    tm = TextMachine(cs, max_depth=6)
    assert accepts_text(tm, b'{"to5": [{"to0": [{}]}]}') and not accepts_text(tm, b'{"to0": [{}]}')


def test_unproductive_narrowed_recursion_admits_no_value() -> None:
    """The merged alternative needs an item that is again the merged alternative: no finite value
    of the property, so the property is never written (no dead end), and a root that needs it is empty."""
    loop = {"type": ["object", "null"], "properties": {"a": {"type": "array", "minItems": 1,
            "items": {"anyOf": [{"$ref": "#"}], "type": "object", "required": ["a"]}}}}
    tm = TextMachine(compile_spec(loop), max_depth=5)
    assert accepts_text(tm, b"{}") and not accepts_text(tm, b'{"a": [{}]}')
    with pytest.raises(EmptySchema) as ei:
        compile_spec({**loop, "type": "object", "required": ["a"]})
    assert "recursive" in ei.value.message
