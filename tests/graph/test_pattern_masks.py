"""Pattern strings and patterned keys inside an escape or UTF-8 sequence (graph/pattern_masks.py):
the byte table's masks, with the walk of the quote tokens, equal the token definition (a token is
allowed iff its bytes keep the text a prefix of a valid record), on walks that go through escapes,
partial UTF-8 characters and declared or used keys; and the byte table equals `regex_byte` stepped
token by token from every state it reached."""
from __future__ import annotations

import random
from typing import Any

import pytest

from factorspec.graph import compile_spec
from factorspec.graph.pattern_masks import ByteTable, pattern_part_mask
from factorspec.graph.regex_lang import pattern_lang
from factorspec.graph.textstate import TextMachine, regex_byte
from factorspec.graph.token_vocab import TokenVocab, unpack_mask
from tests.graph.walks import definition_walks

# escapes cut at every point, partial UTF-8 characters, tokens that finish a character and go on,
# and closing quotes after escapes
TOKENS = [b"{", b"}", b"[", b"]", b",", b'"', b'",', b'"}', b'"]', b'": ', b":", b" ", b"\\", b"\\u", b"\\u0",
          b"\\u00", b"\\u006", b"\\u0061", b"u", b"u0", b"u00", b"00", b"006", b"0061", b"061", b"61", b"1",
          b"62b", b"2bc", b"e9", b"e9ab", b"00e", b"0e9", b"9a", b"9ab", b"a", b"b", b"c", b"d", b"e", b"f",
          b"ab", b"abc", b"bca", b"\\n", b"n", b"\\\\", b"\\/", b"/", b'\\"', b'\\"a', b"\xc3", b"\xa9",
          b"\xa9a", b"\xa9ab", b"\xc3\xa9", b"\xe2", b"\x82", b"\xac", b"\x82\xac", b"\xac\xc3", b'\xa9"',
          b'\xa9",', b'a"', b'ab"', b"0", b"2", b"5", b"9", b"A", b"F", b"x", b"<eos>"]

SCHEMAS = [
    # a pattern string with length bounds: escapes write characters that count
    {"type": "object", "properties": {"s": {"type": "string", "pattern": "^[a-f\u00e9\n/]{2,6}$"}},
     "required": ["s"], "additionalProperties": False},
    # an unanchored pattern (any text around a required part) in an array
    {"type": "array", "items": {"type": "string", "pattern": "a\u00e9?b", "maxLength": 7}, "maxItems": 3},
    # patterned keys, one declared key extending another's prefix (the table is skipped there)
    {"type": "object", "properties": {"ab": {"type": "integer"}},
     "patternProperties": {"^[a-f\u00e9\u20ac]{1,4}$": {"type": "integer"}}, "additionalProperties": False,
     "maxProperties": 3},
    # propertyNames with a pattern, open values
    {"type": "object", "propertyNames": {"pattern": "^[abc\u00e9]+$", "maxLength": 3},
     "additionalProperties": {"type": "integer"}, "maxProperties": 2},
    # pattern strings in a uniqueItems array (canonical escapes: the table must stand aside)
    {"type": "array", "items": {"type": "string", "pattern": "^[a-c\u00e9]{1,3}$"}, "uniqueItems": True,
     "maxItems": 3},
]


def _vocab() -> TokenVocab:
    # every single byte the walks can need too, so that no text is a dead end for lack of a token
    toks = list(dict.fromkeys(TOKENS[:-1] + [bytes([c]) for c in b'{}[]",: \\/abcdefnsux0123456789AF'])) + [b"<eos>"]
    return TokenVocab(toks, [len(toks) - 1])


@pytest.mark.parametrize("k", range(len(SCHEMAS)))
def test_masks_inside_escapes_equal_the_token_definition(k: int) -> None:
    v = _vocab()
    tm = TextMachine(compile_spec(SCHEMAS[k]))
    rng = random.Random(31 + k)
    hits = {"table": 0, "aside": 0}

    def seen(cfgs: frozenset) -> None:
        for cfg in cfgs:
            top = cfg[0][-1] if cfg[0] else None
            if top is not None and top[0] in ("R", "K") and top[4] != 0:
                hits["table" if pattern_part_mask(tm, v, cfg) is not None else "aside"] += 1

    def choose(m: Any, want: set[int]) -> int:
        # the matcher's own tokens (at a forced position, the forced ones), mostly those that open
        # or continue an escape or a UTF-8 character
        ids = [int(t) for t in m.allowed_tokens()]
        odd = [t for t in ids if any(x in v.token_bytes[t] for x in b"\\u0\xc3\xa9\xe2\x82\xac")]
        pool = odd if odd and rng.random() < 0.7 else ids
        return pool[rng.randrange(len(pool))]

    definition_walks(tm, v, choose, walks=14, steps=30, seen=seen)
    if k == 4:  # text-unique items: canonical escapes, checked by the machine
        assert hits["table"] == 0 and hits["aside"] > 5, hits
    else:
        assert hits["table"] > 5, hits  # the walks did go through escapes where the table applies


def test_byte_table_equals_regex_byte_token_by_token() -> None:
    """From every state a few escape-heavy prefixes reach, the table's mask holds exactly the
    quote-free tokens whose bytes `regex_byte` steps to the end (a new table per language, so the
    lazily filled transitions are asked in another order than the walk's)."""
    v = _vocab()
    lang = pattern_lang("^(ab|[c-f]|\u00e9|\u20ac)*x?$", "/pattern", 1, 7)
    table = ByteTable(lang)
    starts = {(lang.start, 0, 0, 0)}
    for prefix in (b"\\", b"\\u", b"\\u00", b"\\u006", b"a", b"\xc3", b"\xe2", b"\xe2\x82", b"ab\\u00e",
                   b"\\u20", b"c\\u00e9\\", b"\xc3\xa9\xe2"):
        top: object = ("R", (), lang.start, 0, 0, 0)
        for x in prefix:
            top = regex_byte(lang, top, x)  # type: ignore[arg-type]
            if top is None:
                break
            starts.add(tuple(top[2:]))  # type: ignore[index]
    checked = 0
    for st in sorted(starts, key=repr):
        want = set()
        for t, b in enumerate(v.token_bytes):
            if t in v.stop_ids or not b or 0x22 in b:
                continue
            top = ("R", (), *st)
            for x in b:
                top = regex_byte(lang, top, x)
                if top is None or top == "end":
                    break
            else:
                want.add(t)
        got = {int(t) for t in unpack_mask(table.mask(v, st), v.vocab_size)}
        assert got == want, (st, sorted(v.token_bytes[t] for t in got ^ want))
        checked += bool(want)
    assert checked >= 8


def test_table_starts_again_past_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past MAX_STATES the table is rebuilt from nothing; the masks stay the same."""
    import factorspec.graph.pattern_masks as pm
    v = _vocab()
    lang = pattern_lang("^[a-f\u00e9]{0,9}$", "/pattern", 0, 9)
    states = [(lang.start, 0, 1, 0), (lang.start, 0, 10, 0), (lang.start, 0, 12, 0), (lang.start, 0, 13, 0x6)]
    want = [ByteTable(lang).mask(v, st) for st in states]
    monkeypatch.setattr(pm, "MAX_STATES", 2)
    table = ByteTable(lang)
    for st, w in zip(states, want):
        assert (table.mask(v, st) == w).all()
        assert len(table.states) <= 2 + 64  # started again before each new mask once past the bound
    assert table.masks  # masks are kept per state


KEYED = {"type": "object", "properties": {"\u00e9": {"type": "integer"}},
         "patternProperties": {"^(\u00e9|\u00ea|ab|ac)$": {"type": "integer"}}, "additionalProperties": False}
PREFIXES = [b'{"\\u00e', b'{"\xc3', b'{"\\u006', b'{"\xc3\xa9": 1, "\\u00e', b'{"\xc3\xa9": 1, "\xc3',
            b'{"\xc3\xaa": 1, "\\u00', b'{"ab": 1, "\\u006', b'{"ab": 1, "\\u0061']


@pytest.mark.parametrize("prefix", PREFIXES)
def test_keys_that_declared_or_used_keys_extend(prefix: bytes) -> None:
    """Keys inside an escape where a declared or used key extends the prefix (the table stands
    aside: only the machine knows which completions are left) and where none does: each mask
    equals the token definition."""
    from factorspec.graph.masks import boundary_mask
    from tests.graph.walks import token_definition
    v = _vocab()
    tm = TextMachine(compile_spec(KEYED))
    c = tm.initial()
    for x in prefix:
        c = tm.step(c, x)
    assert c, prefix
    got = {int(t) for t in unpack_mask(boundary_mask(tm, v, c), v.vocab_size)}
    want = token_definition(tm, v, c)
    assert got == want, (prefix, sorted(v.token_bytes[t] for t in got ^ want))


def test_takes_holds_every_byte_decode_byte_takes() -> None:
    """`takes(esc)` (the bytes a new state's row asks `regex_byte` for; the others are dead without
    asking) holds every byte `decode_byte` takes in that state, over the accumulators reachable."""
    from factorspec.graph.pattern_masks import takes
    from factorspec.graph.textstate import decode_byte
    states: set = {(0, 0)}
    todo = [(0, 0)]
    while todo:  # every (esc, acc) the decoder reaches (acc: hex digits so far, UTF-8 bits and range)
        esc, acc = todo.pop()
        for b in range(256):
            d = decode_byte(esc, acc, b)
            if d is None:
                continue
            assert b in set(takes(esc).tolist()), (esc, acc, b)
            if d[0] == "part" and (d[1], d[2]) not in states:
                states.add((d[1], d[2]))
                todo.append((d[1], d[2]))
    assert {e for e, _ in states} >= {0, 1, 10, 11, 12, 13, 21, 22, 23}
