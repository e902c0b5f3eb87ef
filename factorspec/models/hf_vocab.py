"""TokenVocab (the core's view of a vocabulary) built from a real tokenizer."""
from __future__ import annotations

from typing import Any, Optional

from factorspec.graph.token_vocab import TokenVocab
from factorspec.models.tokens import stop_token_ids, token_bytes

_CACHE: dict[tuple, TokenVocab] = {}


def vocab_for(tok: Any, vocab_size: Optional[int] = None) -> TokenVocab:
    """Exact token bytes, stop tokens and the tokenizer's own encoder (cached per tokenizer)."""
    key = (id(tok), vocab_size)
    v = _CACHE.get(key)
    if v is None:
        tb = token_bytes(tok, vocab_size)
        v = TokenVocab(tb, stop_token_ids(tok), vocab_size or len(tb),
                       encode=lambda s: tok.encode(s, add_special_tokens=False),
                       name=getattr(tok, "name_or_path", ""))
        _CACHE[key] = v
    return v
