"""A tokenizer's vocabulary as FactorSpec needs it: exact token bytes, a byte trie, and the
precomputed masks of tokens that can sit inside a free-text string.

Built from a list of token byte strings, so the core needs no tokenizer library; see
`factorspec.models` for reading them off real tokenizers."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Optional

import numpy as np

TOKEN_END = -1  # trie key under which the ids of tokens ending at a node are kept


def _utf8_plain_chars(b: bytes) -> int:
    """Number of characters if `b` is complete UTF-8 of plain JSON-string characters, else -1."""
    try:
        s = b.decode("utf-8")
    except UnicodeDecodeError:
        return -1
    for ch in s:
        if ch in '"\\' or ord(ch) < 0x20:
            return -1
    return len(s)


class TokenVocab:
    """Token bytes, stop tokens and lookup structures of one tokenizer."""

    def __init__(self, token_bytes: Sequence[bytes], stop_ids: Sequence[int], vocab_size: Optional[int] = None,
                 encode: Optional[Callable[[str], list[int]]] = None, name: str = "") -> None:
        self.name = name
        self.token_bytes = list(token_bytes)
        self.vocab_size = vocab_size or len(self.token_bytes)
        if self.vocab_size < len(self.token_bytes):
            raise ValueError("vocab_size is smaller than the number of tokens")
        self.stop_ids = sorted(set(stop_ids))
        if not self.stop_ids:
            raise ValueError("a vocabulary needs at least one stop token")
        self.encode_fn = encode
        self.words = (self.vocab_size + 31) // 32
        self.trie: dict = {}
        self.special_trie: dict = {}  # tokens that are not plain string content
        plain_len = np.full(self.vocab_size, -1, dtype=np.int32)
        stop = set(self.stop_ids)
        for tid, b in enumerate(self.token_bytes):
            if not b or tid in stop:
                continue
            _insert(self.trie, b, tid)
            n = _utf8_plain_chars(b)
            if n > 0:
                plain_len[tid] = n
            else:
                _insert(self.special_trie, b, tid)
        self.plain_len = plain_len
        self.max_plain = int(plain_len.max()) if (plain_len > 0).any() else 0
        # the most bytes one token writes: a bound on the characters it adds to a string body
        self.max_token_bytes = max((len(b) for b in self.token_bytes), default=0)
        self._plain_masks: dict[int, np.ndarray] = {}
        self._encode_cache: dict[bytes, Optional[list[int]]] = {}

    # -- bitmasks ---------------------------------------------------------------------------------
    def empty_mask(self) -> np.ndarray:
        return np.zeros(self.words, dtype=np.int32)

    def mask_from_ids(self, ids: Sequence[int] | np.ndarray) -> np.ndarray:
        """xgrammar layout: token j is bit j % 32 of word j // 32 (LSB first), 1 = allowed."""
        words = np.zeros(self.words, dtype=np.uint32)
        if len(ids) == 1:  # forced positions: one token (the common case), no ufunc.at
            i = int(ids[0])
            words[i >> 5] = np.uint32(1 << (i & 31))
        elif len(ids):
            a = np.asarray(ids, dtype=np.int64)
            np.bitwise_or.at(words, a >> 5, (np.uint32(1) << (a & 31).astype(np.uint32)))
        return words.view(np.int32)

    def plain_mask(self, max_chars: Optional[int]) -> np.ndarray:
        """Mask of plain string-content tokens of at most `max_chars` characters."""
        key = self.max_plain if max_chars is None or max_chars > self.max_plain else max_chars
        m = self._plain_masks.get(key)
        if m is None:
            ids = np.nonzero((self.plain_len > 0) & (self.plain_len <= key))[0]
            m = self.mask_from_ids(ids)
            self._plain_masks[key] = m
        return m

    # -- canonical tokenization ---------------------------------------------------------------------
    def encode(self, data: bytes) -> Optional[list[int]]:
        """The tokenizer's own encoding of `data`, or None when it does not reproduce the bytes."""
        if data in self._encode_cache:
            return self._encode_cache[data]
        out: Optional[list[int]] = None
        if self.encode_fn is not None:
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                text = None
            if text is not None:
                ids = list(self.encode_fn(text))
                if b"".join(self.token_bytes[i] for i in ids) == data:
                    out = ids
        else:
            out = self._greedy_longest(data)
        if len(self._encode_cache) > 50_000:
            self._encode_cache.clear()
        self._encode_cache[data] = out
        return out

    def _greedy_longest(self, data: bytes) -> Optional[list[int]]:
        """Longest-match tokenization (used when no tokenizer encode function is given)."""
        out, i = [], 0
        while i < len(data):
            node, best, j = self.trie, None, i
            while j < len(data) and data[j] in node:
                node = node[data[j]]
                j += 1
                if TOKEN_END in node:
                    best = (j, node[TOKEN_END][0])
            if best is None:
                return None
            out.append(best[1])
            i = best[0]
        return out


def _insert(trie: dict, b: bytes, tid: int) -> None:
    node = trie
    for byte in b:
        node = node.setdefault(byte, {})
    node.setdefault(TOKEN_END, []).append(tid)


def unpack_mask(mask: np.ndarray, vocab_size: int) -> np.ndarray:
    """Allowed token ids of a bitmask row (for tests and debugging)."""
    bits = np.unpackbits(np.asarray(mask, dtype="<i4").view(np.uint8), bitorder="little")
    return np.nonzero(bits[:vocab_size])[0]
