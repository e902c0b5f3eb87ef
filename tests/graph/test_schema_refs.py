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
