"""uniqueItems kept by the text automaton (textstate.py 'U' tasks, spec.unique_relations): over a
tiny byte alphabet, every text the machine accepts up to a length is exactly the canonical text of
a value `jsonschema` accepts (so no duplicate item, under JSON equality, gets through, and no
valid value is lost), every accepted prefix still has a completion (no dead end), random byte walks
over all 256 bytes finish valid, strings in such items are canonical, and relations naming such
an array are refused."""
from __future__ import annotations

import json
import random
from typing import Any

import jsonschema
import pytest

from factorspec.errors import SpecError
from factorspec.graph import compile_spec
from factorspec.graph.schema import canonical_text
from factorspec.graph.textstate import TextMachine
from tests.graph.walks import byte_alphabet, byte_walks, completes_within

_STR1 = {"type": "string", "maxLength": 1}
_AB = {"type": "string", "pattern": "^[ab]*$", "maxLength": 2}

# (schema, byte alphabet beside the style's separators, length bound of the exhaustive search)
CASES: list[tuple[dict, bytes, int]] = [
    ({"type": "array", "items": _STR1, "uniqueItems": True, "maxItems": 3}, b'[]",ab', 14),
    ({"type": "array", "items": {"type": "string"}, "uniqueItems": True}, b'[]",ab', 6),
    ({"type": "array", "items": _AB, "uniqueItems": True, "minItems": 3}, b'[]",ab', 16),
    ({"type": "array", "items": {"type": "string", "pattern": "^(a|b|ab)$"}, "uniqueItems": True,
      "minItems": 2}, b'[]",ab', 18),
    ({"type": "array", "items": {"enum": ["a", "b", 1, 1.0]}, "uniqueItems": True}, b'[]",ab1', 14),
    ({"type": "array", "items": {"type": "integer", "minimum": 0}, "uniqueItems": True}, b"[],01", 10),
    ({"type": "array", "items": {"type": "number", "minimum": 0, "maximum": 1}, "uniqueItems": True},
     b"[],01.", 11),
    ({"type": "array", "items": {"type": "object", "properties": {"k": _STR1, "v": {"type": "boolean"}},
                                 "required": ["k"], "additionalProperties": False}, "uniqueItems": True,
      "maxItems": 2}, b'[]{}",:akv', 28),
    ({"type": "array", "items": {"type": "array", "items": _STR1, "maxItems": 2}, "uniqueItems": True},
     b'[]",a', 14),
    ({"type": "array", "items": {"anyOf": [_STR1, {"type": "integer", "minimum": 0, "maximum": 1}]},
      "uniqueItems": True}, b'[]",a01', 12),
    ({"anyOf": [{"type": "array", "items": _STR1, "uniqueItems": True}, {"type": "string", "maxLength": 1}]},
     b'[]",ab', 12),
    ({"type": "object", "properties": {"xs": {"type": "array", "items": {"type": "array", "items": _STR1,
                                                                         "uniqueItems": True}}},
      "required": ["xs"], "additionalProperties": False}, b'[]{}",:axs', 20),
    ({"type": "array", "items": {"type": "string", "maxLength": 1}, "uniqueItems": True, "minItems": 2},
     b'[]",\\na', 12),
    ({"type": "array", "items": {"type": "array", "items": _STR1, "uniqueItems": True, "maxItems": 2},
      "uniqueItems": True, "maxItems": 3}, b'[]",a', 16),
]


def _canonical(tm: TextMachine, v: Any) -> bytes:
    """The layout's one text of a value (numbers as format_decimal writes them: 0.00001, not 1e-05)."""
    return canonical_text(tm.spec.template, v, tm.style).encode()


@pytest.mark.parametrize("k", range(len(CASES)))
def test_accepted_texts_are_the_canonical_valid_values(k: int) -> None:
    schema, extra, limit = CASES[k]
    tm = TextMachine(compile_spec(schema))
    validator = jsonschema.Draft202012Validator(schema)
    alphabet = byte_alphabet(tm, extra)
    wide = sorted(set(alphabet) | set(b"truefalsn0"))  # completions may need a literal
    finals: set[bytes] = set()
    frontier = [(tm.initial(), b"")]
    seen_dup = 0
    while frontier:
        c, text = frontier.pop()
        if tm.is_final(c):
            v = json.loads(text)
            assert validator.is_valid(v), (schema, text)
            assert _canonical(tm, v) == text, (schema, text)
            finals.add(text)
        if len(text) == limit:
            assert completes_within(tm, c, wide, 12), f"dead end after {text!r}"
            continue
        nxt = [(n, text + bytes([b])) for b in alphabet if (n := tm.step(c, b))]
        assert nxt or tm.is_final(c) or completes_within(tm, c, wide, 12), f"dead end after {text!r}"
        frontier += nxt
    # completeness: every valid value whose canonical text is that short is accepted
    universe = _values(alphabet, limit)
    for v in universe:
        if validator.is_valid(v):
            t = _canonical(tm, v)
            if len(t) <= limit and set(t) <= set(alphabet):
                assert t in finals, (schema, t)
        elif isinstance(v, list) and len(v) != len({json.dumps(x, sort_keys=True) for x in v}):
            seen_dup += 1
    assert finals and seen_dup > 0


def _values(alphabet: list[int], limit: int) -> list[Any]:
    """Small JSON values over the alphabet's letters: strings of up to 2 letters, 0, 1, 0.1, booleans,
    objects {k, v}, and arrays of those (up to 3 items, duplicates included)."""
    letters = [chr(b) for b in alphabet if chr(b).isalpha() or chr(b) == "\n"]
    strs = [""] + letters + [a + b for a in letters for b in letters]
    scalars: list[Any] = strs + [0, 1, 10, 0.1, 0.5, True, False]
    objs = [{"k": s} for s in strs if len(s) < 2] + [{"k": s, "v": b} for s in strs if len(s) < 2
                                                     for b in (True, False)]
    inner = [[]] + [[s] for s in strs if len(s) < 2] + [[a, b] for a in letters + [""] for b in letters + [""]]
    items = scalars + objs + inner
    out: list[Any] = list(scalars)
    out.append([])
    for a in items:
        out.append([a])
        for b in items:
            out.append([a, b])
            if len(json.dumps([a, b])) < limit - 2:
                for c in scalars:
                    out.append([a, b, c])
    out += [{"xs": v} for v in out if isinstance(v, list)]
    return out


@pytest.mark.parametrize("k", range(len(CASES)))
def test_byte_walks_never_dead_end(k: int) -> None:
    schema = CASES[k][0]
    validator = jsonschema.Draft202012Validator(schema)
    assert byte_walks(TextMachine(compile_spec(schema)), validator.is_valid, random.Random(k), walks=25) > 0


def test_an_item_equal_to_an_earlier_one_may_go_on_but_not_close() -> None:
    tm = TextMachine(compile_spec({"type": "array", "items": {"type": "string", "maxLength": 2},
                                   "uniqueItems": True}))
    c = tm.initial()
    for b in b'["a"' + tm.sep + b'"a':
        c = tm.step(c, b)
    assert not tm.step(c, ord('"'))
    assert tm.step(c, ord("b"))
    for b in b'b"' + tm.sep + b'"ab':  # "ab" equals an earlier item and has no room left: not written
        c = tm.step(c, b) if b != ord("b") or c else c
    assert c == frozenset() or not tm.step(c, ord('"'))


def test_strings_in_unique_items_are_canonical_only_there() -> None:
    schema = {"type": "object", "properties": {"u": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
                                               "f": {"type": "string"}}, "additionalProperties": False}
    tm = TextMachine(compile_spec(schema))

    def run(t: bytes) -> frozenset:
        c = tm.initial()
        for b in t:
            c = tm.step(c, b)
        return c

    head = b'{"u"' + tm.key_sep + b'["'
    assert run(head + b"\\n") and run(head + b"\\u001f") and run(head + b"\\u0000")
    assert not run(head + b"\\/") and not run(head + b"\\u0061") and not run(head + b"\\u000a")
    assert not run(head + b"\\u001F") and not run(head + b"\\u0100")
    assert run(b'{"f"' + tm.key_sep + b'"\\u0061')


def test_check_reports_equal_items() -> None:
    cs = compile_spec({"type": "array", "items": {"type": "number"}, "uniqueItems": True})
    assert cs.check([1, 2.5]) == []
    assert cs.check([1, 1.0]) != []
    cs = compile_spec({"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"},
                                                                                     "b": {"type": "string"}}},
                       "uniqueItems": True})
    assert cs.check([{"a": "x", "b": "y"}, {"b": "y", "a": "x"}]) != []
    assert cs.check([{"a": "x"}, {"b": "x"}]) == []


def test_recursive_schema_with_unique_tags() -> None:
    schema = {"$defs": {"n": {"type": "object", "properties": {
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 1}, "uniqueItems": True},
        "kids": {"type": "array", "items": {"$ref": "#/$defs/n"}, "maxItems": 2}},
        "additionalProperties": False}}, "$ref": "#/$defs/n"}
    validator = jsonschema.Draft202012Validator(schema)
    assert byte_walks(TextMachine(compile_spec(schema)), validator.is_valid, random.Random(1), walks=25,
                      steps=150) > 0


def test_relations_naming_a_text_unique_array_are_refused() -> None:
    item = {"type": "object", "properties": {"a": {"enum": [1, 2]}}, "additionalProperties": False}
    schema = {"type": "object", "properties": {"xs": {"type": "array", "items": item,
                                                      "uniqueItems": True, "maxItems": 3},
                                               "n": {"type": "integer", "minimum": 0, "maximum": 5}},
              "required": ["xs", "n"], "additionalProperties": False,
              "x-factorspec": {"relations": [{"name": "r", "expr": "len(xs) == n"}]}}
    with pytest.raises(SpecError) as e:
        compile_spec(schema)
    assert "uniqueItems" in str(e.value), e.value
    schema["x-factorspec"] = {"relations": [{"name": "r", "expr": "xs[0].a == 1"}]}
    with pytest.raises(SpecError) as e:
        compile_spec(schema)
    assert "uniqueItems" in str(e.value), e.value


MASK_SCHEMAS = [
    {"type": "array", "items": {"type": "string", "maxLength": 3}, "uniqueItems": True},
    {"type": "array", "items": {"type": "string", "pattern": "^[ab]+$", "maxLength": 2}, "uniqueItems": True,
     "maxItems": 6},
    {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "string", "maxLength": 2},
                                                                   "e": {"type": "string"}},
                                "required": ["n"], "additionalProperties": False}, "uniqueItems": True},
]


@pytest.mark.parametrize("k", range(len(MASK_SCHEMAS)))
def test_masks_equal_the_token_definition(k: int) -> None:
    """Token masks inside unique items (masks.unique_body_mask: the plain mask less the suspects)
    equal the definition: a token is allowed iff its bytes keep the text a prefix of a valid record.
    The walks favour short letter tokens so that items meet earlier ones."""
    from factorspec.graph.matcher import Matcher
    from tests.graph.test_schema_open_objects import _tiny_vocab
    from tests.graph.walks import token_definition
    v = _tiny_vocab()
    tm = TextMachine(compile_spec(MASK_SCHEMAS[k]))
    rng = random.Random(50 + k)
    for _walk in range(15):
        m = Matcher(tm, v)
        for _ in range(60):
            if m.is_terminated():
                break
            cfg = m.configs
            want = token_definition(tm, v, cfg)
            ids = m.allowed_tokens()
            if not m.forced_tokens():
                assert {int(t) for t in ids} == want, (MASK_SCHEMAS[k], bytes(m.text))
            pool = [int(t) for t in ids if v.token_bytes[int(t)] in (b"a", b"b", b'"', b",", b" ", b"]", b"}")]
            pool = pool if pool and rng.random() < 0.9 else [int(t) for t in ids]
            assert m.accept_token(pool[rng.randrange(len(pool))])


def _distinct_ok_every_byte(tm: TextMachine, cfg: tuple) -> bool:
    """`TextMachine._distinct_ok` as it searched before `_probe_bytes`: all 256 bytes from every
    configuration, in byte order (the reference the probe order must agree with)."""
    if not tm._risky(cfg[0]):
        return True
    todo, seen = [cfg], {cfg}
    while todo:
        c = todo.pop()
        for b in range(256):
            res: list = []
            tm._step_one(c, b, res)
            for o in res:
                if not tm._risky(o[0]):
                    return True
                if o not in seen:
                    seen.add(o)
                    todo.append(o)
    return False


@pytest.mark.parametrize("k", range(len(CASES)))
def test_distinct_search_by_probe_bytes_answers_as_every_byte(k: int) -> None:
    """`_distinct_ok` tries only the bytes `next_bytes` allows (else all, in `_PROBE_ORDER`): on every
    configuration that random byte walks meet, before the machine's own filter, it answers as the
    search over all 256 bytes in order does, refusals included."""
    schema, alphabet, _ = CASES[k]
    tm = TextMachine(compile_spec(schema))
    rng = random.Random(700 + k)
    alpha = sorted(set(alphabet + tm.sep + tm.key_sep + b"\\n1"))
    checked = 0
    for _walk in range(12):
        c = tm.initial()
        for _ in range(24):
            raw: list = []
            for b in alpha:
                for cfg in c:
                    tm._step_one(cfg, b, raw)
            for cfg in raw:
                tm._distinct_cache.pop(cfg, None)
                want = _distinct_ok_every_byte(tm, cfg)
                assert tm._distinct_ok(cfg) == want, (schema, cfg)
                checked += tm._risky(cfg[0])
            nxt = [b for b in alpha if tm.step(c, b)]
            if not nxt:
                break
            # mostly bytes that keep an item on an earlier one's text, where the search has work
            near = [b for b in nxt if any(tm._risky(o[0]) for o in tm.step(c, b))]
            pool = near if near and rng.random() < 0.8 else nxt
            c = tm.step(c, pool[rng.randrange(len(pool))])
    assert checked > 0


WIDE_SCHEMAS = [
    {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
    {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "string"}},
                                "required": ["n"], "additionalProperties": False}, "uniqueItems": True},
    {"type": "array", "items": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
     "uniqueItems": True, "maxItems": 3},
    {"type": "array", "items": {"type": "object", "additionalProperties": {"type": "string"}}, "uniqueItems": True},
]


def _utf8_vocab() -> Any:
    """Letters, structure, escapes and byte-level pieces of multi-byte characters (é = C3 A9,
    中 = E4 B8 AD), alone and fused with letters, quotes and backslashes."""
    from factorspec.graph.token_vocab import TokenVocab
    toks = [bytes([c]) for c in b'{}[]",: \\abnu0'] + [
        b"\xc3", b"\xa9", b"\xc3\xa9", b"a\xc3", b"\xa9a", b"\xa9\xc3", b"\xe4", b"\xe4\xb8", b"\xb8\xad", b"\xad",
        b"\xe4\xb8\xad", b"\xad\xc3", b'\xa9"', b'"\xc3', b'\xad", "', b"\xa9\\n", b"\\n\xc3", b'\\"', b"\\u00",
        b"\\/", b"\\u0041", b"a\\/", b"\x80", b"\xff", b"a\x01", b'"n": "', b'"}', b'"]', b'", "', b"aa", b"\xc3\xa9a"]
    toks = list(dict.fromkeys(toks)) + [b"<eos>"]
    return TokenVocab(toks, [len(toks) - 1])


@pytest.mark.parametrize("k", range(len(WIDE_SCHEMAS)))
def test_wide_unique_body_masks_equal_the_token_definition(k: int) -> None:
    """Inside a unique item's free text, the tokens without quote or backslash that are not plain
    (partial UTF-8 characters) are decided by `unique_body_extra` less the machine-checked
    suspects, not by a trie walk: on random token walks (items steered onto earlier items' texts)
    every mask equals the definition, and that path decided masks where an earlier item was
    still near."""
    from factorspec.graph.masks import wide_unique_body
    from factorspec.graph.matcher import Matcher
    from tests.graph.walks import definition_walks
    v = _utf8_vocab()
    tm = TextMachine(compile_spec(WIDE_SCHEMAS[k]))
    rng = random.Random(90 + k)
    steer = {v.token_bytes.index(b) for b in (b"\xc3\xa9", b"\xc3", b"\xa9", b"a", b'"', b", ", b",", b" ", b'", "')
             if b in v.token_bytes}
    wide_near = [0]

    def choose(m: Matcher, want: set[int]) -> int:
        ids = [int(t) for t in m.allowed_tokens()]
        pool = [t for t in ids if t in steer]
        pool = pool if pool and rng.random() < 0.85 else ids
        return pool[rng.randrange(len(pool))]

    def seen(cfg: tuple) -> None:
        wide_near[0] += any(wide_unique_body(tm, c) and tm._risky(c[0]) for c in cfg)
    definition_walks(tm, v, choose, seen=seen)
    assert wide_near[0] > 0
