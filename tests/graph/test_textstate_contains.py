"""`contains` / `minContains` / `maxContains` kept by the text automaton (schema._contains, textstate
'C' tasks): over a tiny byte alphabet, every text the machine accepts up to a length is the
canonical text of a value `jsonschema` accepts, every valid array of small atoms is accepted
(nothing with a valid completion is lost), every accepted prefix still has a completion (no dead
end), random byte walks over all 256 bytes finish valid, check() counts the matching items, and
relations naming such an array are refused."""
from __future__ import annotations

import itertools
import json
import random
from typing import Any

import jsonschema
import pytest

from factorspec.errors import EmptySchema, SpecError
from factorspec.graph import compile_spec
from factorspec.graph.schema import canonical_text
from factorspec.graph.textstate import TextMachine
from tests.graph.walks import byte_alphabet, byte_walks, completes_within

_ABC = {"enum": ["a", "b", "c"]}
_STR1 = {"type": "string", "maxLength": 1}

# (schema, byte alphabet beside the separators, length bound of the exhaustive search, item atoms)
CASES: list[tuple[dict, bytes, int, list[Any]]] = [
    ({"type": "array", "items": _ABC, "contains": {"const": "b"}}, b'[]"abc', 13, ["a", "b", "c"]),
    ({"type": "array", "items": _ABC, "contains": {"enum": ["b", "c"]}, "minContains": 2, "maxContains": 2,
      "maxItems": 3}, b'[]"abc', 16, ["a", "b", "c"]),
    ({"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 3}, "contains": {"minimum": 2},
      "minContains": 0, "maxContains": 1}, b"[]0123", 10, [0, 1, 2, 3]),
    ({"type": "array", "items": _STR1, "contains": {"pattern": "^a$"}, "minItems": 2}, b'[]"ab', 13,
     ["", "a", "b"]),
    ({"type": "array", "items": {"const": "a"}, "contains": {"const": "a"}, "maxContains": 2}, b'[]"a', 14, ["a"]),
    ({"type": "array", "items": {"enum": [1, 2]}, "contains": {"const": 2}, "minContains": 0, "maxContains": 0},
     b"[]12", 10, [1, 2]),
]

# byte walks only: with any item allowed, nested arrays make the exhaustive search too slow for CI
WALK_ONLY: list[dict] = [{"type": "array", "contains": {"type": "string"}}]


@pytest.mark.parametrize("k", range(len(CASES)))
def test_accepted_texts_are_the_canonical_valid_values(k: int) -> None:
    schema, extra, limit, atoms = CASES[k]
    tm = TextMachine(compile_spec(schema))
    validator = jsonschema.Draft202012Validator(schema)
    alphabet = byte_alphabet(tm, extra)
    wide = sorted(set(alphabet) | set(b"truefalsn0abc"))
    finals: set[bytes] = set()
    frontier = [(tm.initial(), b"")]
    while frontier:
        c, text = frontier.pop()
        if tm.is_final(c):
            v = json.loads(text)
            assert validator.is_valid(v), (schema, text)
            assert canonical_text(tm.spec.template, v, tm.style).encode() == text, (schema, text)
            assert tm.spec.check(v) == [], (schema, text)
            finals.add(text)
        if len(text) == limit:
            assert completes_within(tm, c, wide, 14), f"dead end after {text!r}"
            continue
        nxt = [(n, text + bytes([b])) for b in alphabet if (n := tm.step(c, b))]
        assert nxt or tm.is_final(c) or completes_within(tm, c, wide, 14), f"dead end after {text!r}"
        frontier += nxt
    # completeness, and the validator agrees with check() on the arrays of up to 4 atoms
    valid = invalid = 0
    for n in range(5):
        for v in itertools.product(atoms, repeat=n):
            arr = list(v)
            ok = validator.is_valid(arr)
            valid += ok
            invalid += not ok
            assert (tm.spec.check(arr) == []) == ok, (schema, arr)
            if ok:
                t = canonical_text(tm.spec.template, arr, tm.style).encode()
                if len(t) <= limit and set(t) <= set(alphabet):
                    assert t in finals, (schema, t)
    assert finals and valid and invalid


@pytest.mark.parametrize("k", range(len(CASES) + len(WALK_ONLY)))
def test_byte_walks_never_dead_end(k: int) -> None:
    schema = CASES[k][0] if k < len(CASES) else WALK_ONLY[k - len(CASES)]
    validator = jsonschema.Draft202012Validator(schema)
    assert byte_walks(TextMachine(compile_spec(schema)), validator.is_valid, random.Random(k), walks=25) > 0


def test_draft7_has_no_min_contains() -> None:
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "array", "items": {"enum": [1, 2]},
              "contains": {"const": 2}, "minContains": 2}
    cs = compile_spec(schema)
    assert cs.check([2]) == [] and cs.check([1]) != []
    assert jsonschema.Draft7Validator(schema).is_valid([2])


def test_contains_that_no_item_can_match() -> None:
    with pytest.raises(EmptySchema):
        compile_spec({"type": "array", "items": {"enum": [1, 2]}, "contains": {"const": 3}})
    cs = compile_spec({"type": "array", "items": {"enum": [1, 2]}, "contains": {"const": 3}, "minContains": 0,
                       "maxContains": 1})
    assert cs.check([1, 2, 1]) == []
    with pytest.raises(EmptySchema):
        compile_spec({"type": "array", "items": {"enum": [1, 2]}, "contains": {"const": 2}, "minContains": 3,
                      "maxItems": 2})


def test_contains_with_unique_items_is_refused() -> None:
    with pytest.raises(SpecError) as e:
        compile_spec({"type": "array", "items": {"type": "string"}, "contains": {"const": "a"}, "uniqueItems": True})
    assert "contains" in str(e.value)


def test_in_a_recursive_schema() -> None:
    schema = {"$defs": {"n": {"type": "object", "properties": {
        "kids": {"type": "array", "items": {"$ref": "#/$defs/n"}, "contains": {"required": ["leaf"]},
                 "maxItems": 2},
        "leaf": {"type": "boolean"}}, "additionalProperties": False}}, "$ref": "#/$defs/n"}
    validator = jsonschema.Draft202012Validator(schema)
    assert byte_walks(TextMachine(compile_spec(schema)), validator.is_valid, random.Random(1), walks=25,
                      steps=150) > 0


def test_relations_naming_a_contains_array_are_refused() -> None:
    schema = {"type": "object", "properties": {"xs": {"type": "array", "items": {"enum": [1, 2]},
                                                      "contains": {"const": 2}, "maxItems": 3},
                                               "n": {"type": "integer", "minimum": 0, "maximum": 5}},
              "required": ["xs", "n"], "additionalProperties": False,
              "x-factorspec": {"relations": [{"name": "r", "expr": "len(xs) == n"}]}}
    with pytest.raises(SpecError) as e:
        compile_spec(schema)
    assert "contains" in str(e.value), e.value


def test_contains_of_contains_over_items_with_contains_is_refused() -> None:
    """Items that have a `contains` of their own, under an outer `contains` that is one too: the
    matching items' allOf holds two different `contains` (not merged yet): a clear error."""
    schema = {"type": "array", "items": {"type": "array", "items": _ABC, "contains": {"const": "a"}, "maxItems": 2},
              "contains": {"contains": {"const": "b"}}, "maxItems": 2}
    with pytest.raises(SpecError, match="contains"):
        compile_spec(schema)
