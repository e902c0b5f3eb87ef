"""The TextMachine's scalar-end cache (`_ended_cache`) changes no answer.

A machine with its cache kept is compared, after every prefix of seeded random byte walks, with
one whose cache is emptied before each question (so every answer is computed afresh; solver
States compared by their domains): the same
configurations after every byte, the same final states, the same `next_bytes`. The schemas are the
ones whose steps depend on the solver state or on a scalar's text so far: bounded and stepped
numbers, free numbers, enums of numbers and strings, a sum relation, uniqueItems and a pattern."""
from __future__ import annotations

import json
import random
from typing import Any

import jsonschema
import pytest

from factorspec.graph import compile_spec, textstate
from factorspec.graph.textstate import TextMachine

SPECS: list[dict] = [
    {"type": "object", "additionalProperties": False, "required": ["a", "b", "total"],
     "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 40},
                    "b": {"type": "integer", "minimum": 0, "maximum": 40},
                    "total": {"type": "integer", "minimum": 0, "maximum": 90}},
     "x-factorspec": {"relations": ["total == a + b"]}},
    {"type": "array", "minItems": 1, "maxItems": 3,
     "items": {"type": "number", "minimum": -2.5, "maximum": 12, "multipleOf": 0.25}},
    {"type": "object", "additionalProperties": False,
     "properties": {"x": {"type": "number"}, "n": {"enum": [1, 10, 12.5, "10", None]},
                    "s": {"type": "string", "pattern": "^[a-c]{1,3}$"}}},
    {"type": "array", "uniqueItems": True, "maxItems": 3, "items": {"enum": [0, 1, 10, "a"]}},
]


def _fresh(tm: TextMachine) -> TextMachine:
    """`tm` with its scalar-end cache emptied (the reference: every answer computed)."""
    tm._ended_cache.clear()
    return tm


def _value(cfgs: frozenset) -> frozenset:
    """Configurations by value: two machines' solver States are distinct objects, compared here by
    their domains."""
    return frozenset((stack, None if sol is None else repr(sol.D)) for stack, sol in cfgs)


def _validator(doc: dict) -> Any:
    schema = {k: v for k, v in doc.items() if k != "x-factorspec"}
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("k", range(len(SPECS)))
def test_cached_steps_equal_fresh_steps(k: int) -> None:
    doc = SPECS[k]
    cached, ref = TextMachine(compile_spec(doc)), TextMachine(compile_spec(doc))
    validator = _validator(doc)
    rng = random.Random(k)
    finished = 0
    for _ in range(25):
        c, r, text = cached.initial(), ref.initial(), bytearray()
        for _ in range(40):
            assert cached.is_final(c) == _fresh(ref).is_final(r), bytes(text)
            assert cached.next_bytes(c, limit=24) == _fresh(ref).next_bytes(r, limit=24), bytes(text)
            allowed = []
            for b in range(256):
                nc, nr = cached.step(c, b), _fresh(ref).step(r, b)
                assert _value(nc) == _value(nr), (bytes(text), b)
                if nc:
                    allowed.append(b)
            if cached.is_final(c) and (not allowed or rng.random() < 0.25):
                assert validator.is_valid(json.loads(text.decode())), bytes(text)
                finished += 1
                break
            assert allowed, f"dead end after {bytes(text)!r}"
            b = rng.choice(allowed)
            c, r = cached.step(c, b), _fresh(ref).step(r, b)
            text.append(b)
    assert finished >= 5
    assert cached._ended_cache, "the walks went through the scalar-end cache"


def test_ended_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past ENDED_CACHE_ENTRIES the cache starts over (memory stays bounded on long serving runs)."""
    monkeypatch.setattr(textstate, "ENDED_CACHE_ENTRIES", 8)
    tm = TextMachine(compile_spec(SPECS[1]))
    rng, c, seen = random.Random(0), tm.initial(), 0
    for _ in range(200):
        nxt = [n for n in (tm.step(c, b) for b in range(256)) if n]
        seen = max(seen, len(tm._ended_cache))
        assert len(tm._ended_cache) <= 8
        c = rng.choice(nxt) if nxt else tm.initial()
    assert seen == 8, "the walks filled the cache to its bound"
