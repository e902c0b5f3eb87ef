"""Variable domains: the finite set of internal values a solver variable may still take.

A `Domain` is immutable (so search states share it and caches key on it) and has one of two
forms, chosen by size so that small domains are exact sets and huge ones stay symbolic:
  * a `frozenset` of internal ints (explicit, at most `EXPLICIT_LIMIT` values when built here);
  * a pair `(lo, hi)` of internal ints: every int from lo to hi (an interval, never empty).
The empty domain is `frozenset()`. `Narrowing` is the propagation context that replaces domains
by smaller ones and records which variables changed (the solver's watch lists follow them).
"""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Union

INF = float("inf")
EXPLICIT_LIMIT = 1024  # domains up to this size are explicit sets; larger ones are intervals

Domain = Union[frozenset[int], tuple[int, int]]
Domains = list[Domain]
Bound = Union[int, Fraction, float]  # a bound for clipping: exact, or +-INF for "none"


def dom_range(lo: int, hi: int) -> Domain:
    """The domain of every int from lo to hi (empty if hi < lo)."""
    if hi < lo:
        return frozenset()
    return frozenset(range(lo, hi + 1)) if hi - lo < EXPLICIT_LIMIT else (lo, hi)


def dsize(d: Domain) -> int:
    return len(d) if isinstance(d, frozenset) else d[1] - d[0] + 1


SPAN_FROM = 64  # explicit domains of at least this many values keep their least and greatest value
SPAN_ENTRIES = 1024  # at most this many such domains at once (then the memo starts over)
_SPANS: dict[int, tuple[frozenset[int], int, int]] = {}


def _span(d: frozenset[int]) -> tuple[frozenset[int], int, int]:
    """(d, least, greatest) of a large explicit domain, memoised by identity. Why: min/max scan the
    whole set, and the solver asks them of the same domain objects over and over (a guard per item
    against a length of up to 1,024 values, CP-SAT's model per question): that scan was half of a
    uniqueItems enum's mask time (JsonSchemaStore/github-workflow-template-properties). The memo
    holds the set itself, so its id cannot be reused while the entry lives."""
    hit = _SPANS.get(id(d))
    if hit is not None and hit[0] is d:
        return hit
    if len(_SPANS) >= SPAN_ENTRIES:
        _SPANS.clear()
    hit = _SPANS[id(d)] = (d, min(d), max(d))
    return hit


def dmin(d: Domain) -> int:
    if isinstance(d, frozenset):
        return min(d) if len(d) < SPAN_FROM else _span(d)[1]
    return d[0]


def dmax(d: Domain) -> int:
    if isinstance(d, frozenset):
        return max(d) if len(d) < SPAN_FROM else _span(d)[2]
    return d[1]


def dcontains(d: Domain, k: int) -> bool:
    return k in d if isinstance(d, frozenset) else d[0] <= k <= d[1]


# (explicit domain, lo, hi) -> its clip: the same clips recur (a trip's window probe clips each
# day's initial domain to each city's bounds at every position: 2,500 fixpoints on 50 cities)
CLIP_ENTRIES = 50_000  # at most this many clips at once (then the memo starts over)
_CLIPS: dict[tuple, frozenset] = {}


def dclip(d: Domain, lo: Bound, hi: Bound) -> Domain:
    """Domain restricted to lo <= k <= hi (bounds may be fractional or infinite)."""
    if isinstance(d, frozenset):
        if lo == -INF and hi == INF:
            return d
        key = (d, lo, hi)
        got = _CLIPS.get(key)
        if got is None:
            got = frozenset(k for k in d if lo <= k <= hi)
            if len(_CLIPS) >= CLIP_ENTRIES:
                _CLIPS.clear()
            _CLIPS[key] = got
        return got
    nlo = d[0] if lo == -INF else max(d[0], math.ceil(lo))
    nhi = d[1] if hi == INF else min(d[1], math.floor(hi))
    return dom_range(nlo, nhi)


def exact_div(x: Bound, c: int | Fraction) -> Bound:
    """x / c exactly (an int when it divides, else a Fraction); +-INF stays infinite.

    Why: Python's `/` on ints is float division, which loses values above 2**53 and overflows
    near 10**308; bounds must stay exact at any magnitude the schema allows."""
    if x == INF or x == -INF:
        return x if c > 0 else -x
    q = Fraction(x) / c
    return q.numerator if q.denominator == 1 else q


def dvalues(d: Domain) -> list[int]:
    """The domain's values in increasing order."""
    if isinstance(d, frozenset):
        return sorted(d)
    return list(range(d[0], d[1] + 1))


class Narrowing:
    """Propagation context: the domains being narrowed and the variables that changed."""

    __slots__ = ("D", "changed")

    def __init__(self, D: Domains) -> None:
        self.D = D
        self.changed: list[int] = []

    def set(self, vid: int, d: Domain) -> bool:
        """Replace var `vid`'s domain by `d` (a subset); False on a wipe-out."""
        old = self.D[vid]
        if dsize(d) == 0:
            return False
        if dsize(d) != dsize(old):
            self.D[vid] = d
            self.changed.append(vid)
        return True
