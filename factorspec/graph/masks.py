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
    if not stack or in_unique_item(machine, cfg):
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


def unique_body_mask(machine: Any, v: TokenVocab, cfg: tuple) -> Optional[np.ndarray]:
    """Mask of the plain tokens (canonical string content) that continue a string body at a clean
    boundary inside an item of a text-unique array: the string's own plain mask (`plain_mask` for
    room, `regex_mask` for a pattern), less the tokens after which no item could end distinct.
    Only a token that keeps an item's text on the prefix of an earlier item can do that, so only
    the tokens spelling the start of such a text's rest are checked against the machine (as
    `key_mask` does for keys). None where this does not apply (the full walk then)."""
    top = cfg[0][-1]
    if top[0] == "T" and top[3] == 0 and top[4] == 0:
        max_len = getattr(machine.node_at(top[1]), "max_len", None)
        room = None if max_len is None else max_len - top[2]
        if room is not None and room <= 0:
            return None
        m = v.plain_mask(room)
    elif top[0] == "R" and top[4] == 0:
        m = regex_mask(v, machine.node_at(top[1]).lang, top[2], top[3])
    else:
        return None
    suspects: set[int] = set()
    for t in cfg[0]:
        if t[0] != "U":
            continue
        raw = t[4]
        for e in t[3]:
            if len(e) > len(raw) and e.startswith(raw):
                node: Optional[dict] = v.trie
                for b in e[len(raw):]:
                    node = node.get(b) if node is not None else None
                    if node is None:
                        break
                    suspects.update(x for x in node.get(TOKEN_END, ()) if v.plain_len[x] > 0)
    drop = []
    start = frozenset([cfg])
    for x in suspects:
        c = start
        for b in v.token_bytes[x]:
            c = machine.step(c, b)
            if not c:
                drop.append(x)
                break
    if not drop:
        return m
    out = m.copy().view(np.uint32)
    for x in drop:
        out[x >> 5] &= np.uint32(~(1 << (x & 31)) & 0xFFFFFFFF)
    return out.view(np.int32)


def in_unique_item(machine: Any, cfg: tuple) -> bool:
    """Inside an item of a uniqueItems array kept in the text (a 'U' task below): such configurations
    take the full walk, since a token may make the item equal an earlier one."""
    return bool(getattr(machine, "unique", False)) and any(t[0] == "U" for t in cfg[0])


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
        if top is not None and top[0] == "T" and not in_unique_item(machine, cfg):
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
    regex: list[tuple] = []
    if rest and getattr(machine, "unique", False):
        keep = []
        for cfg in rest:
            m = unique_body_mask(machine, v, cfg) if in_unique_item(machine, cfg) else None
            if m is None:
                keep.append(cfg)
            else:
                masks.append(m)
                walk(machine, v.special_trie, frozenset([cfg]), ids)
        rest = keep
    if rest:
        keep = []
        for cfg in rest:
            top = cfg[0][-1] if cfg[0] else None
            if top is not None and top[0] in ("R", "K") and top[4] == 0 and not in_unique_item(machine, cfg):
                regex.append(cfg)
            else:
                keep.append(cfg)
        rest = keep
    if regex:
        # plain tokens (no quote, backslash or partial UTF-8) by DFA classes, per reached state;
        # the vocabulary's special tokens are walked against the machine
        for cfg in regex:
            top = cfg[0][-1]
            if top[0] == "R":
                masks.append(regex_mask(v, machine.node_at(top[1]).lang, top[2], top[3]))
            else:
                masks.append(key_mask(machine, v, cfg))
        walk(machine, v.special_trie, frozenset(regex), ids)
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


MAX_REGEX_MASKS = 4096  # per vocabulary and language: masks kept for reached (state, length) pairs


def regex_mask(v: TokenVocab, lang: Any, q: int, n: int) -> np.ndarray:
    """Mask of the plain tokens that continue a pattern string from DFA state q after n characters.

    A plain token's effect depends only on the DFA classes of its characters, so the tokens are
    grouped once per vocabulary and language into a trie over class sequences (built on the first
    reached state), and a mask is a walk of that trie from (q, n), pruned at the first character
    after which no completion fits; masks are kept per reached (q, n)."""
    c = _classes(v)
    key = ("R", lang)
    entry = c.get(key)
    if entry is None:
        entry = c[key] = {"trie": _class_trie(v, lang), "masks": {}}
    masks = entry["masks"]
    m = masks.get((q, n))
    if m is not None:
        return m
    ids: list[int] = []
    stack = [(entry["trie"], q, n)]
    while stack:
        node, st, k = stack.pop()
        for cl, child in node.items():
            if cl == TOKEN_END:
                continue
            t = lang.trans[st][cl]
            if t < 0 or (lang.max_len is not None and k + 1 > lang.max_len):
                continue
            k1 = lang.norm(k + 1)
            if not lang.feasible(t, k1):
                continue
            tids = child.get(TOKEN_END)
            if tids:
                ids.extend(tids)
            if len(child) > (1 if tids else 0):
                stack.append((child, t, k1))
    m = v.mask_from_ids(ids)
    if len(masks) >= MAX_REGEX_MASKS:
        masks.clear()
    masks[(q, n)] = m
    return m


def key_mask(machine: Any, v: TokenVocab, cfg: tuple) -> np.ndarray:
    """Mask of the plain tokens that continue a patterned extra key ('K') from a clean boundary:
    the pattern classes' mask (`regex_mask`), less the tokens after which only keys already
    declared or used would remain. Those can only be tokens spelling the start of such a key's
    rest, so only the tokens on those paths of the vocabulary trie are checked against the machine."""
    top = cfg[0][-1]
    _, path, q, n, _esc, _acc, key, used = top
    keys = machine.node_at(path).keys
    m = regex_mask(v, keys.lang, q, n)
    suspects: set[int] = set()
    for e in keys.declared | used:
        if len(e) > len(key) and e.startswith(key):
            node: Optional[dict] = v.trie
            for b in e[len(key):].encode("utf-8"):
                node = node.get(b) if node is not None else None
                if node is None:
                    break
                suspects.update(t for t in node.get(TOKEN_END, ()) if v.plain_len[t] > 0)
    if not suspects:
        return m
    start = frozenset([cfg])
    drop = []
    for t in suspects:
        c = start
        for x in v.token_bytes[t]:
            c = machine.step(c, x)
            if not c:
                drop.append(t)
                break
    if not drop:
        return m
    out = m.copy().view(np.uint32)
    for t in drop:
        out[t >> 5] &= np.uint32(~(1 << (t & 31)) & 0xFFFFFFFF)
    return out.view(np.int32)


def _class_trie(v: TokenVocab, lang: Any) -> dict:
    """The plain tokens of the vocabulary as a trie over the language's character classes."""
    import bisect

    starts = lang.starts
    memo: dict[str, int] = {}
    trie: dict = {}
    for tid in np.nonzero(v.plain_len > 0)[0].tolist():
        node = trie
        for ch in v.token_bytes[tid].decode("utf-8"):
            cl = memo.get(ch)
            if cl is None:
                cl = memo[ch] = bisect.bisect_right(starts, ord(ch)) - 1
            node = node.setdefault(cl, {})
        node.setdefault(TOKEN_END, []).append(tid)
    return trie


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
