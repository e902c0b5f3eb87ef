"""Shared test helpers: random byte walks over a TextMachine, and the token definition of a mask
(a token is allowed iff its bytes keep the text a prefix of a valid record)."""
from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any


def byte_walks(tm: Any, valid: Callable[[Any], bool], rng: random.Random, walks: int = 40, steps: int = 80,
               prefer: str = '{}[]",: 0123abtn', stop: float = 0.3) -> int:
    """Random byte walks: an allowed byte or a final state everywhere (no dead end), every finished
    text a value `valid` accepts. Returns how many walks finished."""
    finished = 0
    for _ in range(walks):
        c, text = tm.initial(), bytearray()
        for _ in range(steps):
            allowed = [b for b in range(256) if tm.step(c, b)]
            if tm.is_final(c) and (not allowed or rng.random() < stop):
                assert valid(json.loads(text.decode())), bytes(text)
                finished += 1
                break
            assert allowed, f"dead end after {bytes(text)!r}"
            pref = [b for b in allowed if chr(b) in prefer]
            b = rng.choice(pref if pref and rng.random() < 0.9 else allowed)
            c = tm.step(c, b)
            text.append(b)
    return finished


def token_definition(tm: Any, v: Any, cfg: Any) -> set[int]:
    """The tokens whose bytes keep the text a prefix of a valid record from `cfg` (stop tokens iff
    the record is complete): what every mask must equal."""
    want = set()
    for t, b in enumerate(v.token_bytes):
        if t in v.stop_ids:
            if tm.is_final(cfg):
                want.add(t)
            continue
        c = cfg
        for x in b:
            c = tm.step(c, x)
            if not c:
                break
        if c:
            want.add(t)
    return want


def definition_walks(tm: Any, v: Any, choose: Callable[[Any, set[int]], int], walks: int = 12,
                     steps: int = 40, seen: Callable[[Any], None] = lambda cfg: None) -> None:
    """Token walks on which every boundary mask (masks.boundary_mask) equals `token_definition`;
    `choose(matcher, definition)` picks the next token, `seen(configs)` sees each position."""
    from factorspec.graph.masks import boundary_mask
    from factorspec.graph.matcher import Matcher
    from factorspec.graph.token_vocab import unpack_mask
    for _walk in range(walks):
        m = Matcher(tm, v)
        for _ in range(steps):
            if m.is_terminated():
                break
            cfg = m.configs
            want = token_definition(tm, v, cfg)
            got = {int(t) for t in unpack_mask(boundary_mask(tm, v, cfg), v.vocab_size)}
            assert got == want, (bytes(m.text), sorted(got ^ want))
            seen(cfg)
            assert m.accept_token(choose(m, want))


def accepts_text(tm: Any, text: bytes) -> bool:
    """The machine steps through every byte of `text` and ends in a final state."""
    c = tm.initial()
    for b in text:
        c = tm.step(c, b)
        if not c:
            return False
    return tm.is_final(c)


def byte_alphabet(tm: Any, extra: bytes) -> list[int]:
    """`extra` and the machine's separator bytes: what an exhaustive text search steps over."""
    return sorted(set(extra) | set(tm.sep) | set(tm.key_sep))


def completes_within(tm: Any, c: frozenset, alphabet: list[int], depth: int) -> bool:
    """Some completion of at most `depth` bytes over the alphabet (closing bytes first)."""
    if tm.is_final(c):
        return True
    if depth == 0:
        return False
    order = sorted(alphabet, key=lambda b: b not in b'"]}')
    return any(completes_within(tm, n, alphabet, depth - 1) for b in order if (n := tm.step(c, b)))
