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
