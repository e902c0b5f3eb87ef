"""Mask cache keys (graph/masks.py `mask_key`): a bounded string's character count is made
canonical only where it cannot change the mask, so every cached mask equals the token
definition (a token is allowed iff its bytes keep the text a prefix of a valid record)."""
from __future__ import annotations

import random

import pytest

from factorspec.graph import compile_spec
from factorspec.graph.masks import mask_key
from factorspec.graph.matcher import Matcher
from factorspec.graph.textstate import TextMachine
from factorspec.graph.token_vocab import unpack_mask
from tests.graph.test_schema_open_objects import _tiny_vocab
from tests.graph.walks import token_definition

SCHEMAS = [
    {"type": "object", "properties": {"s": {"type": "string", "minLength": 3, "maxLength": 14},
                                      "t": {"type": "string", "maxLength": 9}},
     "required": ["s", "t"], "additionalProperties": False},
    {"type": "object", "properties": {"s": {"type": "string", "minLength": 8, "maxLength": 16}},
     "required": ["s"], "additionalProperties": False},
    {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 11}, "maxItems": 3},
]


@pytest.mark.parametrize("k", range(len(SCHEMAS)))
def test_cached_masks_under_canonical_keys_equal_the_definition(k: int) -> None:
    v = _tiny_vocab()
    tm = TextMachine(compile_spec(SCHEMAS[k]))
    rng = random.Random(7 + k)
    canonical = 0
    for _walk in range(25):
        m = Matcher(tm, v)
        for _ in range(60):
            if m.is_terminated():
                break
            cfg = m.configs
            canonical += mask_key(tm, v, cfg) != cfg
            want = token_definition(tm, v, cfg)
            ids = m.allowed_tokens()
            if not m.forced_tokens():
                assert {int(t) for t in ids} == want, (SCHEMAS[k], bytes(m.text))
            plain = [int(t) for t in ids if v.token_bytes[int(t)].isalpha()]
            pool = plain if plain and rng.random() < 0.85 else [int(t) for t in ids]
            assert m.accept_token(pool[rng.randrange(len(pool))])
    assert canonical > 0  # the walks did reach counts that the key makes canonical


# -- regex_mask: every plain token at once, against lang.step one character at a time -----------

_REGEX_CASES = [("^[a-c]+$", 0, None), ("^a(bc)*d?$", 1, 6), ("^[0-9]{2,4}-x$", 0, None),
                ("^(é|ab|[x-z]c)*$", 0, 5), (".*q", 0, None), ("^[^a]*$", 2, 3), ("^ab", 0, None), ("^a", 1, 5)]
_REGEX_TOKENS = [b"a", b"b", b"c", b"ab", b"bc", b"abc", b"bcbc", b"d", b"ad", b"12", b"123", b"1234",
                 b"-", b"-x", b"3-x", b"x", b"\xc3\xa9", b"\xc3\xa9ab", b"zc", b"xczc", b"q", b"aq",
                 b"qqqqqqq", b" ", b"a b", b"\xe2\x82\xac", b'"', b"\\", b"\xc3", b"<eos>"]


@pytest.mark.parametrize("k", range(len(_REGEX_CASES)))
def test_regex_mask_equals_stepping_each_token(k: int) -> None:
    """From every (state, length) the pattern language reaches within 6 characters, the vectorized
    mask holds exactly the plain tokens each of whose characters `lang.step` accepts in turn."""
    from factorspec.graph.masks import regex_mask
    from factorspec.graph.regex_lang import pattern_lang
    from factorspec.graph.token_vocab import TokenVocab
    pat, lo, hi = _REGEX_CASES[k]
    lang = pattern_lang(pat, "/pattern", lo, hi)
    v = TokenVocab(_REGEX_TOKENS, [len(_REGEX_TOKENS) - 1])
    alphabet = "abcdxyz0123-é€q "
    reached = {(lang.start, 0)}
    frontier = set(reached)
    for _ in range(6):
        frontier = {(t, n + 1) for q, n in frontier for ch in alphabet
                    if (t := lang.step(q, n, ord(ch))) >= 0}
        reached |= frontier
    checked = 0
    for q, n in sorted(reached):
        want = set()
        for tid, b in enumerate(v.token_bytes):
            if v.plain_len[tid] <= 0:
                continue
            st, m = q, n
            for ch in b.decode("utf-8"):
                st = lang.step(st, m, ord(ch))
                m += 1
                if st < 0:
                    break
            if st >= 0:
                want.add(tid)
        got = {int(t) for t in unpack_mask(regex_mask(v, lang, q, n), v.vocab_size)}
        assert got == want, (pat, q, n, sorted(got ^ want))
        checked += bool(want)
    assert checked >= 2  # the walk reached states where some token continues


def test_regex_mask_free_rest_is_decided_without_stepping() -> None:
    """A state every token character loops on, with no maxLength (the rest of `^ab`, `.*q` once q
    is seen), is recognised (`masks._universal`) and its mask is every plain token, which
    `test_regex_mask_equals_stepping_each_token` checks against lang.step for those patterns; a
    maxLength, or a character class left out, turns it off."""
    from factorspec.graph.masks import _classes, _universal, regex_mask
    from factorspec.graph.regex_lang import pattern_lang
    from factorspec.graph.token_vocab import TokenVocab
    v = TokenVocab(_REGEX_TOKENS, [len(_REGEX_TOKENS) - 1])
    for pat, hi, text, free in (("^ab", None, "ab", True), (".*q", None, "q", True), ("^ab", 9, "ab", False),
                                ("^a[^z]*$", None, "a", False)):
        lang = pattern_lang(pat, "/pattern", 0, hi)
        q = lang.start
        for n, ch in enumerate(text):
            q = lang.step(q, n, ord(ch))
        regex_mask(v, lang, q, len(text))
        entry = _classes(v)[("R", lang)]
        assert _universal(entry, lang, q, len(text), 8, lang.nstates) is free, (pat, hi)
