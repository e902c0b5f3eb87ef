"""The merged alternatives of an allOf over anyOf members (factorspec/graph/all_of.py
`_distinct_alternatives`): spliced, deduplicated and freed of the ones inside another before they
count against MAX_ALTERNATIVES. Compared with the `jsonschema` validator over small universes:
dropping must never change the anyOf's values, and a product that overflowed 64 alternatives now
compiles to exactly the validator's values."""
from __future__ import annotations

import itertools
import random
from typing import Any

import jsonschema
import pytest

from factorspec.errors import SpecError
from factorspec.graph import all_of, compile_spec
from factorspec.graph.all_of import _distinct_alternatives, _form, _within
from factorspec.graph.textstate import TextMachine
from tests.graph.walks import byte_walks

KEYS = "abc"


def _objects(keys: str, values: list[Any]) -> list[dict]:
    out: list[dict] = []
    for n in range(len(keys) + 1):
        for ks in itertools.combinations(keys, n):
            for vs in itertools.product(values, repeat=n):
                out.append(dict(zip(ks, vs)))
    return out


SMALL = _objects(KEYS, [0, 1, "x"]) + [{"d": 0}, {"a": 0, "d": 1}]


def _random_alternative(rng: random.Random) -> dict:
    """An object schema of the shapes the merge makes: some properties false, some enums, some required."""
    props: dict[str, Any] = {}
    for k in KEYS:
        r = rng.random()
        if r < 0.3:
            props[k] = False
        elif r < 0.6:
            props[k] = {"enum": rng.sample([0, 1, "x"], rng.randint(1, 2))}
        elif r < 0.8:
            props[k] = {"type": "integer"}
    alt: dict[str, Any] = {"type": "object", "properties": props}
    req = [k for k in KEYS if rng.random() < 0.3]
    if req:
        alt["required"] = req
    if rng.random() < 0.3:
        alt["additionalProperties"] = False
    if rng.random() < 0.2:
        alt["minProperties"] = 1
    return alt


@pytest.mark.parametrize("seed", range(40))
def test_distinct_alternatives_keep_the_values_of_the_any_of(seed: int) -> None:
    """anyOf(kept) and anyOf(all) accept the same values (validator), for random lists with
    copies, nested anyOfs and alternatives inside others."""
    rng = random.Random(seed)
    base = [_random_alternative(rng) for _ in range(rng.randint(2, 7))]
    alts = list(base)
    for a in base:  # copies and narrowings of some: ones that must go
        if rng.random() < 0.4:
            alts.append(dict(a))
        if rng.random() < 0.5:
            narrow = {**a, "properties": {**a["properties"], rng.choice(KEYS): False}}
            alts.append(narrow)
    if rng.random() < 0.5:
        alts.append({"anyOf": [_random_alternative(rng), dict(base[0])]})
    rng.shuffle(alts)
    kept = _distinct_alternatives(alts)
    assert len(kept) <= sum(len(a["anyOf"]) if "anyOf" in a else 1 for a in alts)
    whole = jsonschema.Draft202012Validator({"anyOf": alts})
    fewer = jsonschema.Draft202012Validator({"anyOf": kept})
    for v in SMALL:
        assert whole.is_valid(v) == fewer.is_valid(v), (alts, kept, v)


def test_within_cases() -> None:
    """More absent or required properties is inside; a different keyword or a property that is
    absent in the outer one only is not; additionalProperties must agree."""
    def within(a: dict, b: dict) -> bool:
        return _within(_form(a, repr), _form(b, repr))
    b = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {}}, "required": ["b"]}
    assert within({**b, "properties": {"a": False, "b": {}}}, b)
    assert within({**b, "properties": {**b["properties"], "c": False}}, b)
    assert within({**b, "required": ["b", "a"]}, b)
    assert not within(b, {**b, "properties": {"a": False, "b": {}}})
    assert not within({**b, "properties": {**b["properties"], "c": {}}}, b)  # c is more, not less
    assert not within({**b, "required": []}, b)
    assert not within({**b, "additionalProperties": False}, b)
    assert not within({**b, "minProperties": 1}, b)
    assert not within({"anyOf": [b]}, b)


def test_one_of_copies_are_not_merged() -> None:
    """oneOf(a, a) admits none of a's values: a oneOf's equal alternatives must stay."""
    schema = {"allOf": [{"type": "integer", "minimum": 0, "maximum": 3},
                        {"oneOf": [{"maximum": 1}, {"maximum": 1}, {"minimum": 3}]}]}
    cs = compile_spec(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for v in range(-1, 5):
        assert (cs.check(v) == []) == validator.is_valid(v) == (v == 3), v


_BIT = {"type": "integer", "minimum": 0, "maximum": 1}
# dependencies of `not required` (each an anyOf of absent properties): 72 merged alternatives
# before the ones inside others are dropped (refused at 64), few after (filespec-schema's shape)
PRODUCT = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
           "properties": dict.fromkeys("abcdef", _BIT), "additionalProperties": False,
           "anyOf": [{"required": ["a"]}, {"required": ["b"]}, {"required": ["c"]}],
           "dependencies": {"a": {"not": {"required": ["b", "c", "d"]}}, "b": {"not": {"required": ["c", "d", "e"]}},
                            "c": {"not": {"required": ["d", "e", "f"]}}, "d": {"not": {"required": ["a", "e", "f"]}},
                            "e": {"required": ["f"]}}}


def test_the_product_compiles_to_the_validators_values() -> None:
    cs = compile_spec(PRODUCT)
    validator = jsonschema.Draft7Validator(PRODUCT)
    valid = 0
    for v in _objects("abcdef", [0, 1]) + [{"a": 2}, {"a": 0, "g": 1}, {"b": "x"}]:
        want = validator.is_valid(v)
        assert (cs.check(v) == []) == want, v
        valid += want
    assert valid > 50
    assert byte_walks(TextMachine(cs), validator.is_valid, random.Random(3)) > 0


def test_a_product_past_the_budget_is_still_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """The budget still holds where the distinct alternatives are too many."""
    monkeypatch.setattr(all_of, "MAX_ALTERNATIVES", 4)
    with pytest.raises(SpecError) as e:
        compile_spec(PRODUCT)
    assert "at most 4 are merged" in e.value.message and e.value.pointer.startswith("/dependencies")
