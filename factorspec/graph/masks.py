"""The token mask at a free choice: which tokens keep the text a prefix of some valid record.

A token is allowed from a set of configurations iff it is allowed from one of them (the machine
steps each configuration on its own), so the set is split:
- configurations inside a string body at a clean boundary (no escape, no UTF-8 sequence pending):
  a free-text value ('T') or an open object's extra key ('X'). There, every plain string-content
  token (complete UTF-8 without quote, backslash or control character) of at most `room`
  characters is allowed, whatever follows: a string with room left can always go on or close, and
  an extra key that is still a declared or used key can always be extended into a fresh one. Those
  come precomputed from `TokenVocab.plain_mask` (per room, shared by every spec). With no length
  limit (an extra key, a string without maxLength), the special tokens without a quote (escapes,
  partial UTF-8) are classified once per vocabulary too (`token_classes`: they continue the body
  or not, whatever the context), and only the tokens that hold a quote are walked against the
  automaton, so a token that closes the key or string and goes on is checked exactly. With a
  length limit, all the vocabulary's special tokens (`special_trie`) are walked.
- every other configuration: a walk of the whole byte trie (cheap there: literals and numbers
  prune it at the first bytes).
The TextMachine keeps the masks it computed (`TextMachine.mask_cache`, bounded), so later requests
of the spec that reach the same configurations (the first extra key of an object, a structural
position) reuse them.
"""
from __future__ import annotations

import threading
import weakref
from typing import Any, Optional

import numpy as np

from factorspec.graph.textstate import _CONT, _ESC, _HEX
from factorspec.graph.token_vocab import TOKEN_END, TokenVocab


def string_room(machine: Any, cfg: tuple) -> Optional[int]:
    """Characters a plain token may still add at a clean string boundary (-1: unlimited), else None."""
    stack = cfg[0]
    if not stack:
        return None
    top = stack[-1]
    if top[0] == "X":
        return -1 if top[3] == 0 and top[4] == 0 else None
    if top[0] != "T" or top[3] != 0 or top[4] != 0:
        return None
    max_len = getattr(machine.node_at(top[1]), "max_len", None)  # a string slot (Scalar)
    if max_len is None:
        return -1
    room = max_len - top[2]
    return room if room > 0 else None


def boundary_mask(machine: Any, v: TokenVocab, cfgs: frozenset) -> np.ndarray:
    """The bitmask row of the tokens allowed at a free choice from `cfgs` (stop tokens if final)."""
    ids: list[int] = []
    if machine.is_final(cfgs):
        ids.extend(v.stop_ids)
    free: list[tuple] = []
    bounded: list[tuple] = []
    rest: list[tuple] = []
    best: Optional[int] = None  # the largest room among the clean configurations (-1: unlimited)
    for cfg in cfgs:
        room = string_room(machine, cfg)
        if room is None:
            rest.append(cfg)
            continue
        (free if room == -1 else bounded).append(cfg)
        best = room if best is None or best == -1 or room == -1 else max(best, room)
    mask: Optional[np.ndarray] = None
    if free:
        # unlimited room: a token without a quote is allowed iff it continues the string body
        # (precomputed per vocabulary); only the tokens that hold a quote are walked
        body, quote_trie = token_classes(v)
        mask = body
        walk(machine, quote_trie, frozenset(free), ids)
    if bounded:
        walk(machine, v.special_trie, frozenset(bounded), ids)
    if rest:
        walk(machine, v.trie, frozenset(rest), ids)
    out = v.mask_from_ids(ids)
    if mask is not None:
        out = out | mask
    if best is not None:
        out = out | v.plain_mask(None if best == -1 else best)
    return out


_CLASSES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_CLASSES_LOCK = threading.Lock()


def token_classes(v: TokenVocab) -> tuple[np.ndarray, dict]:
    """Per vocabulary, once: (mask of the special tokens without a quote that continue a string
    body from a clean boundary, the byte trie of the tokens that hold a quote)."""
    with _CLASSES_LOCK:
        hit = _CLASSES.get(v)
        if hit is None:
            stop = set(v.stop_ids)
            body: list[int] = []
            quote_trie: dict = {}
            for tid, b in enumerate(v.token_bytes):
                if not b or tid in stop or v.plain_len[tid] > 0:
                    continue
                if 0x22 in b:
                    node = quote_trie
                    for byte in b:
                        node = node.setdefault(byte, {})
                    node.setdefault(TOKEN_END, []).append(tid)
                elif body_continues(b):
                    body.append(tid)
            hit = _CLASSES[v] = (v.mask_from_ids(body), quote_trie)
        return hit


def body_continues(b: bytes) -> bool:
    """Do the bytes (no quote among them) continue a JSON string body from a clean boundary, with no
    length limit? The rules of `TextMachine._string_byte`: escapes, no control characters, UTF-8
    without overlong forms, surrogates or code points past U+10FFFF."""
    esc = pend = 0
    for x in b:
        if pend:
            lo, hi = _CONT[pend // 10]
            if not lo <= x <= hi:
                return False
            pend = pend % 10 - 1
        elif esc == 1:
            if x == ord("u"):
                esc = 5
            elif x in _ESC:
                esc = 0
            else:
                return False
        elif esc >= 2:
            if x not in _HEX:
                return False
            esc = 0 if esc == 2 else esc - 1
        elif x == 0x22 or x < 0x20:
            return False
        elif x == 0x5C:
            esc = 1
        elif x < 0x80:
            pass
        elif 0xC2 <= x <= 0xDF:
            pend = 1
        elif 0xE0 <= x <= 0xEF:
            pend = 2 + (10 if x == 0xE0 else 20 if x == 0xED else 0)
        elif 0xF0 <= x <= 0xF4:
            pend = 3 + (30 if x == 0xF0 else 40 if x == 0xF4 else 0)
        else:
            return False
    return True


def walk(machine: Any, trie: dict, cfgs: frozenset, out: list[int]) -> None:
    """Append to `out` the ids of the trie's tokens whose bytes the machine accepts from `cfgs`."""
    stack = [(trie, cfgs)]
    while stack:
        node, cf = stack.pop()
        nb = machine.next_bytes(cf, limit=24)
        keys = [b for b in nb if b in node] if nb is not None else [b for b in node if b != TOKEN_END]
        for b in keys:
            if b < 0:
                continue
            nc = machine.step(cf, b)
            if not nc:
                continue
            child = node[b]
            tids = child.get(TOKEN_END)
            if tids:
                out.extend(tids)
            if len(child) > (1 if tids else 0):
                stack.append((child, nc))
