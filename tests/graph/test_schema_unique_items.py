"""uniqueItems as FactorSpec's own all_different (spec.unique_relations): `check` and `count`
equal brute force with `jsonschema` over every small array, byte walks of the text machine (the
solver behind it) never dead-end and finish on valid records, the array length is bounded by the
items' domain, and unsupported item kinds are refused naming the pointer. (uniqueItems kept in
the text, over items that are not finite: test_textstate_unique.py.)"""
from __future__ import annotations

import itertools
import json
import random

import jsonschema
import pytest

from factorspec.errors import SpecError
from factorspec.graph import compile_spec
from factorspec.graph.textstate import TextMachine

ITEMS = [{"enum": ["a", "b", "c"]}, {"type": "integer", "minimum": -1, "maximum": 2}, {"type": "boolean"},
         {"type": "number", "multipleOf": 0.5, "minimum": 0, "maximum": 1}]


def _schema(item: dict, lo: int, hi: int | None) -> dict:
    arr: dict = {"type": "array", "items": item, "uniqueItems": True, "minItems": lo}
    if hi is not None:
        arr["maxItems"] = hi
    return {"type": "object", "properties": {"xs": arr}, "required": ["xs"], "additionalProperties": False}


CASES = [(i, lo, hi) for i in range(len(ITEMS)) for lo, hi in [(0, None), (2, None), (1, 3), (0, 2)]]


def _values(item: dict) -> list:
    if "enum" in item:
        return item["enum"]
    if item.get("type") == "boolean":
        return [False, True]
    if item.get("type") == "integer":
        return list(range(item["minimum"], item["maximum"] + 1))
    return [0, 0.5, 1]


@pytest.mark.parametrize("i, lo, hi", CASES)
def test_check_and_count_equal_brute_force(i: int, lo: int, hi: int | None) -> None:
    schema = _schema(ITEMS[i], lo, hi)
    cs = compile_spec(schema)
    validator = jsonschema.Draft202012Validator(schema)
    vals = _values(ITEMS[i]) + ([5] if "enum" not in ITEMS[i] else ["z"])  # one value outside the items
    valid = 0
    for n in range(6):
        for xs in itertools.product(vals, repeat=n):
            rec = {"xs": list(xs)}
            want = validator.is_valid(rec)
            assert (cs.check(rec) == []) == want, (schema, rec)
            valid += want
    assert cs.count() == valid


def test_length_is_bounded_by_the_domain() -> None:
    cs = compile_spec(_schema({"enum": ["a", "b"]}, 0, None))
    assert cs.template.fields[0].node.max_items == 2
    with pytest.raises(SpecError) as e:
        compile_spec(_schema({"enum": ["a", "b"]}, 3, None))
    assert e.value.pointer == "/properties/xs/minItems"


@pytest.mark.parametrize("k", range(len(ITEMS)))
def test_byte_walks_never_dead_end(k: int) -> None:
    schema = _schema(ITEMS[k], 1, None)
    tm = TextMachine(compile_spec(schema))
    validator = jsonschema.Draft202012Validator(schema)
    rng = random.Random(k)
    finished = 0
    for _ in range(30):
        c, text = tm.initial(), bytearray()
        for _ in range(120):
            allowed = [b for b in range(256) if tm.step(c, b)]
            if tm.is_final(c) and not allowed:
                assert validator.is_valid(json.loads(text.decode())), (schema, bytes(text))
                finished += 1
                break
            assert allowed, f"dead end after {bytes(text)!r}"
            c = tm.step(c, b := rng.choice(allowed))
            text.append(b)
    assert finished > 0


@pytest.mark.parametrize("schema, pointer", [
    ({"type": "array", "items": {"type": "object", "properties": {"a": {"enum": [1, 2]}},
                                 "additionalProperties": {"type": "integer"}, "maxProperties": 2},
      "uniqueItems": True, "minItems": 3}, "/minItems"),
    ({"type": "array", "items": {"type": "string", "pattern": "^(a|b)$"}, "uniqueItems": True, "minItems": 3},
     "/minItems"),
    ({"type": "object", "properties": {"t": {"type": "array", "items": {"type": "integer", "minimum": 0,
                                                                         "maximum": 5000}, "uniqueItems": True}}},
     "/properties/t/uniqueItems"),
])
def test_unsupported_unique_items_are_refused_naming_the_pointer(schema: dict, pointer: str) -> None:
    with pytest.raises(SpecError) as e:
        compile_spec(schema)
    assert e.value.pointer == pointer, e.value
