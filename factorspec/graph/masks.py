"""The token mask at a free choice: which tokens keep the text a prefix of some valid record.

A token is allowed from a set of configurations iff it is allowed from one of them (the machine
steps each configuration on its own), so the set is split, each part by the cheapest exact means:
- inside a string body (a value 'T' at any escape or UTF-8 state, an extra key 'X' at a clean
  boundary), not in a text-unique item: token classes per vocabulary and body state
  (`string_masks.string_body_mask`: continues the body, or closes it at byte i, with the
  characters it starts), and only the distinct texts after a closing quote walked.
- inside a pattern string ('R') or a patterned key ('K') at a clean boundary: plain tokens by DFA
  classes (`regex_mask`), the other tokens that do not close the string by the pattern alone
  (`special_mask`), both per reached (q, n); the closing tokens of a pattern string by classes
  (`string_masks.pattern_close_mask`), a key's (whose close reads the declared and used keys) by a
  walk of the tokens holding a quote; a key that an excluded key extends walks every special token.
- inside a number or enum text ('S'): the mask after the scalar (cached like this one) and a walk
  of the subtrees of bytes that continue the text (`scalar_text_mask`).
- inside a pattern string or a patterned key in the middle of an escape or UTF-8 sequence: the
  tokens without a quote by the pattern's byte table (`pattern_masks.pattern_part_mask`), those
  with one walked (not in text-unique items, nor for a key that an excluded key extends).
- an extra key inside an escape or UTF-8 sequence: tokens without a quote by `body_mask`, the ones
  with a quote walked; strings in text-unique items, and every other configuration: a walk of the
  whole byte trie (cheap there: literals prune it at the first bytes).
The TextMachine keeps the masks it computed (`TextMachine.mask_cache`, bounded, under `mask_key`),
so later requests of the spec that reach the same configurations (the first extra key of an
object, a structural position, the rest of a long string) reuse them.
"""
from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any, Optional

import numpy as np

from factorspec.graph.textstate import _CONT, _ESC, _HEX, regex_byte
from factorspec.graph.token_vocab import TOKEN_END, TokenVocab
from factorspec.graph.unique_values import string_texts


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


def unique_body_mask(machine: Any, v: TokenVocab, cfg: tuple, wide: bool = False) -> Optional[np.ndarray]:
    """Mask of the plain tokens (canonical string content) that continue a string body at a clean
    boundary inside an item of a text-unique array: the string's own plain mask (`plain_mask` for
    room, `regex_mask` for a pattern), less the tokens after which no item could end distinct.
    Only a token that keeps an item's text on the prefix of an earlier item can do that, so only
    the tokens spelling the start of such a text's rest are checked against the machine (as
    `key_mask` does for keys). None where this does not apply (the full walk then).

    With `wide` (a free-text value with no maxLength, or an extra key: `wide_unique_body`), also the
    other tokens without a quote or backslash that continue the body (partial UTF-8 characters:
    `unique_body_extra`), by the same rule; the caller then walks only the tokens holding a quote
    or backslash (`quote_escape_trie`) instead of every special token."""
    top = cfg[0][-1]
    if top[0] == "X" and top[3] == 0 and top[4] == 0:  # an extra key: unlimited, canonical content
        m = v.plain_mask(None)
        if wide:
            m = m | unique_body_extra(v)[0]
    elif top[0] == "T" and top[3] == 0 and top[4] == 0:
        max_len = getattr(machine.node_at(top[1]), "max_len", None)
        room = None if max_len is None else max_len - top[2]
        if room is not None and room <= 0:
            return None
        m = v.plain_mask(room)
        if wide:
            assert room is None
            m = m | unique_body_extra(v)[0]
    elif top[0] == "R" and top[4] == 0:
        m = regex_mask(v, machine.node_at(top[1]).lang, top[2], top[3])
    else:
        return None
    extra = unique_body_extra(v)[1] if wide else None
    suspects: set[int] = set()
    body: Optional[bytes] = None
    for t in cfg[0]:
        if t[0] != "U" or not t[5]:
            continue
        if body is None:
            body = _open_string_body(t[4])
        # the item may stay on an earlier value only while this string stays a prefix of one of
        # that value's strings or keys, so only tokens spelling such a rest are suspects
        for e in set().union(*(string_texts(x) for x in t[5])):
            if len(e) > len(body) and e.startswith(body):
                node: Optional[dict] = v.trie
                for b in e[len(body):]:
                    node = node.get(b) if node is not None else None
                    if node is None:
                        break
                    suspects.update(x for x in node.get(TOKEN_END, ())
                                    if v.plain_len[x] > 0 or (extra is not None and extra[x]))
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


def wide_unique_body(machine: Any, cfg: tuple) -> bool:
    """Is `cfg` a free-text value's body with no maxLength, or an extra member's key (never
    bounded), at a clean boundary inside a unique item (where `unique_body_mask(..., wide=True)`
    applies)? Either takes any text until its closing quote, which alone is checked (minLength,
    a key declared or used)."""
    return in_unique_item(machine, cfg) and _wide_body(machine, cfg)


def _wide_body(machine: Any, cfg: tuple) -> bool:
    """`wide_unique_body` less its `in_unique_item` (which `boundary_mask` has asked already)."""
    top = cfg[0][-1] if cfg[0] else None
    if top is None or top[0] not in ("T", "X") or top[3] != 0 or top[4] != 0:
        return False
    return top[0] == "X" or getattr(machine.node_at(top[1]), "max_len", None) is None


def unique_body_extra(v: TokenVocab) -> tuple[np.ndarray, np.ndarray]:
    """(mask, boolean per token id) of the tokens that are not plain string content and hold no
    quote and no backslash, whose bytes continue a string body from a clean boundary (partial
    UTF-8 characters, mostly: thousands of byte-level tokens). Why: inside a unique item such a
    token is allowed exactly as a plain one is (it cannot end the string, and it keeps the item on
    an earlier item's text only by spelling that text's rest, so only those are checked against
    the machine); walking them one trie node at a time was most of the mask time of unique arrays
    of free-text strings (JsonSchemaStore/filespec-schema: 5,000 machine steps per mask)."""
    c = _classes(v)
    hit = c.get("unique_extra")
    if hit is None:
        ok = _body_ends(v, 0, 0) & (v.plain_len <= 0)
        for t in np.nonzero(ok)[0]:
            if 0x5C in v.token_bytes[int(t)]:
                ok[t] = False
        hit = c["unique_extra"] = (v.mask_from_ids(np.nonzero(ok)[0]), ok)
    return hit


def quote_escape_trie(v: TokenVocab) -> dict:
    """The byte trie of the vocabulary's tokens that hold a quote or a backslash (built once per
    vocabulary): inside a unique item's free text, the tokens `unique_body_extra` leaves to the
    machine."""
    return _token_trie(v, "quote_escape", lambda b: 0x22 in b or 0x5C in b)


def _token_trie(v: TokenVocab, name: str, holds: Callable[[bytes], bool]) -> dict:
    """The byte trie of the vocabulary's non-stop tokens whose bytes `holds` accepts, kept in the
    vocabulary's classes under `name` (built once)."""
    c = _classes(v)
    t = c.get(name)
    if t is None:
        stop = set(v.stop_ids)
        t = {}
        for tid, b in enumerate(v.token_bytes):
            if b and tid not in stop and holds(b):
                node = t
                for byte in b:
                    node = node.setdefault(byte, {})
                node.setdefault(TOKEN_END, []).append(tid)
        c[name] = t
    return t


def _open_string_body(raw: bytes) -> bytes:
    """The body of the string `raw` ends inside (at a clean boundary): the bytes after its opening
    quote, the last quote not escaped by an odd run of backslashes."""
    j = len(raw) - 1
    while j >= 0:
        if raw[j] == 0x22:
            k = j - 1
            while k >= 0 and raw[k] == 0x5C:
                k -= 1
            if (j - 1 - k) % 2 == 0:
                return raw[j + 1:]
        j -= 1
    return raw


def in_unique_item(machine: Any, cfg: tuple) -> bool:
    """Inside an item of a uniqueItems array kept in the text (a 'U' task below): such configurations
    take the full walk, since a token may make the item equal an earlier one."""
    return bool(getattr(machine, "unique", False)) and any(t[0] == "U" for t in cfg[0])


def mask_key(machine: Any, v: TokenVocab, cfgs: frozenset) -> frozenset:
    """`cfgs` with the character count of each bounded string body replaced by a canonical one
    where it cannot change the mask: when the string has reached its minLength and has more room
    left than any token can write, any such count allows the same tokens (a token adds at most
    `max_token_bytes` characters, so the maxLength never binds within it, and closing is allowed
    either way); with no maxLength, any count past the minLength. The cache key of `boundary_mask`,
    so a long string reuses one mask."""
    cap = v.max_token_bytes
    out = []
    changed = False
    for cfg in cfgs:
        stack = cfg[0]
        top = stack[-1] if stack else None
        if top is not None and top[0] == "T" and not in_unique_item(machine, cfg):
            node = machine.node_at(top[1])
            hi, lo = getattr(node, "max_len", None), getattr(node, "min_len", 0)
            if top[2] != lo and lo <= top[2] and (hi is None or hi - top[2] > cap):
                cfg = (stack[:-1] + (("T", top[1], lo) + tuple(top[3:]),),) + tuple(cfg[1:])
                changed = True
        out.append(cfg)
    return frozenset(out) if changed else cfgs


def boundary_mask(machine: Any, v: TokenVocab, cfgs: frozenset) -> np.ndarray:
    """The bitmask row of the tokens allowed at a free choice from `cfgs` (stop tokens if final)."""
    ids: list[int] = []
    if machine.is_final(cfgs):
        ids.extend(v.stop_ids)
    from factorspec.graph.string_masks import pattern_close_mask, string_body_mask  # (they build on this module)

    free: list[tuple] = []
    bounded: list[tuple] = []
    rest: list[tuple] = []
    states: set[tuple[int, int]] = set()
    room = 0  # the largest room among the bounded clean configurations
    masks: list[np.ndarray] = []
    for cfg in cfgs:
        if cfg[0] and cfg[0][-1][0] in ("T", "X"):
            m = string_body_mask(machine, v, cfg)
            if m is not None:
                masks.append(m)
                continue
        st = string_state(machine, cfg)
        if st is None:
            rest.append(cfg)
        elif st[0] == -1:
            free.append(cfg)
            states.add((st[1], st[2]))
        else:
            bounded.append(cfg)
            room = max(room, st[0])
    regex: list[tuple] = []
    if rest and getattr(machine, "unique", False):
        keep = []
        for cfg in rest:
            inside = in_unique_item(machine, cfg)
            wide = inside and _wide_body(machine, cfg)
            m = unique_body_mask(machine, v, cfg, wide) if inside else None
            if m is None:
                keep.append(cfg)
            else:
                masks.append(m)
                walk(machine, quote_escape_trie(v) if wide else v.special_trie, frozenset([cfg]), ids)
        rest = keep
    mid: list[tuple] = []  # pattern strings and keys inside an escape or UTF-8 sequence
    if rest:
        from factorspec.graph.pattern_masks import pattern_part_mask  # (it builds on this module)

        keep = []
        for cfg in rest:
            top = cfg[0][-1] if cfg[0] else None
            if top is not None and top[0] in ("R", "K") and top[4] == 0 and not in_unique_item(machine, cfg):
                regex.append(cfg)
                continue
            m = pattern_part_mask(machine, v, cfg) if top is not None and top[0] in ("R", "K") else None
            if m is None:
                keep.append(cfg)
            else:
                masks.append(m)
                mid.append(cfg)
        rest = keep
    if mid:  # the tokens without a quote by the pattern's byte table, those with one walked
        walk(machine, quote_trie(v), frozenset(mid), ids)
    if regex:
        # plain tokens (no quote, backslash or partial UTF-8) by DFA classes, per reached state; the
        # special tokens without a quote by the pattern alone where that decides them
        # (`special_mask`); the tokens with a quote (or every special one, for a key that an
        # excluded key extends) are walked against the machine
        quoted: list[tuple] = []
        special: list[tuple] = []
        for cfg in regex:
            top = cfg[0][-1]
            if top[0] == "R":
                lang = machine.node_at(top[1]).lang
                masks.append(regex_mask(v, lang, top[2], top[3]))
                masks.append(special_mask(v, lang, top[2], top[3]))
                closing = pattern_close_mask(machine, v, cfg)
                if closing is None:
                    quoted.append(cfg)
                else:
                    masks.append(closing)
                continue
            else:
                keys = machine.node_at(top[1]).keys
                lang = keys.lang
                masks.append(key_mask(machine, v, cfg))
                if keys._excluded_with(top[6], keys.declared | top[7]):
                    special.append(cfg)
                    continue
            masks.append(special_mask(v, lang, top[2], top[3]))
            quoted.append(cfg)
        if quoted:
            walk(machine, quote_trie(v), frozenset(quoted), ids)
        if special:
            walk(machine, v.special_trie, frozenset(special), ids)
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
        keep = []
        for cfg in rest:
            m = scalar_text_mask(machine, v, cfg)
            if m is None:
                keep.append(cfg)
            else:
                masks.append(m)
        rest = keep
    if rest:
        walk(machine, v.trie, frozenset(rest), ids)
    out = v.mask_from_ids(ids)
    for m in masks:
        out = out | m
    return out


_NUMBER_BYTES = frozenset(b"-.0123456789")  # the bytes of a number text (textstate._NUM_PREFIX)


def scalar_text_mask(machine: Any, v: TokenVocab, cfg: tuple) -> Optional[np.ndarray]:
    """Mask of the tokens allowed inside a number or enum text ('S'), split as the machine steps
    it: a token either ends the text before its first byte (then it is a token allowed from the
    configurations after the scalar, a mask of its own, cached like every boundary mask: the same
    after every number of a field), or its first byte continues the text (a number byte, or the
    next byte of an enum text), so only those subtrees of the trie are walked. None inside a
    text-unique item (the walk there)."""
    stack, sol = cfg
    if not stack or stack[-1][0] != "S" or in_unique_item(machine, cfg):
        return None
    top = stack[-1]
    p = top[2]
    texts = machine._texts(top[1], sol)
    first = _NUMBER_BYTES if texts is None else {t[len(p)] for t in texts if len(t) > len(p) and t.startswith(p)}
    ids: list[int] = []
    walk(machine, {b: v.trie[b] for b in first if b in v.trie}, frozenset([cfg]), ids)
    out = v.mask_from_ids(ids)
    ended = machine._ended(cfg)
    if ended:
        after = frozenset(ended)
        key = (v, mask_key(machine, v, after))
        m = machine.mask_cache.get(key)
        if m is None:
            m = boundary_mask(machine, v, after)
            machine.cache_mask(key, m)
        out = out | (m & ~v.mask_from_ids(v.stop_ids))  # (stop tokens: the caller's is_final)
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

    A plain token is allowed iff each of its characters is a step of `lang.step` from (q, n): a
    DFA transition to a state from which some completion still fits the length bounds. Every plain
    token steps at once (`_plain_chars`: their code points, longest tokens first, so the live ones
    at a character position are a prefix; the length after j characters is n + j for all of them),
    and only the tokens not yet off the language are stepped further; masks are kept per reached
    (q, n)."""
    c = _classes(v)
    key = ("R", lang)
    entry = c.get(key)
    if entry is None:
        tids, cps, starts, live = _plain_chars(v)
        ucps, inv = _plain_code_points(v)  # (classes of the distinct code points only: a few thousand)
        ncls = len(lang.starts)
        ucls = (np.searchsorted(np.asarray(lang.starts, dtype=np.int64), ucps, side="right") - 1).astype(
            np.uint16 if ncls <= 0xFFFF else np.int64)
        cls = ucls[inv]
        dead = lang.nstates
        trans = np.array([[t if t >= 0 else dead for t in row] for row in lang.trans] + [[dead] * ncls],
                         dtype=np.int32).reshape(dead + 1, ncls)
        first = cls[starts] if len(starts) else np.zeros(0, dtype=np.uint16)  # each token's first class
        entry = c[key] = {"cls": cls, "trans": trans, "masks": {}, "feas": {}, "first": groups(first, ncls),
                          "used": np.unique(ucls)}  # the classes some plain token's character is in
    masks = entry["masks"]
    m = masks.get((q, n))
    if m is not None:
        return m
    tids, cps, starts, live = _plain_chars(v)
    cls, trans = entry["cls"], entry["trans"]
    dead = trans.shape[0] - 1
    if _universal(entry, lang, q, n, len(live), dead):
        m = masks[(q, n)] = _all_plain(v)
        return m
    # only the tokens still alive are stepped (positions into tids, increasing): a token whose
    # characters all stepped is done; the others die at their first character off the language.
    # Those whose first character's class leads nowhere are not even started (most, mostly)
    alive = np.zeros(0, dtype=np.int64)
    if 0 <= q < dead and (lang.max_len is None or n + 1 <= lang.max_len):
        order, bounds = entry["first"]
        alive = grouped(order, bounds, np.nonzero(_feasible(entry, lang, n + 1, dead)[trans[q]])[0])
    s = np.full(len(alive), q, dtype=np.int32)
    done = []
    for j, cnt in enumerate(live):
        cut = int(np.searchsorted(alive, cnt))
        done.append(alive[cut:])  # tokens of j characters
        alive, s = alive[:cut], s[:cut]
        if not len(alive):
            break
        k = n + j + 1
        if lang.max_len is not None and k > lang.max_len:
            alive = alive[:0]
            break
        feas = _feasible(entry, lang, k, dead)
        t = trans[s, cls[starts[alive] + j]]
        ok = feas[t]
        alive, s = alive[ok], t[ok]
    done.append(alive)
    m = _mask_from_bool(v, tids[np.concatenate(done)])
    if len(masks) >= MAX_REGEX_MASKS:
        masks.clear()
    masks[(q, n)] = m
    return m


def _universal(entry: dict, lang: Any, q: int, n: int, longest: int, dead: int) -> bool:
    """Does every plain token continue from (q, n)? So where every class of the tokens' characters
    leads back to q (surrogates, say, are in none), no maxLength binds, and q stays feasible at
    every length a token can reach (a pattern's free rest, `.*` after a matched part: stepping
    every token through it was 10-25 ms a mask)."""
    if not 0 <= q < dead or lang.max_len is not None or not bool((entry["trans"][q][entry["used"]] == q).all()):
        return False
    lengths = {lang.norm(k) for k in range(n + 1, n + 2 + longest)}
    return all(_feasible(entry, lang, k, dead)[q] for k in sorted(lengths))


def _all_plain(v: TokenVocab) -> np.ndarray:
    """Mask of every plain token (once per vocabulary)."""
    c = _classes(v)
    m = c.get("all_plain")
    if m is None:
        m = c["all_plain"] = _mask_from_bool(v, _plain_chars(v)[0])
    return m


def _plain_code_points(v: TokenVocab) -> tuple[np.ndarray, np.ndarray]:
    """The distinct code points of `_plain_chars` and, for each code point there, its index among
    them (once per vocabulary): a language's classes are then found for the distinct ones only."""
    c = _classes(v)
    hit = c.get("plain_code_points")
    if hit is None:
        u, inv = np.unique(_plain_chars(v)[1], return_inverse=True)
        hit = c["plain_code_points"] = (u, inv.astype(np.int64).ravel())
    return hit


def groups(keys: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Positions 0..len(keys)-1 grouped by key (0 <= key < n), for `grouped`: the positions ordered
    by key (a stable sort: a radix sort on small unsigned keys) and where each key's group starts
    (n + 1 bounds)."""
    order = np.argsort(keys, kind="stable").astype(np.int64)
    return order, np.searchsorted(keys[order], np.arange(n + 1), side="left")


def grouped(order: np.ndarray, bounds: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """The positions of the groups `keys`, increasing: `order` holds positions grouped by key (by
    a stable sort) and group x is order[bounds[x]:bounds[x + 1]]. Why: the vectorized steppers
    start only the tokens whose first symbol can come, and need them in position order (the live
    tokens at a length are a prefix)."""
    parts = [order[bounds[x]:bounds[x + 1]] for x in keys.tolist()]
    return np.sort(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)


def _feasible(entry: dict, lang: Any, k: int, dead: int) -> np.ndarray:
    """Boolean per DFA state (and the dead one): can a string of length k there still complete
    within the length bounds? Kept per normalised length in `regex_mask`'s entry."""
    nk = lang.norm(k)
    feas = entry["feas"].get(nk)
    if feas is None:
        fm = lang.feasible_mask(nk)
        feas = entry["feas"][nk] = np.array([fm >> t & 1 for t in range(dead)] + [0], dtype=bool)
    return feas


def special_mask(v: TokenVocab, lang: Any, q: int, n: int) -> np.ndarray:
    """Mask of the special tokens (escapes, partial UTF-8, quotes, control bytes) that continue a
    pattern string from DFA state q after n characters at a clean boundary without closing it: a
    walk of `TokenVocab.special_trie` with `regex_byte` alone (no machine: what the machine adds is
    only after a closing quote, so a token reaching one is left out here; `pattern_close_mask` or a
    walk takes those), kept per (q, n) like `regex_mask`'s. The same for a patterned key whose
    prefix no declared or used key extends: `key_byte` then steps as `regex_byte` does."""
    entry = _classes(v).setdefault(("S", lang), {})
    m = entry.get((q, n))
    if m is not None:
        return m
    ids: list[int] = []
    todo = [(v.special_trie, ("R", (), q, n, 0, 0))]
    while todo:
        node, top = todo.pop()
        for b, child in node.items():
            if b == TOKEN_END:
                continue
            nxt = regex_byte(lang, top, b)
            if nxt is None or nxt == "end":
                continue
            tids = child.get(TOKEN_END)
            if tids:
                ids.extend(tids)
            if len(child) > (1 if tids else 0):
                todo.append((child, nxt))
    m = v.mask_from_ids(ids)
    if len(entry) >= MAX_REGEX_MASKS:
        entry.clear()
    entry[(q, n)] = m
    return m


def _mask_from_bool(v: TokenVocab, ids: np.ndarray) -> np.ndarray:
    """`v.mask_from_ids` for many ids at once (a packed boolean row)."""
    row = np.zeros(v.words * 32, dtype=bool)
    row[ids] = True
    return np.packbits(row, bitorder="little").view("<u4").astype(np.uint32).view(np.int32)


def _plain_chars(v: TokenVocab) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[int]]:
    """The plain tokens (complete UTF-8 string content) as code points, once per vocabulary: token
    ids ordered by character count (longest first), their code points end to end, each token's
    start in that row, and per character position how many tokens are that long or longer."""
    c = _classes(v)
    hit = c.get("plain_chars")
    if hit is None:
        tids = np.nonzero(v.plain_len > 0)[0]
        tids = tids[np.argsort(-v.plain_len[tids], kind="stable")]
        texts = [v.token_bytes[t].decode("utf-8") for t in tids.tolist()]
        lens = v.plain_len[tids].astype(np.int64)
        cps = np.array([ord(ch) for text in texts for ch in text], dtype=np.int64)
        starts = np.concatenate(([0], np.cumsum(lens)[:-1])).astype(np.int64)
        live = [int(np.count_nonzero(lens > j)) for j in range(int(lens.max()) if len(lens) else 0)]
        hit = c["plain_chars"] = (tids.astype(np.int64), cps, starts, live)
    return hit


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


def quote_trie(v: TokenVocab) -> dict:
    """The byte trie of the vocabulary's tokens that hold a quote (built once per vocabulary)."""
    return _token_trie(v, "quote", lambda b: 0x22 in b)


def body_mask(v: TokenVocab, esc: int, pend: int) -> np.ndarray:
    """Mask of the tokens without a quote whose bytes continue a string body (no length limit) from
    escape state `esc` and UTF-8 state `pend` (computed once per vocabulary and state, every token
    at once by `_body_ends`)."""
    c = _classes(v)
    m = c.get((esc, pend))
    if m is None:
        ok = _body_ends(v, esc, pend)
        if esc == 0 and pend == 0:  # the plain tokens continue from a clean boundary
            m = v.mask_from_ids(np.nonzero(ok & (v.plain_len <= 0))[0]) | v.plain_mask(None)
        else:
            m = v.mask_from_ids(np.nonzero(ok)[0])
        c[(esc, pend)] = m
    return m


def _body_step(x: int, esc: int, pend: int) -> Optional[tuple[int, int]]:
    """The (esc, pend) state after byte x of a JSON string body (no length limit), None if x cannot
    come there: the rules of `TextMachine._string_byte` (escapes, no control characters, UTF-8
    without overlong forms, surrogates or code points past U+10FFFF)."""
    if pend:
        lo, hi = _CONT[pend // 10]
        return (0, pend % 10 - 1) if lo <= x <= hi else None
    if esc == 1:
        if x == ord("u"):
            return 5, 0
        return (0, 0) if x in _ESC else None
    if esc >= 2:
        return (0 if esc == 2 else esc - 1, 0) if x in _HEX else None
    if x == 0x22 or x < 0x20:
        return None
    if x == 0x5C:
        return 1, 0
    if x < 0x80:
        return 0, 0
    if 0xC2 <= x <= 0xDF:
        return 0, 1
    if 0xE0 <= x <= 0xEF:
        return 0, 2 + (10 if x == 0xE0 else 20 if x == 0xED else 0)
    if 0xF0 <= x <= 0xF4:
        return 0, 3 + (30 if x == 0xF0 else 40 if x == 0xF4 else 0)
    return None


def body_continues(b: bytes, esc: int = 0, pend: int = 0) -> bool:
    """Do the bytes (no quote among them) continue a JSON string body from escape state `esc` and
    UTF-8 state `pend`, with no length limit? (`_body_step` byte by byte; the reference that
    `_body_ends` computes for the whole vocabulary at once.)"""
    st: Optional[tuple[int, int]] = (esc, pend)
    for x in b:
        st = _body_step(x, *st) if st is not None else None
        if st is None:
            return False
    return True


def _body_table() -> tuple[dict[tuple[int, int], int], np.ndarray]:
    """The string-body states reachable by `_body_step`, numbered, and their transition table
    (row per state, column per byte; the last state is the absorbing 'cannot continue')."""
    index: dict[tuple[int, int], int] = {}
    todo = [(e, 0) for e in range(6)]
    rows: list[list[Optional[tuple[int, int]]]] = []
    while todo:
        st = todo.pop()
        if st in index:
            continue
        index[st] = len(rows)
        row = [_body_step(x, *st) for x in range(256)]
        rows.append(row)
        todo.extend(t for t in row if t is not None and t not in index)
    dead = len(rows)
    table = np.full((dead + 1, 256), dead, dtype=np.int32)
    for i, row in enumerate(rows):
        table[i] = [dead if t is None else index[t] for t in row]
    return index, table


def body_packed(v: TokenVocab, with_quotes: bool) -> tuple:
    """The vocabulary packed for stepping every token through `_body_table` at once, made once
    per vocabulary: (state index, table, candidate token ids ordered by length, their bytes
    concatenated, each one's start, how many are still live at each byte position). Candidates:
    the non-empty, non-stop tokens; with `with_quotes` False, only those without a quote."""
    c = _classes(v)
    key = ("body_packed", with_quotes)
    prep = c.get(key)
    if prep is None:
        index, table = _body_table()
        stop = set(v.stop_ids)
        cand = [t for t, b in enumerate(v.token_bytes) if b and t not in stop and (with_quotes or 0x22 not in b)]
        cand.sort(key=lambda t: -len(v.token_bytes[t]))
        lens = np.array([len(v.token_bytes[t]) for t in cand], dtype=np.int64)
        flat = np.frombuffer(b"".join(v.token_bytes[t] for t in cand), dtype=np.uint8)
        starts = np.concatenate(([0], np.cumsum(lens)[:-1])).astype(np.int64)
        live = [int(np.count_nonzero(lens > j)) for j in range(int(lens.max()) if len(lens) else 0)]
        prep = c[key] = (index, table, np.array(cand, dtype=np.int64), flat, starts, live)
    return prep


def _body_ends(v: TokenVocab, esc: int, pend: int) -> np.ndarray:
    """Boolean per token id: is it a non-empty, non-stop token without a quote whose bytes continue a
    string body from (esc, pend)? All tokens step together through `_body_table`, one byte
    position at a time (tokens ordered by length, so the live ones are a prefix)."""
    index, table, cand_ids, flat, starts, live = body_packed(v, with_quotes=False)
    out = np.zeros(v.vocab_size, dtype=bool)
    if (esc, pend) not in index:
        return out  # not a state of a string body
    s = np.full(len(cand_ids), index[(esc, pend)], dtype=np.int32)
    for j, n in enumerate(live):
        s[:n] = table[s[:n], flat[starts[:n] + j]]
    out[cand_ids[s != table.shape[0] - 1]] = True
    return out


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
