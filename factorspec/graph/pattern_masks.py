"""Token masks inside a pattern string ('R') or a patterned key ('K') in the middle of an escape or
a UTF-8 sequence, by a byte automaton of the pattern's task states built lazily per language.

Why: at a clean boundary the plain tokens go by DFA classes (`masks.regex_mask`), but from inside
`\\u00e` or a two-byte UTF-8 character every token was walked through the vocabulary trie against
the text machine (Python frozensets of configurations per trie node). After the escape completes
the string goes on, so whole subtrees of the trie are entered (every token starting with a hex
digit): 40-250 ms a mask on JSONSchemaBench patterns, the largest share of the mask tail
(microbench/results/masks_jsonschemabench_sample_masktail.md, `R esc13`, `K esc13`).

A token without a quote byte never closes the string, so from such a configuration the machine
steps it exactly as `textstate.regex_byte` steps the task (q, n, esc, acc) alone: a pure function
of the language, the state and the byte. The states met are numbered and their byte transitions
kept in a table (filled on first use, per language and vocabulary), and every quote-free token
steps through it at once, one byte position at a time (`masks.body_packed`: tokens ordered by
length, so the live ones are a prefix; the dead are dropped as they die). Masks are kept per
state. Tokens with a quote are left to the caller's walk of `masks.quote_trie`.

Not for text-unique items (canonical escapes, checked against earlier items: the walk there), nor
for a key that an excluded key (declared or used) extends (the key's text then matters).
"""
from __future__ import annotations

import threading
from typing import Any

import numpy as np

from factorspec.graph.masks import _classes, _mask_from_bool, body_packed, grouped, groups, in_unique_item
from factorspec.graph.textstate import _ESC, _HEX, regex_byte
from factorspec.graph.token_vocab import TokenVocab

# the bytes `textstate.decode_byte` may take in each escape state, whatever its accumulator: a
# state's other bytes are dead without asking (a new state's row costs 256 `regex_byte` calls else)
_HEX_BYTES = np.array(sorted(_HEX), dtype=np.uint8)
_TAKES = {0: np.arange(0x20, 256, dtype=np.uint8), 1: np.array(sorted(_ESC | {ord("u")}), dtype=np.uint8),
          10: _HEX_BYTES, 11: _HEX_BYTES, 12: _HEX_BYTES, 13: _HEX_BYTES}
_CONTINUATION = np.arange(0x80, 0xC0, dtype=np.uint8)  # esc 21, 22, 23: inside a UTF-8 sequence


def takes(esc: int) -> np.ndarray:
    """The bytes that may follow in escape state `esc` (see `_TAKES`)."""
    return _TAKES.get(esc, _CONTINUATION)


MAX_STATES = 8192  # per language and vocabulary: past it the table starts again (256 int32 a state)
MAX_MASKS = 4096  # per language and vocabulary: masks kept for reached states
_UNKNOWN, _DEAD = -2, -1


class ByteTable:
    """The task states (q, n, esc, acc) of one pattern language met so far, numbered, and their
    transitions by byte (`_UNKNOWN` until asked, `_DEAD` where `regex_byte` refuses the byte or
    would close the string)."""

    def __init__(self, lang: Any) -> None:
        self.lang = lang
        self.lock = threading.Lock()
        self.masks: dict[tuple, np.ndarray] = {}
        self._reset()

    def _reset(self) -> None:
        self.index: dict[tuple, int] = {}
        self.states: list[tuple] = []
        self.table = np.full((64, 256), _UNKNOWN, dtype=np.int32)

    def state(self, st: tuple) -> int:
        """The number of state (q, n, esc, acc), given one if new."""
        k = self.index.get(st)
        if k is None:
            k = self.index[st] = len(self.states)
            self.states.append(st)
            if k >= self.table.shape[0]:
                grown = np.full((2 * self.table.shape[0], 256), _UNKNOWN, dtype=np.int32)
                grown[:self.table.shape[0]] = self.table
                self.table = grown
        return k

    def step(self, s: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The states after byte b[i] from state s[i] (`_DEAD` where refused), computing the
        transitions not known yet."""
        t = self.table[s, b]
        unknown = t == _UNKNOWN
        if not unknown.any():
            return t
        su, bu = s[unknown], b[unknown]
        for p in np.unique(su.astype(np.int64) * 256 + bu).tolist():
            k, byte = divmod(p, 256)
            nxt = regex_byte(self.lang, ("R", (), *self.states[k]), byte)
            self.table[k, byte] = _DEAD if nxt is None or nxt == "end" else self.state(tuple(nxt[2:]))
        t[unknown] = self.table[su, bu]
        return t

    def mask(self, v: TokenVocab, st: tuple) -> np.ndarray:
        """Packed mask of the non-stop tokens without a quote whose bytes `regex_byte` steps from
        state `st` to the end (each may leave the string mid-escape: the state after it is a task
        state again)."""
        with self.lock:
            m = self.masks.get(st)
            if m is not None:
                return m
            if len(self.states) > MAX_STATES:
                self._reset()
            _, _, cand_ids, flat, starts, live = body_packed(v, with_quotes=False)
            k = self.state(st)
            row = self.table[k]
            if (row == _UNKNOWN).any():
                maybe = takes(st[2])
                rest = np.ones(256, dtype=bool)
                rest[maybe] = False
                row[rest & (row == _UNKNOWN)] = _DEAD
                self.step(np.full(len(maybe), k, dtype=np.int32), maybe)
            # only the tokens whose first byte can come (after `\u` or a UTF-8 lead byte: a few)
            alive = grouped(*_by_first_byte(v), np.nonzero(self.table[k] >= 0)[0])
            s = np.full(len(alive), k, dtype=np.int32)
            done = []
            for j, cnt in enumerate(live):
                cut = int(np.searchsorted(alive, cnt))
                done.append(alive[cut:])  # tokens of j bytes, every byte stepped
                alive, s = alive[:cut], s[:cut]
                if not len(alive):
                    break
                t = self.step(s, flat[starts[alive] + j])
                ok = t >= 0
                alive, s = alive[ok], t[ok]
            done.append(alive)
            m = _mask_from_bool(v, cand_ids[np.concatenate(done)])
            if len(self.masks) >= MAX_MASKS:
                self.masks.clear()
            self.masks[st] = m
            return m


def _by_first_byte(v: TokenVocab) -> tuple[np.ndarray, np.ndarray]:
    """The quote-free candidates of `masks.body_packed` grouped by first byte (once per vocabulary):
    their positions ordered by first byte, and where each byte's group starts (257 bounds)."""
    c = _classes(v)
    hit = c.get("by_first_byte")
    if hit is None:
        _, _, _, flat, starts, _ = body_packed(v, with_quotes=False)
        hit = c["by_first_byte"] = groups(flat[starts] if len(starts) else np.zeros(0, dtype=np.uint8), 256)
    return hit


def byte_table(v: TokenVocab, lang: Any) -> ByteTable:
    """The language's table for this vocabulary (made once)."""
    c = _classes(v)
    key = ("byte_table", lang)
    t = c.get(key)
    if t is None:
        t = c.setdefault(key, ByteTable(lang))
    return t


def pattern_part_mask(machine: Any, v: TokenVocab, cfg: tuple) -> Any:
    """Mask of the tokens without a quote allowed from `cfg`, a pattern string's or a patterned
    key's configuration inside an escape or UTF-8 sequence; None where this does not apply (at a
    clean boundary, in a text-unique item, or a key that an excluded key extends). The caller
    walks the tokens holding a quote."""
    stack = cfg[0]
    top = stack[-1] if stack else None
    if top is None or top[0] not in ("R", "K") or top[4] == 0:
        return None
    if in_unique_item(machine, cfg) or (machine.unique and machine.canonical(top[1])):
        return None
    if top[0] == "R":
        lang = machine.node_at(top[1]).lang
    else:
        keys = machine.node_at(top[1]).keys
        if keys._excluded_with(top[6], keys.declared | top[7]):
            return None
        lang = keys.lang
    return byte_table(v, lang).mask(v, (top[2], top[3], top[4], top[5]))
