"""The token mask at a free choice: which tokens keep the text a prefix of some valid record.

A token is allowed from a set of configurations iff it is allowed from one of them (the machine
steps each configuration on its own), so the set is split:
- configurations inside a string body at a clean boundary (no escape, no UTF-8 sequence pending):
  a free-text value ('T') or an open object's extra key ('X'). There, every plain string-content
  token (complete UTF-8 without quote, backslash or control character) of at most `room`
  characters is allowed, whatever follows: a string with room left can always go on or close, and
  an extra key that is still a declared or used key can always be extended into a fresh one. Those
  come precomputed from `TokenVocab.plain_mask` (per room, shared by every spec); only the
  vocabulary's special tokens (`special_trie`: the quote, escapes, partial UTF-8, ...) are walked
  against the automaton, so a token that closes the key or string and goes on is checked exactly.
- every other configuration: a walk of the whole byte trie (cheap there: literals and numbers
  prune it at the first bytes).
The TextMachine keeps the masks it computed (`TextMachine.mask_cache`, bounded), so later requests
of the spec that reach the same configurations (the first extra key of an object, a structural
position) reuse them.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

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
    clean, rest = [], []
    best: Optional[int] = None  # the largest room among the clean configurations (-1: unlimited)
    for cfg in cfgs:
        room = string_room(machine, cfg)
        if room is None:
            rest.append(cfg)
        else:
            clean.append(cfg)
            best = room if best is None or best == -1 or room == -1 else max(best, room)
    if clean:
        walk(machine, v.special_trie, frozenset(clean), ids)
    if rest:
        walk(machine, v.trie, frozenset(rest), ids)
    mask = v.mask_from_ids(ids)
    if best is not None:
        mask = mask | v.plain_mask(None if best == -1 else best)
    return mask


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
