"""uniqueItems over items whose values have several texts (open objects, any JSON value), compared
as JSON values (unique_values.py, textstate.py 'U' tasks): `could_equal` equals brute force over
every prefix of every text (all member orders) of small values; `item_value` is `jsonschema`'s
equality; over a tiny byte alphabet the machine accepts exactly the texts (every member order) of
the values `jsonschema` accepts, with no dead end; random byte walks finish valid; token masks equal
the token definition."""
from __future__ import annotations

import itertools
import json
import random
from typing import Any

import jsonschema
import pytest

from factorspec.graph import compile_spec
from factorspec.graph.textstate import TextMachine
from factorspec.graph.unique_values import could_equal, item_value
from tests.graph.walks import byte_walks, completes_within


def _texts(v: Any, sep: bytes = b",", key_sep: bytes = b":") -> set[bytes]:
    """Every text of a value: objects' members in every order (numbers and strings canonical)."""
    if isinstance(v, dict):
        parts = [[json.dumps(k).encode() + key_sep + t for t in _texts(x, sep, key_sep)] for k, x in v.items()]
        out = set()
        for order in itertools.permutations(range(len(parts))):
            for choice in itertools.product(*(parts[i] for i in order)):
                out.add(b"{" + sep.join(choice) + b"}")
        return out
    if isinstance(v, list):
        return {b"[" + sep.join(c) + b"]" for c in itertools.product(*(_texts(x, sep, key_sep) for x in v))}
    return {json.dumps(v).encode()}


_SMALL: list[Any] = [0, 1, 10, 0.5, True, False, None, "", "a", "ab", 'a"', [], [1], [True], [1, 0], {},
                     {"a": 1}, {"a": True}, {"b": 1}, {"a": 1, "b": 2}, {"a": {"b": 1}}, {"a": [1]},
                     {"ab": 1}, {"a": 1, "b": "a"}]


def test_item_value_is_jsonschema_equality() -> None:
    uniq = jsonschema.Draft202012Validator({"uniqueItems": True})
    vals = _SMALL + [1.0, {"b": 2, "a": 1}, [1.0], {"a": 1.0}, -0.0, 0.50]
    for x, y in itertools.product(vals, vals):
        for tx, ty in itertools.product(_texts(x), _texts(y)):
            assert (item_value(tx) == item_value(ty)) == (not uniq.is_valid([x, y])), (tx, ty)


def test_could_equal_is_brute_force_over_prefixes() -> None:
    """True iff the prefix extends to a text of the value (the automaton's number texts are canonical,
    which these are), over prefixes of every text of every value here."""
    texts = {json.dumps(v): _texts(v) for v in _SMALL}
    prefixes = {t[:i] for ts in texts.values() for t in ts for i in range(len(t) + 1)}
    for v in _SMALL:
        val = item_value(json.dumps(v).encode())
        for p in prefixes:
            want = any(t.startswith(p) for t in texts[json.dumps(v)])
            if p.endswith(b"\\"):  # an escape under way may still write any BMP character (\\u0062)
                want = want or any(t.startswith(p[:-1]) and len(t) > len(p) and t[len(p) - 1] != 0x22
                                   for t in texts[json.dumps(v)])
            assert could_equal(p, val) == want, (p, v)
    assert could_equal(b'{"b":2,"a"', item_value(b'{"a":1,"b":2}'))
    assert not could_equal(b'{"b":3', item_value(b'{"a":1,"b":2}'))
    assert not could_equal(b"1.0", item_value(b"1"))  # no canonical number starting 1.0 is 1
    assert could_equal(b'"a\\', item_value(b'"a\\n"')) and not could_equal(b'"a\\', item_value(b'"a"'))
    assert could_equal(b'"\\u00', item_value(b'"a"')) and not could_equal(b'"\\u01', item_value(b'"a"'))
    assert could_equal(b'"\xc3', item_value('"\u00e9"'.encode())) and not could_equal(b'"\xc4', item_value(b'"a"'))


_BOOL = {"type": "boolean"}
_INT01 = {"type": "integer", "minimum": 0, "maximum": 1}
# (schema, byte alphabet beside the style's separators, length bound of the exhaustive search)
CASES: list[tuple[dict, bytes, int]] = [
    ({"type": "array", "uniqueItems": True,
      "items": {"type": "object", "additionalProperties": _INT01, "propertyNames": {"enum": ["a", "b"]}}},
     b'[]{}":ab01', 22),
    ({"type": "array", "uniqueItems": True, "maxItems": 3,
      "items": {"type": "object", "additionalProperties": {"const": 0}, "maxProperties": 2}}, b'[]{}":a0', 17),
    ({"type": "array", "uniqueItems": True, "items": {"type": "object", "patternProperties": {"^[ab]$": _BOOL},
                                                      "additionalProperties": False}}, b'[]{}":abtrue', 24),
    ({"type": "array", "uniqueItems": True, "items": {"type": "object", "properties": {"k": _INT01},
                                                      "additionalProperties": _INT01}},
     b'[]{}":ak01', 16),
    ({"type": "array", "uniqueItems": True, "items": {}}, b'[]{}":a01', 7),
    ({"type": "array", "uniqueItems": True, "minItems": 2, "items": {"type": ["string", "array"]}},
     b'[]"a1', 8),
    ({"type": "array", "uniqueItems": True, "items": {"anyOf": [
        {"type": "object", "properties": {"a": _INT01, "b": _INT01}, "required": ["a", "b"],
         "additionalProperties": False},
        {"type": "object", "properties": {"b": _INT01, "a": _INT01}, "required": ["b", "a"],
         "additionalProperties": False}]}}, b'[]{}":ab01', 32),
]


def _values(letters: list[str]) -> list[Any]:
    """Small values: arrays of up to 3 items drawn from scalars, objects over the letters, and small
    arrays (duplicates and reordered members included)."""
    scal: list[Any] = [0, 1, True, False, None, ""] + letters + [a + b for a in letters for b in letters]
    objs: list[Any] = [{}]
    for k in letters:
        for x in [0, 1, True, False, "a", {}, []]:
            objs.append({k: x})
            for k2 in letters:
                if k2 != k:
                    for y in [0, 1, True, False]:
                        objs.append({k: x, k2: y})
    arrs: list[Any] = [[], ["a"], [1], [[]], ["a", 1], ["a", "a"]]
    items = scal + objs + arrs
    out: list[Any] = [[]] + [[a] for a in items]
    out += [[a, b] for a in items for b in items]
    small = scal[:8] + objs[:6]
    out += [[a, b, c] for a in small for b in small for c in small]
    return out


def _no_dup_keys(text: bytes) -> Any:
    def hook(pairs: list) -> dict:
        keys = [k for k, _ in pairs]
        assert len(keys) == len(set(keys)), text
        return dict(pairs)
    return json.loads(text, object_pairs_hook=hook)


@pytest.mark.parametrize("k", range(len(CASES)))
def test_accepted_texts_are_the_texts_of_valid_values(k: int) -> None:
    schema, extra, limit = CASES[k]
    tm = TextMachine(compile_spec(schema))
    validator = jsonschema.Draft202012Validator(schema)
    alphabet = sorted(set(extra) | set(tm.sep) | set(tm.key_sep))
    wide = sorted(set(alphabet) | set(b"truefalsn0ab."))  # "." : `0` may go on to `0.1`
    in_str = sorted(set(b'"') | {b for b in extra if chr(b) in "ab"})
    finals: set[bytes] = set()
    frontier = [(tm.initial(), b"")]
    while frontier:
        c, text = frontier.pop()
        if tm.is_final(c):
            assert validator.is_valid(_no_dup_keys(text)), (schema, text)
            finals.add(text)
        if len(text) == limit:
            assert completes_within(tm, c, wide, 14), f"dead end after {text!r}"
            continue
        inside = text.count(b'"') % 2  # in a string (no backslash here): letters and the quote only
        nxt = [(n, text + bytes([b])) for b in (in_str if inside else alphabet) if (n := tm.step(c, b))]
        assert nxt or tm.is_final(c) or completes_within(tm, c, wide, 14), f"dead end after {text!r}"
        frontier += nxt
    letters = sorted({chr(b) for b in extra if chr(b) in "ab"})
    dups = 0
    for v in _values(letters):
        ts = {t for t in _texts(v, tm.sep, tm.key_sep) if len(t) <= limit and set(t) <= set(alphabet)}
        if not ts:
            continue
        if validator.is_valid(v):
            # every member order the layout writes: declared fields first, in their order
            for t in ts:
                if _declared_first(schema, t):
                    assert t in finals, (schema, t)
        else:
            assert not ts & finals, (schema, ts & finals)
            dups += isinstance(v, list) and len(v) > len({json.dumps(x, sort_keys=True) for x in v})
    assert finals and dups > 0


def _declared_first(schema: dict, text: bytes) -> bool:
    """Does the text write each object's declared properties before its other members, in their
    order? (The automaton's layout; other orders of the same value are not written.)"""
    props = list(schema["items"].get("properties", {}))
    if not props or "anyOf" in schema["items"]:
        return True

    def ok(pairs: list) -> dict:
        keys = [k for k, _ in pairs]
        decl = [k for k in keys if k in props]
        if keys[:len(decl)] != decl or decl != [p for p in props if p in decl]:
            raise ValueError
        return dict(pairs)
    try:
        json.loads(text, object_pairs_hook=ok)
    except ValueError:
        return False
    return True


def test_reordered_members_are_the_same_item() -> None:
    tm = TextMachine(compile_spec({"type": "array", "uniqueItems": True, "items": {
        "type": "object", "additionalProperties": {"type": "integer"}}}))
    c = tm.initial()
    for b in b'[{"a"' + tm.key_sep + b"1" + tm.sep + b'"b"' + tm.key_sep + b"2}" + tm.sep + \
            b'{"b"' + tm.key_sep + b"2" + tm.sep + b'"a"' + tm.key_sep + b"1":
        c = tm.step(c, b)
        assert c
    assert not tm.step(c, ord("}"))  # {"b":2,"a":1} equals {"a":1,"b":2}
    assert tm.step(c, ord("0")) and tm.step(c, tm.sep[0])  # 10, or a third member
    tm = TextMachine(compile_spec({"type": "array", "uniqueItems": True, "items": {}}))
    c = tm.initial()
    for b in b"[1" + tm.sep + b"true" + tm.sep + b"[1]" + tm.sep + b"[true]" + tm.sep + b'{"a"' + tm.key_sep + b"1":
        c = tm.step(c, b)
        assert c
    assert tm.step(c, ord("}"))
    c = tm.step(c, tm.sep[0])
    for b in tm.sep[1:] + b'"':
        c = tm.step(c, b)
    assert not tm.step(c, ord("a")) or not tm.step(tm.step(c, ord("a")), ord('"'))  # no repeated key


WALK_SCHEMAS = [
    {"type": "array", "uniqueItems": True, "items": {}},
    {"type": "array", "uniqueItems": True, "minItems": 3, "items": {"type": "object", "additionalProperties": True}},
    {"type": "array", "uniqueItems": True, "items": {"type": "object", "properties": {"n": {"type": "string",
                                                                                            "maxLength": 1}},
                                                     "required": ["n"], "additionalProperties": {"enum": [1, "a"]},
                                                     "maxProperties": 2}},
    {"type": "object", "properties": {"xs": {"type": "array", "uniqueItems": True, "items": {
        "type": "object", "patternProperties": {"^x-": {}}, "additionalProperties": False}}}},
]


@pytest.mark.parametrize("k", range(len(WALK_SCHEMAS)))
def test_byte_walks_finish_valid(k: int) -> None:
    schema = WALK_SCHEMAS[k]
    validator = jsonschema.Draft202012Validator(schema)
    tm = TextMachine(compile_spec(schema))

    def valid(v: Any) -> bool:
        return validator.is_valid(v)
    assert byte_walks(tm, valid, random.Random(k), walks=25, steps=120, prefer='{}[]",: 01ax-') > 0
