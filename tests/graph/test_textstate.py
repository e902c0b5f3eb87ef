"""Byte-level checks of the TextMachine's free-text strings against Python's UTF-8 decoder."""
from __future__ import annotations

import json
import random
from typing import Any

import pytest

from factorspec.graph import compile_spec
from factorspec.graph.textstate import TextMachine
from tests.graph.walks import accepts_text


@pytest.fixture(scope="module")
def tm() -> TextMachine:
    cs = compile_spec({"type": "object", "properties": {"s": {"type": "string", "maxLength": 6}},
                       "required": ["s"], "additionalProperties": False})
    return TextMachine(cs)


def _accepts(tm: TextMachine, body: bytes) -> bool:
    c = tm.initial()
    for b in b'{"s": "' + body + b'"}':
        c = tm.step(c, b)
        if not c:
            return False
    return tm.is_final(c)


def _valid(body: bytes) -> bool:
    try:
        s = json.loads(b'"' + body + b'"')
    except (UnicodeDecodeError, ValueError):
        return False
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return len(s) <= 6


@pytest.mark.parametrize("body", [b"\xed\xa0\x80", b"\xed\x9f\xbf", b"\xe0\x80\x80", b"\xe0\xa0\x80",
                                  b"\xf0\x80\x80\x80", b"\xf0\x90\x80\x80", b"\xf4\x90\x80\x80",
                                  b"\xf4\x8f\xbf\xbf", b"\xc0\xaf", b"\xc1\xbf", b"\xf5\x80\x80\x80",
                                  "é€😀".encode(), b"\x80", b"abc\xc3", b"a\x7f"])
def test_utf8_edge_cases(tm: TextMachine, body: bytes) -> None:
    assert _accepts(tm, body) == _valid(body), body


def test_random_byte_strings_match_the_decoder(tm: TextMachine) -> None:
    """Random short byte strings (biased to UTF-8 lead/continuation bytes) are accepted exactly when
    they are valid UTF-8 JSON string bodies of at most 6 characters."""
    rng = random.Random(0)
    pool = list(range(0x20, 0x7F)) + list(range(0x80, 0xC0)) + list(range(0xC0, 0x100)) * 2
    for _ in range(4000):
        body = bytes(rng.choice(pool) for _ in range(rng.randint(1, 8)))
        assert _accepts(tm, body) == _valid(body), body


@pytest.mark.parametrize("schema,text,ok", [
    ({"type": "boolean"}, b"true", True),
    ({"enum": ["GB", "US"]}, b'"GB"', True),
    ({"type": "integer", "minimum": 0, "maximum": 5}, b"5", True),
    ({"type": "integer"}, b"-12", True),
    ({"enum": [1, 10]}, b"1", True),
    ({"enum": [1, 10]}, b"10", True),
])
def test_root_scalar_record_can_end(schema: dict, text: bytes, ok: bool) -> None:
    """A record that is a single scalar is complete once its text can end (was: never final)."""
    assert accepts_text(TextMachine(compile_spec(schema)), text) == ok


@pytest.mark.parametrize("schema,text,ok", [
    ({"type": "integer", "minimum": -1}, b"-1", True),
    ({"type": "integer", "minimum": -1}, b"-2", False),
    ({"type": "integer", "minimum": -1}, b"-10", False),
    ({"type": "integer", "minimum": -1}, b"123", True),
    ({"type": "integer", "maximum": -50}, b"-50", True),
    ({"type": "integer", "maximum": -50}, b"-100", True),
    ({"type": "integer", "maximum": -50}, b"-49", False),
    ({"type": "integer", "maximum": -50}, b"12", False),
    ({"type": "integer", "minimum": 3}, b"-1", False),
])
def test_one_sided_integer_bounds(schema: dict, text: bytes, ok: bool) -> None:
    """Half-bounded integers: prefixes of the bounded sign are checked (was: any prefix allowed)."""
    assert accepts_text(TextMachine(compile_spec(schema)), text) == ok
    tm = TextMachine(compile_spec(schema))
    prefix_ok = any(accepts_text(tm, text + d) for d in [b""] + [bytes([c]) for c in b"0123456789"])
    if not ok and text != b"-49" and text != b"12":
        assert not prefix_ok


def test_witness_text_does_not_follow_set_order() -> None:
    """Several configurations: the witness is the shortest, then bytewise least, text, so draft
    priors are the same in every process (a frozenset's order follows hashes)."""
    from typing import NamedTuple

    class Sol(NamedTuple):  # hashable stand-in for a solver state: only `witness` is read
        witness: tuple
    cs = compile_spec({"type": "object", "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 12},
                                                        "b": {"type": "integer", "minimum": 0, "maximum": 13}},
                       "required": ["a", "b"], "additionalProperties": False,
                       "x-factorspec": {"relations": ["b == a + 1"]}})
    tm = TextMachine(cs)
    (stack, sol), = tm.initial()
    assert tm.witness_text(frozenset([(stack, sol)])) == b'{"a": 0, "b": 1}'
    fakes = [(stack, Sol(w)) for w in ((1, 0), (13, 12), (3, 2), (10, 9))]
    for k in range(len(fakes)):
        order = fakes[k:] + fakes[:k]
        assert tm.witness_text(frozenset(order)) == b'{"a": 0, "b": 1}'
    assert tm.witness_text(frozenset(fakes[1:])) == b'{"a": 2, "b": 3}'
    assert tm.witness_text(frozenset([(stack, None)])) is None


@pytest.mark.parametrize("n", [65, 130])
@pytest.mark.parametrize("relation", [False, True])
def test_large_enum_slots_write_their_strings_never_indices(n: int, relation: bool) -> None:
    """An enum slot whose solver domain holds more than SMALL_DOMAIN values (here: uniqueItems
    items, an all_different over enum indices) is matched by its texts; it once fell back to
    numeric text and accepted the index (`[0]`) instead of the string (a corpus walk found it)."""
    import jsonschema

    from tests.graph.walks import byte_walks
    en = [f"v{i}" for i in range(n)]
    schema: dict = {"type": "object", "properties": {
        "c": {"type": "array", "uniqueItems": True, "minItems": 1, "maxItems": 3,
              "items": {"type": "string", "enum": en}},
        "k": {"type": "integer", "minimum": 0, "maximum": 3}},
        "required": ["c", "k"], "additionalProperties": False}
    if relation:  # a relation on the same items: their feasibility comes from the solver
        schema["x-factorspec"] = {"relations": ["len(c) == k"]}
    cs = compile_spec(schema)
    tm = TextMachine(cs)
    plain = {k: v for k, v in schema.items() if k != "x-factorspec"}

    def valid(x: Any) -> bool:
        return jsonschema.Draft202012Validator(plain).is_valid(x) and (not relation or len(x["c"]) == x["k"])

    for text in (b'{"c": [0], "k": 1}', b'{"c": [7, 8], "k": 2}', b'{"c": ["v1"], "k": 1}',
                 b'{"c": ["v1", "v1"], "k": 2}', b'{"c": ["v1", "v60"], "k": 2}', b'{"c": ["v64"], "k": 0}',
                 b'{"c": ["v1", "v2", "v3"], "k": 3}', b'{"c": ["v1", "v2", "v3", "v4"], "k": 3}'):
        assert accepts_text(tm, text) == valid(json.loads(text)), text
    assert byte_walks(tm, valid, random.Random(n), walks=15, steps=60, prefer='"v1,] ') > 0
