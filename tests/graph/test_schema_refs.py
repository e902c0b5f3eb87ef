"""Local `$ref` forms (schema.SchemaCompiler._resolve): anchors (`$anchor`, draft-06/07 `$id`
'#name', draft-04 `id` '#name'), percent-escaped JSON Pointers, and the document's own id: the
compiled check equals the `jsonschema` validator (the draft each form belongs to) on a small
universe, the canonical text of every valid value is accepted, a recursive anchor stays finite,
and an unknown anchor or a remote reference is refused naming the pointer."""
from __future__ import annotations

import random
from typing import Any

import jsonschema
import pytest

from factorspec.errors import SpecError
from factorspec.graph import compile_spec
from factorspec.graph.schema import canonical_text
from factorspec.graph.textstate import TextMachine
from tests.graph.walks import byte_walks

_SMALL = {"type": "integer", "minimum": 0, "maximum": 3}
CASES: list[tuple[dict, Any]] = [
    ({"definitions": {"s": {"id": "#small", **_SMALL}}, "type": "object",
      "properties": {"a": {"$ref": "#small"}}, "required": ["a"], "additionalProperties": False},
     jsonschema.Draft4Validator),
    ({"definitions": {"s": {"$id": "#small", **_SMALL}}, "type": "array", "items": {"$ref": "#small"},
      "maxItems": 2}, jsonschema.Draft7Validator),
    ({"$defs": {"s": {"$anchor": "small", **_SMALL}}, "type": "object",
      "properties": {"a": {"$ref": "#small"}, "b": {"$ref": "#/$defs/s"}}, "additionalProperties": False},
     jsonschema.Draft202012Validator),
    ({"definitions": {"a:b": _SMALL, "[x]+": {"type": "boolean"}}, "type": "object",
      "properties": {"a": {"$ref": "#/definitions/a%3Ab"}, "b": {"$ref": "#/definitions/%5Bx%5D%2B"}},
      "additionalProperties": False}, jsonschema.Draft7Validator),
    ({"id": "http://example.com/s.json#", "definitions": {"n": _SMALL}, "type": "object",
      "properties": {"a": {"$ref": "http://example.com/s.json#/definitions/n"},
                     "b": {"type": "array", "maxItems": 1, "items": {"$ref": "http://example.com/s.json#"}}},
      "additionalProperties": False}, jsonschema.Draft4Validator),
]


def _universe() -> list[Any]:
    atoms: list[Any] = [None, True, False, 0, 2, 3, 4, -1, "x"]
    out: list[Any] = atoms + [[v] for v in atoms] + [[1, 2], [], {}]
    out += [{"a": v} for v in atoms] + [{"b": v} for v in atoms] + [{"a": 1, "b": True}, {"a": 1, "b": 2}]
    out += [{"b": [{"a": 1}]}, {"b": [{}]}, {"b": [{"b": []}]}, {"b": [5]}, {"a": 1, "b": [{"a": 4}]}]
    return out


def _run(tm: TextMachine, text: bytes) -> frozenset:
    c = tm.initial()
    for b in text:
        c = tm.step(c, b)
        if not c:
            break
    return c


@pytest.mark.parametrize("k", range(len(CASES)))
def test_check_equals_the_validator(k: int) -> None:
    schema, cls = CASES[k]
    cs = compile_spec(schema)
    tm = TextMachine(cs)
    validator = cls(schema)
    valid = 0
    for v in _universe():
        want = validator.is_valid(v)
        assert (cs.check(v) == []) == want, (schema, v, cs.check(v))
        if want:
            assert tm.is_final(_run(tm, canonical_text(cs.template, v).encode())), (schema, v)
        valid += want
    assert valid > 0
    assert byte_walks(tm, validator.is_valid, random.Random(k), walks=20) > 0


def test_recursive_anchor_is_a_finite_graph() -> None:
    schema = {"$defs": {"t": {"$anchor": "tree", "type": "object", "properties": {
        "kids": {"type": "array", "items": {"$ref": "#tree"}, "maxItems": 2}}, "additionalProperties": False}},
        "$ref": "#/$defs/t"}
    cs = compile_spec(schema)
    validator = jsonschema.Draft202012Validator(schema)
    assert byte_walks(TextMachine(cs), validator.is_valid, random.Random(0), walks=20) > 0
    assert cs.check({"kids": [{"kids": [{}]}, {}]}) == []


@pytest.mark.parametrize("schema, pointer, fragment", [
    ({"properties": {"a": {"$ref": "#nope"}}}, "/properties/a/$ref", "names no"),
    ({"properties": {"a": {"$ref": "http://example.com/other.json#/x"}}}, "/properties/a/$ref", "only local"),
    ({"$id": "http://example.com/s.json", "properties": {"a": {"$ref": "http://example.com/t.json#"}}},
     "/properties/a/$ref", "only local"),
])
def test_unresolvable_references_are_refused(schema: dict, pointer: str, fragment: str) -> None:
    with pytest.raises(SpecError) as ei:
        compile_spec(schema)
    assert ei.value.pointer == pointer and fragment in str(ei.value), str(ei.value)


_META: list[dict] = [
    {"type": "object", "properties": {"title": {"$ref": "http://json-schema.org/draft-04/schema#/properties/title"},
                                      "n": {"$ref": "http://json-schema.org/draft-04/schema#/definitions/positiveInteger"}},
     "additionalProperties": False},
    {"type": "object", "properties": {"n": {"$ref": "http://json-schema.org/draft-07/schema#/definitions/nonNegativeInteger"},
                                      "t": {"$ref": "http://json-schema.org/draft-06/schema#/definitions/simpleTypes"}},
     "required": ["t"], "additionalProperties": False},
    {"type": "array", "maxItems": 2,
     "items": {"$ref": "http://json-schema.org/draft-07/schema#/definitions/nonNegativeIntegerDefault0"}},
]
_META_UNIVERSE: list[Any] = [None, 0, 3, -1, "x", "string", "array", "nope", [], [0], [1, -2], {}, {"title": "a"},
                             {"title": 1}, {"n": 0}, {"n": 2}, {"n": -1}, {"t": "null"}, {"t": "x"},
                             {"t": "integer", "n": 5}, {"t": "object", "n": "5"}, {"title": "a", "n": 1}]


@pytest.mark.parametrize("k", range(len(_META)))
def test_meta_schema_references_resolve_offline(k: int) -> None:
    """A `$ref` into an official draft-04/06/07 meta-schema compiles from the bundled copy
    (metaschemas.py) and equals the validator (which resolves these URIs offline too)."""
    schema = _META[k]
    cs = compile_spec(schema)
    validator = jsonschema.Draft7Validator(schema)
    valid = 0
    for v in _META_UNIVERSE:
        want = validator.is_valid(v)
        assert (cs.check(v) == []) == want, (schema, v)
        valid += want
    assert valid > 0
    assert byte_walks(TextMachine(cs), validator.is_valid, random.Random(k), walks=20) > 0


@pytest.mark.parametrize("ref", ["https://json-schema.org/draft/2020-12/schema#/$defs/x",
                                 "http://json-schema.org/draft-04/schema#anchor",
                                 "http://example.com/draft-04/schema#/properties/title",
                                 "https://json-schema.org/draft-07/schema#/definitions/nonNegativeInteger"])
def test_other_remote_references_stay_refused(ref: str) -> None:
    with pytest.raises(SpecError) as e:
        compile_spec({"type": "object", "properties": {"a": {"$ref": ref}}})
    assert e.value.pointer == "/properties/a/$ref"
