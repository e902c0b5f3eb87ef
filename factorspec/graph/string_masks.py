"""Token masks inside a JSON string body (a 'T' value, an 'X' extra key) from per-vocabulary token
classes, instead of a walk of the vocabulary trie against the text machine.

Why: a trie walk steps the machine once per trie node it enters (Python frozensets of
configurations), and inside a free string body nearly every token enters it; that was the
largest share of mask time on JSONSchemaBench (microbench/results/masks_jsonschemabench_sample.md).

From a body state (esc, pend) every token's bytes are classified once per vocabulary, all tokens
at once (`body_tokens`): 'open' (its bytes continue the body and no quote closes it), 'closed' at
byte i (the bytes before i continue the body, byte i is the closing quote, the rest its suffix),
or neither; with the number of characters it starts before any close (each needs room under
maxLength, and they count toward minLength). What the machine adds is per configuration:
- 'T' (a value string): open tokens while their characters fit the room; closed tokens while
  they fit, reach minLength, and their suffix is accepted after the string
  (`TextMachine.after_close`: the same configurations whatever the token), so only the distinct
  suffixes (a few hundred) are walked.
- 'X' (an extra key at a clean boundary): the same with unlimited room, but the key must be neither
  declared nor used, and the configurations after it record the key. The used keys are read only
  where a later key closes, which needs two more quotes, so the suffixes are walked once, after a
  representative key, and only the tokens whose key may be excluded, or whose suffix holds two
  quotes and is accepted up to the second, are stepped through the machine one by one (few).
Strings inside a text-unique array item (canonical escapes, 'U' tasks) are left to the walk.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from factorspec.graph.masks import _classes, _mask_from_bool, body_packed, in_unique_item, walk
from factorspec.graph.textstate import regex_byte
from factorspec.graph.token_vocab import TOKEN_END, TokenVocab


@dataclass
class BodyTokens:
    """Every token's class from one string-body state (see the module docstring). Per-token
    arrays are over the vocabulary; the closed tokens' over `c_ids`."""

    started: np.ndarray  # characters started before the close (or in the whole token)
    open_ok: np.ndarray  # bool: continues the body, no close
    c_ids: np.ndarray  # the closed tokens
    c_started: np.ndarray
    c_close: np.ndarray  # the byte index of the closing quote
    c_suffix: np.ndarray  # index into `suffixes`
    c_two_quotes: np.ndarray  # index into `suffixes` of the suffix up to its second quote, else -1
    c_low_first: np.ndarray  # bool: the text before the close starts with an escaped low surrogate
    suffixes: list[bytes]
    suffix_trie: dict  # suffix bytes -> [suffix index] under TOKEN_END (the empty one is not in it)
    by_body: dict[str, list[int]]  # decoded text before the close -> positions in c_ids (clean start only)
    open_masks: dict[Optional[int], np.ndarray] = field(default_factory=dict)

    def open_mask(self, v: TokenVocab, room: Optional[int]) -> np.ndarray:
        """Packed mask of the open tokens that start at most `room` characters (None: no limit)."""
        cap = int(self.started.max()) + 1 if len(self.started) else 1
        key = None if room is None or room >= cap else room
        m = self.open_masks.get(key)
        if m is None:
            ok = self.open_ok if key is None else self.open_ok & (self.started <= key)
            m = self.open_masks[key] = _mask_from_bool(v, np.nonzero(ok)[0])
        return m


def body_tokens(v: TokenVocab, esc: int, pend: int) -> Optional[BodyTokens]:
    """The token classes from body state (esc, pend), once per vocabulary and state (None: not a
    state of a string body). All tokens step together through `masks._body_table`, one byte
    position at a time (tokens ordered by length, so the live ones are a prefix); a quote met in
    the clean state closes the body there."""
    c = _classes(v)
    key = ("body_tokens", esc, pend)
    hit = c.get(key)
    if hit is not None or key in c:
        return hit
    index, table, cand_ids, flat, starts, live = body_packed(v, with_quotes=True)
    if (esc, pend) not in index:
        c[key] = None
        return None
    clean, dead = index[(0, 0)], table.shape[0] - 1
    n = len(cand_ids)
    s = np.full(n, index[(esc, pend)], dtype=np.int32)
    started = np.zeros(n, dtype=np.int32)
    close = np.full(n, -1, dtype=np.int32)
    for j, cnt in enumerate(live):
        st, cl = s[:cnt], close[:cnt]
        b = flat[starts[:cnt] + j]
        active = (cl < 0) & (st != dead)
        at_clean = active & (st == clean)
        quote = at_clean & (b == 0x22)
        cl[quote] = j
        started[:cnt] += at_clean & ~quote
        go = active & ~quote
        st[go] = table[st[go], b[go]]
    ok = s != dead
    out_started = np.zeros(v.vocab_size, dtype=np.int32)
    out_started[cand_ids] = started
    open_ok = np.zeros(v.vocab_size, dtype=bool)
    open_ok[cand_ids[ok & (close < 0)]] = True
    closed = np.nonzero(close >= 0)[0]
    c_ids = cand_ids[closed]
    suffix_index: dict[bytes, int] = {}
    c_suffix = np.zeros(len(closed), dtype=np.int32)
    c_two = np.full(len(closed), -1, dtype=np.int32)
    c_low = np.zeros(len(closed), dtype=bool)
    by_body: dict[str, list[int]] = {}
    trie: dict = {}

    def suffix_id(suf: bytes) -> int:
        x = suffix_index.get(suf)
        if x is None:
            x = suffix_index[suf] = len(suffix_index)
            if suf:
                node = trie
                for byte in suf:
                    node = node.setdefault(byte, {})
                node.setdefault(TOKEN_END, []).append(x)
        return x

    for k, (t, i) in enumerate(zip(c_ids.tolist(), close[closed].tolist())):
        b = v.token_bytes[t]
        suf = b[i + 1:]
        c_suffix[k] = suffix_id(suf)
        if suf.count(0x22) >= 2:
            c_two[k] = suffix_id(suf[:suf.index(0x22, suf.index(0x22) + 1)])
        if esc == 0 and pend == 0:  # (an extra key's classes are asked at a clean boundary only)
            text = json.loads(b'"' + b[:i] + b'"')
            by_body.setdefault(text, []).append(k)
            c_low[k] = bool(text) and 0xDC00 <= ord(text[0]) < 0xE000
    hit = c[key] = BodyTokens(out_started, open_ok, c_ids, started[closed], close[closed], c_suffix, c_two, c_low,
                              list(suffix_index), trie, by_body)
    return hit


def string_body_mask(machine: Any, v: TokenVocab, cfg: tuple) -> Optional[np.ndarray]:
    """The packed mask of the tokens allowed from one configuration inside a string body ('T', or
    'X' at a clean boundary), or None where the classes do not apply (the caller walks)."""
    stack, sol = cfg
    top = stack[-1]
    if top[0] == "T":
        path, nchars, esc, pend = top[1], top[2], top[3], top[4]
        if in_unique_item(machine, cfg) or (machine.unique and machine.canonical(path)):
            return None
        node = machine.node_at(path)
        lo, hi = node.min_len, node.max_len
        key: Optional[str] = None
    elif top[0] == "X" and top[3] == 0 and top[4] == 0:
        path, esc, pend = top[1], 0, 0
        if in_unique_item(machine, cfg) or (machine.unique and machine.canonical(path + (("+s",),))):
            return None
        nchars, lo, hi = 0, 0, None
        key = json.loads(b'"' + top[5] + b'"')  # the key so far (raw ends at a clean boundary)
    else:
        return None
    bt = body_tokens(v, esc, pend)
    if bt is None:
        return None
    # after a backslash (esc 1) the escape's character took its room already, and counts once written
    pending = 1 if esc == 1 else 0
    room = None if hi is None else hi - nchars - pending
    out = bt.open_mask(v, room)
    if not len(bt.c_ids):
        return out
    after = frozenset(machine.after_close(stack, sol, key))
    if not after:
        return out
    suffix_ok = _suffixes_accepted(machine, bt, after)
    sel = suffix_ok[bt.c_suffix]
    if room is not None:
        sel &= bt.c_started <= room
    if lo > nchars + pending:
        sel &= bt.c_started >= lo - nchars - pending
    extra: list[int] = []
    if key is not None:
        suspects = _key_suspects(machine, bt, path, top, key, suffix_ok)
        if len(suspects):
            sel[suspects] = False
            start = frozenset([cfg])
            for k in suspects.tolist():
                c = start
                for x in v.token_bytes[int(bt.c_ids[k])]:
                    c = machine.step(c, x)
                    if not c:
                        break
                if c:
                    extra.append(int(bt.c_ids[k]))
    ids = bt.c_ids[sel]
    if extra:
        ids = np.concatenate((ids, np.asarray(extra, dtype=np.int64)))
    if not len(ids):
        return out
    return out | _mask_from_bool(v, ids)


def _suffixes_accepted(machine: Any, bt: BodyTokens, after: frozenset) -> np.ndarray:
    """Boolean over `bt.suffixes`: is the text after a token's closing quote accepted from the
    configurations `after` the close (the distinct suffixes walked once, over their trie; the
    empty suffix always is)?"""
    suffix_ok = np.zeros(len(bt.suffixes), dtype=bool)
    found: list[int] = []
    walk(machine, bt.suffix_trie, after, found)
    suffix_ok[found] = True
    if b"" in bt.suffixes:
        suffix_ok[bt.suffixes.index(b"")] = True
    return suffix_ok


def _key_suspects(machine: Any, bt: BodyTokens, path: tuple, top: tuple, key: str,
                  suffix_ok: np.ndarray) -> np.ndarray:
    """Positions in `bt.c_ids` of the closed tokens an extra key's classes cannot decide: a suffix
    with two quotes whose text up to the second is accepted (past it, a later key's close may read
    the used keys; before it the key makes no difference, so a rejection there holds), a key that
    would be declared or used (the key so far, then the token's decoded text before the quote),
    and, after a key ending in a high surrogate, a token starting with an escaped low one (JSON
    decodes the pair as one character, so the texts do not simply concatenate)."""
    two = bt.c_two_quotes
    sus = (two >= 0) & suffix_ok[np.maximum(two, 0)]
    if key and 0xD800 <= ord(key[-1]) < 0xDC00:
        sus |= bt.c_low_first
    for e in machine._declared(path) | top[6]:
        if e.startswith(key):
            for k in bt.by_body.get(e[len(key):], ()):
                sus[k] = True
    return np.nonzero(sus)[0]


def pattern_close_mask(machine: Any, v: TokenVocab, cfg: tuple) -> Optional[np.ndarray]:
    """Mask of the tokens that close a pattern string ('R' at a clean boundary) and go on: the
    closed tokens of `body_tokens(v, 0, 0)` whose text before the quote steps the pattern from
    (q, n) to where it may end (`_pattern_closers`, kept per (lang, q, n)), and whose suffix is
    accepted after the string (`TextMachine.after_close`; the distinct suffixes walked). None where
    this does not apply (the caller walks)."""
    stack, sol = cfg
    top = stack[-1]
    if top[0] != "R" or top[4] != 0 or in_unique_item(machine, cfg) or \
            (machine.unique and machine.canonical(top[1])):
        return None
    bt = body_tokens(v, 0, 0)
    assert bt is not None  # the clean state is a body state
    lang = machine.node_at(top[1]).lang
    ok = _pattern_closers(v, bt, lang, top[2], top[3])
    if not ok.any():
        return v.empty_mask()
    after = frozenset(machine.after_close(stack, sol))
    if not after:
        return v.empty_mask()
    suffix_ok = _suffixes_accepted(machine, bt, after)
    ids = bt.c_ids[ok & suffix_ok[bt.c_suffix]]
    return _mask_from_bool(v, ids) if len(ids) else v.empty_mask()


MAX_CLOSERS = 4096  # per vocabulary and language: closer rows kept for reached (q, n) pairs


def _pattern_closers(v: TokenVocab, bt: BodyTokens, lang: Any, q: int, n: int) -> np.ndarray:
    """Boolean over `bt.c_ids`: does the token's text before its closing quote step the pattern
    from (q, n) (`regex_byte`, byte by byte over a trie of those texts) to a state where the quote
    may end the string?"""
    c = _classes(v)
    trie = c.get("closer_trie")
    if trie is None:
        trie = c["closer_trie"] = {}
        for k, (t, i) in enumerate(zip(bt.c_ids.tolist(), bt.c_close.tolist())):
            node = trie
            for byte in v.token_bytes[t][:i]:
                node = node.setdefault(byte, {})
            node.setdefault(TOKEN_END, []).append(k)
    entry = c.setdefault(("C", lang), {})
    hit = entry.get((q, n))
    if hit is not None:
        return hit
    out = np.zeros(len(bt.c_ids), dtype=bool)
    todo = [(trie, ("R", (), q, n, 0, 0))]
    while todo:
        node, top = todo.pop()
        ks = node.get(TOKEN_END)
        if ks and regex_byte(lang, top, 0x22) == "end":
            out[ks] = True
        for b, child in node.items():
            if b == TOKEN_END:
                continue
            nxt = regex_byte(lang, top, b)
            if nxt is None or nxt == "end":
                continue
            todo.append((child, nxt))
    if len(entry) >= MAX_CLOSERS:
        entry.clear()
    entry[(q, n)] = out
    return out
