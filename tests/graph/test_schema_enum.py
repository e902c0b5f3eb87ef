"""enum/const of any JSON value (schema.literal_schema): objects and arrays of equal items as the
schemas whose only instance they are; the compiled check and the text machine agree with the
`jsonschema` validator on a universe that holds the values, their near misses and key orders;
byte walks never dead-end and finish valid; object/array keywords beside scalar enum values are
no-ops; an array of different items is refused naming its pointer."""
from __future__ import annotations

import itertools
import json
import random
from typing import Any

import jsonschema
import pytest

from factorspec.errors import SpecError
from factorspec.graph import compile_spec
from factorspec.graph.schema import canonical_text
from factorspec.graph.textstate import TextMachine
from tests.graph.walks import byte_walks

SCHEMAS: list[dict] = [
    {"const": {"$data": "1/password"}},
    {"enum": [{"type": "void"}]},
    {"enum": [{"type": "void"}, 1, "x", [], ["d", "d"], {"a": {"b": [1]}}, None]},
    {"type": "object", "enum": [{"a": 1}, {"a": 2, "b": True}, 3]},
    {"type": "array", "items": {"type": "string"}, "enum": [["deleted"], ["x", "x"], [1]]},
    {"enum": [{"a": 1, "b": [True]}, {"b": [True], "a": 1}, {"a": 1.0, "b": [True]}]},  # one value thrice
    {"type": "object", "properties": {"k": {"enum": [{"a": []}, [[]]]}}, "required": ["k"],
     "additionalProperties": False},
    # object/array keywords beside scalar values constrain nothing
    {"type": "string", "enum": ["a", "b"], "additionalProperties": False, "minItems": 2, "properties": {}},
    {"enum": [1, "x", None], "maxProperties": 0, "contains": {"const": 1}},
]


def _universe() -> list[Any]:
    atoms: list[Any] = [None, True, False, 0, 1, 1.0, 2, 3, "x", "d", "a", "void", "deleted", "1/password"]
    small: list[Any] = atoms + [[], [1], [True], ["d"], ["d", "d"], ["x", "x"], ["deleted"], [[]], {}, {"a": 1},
                                {"a": 2}, {"b": True}, {"a": []}, {"b": [1]}]
    out: list[Any] = list(small)
    for k1, k2 in itertools.permutations(["a", "b", "type", "$data"], 2):
        for v1, v2 in itertools.product([1, 2, True, [True], "void", "1/password"], repeat=2):
            out.append({k1: v1, k2: v2})
    for k in ["a", "b", "type", "$data", "k"]:
        out += [{k: v} for v in small]
    out += [[v] for v in small] + [[v, v] for v in small] + [{"a": {"b": [1]}}, {"a": {"b": [1, 1]}},
                                                             {"a": {"b": []}}, {"k": {"a": []}}, {"k": [[]]}]
    return out


UNIVERSE = _universe()


def _run(tm: TextMachine, text: bytes) -> frozenset:
    c = tm.initial()
    for b in text:
        c = tm.step(c, b)
        if not c:
            break
    return c


@pytest.mark.parametrize("k", range(len(SCHEMAS)))
def test_check_and_machine_equal_the_validator(k: int) -> None:
    """Every value of the universe: check accepts it iff jsonschema does; its canonical text is
    accepted iff valid; its plain JSON text (any key order) is never accepted unless valid."""
    schema = SCHEMAS[k]
    cs = compile_spec(schema)
    tm = TextMachine(cs)
    validator = jsonschema.Draft202012Validator(schema)
    valid = 0
    for v in UNIVERSE:
        want = validator.is_valid(v)
        assert (cs.check(v) == []) == want, (schema, v, cs.check(v))
        if want:
            text = canonical_text(cs.template, v)
            assert tm.is_final(_run(tm, text.encode())), (schema, v, text)
        plain = json.dumps(v, separators=(", ", ": "))
        assert not tm.is_final(_run(tm, plain.encode())) or want, (schema, v)
        valid += want
    assert valid > 0


@pytest.mark.parametrize("k", range(len(SCHEMAS)))
def test_byte_walks_never_dead_end(k: int) -> None:
    schema = SCHEMAS[k]
    validator = jsonschema.Draft202012Validator(schema)
    assert byte_walks(TextMachine(compile_spec(schema)), validator.is_valid, random.Random(k), walks=30) > 0


@pytest.mark.parametrize("schema, pointer", [
    ({"enum": [1, [1, 2]]}, "/enum/1"),
    ({"type": "object", "properties": {"p": {"const": {"a": [1, "x"]}}}}, "/properties/p/const"),
])
def test_array_of_different_items_is_refused(schema: dict, pointer: str) -> None:
    with pytest.raises(SpecError) as ei:
        compile_spec(schema)
    assert ei.value.pointer == pointer and "tuple" in str(ei.value), str(ei.value)
