"""unevaluatedProperties (schema.SchemaCompiler._unevaluated) over plain in-place subschemas: the
compiled check and the text machine equal the `jsonschema` validator on every object over a few
keys and values, byte walks never dead-end; beside an in-place anyOf/oneOf/not/if it is refused
naming the pointer."""
from __future__ import annotations

import itertools
import random
from typing import Any

import jsonschema
import pytest

from factorspec.errors import SpecError
from factorspec.graph import compile_spec
from factorspec.graph.schema import canonical_text
from factorspec.graph.textstate import TextMachine
from tests.graph.walks import byte_walks

_DEFS = {"c": {"properties": {"a": {"type": "integer"}}}, "d": {"allOf": [{"$ref": "#/$defs/c"}],
                                                              "properties": {"b": {"type": "boolean"}}}}
SCHEMAS: list[dict] = [
    {"$defs": _DEFS, "type": "object", "allOf": [{"$ref": "#/$defs/c"}, {"properties": {"b": {"type": "boolean"}}}],
     "unevaluatedProperties": False},
    {"$defs": _DEFS, "type": "object", "$ref": "#/$defs/d", "unevaluatedProperties": {"type": "integer"}},
    {"$defs": _DEFS, "type": "object", "properties": {"c": {"const": 1}}, "allOf": [{"$ref": "#/$defs/c"}],
     "required": ["a"], "unevaluatedProperties": False},
    # additionalProperties in place evaluates every key: a no-op
    {"type": "object", "allOf": [{"properties": {"a": {}}, "additionalProperties": {"type": "integer"}}],
     "unevaluatedProperties": False},
]


def _universe() -> list[Any]:
    out: list[Any] = [1, None]
    for n in range(4):
        for ks in itertools.combinations(["a", "b", "c"], n):
            for vs in itertools.product([1, True, "x"], repeat=n):
                out.append(dict(zip(ks, vs)))
    return out


def _run(tm: TextMachine, text: bytes) -> frozenset:
    c = tm.initial()
    for b in text:
        c = tm.step(c, b)
        if not c:
            break
    return c


@pytest.mark.parametrize("k", range(len(SCHEMAS)))
def test_check_and_machine_equal_the_validator(k: int) -> None:
    schema = SCHEMAS[k]
    cs = compile_spec(schema)
    tm = TextMachine(cs)
    validator = jsonschema.Draft202012Validator(schema)
    valid = 0
    for v in _universe():
        want = validator.is_valid(v)
        assert (cs.check(v) == []) == want, (schema, v, cs.check(v))
        if want:
            assert tm.is_final(_run(tm, canonical_text(cs.template, v).encode())), (schema, v)
        valid += want
    assert valid > 1
    assert byte_walks(tm, validator.is_valid, random.Random(k), walks=30) > 0


@pytest.mark.parametrize("schema, fragment", [
    ({"type": "object", "anyOf": [{"properties": {"a": {}}}, {"properties": {"b": {}}}],
      "unevaluatedProperties": False}, "/anyOf"),
    ({"$defs": {"x": {"if": {"required": ["a"]}, "then": {"properties": {"b": {}}}}}, "type": "object",
      "allOf": [{"$ref": "#/$defs/x"}], "unevaluatedProperties": False}, "/$defs/x/if"),
])
def test_conditional_evaluation_is_refused(schema: dict, fragment: str) -> None:
    with pytest.raises(SpecError) as ei:
        compile_spec(schema)
    assert ei.value.pointer == "/unevaluatedProperties" and fragment in str(ei.value), str(ei.value)
