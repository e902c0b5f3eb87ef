"""The token mask at a free choice: which tokens keep the text a prefix of some valid record.

A token is allowed from a set of configurations iff it is allowed from one of them (the machine
steps each configuration on its own), so the set is split:
- configurations inside a string body with a length limit (a free-text value 'T' with maxLength)
  at a clean boundary (no escape, no UTF-8 sequence pending): every plain string-content token
  (complete UTF-8 without quote, backslash or control character) of at most `room` characters is
  allowed, whatever follows: a string with room left can always go on or close. Those
  come precomputed from `TokenVocab.plain_mask` (per room, shared by every spec), and the
  vocabulary's special tokens (`special_trie`: quote, escapes, partial UTF-8) are walked.
- configurations inside a string body with no length limit (an extra key, a string without
  maxLength), at any escape or UTF-8 state: every token without a quote is classified once per
  vocabulary and state (`body_mask`: it continues the body or not, whatever the context), and only
  the tokens that hold a quote (`quote_trie`) are walked against the automaton, so a token that
  closes the key or string and goes on is checked exactly.
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


def string_state(machine: Any, cfg: tuple) -> Optional[tuple[int, int, int]]:
    """(room, esc, pend) of a configuration inside a string body: an open object's extra key ('X')
    or a free-text value ('T'); room is the characters a token may still add (-1: unlimited), esc
    and pend the escape and UTF-8 state. None for any other configuration, and for a bounded string
    that is not at a clean boundary or has no room left (those take the full walk)."""
    stack = cfg[0]
    if not stack:
        return None
    top = stack[-1]
    if top[0] == "X":
        return -1, top[3], top[4]
    if top[0] != "T":
        return None
    max_len = getattr(machine.node_at(top[1]), "max_len", None)  # a string slot (Scalar)
    if max_len is None:
        return -1, top[3], top[4]
    room = max_len - top[2]
    return (room, 0, 0) if room > 0 and top[3] == 0 and top[4] == 0 else None


def mask_key(machine: Any, v: TokenVocab, cfgs: frozenset) -> frozenset:
    """`cfgs` with the character count of each bounded string body replaced by a canonical one
    where it cannot change the mask: when the string has reached its minLength and has more room
    left than any token can write, any such count allows the same tokens (a token adds at most
    `max_token_bytes` characters, so the maxLength never binds within it, and closing is allowed
    either way). The cache key of `boundary_mask`, so a long string reuses one mask."""
    cap = v.max_token_bytes
    out = []
    changed = False
    for cfg in cfgs:
        stack = cfg[0]
        top = stack[-1] if stack else None
        if top is not None and top[0] == "T":
            node = machine.node_at(top[1])
            hi, lo = getattr(node, "max_len", None), getattr(node, "min_len", 0)
            if hi is not None and lo <= top[2] and hi - top[2] > cap and top[2] != lo:
                cfg = (stack[:-1] + (("T", top[1], lo) + tuple(top[3:]),),) + tuple(cfg[1:])
                changed = True
        out.append(cfg)
    return frozenset(out) if changed else cfgs


def boundary_mask(machine: Any, v: TokenVocab, cfgs: frozenset) -> np.ndarray:
    """The bitmask row of the tokens allowed at a free choice from `cfgs` (stop tokens if final)."""
    ids: list[int] = []
    if machine.is_final(cfgs):
        ids.extend(v.stop_ids)
    free: list[tuple] = []
    bounded: list[tuple] = []
    rest: list[tuple] = []
    states: set[tuple[int, int]] = set()
    room = 0  # the largest room among the bounded clean configurations
    for cfg in cfgs:
        st = string_state(machine, cfg)
        if st is None:
            rest.append(cfg)
        elif st[0] == -1:
            free.append(cfg)
            states.add((st[1], st[2]))
        else:
            bounded.append(cfg)
            room = max(room, st[0])
    masks: list[np.ndarray] = []
    if free:
        # unlimited room: a token without a quote is allowed iff it continues the string body from
        # that escape/UTF-8 state (classes precomputed per vocabulary); only the tokens holding a
        # quote are walked
        masks += [body_mask(v, esc, pend) for esc, pend in states]
        walk(machine, quote_trie(v), frozenset(free), ids)
    if bounded:
        masks.append(v.plain_mask(room))
        walk(machine, v.special_trie, frozenset(bounded), ids)
    if rest:
        walk(machine, v.trie, frozenset(rest), ids)
    out = v.mask_from_ids(ids)
    for m in masks:
        out = out | m
    return out


_CLASSES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_CLASSES_LOCK = threading.Lock()


def _classes(v: TokenVocab) -> dict:
    with _CLASSES_LOCK:
        hit = _CLASSES.get(v)
        if hit is None:
            hit = _CLASSES[v] = {}
        return hit


def quote_trie(v: TokenVocab) -> dict:
    """The byte trie of the vocabulary's tokens that hold a quote (built once per vocabulary)."""
    c = _classes(v)
    t = c.get("quote")
    if t is None:
        stop = set(v.stop_ids)
        t = {}
        for tid, b in enumerate(v.token_bytes):
            if b and tid not in stop and 0x22 in b:
                node = t
                for byte in b:
                    node = node.setdefault(byte, {})
                node.setdefault(TOKEN_END, []).append(tid)
        c["quote"] = t
    return t


def body_mask(v: TokenVocab, esc: int, pend: int) -> np.ndarray:
    """Mask of the tokens without a quote whose bytes continue a string body (no length limit) from
    escape state `esc` and UTF-8 state `pend` (computed once per vocabulary and state)."""
    c = _classes(v)
    m = c.get((esc, pend))
    if m is None:
        stop = set(v.stop_ids)
        if esc == 0 and pend == 0:  # the plain tokens continue from a clean boundary: test the others only
            ids = [t for t, b in enumerate(v.token_bytes)
                   if b and t not in stop and v.plain_len[t] <= 0 and 0x22 not in b and body_continues(b)]
            m = v.mask_from_ids(ids) | v.plain_mask(None)
        else:
            ids = [t for t, b in enumerate(v.token_bytes)
                   if b and t not in stop and 0x22 not in b and body_continues(b, esc, pend)]
            m = v.mask_from_ids(ids)
        c[(esc, pend)] = m
    return m


def body_continues(b: bytes, esc: int = 0, pend: int = 0) -> bool:
    """Do the bytes (no quote among them) continue a JSON string body from escape state `esc` and
    UTF-8 state `pend`, with no length limit? The rules of `TextMachine._string_byte`: escapes, no
    control characters, UTF-8 without overlong forms, surrogates or code points past U+10FFFF."""
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
