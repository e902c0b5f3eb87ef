"""Masks from token classes and split walks (graph/string_masks.py; masks.special_mask,
masks.scalar_text_mask and the pruned regex_mask) equal the token definition: a token is allowed
iff its bytes keep the text a prefix of a valid record.

- A small vocabulary made to hit the cases (quotes inside tokens, a quote closing a key and the
  text after it, two or three quotes, escapes across tokens, partial UTF-8, declared keys spelled
  over several tokens): at every position of seeded random token walks, `boundary_mask` equals
  `walks.token_definition` (every token stepped byte by byte), and so does the matcher's cached
  mask; the walks must have gone through the class paths.
- Real schemas of the JSONSchemaBench corpus on Qwen's vocabulary: at sampled positions of seeded
  walks, `boundary_mask` equals a brute-force walk of the whole vocabulary trie that steps the
  machine on every byte (no `next_bytes` pruning, no classes)."""
from __future__ import annotations

import random
from typing import Any

import pytest

from factorspec.graph import compile_spec, masks, string_masks
from factorspec.graph.masks import boundary_mask
from factorspec.graph.matcher import Matcher
from factorspec.graph.solver import Budget
from factorspec.graph.textstate import TextMachine
from factorspec.graph.token_vocab import TOKEN_END, TokenVocab, unpack_mask
from tests.graph.walks import token_definition

TOKENS = [b'"', b'",', b'":', b'": "', b'"}', b'"]', b'""', b'":"', b'","', b'"""', b'"},"', b'":1,"', b'":1,"a":',
          b'\\"', b'\\\\"', b'a"', b'ab"', b'a":', b'abc":', b'\\n', b'\\u', b'\\u00', b'e9"', b'e9', b'00e9',
          b'\\ud83d', b'\\ude00', b'\\ude00"', b'\xc3', b'\xa9', b'\xc3\xa9', b'\xc3\xa9"', b'\xe2\x82', b'\xac',
          b'\xac"', b'\xf0\x9f', b'\x98\x80', b'na', b'me', b'me"', b'name":', b'name', b'id"', b'x":', b'ab',
          b'abc', b'zz', b'1', b'12', b', "', b', ', b': ', b'}', b']', b'{"', b'["', b'[', b'{', b'a', b'b',
          b'c', b'z', b's', b't', b'\\', b'n', b'u', b'd', b'8', b'3', b'e', b'0', b'9', b'x', b'i', b'm', b' ',
          b',', b':', b'-', b'.', b'tr', b'ue', b'null', b'fals', b'e}', b'<eos>']

SCHEMAS: list[dict] = [
    {"type": "object", "properties": {"name": {"type": "string", "minLength": 2, "maxLength": 5},
                                      "id": {"type": "integer", "minimum": 0, "maximum": 20}},
     "required": ["name"], "additionalProperties": {"type": "string", "maxLength": 3}},
    {"type": "object", "properties": {"ab": {"type": "string"}},
     "patternProperties": {"^[a-c]+$": {"type": "string", "pattern": "^[a-z0-9\u00e9]{1,4}$"}},
     "additionalProperties": False},
    {"type": "object", "propertyNames": {"pattern": "^[a-z\u00e9\U0001F600]*$"},
     "properties": {"name": {"type": "integer", "maximum": 3}},
     "additionalProperties": {"type": "string", "minLength": 1, "maxLength": 2}},
    {"type": "object", "additionalProperties": {}},
    {"type": "array", "items": {"type": "string", "minLength": 2, "maxLength": 4}, "maxItems": 3},
    {"type": "array", "items": {"type": "string", "maxLength": 3}, "uniqueItems": True, "maxItems": 3},
    {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a|\u00e9|\\\\|\")+$", "maxLength": 6},
                                      "t": {"type": "string", "minLength": 3}},
     "required": ["s", "t"], "additionalProperties": False},
    {"type": "object", "properties": {"x": {"type": "number"}, "n": {"type": "integer", "minimum": -5, "maximum": 900},
                                      "e": {"enum": [1, 10, 12.5, "1", "ab", None]}, "a": {"type": "array",
                                      "items": {"type": "number", "multipleOf": 0.5, "maximum": 99}}},
     "additionalProperties": False},
    {"type": "number", "minimum": -3, "maximum": 250},
]


BODY = (0, 2, 3, 4, 6)  # schemas with free strings or extra keys (strings in unique items keep the walk)
SPECIAL = (1, 2, 6)  # schemas with patterns or patterned keys
SCALAR = (7, 8)  # schemas with numbers and enums


def _vocab() -> TokenVocab:
    toks = list(dict.fromkeys(TOKENS))
    return TokenVocab(toks, [len(toks) - 1])


def _counting(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Count the masks the class paths decided (string bodies; patterns' special tokens; number
    and enum texts)."""
    seen = {"body": 0, "special": 0, "scalar": 0}
    body, special, scalar = string_masks.string_body_mask, masks.special_mask, masks.scalar_text_mask

    def body_counted(*a: Any) -> Any:
        out = body(*a)
        seen["body"] += out is not None
        return out

    def special_counted(*a: Any) -> Any:
        seen["special"] += 1
        return special(*a)

    def scalar_counted(*a: Any) -> Any:
        out = scalar(*a)
        seen["scalar"] += out is not None
        return out

    monkeypatch.setattr(string_masks, "string_body_mask", body_counted)
    monkeypatch.setattr(masks, "scalar_text_mask", scalar_counted)
    monkeypatch.setattr(masks, "special_mask", special_counted)
    return seen


@pytest.mark.parametrize("k", range(len(SCHEMAS)))
def test_class_masks_equal_the_token_definition(k: int, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _counting(monkeypatch)
    v = _vocab()
    tm = TextMachine(compile_spec(SCHEMAS[k]))
    rng = random.Random(500 + k)
    checked = 0
    for _walk in range(30):
        m = Matcher(tm, v)
        for _ in range(30):
            if m.is_terminated():
                break
            cfg = m.configs
            want = token_definition(tm, v, cfg)
            got = {int(t) for t in unpack_mask(boundary_mask(tm, v, cfg), v.vocab_size)}
            assert got == want, (SCHEMAS[k], bytes(m.text), sorted(v.token_bytes[t] for t in got ^ want))
            if not m.forced_tokens():
                assert {int(t) for t in m.allowed_tokens()} == want, (SCHEMAS[k], bytes(m.text))
            checked += 1
            ids = sorted(int(t) for t in m.allowed_tokens())
            if not ids:  # the small vocabulary cannot spell what must follow (the masks agreed on that)
                break
            quoted = [t for t in ids if b'"' in v.token_bytes[t] or b"\\" in v.token_bytes[t]]
            pool = quoted if quoted and rng.random() < 0.4 else ids
            assert m.accept_token(pool[rng.randrange(len(pool))])
    assert checked >= 60
    if k in BODY:  # the walks went through the class paths
        assert seen["body"] >= 10, seen
    if k in SPECIAL:
        assert seen["special"] >= 5, seen
    if k in SCALAR:
        assert seen["scalar"] >= 10, seen


# -- the corpus on Qwen's vocabulary ---------------------------------------------------------------

# (subset, id): patterns, patterned and free keys, bounded and free strings
CORPUS = (("Github_easy", "o10077"), ("Github_hard", "o12278"), ("Github_hard", "o82726"),
          ("Snowplow", "sp_397_Normalized"), ("Github_medium", "o4832"), ("Github_easy", "o48816"))
QWEN = "qwen2.5-coder-0.5b"


def trie_definition(tm: Any, v: TokenVocab, cfgs: frozenset) -> set[int]:
    """`walks.token_definition` sharing token prefixes: every child byte of the vocabulary trie is
    stepped (no pruning by `next_bytes`), a token allowed iff the machine takes all its bytes."""
    out = set(v.stop_ids) if tm.is_final(cfgs) else set()
    todo = [(v.trie, cfgs)]
    while todo:
        node, c = todo.pop()
        for b, child in node.items():
            if b == TOKEN_END:
                continue
            nc = tm.step(c, b)
            if nc:
                out.update(child.get(TOKEN_END, ()))
                todo.append((child, nc))
    return out


def test_corpus_masks_equal_the_trie_definition(vocab_of: Any) -> None:
    from microbench.jsonschemabench import default_data_dir, load_corpus, pick
    v = vocab_of(QWEN)
    recs = [r for r in load_corpus(default_data_dir()) if (r["subset"], r["id"]) in CORPUS]
    assert sorted((r["subset"], r["id"]) for r in recs) == sorted(CORPUS)
    structural = v.plain_len <= 0
    eng = type("Eng", (), {"structural": structural})()
    checked = 0
    for n, rec in enumerate(recs):
        tm = TextMachine(compile_spec(rec["schema"], budget=Budget(nodes=50_000, seconds=20.0)))
        rng = random.Random(n)
        m = Matcher(tm, v)
        for step in range(90):
            if m.is_terminated():
                break
            row = boundary_mask(tm, v, m.configs)
            got = unpack_mask(row, v.vocab_size)
            if step % 15 == 7:
                want = trie_definition(tm, v, m.configs)
                assert {int(t) for t in got} == want, (rec["id"], bytes(m.text))
                checked += 1
            ids = m.allowed_tokens()
            assert len(ids), (rec["id"], bytes(m.text))
            assert m.accept_token(pick(rng, eng, ids))
    assert checked >= 24
