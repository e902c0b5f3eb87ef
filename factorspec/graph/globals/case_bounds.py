"""Bounds on plain integer slots by the value of one enum slot: `CaseBounds`.

The pattern (found by `globals/case_bounds_recognition.py`, by structure only): factors
    x == c implies (y1 <= k1 and y2 >= k2 and ...)
for one enum slot x and several constants c, each bounding plain integer slots y by constants
(a trip's events: "if the stay at position i is in Lyon, it covers days 12 to 14"). A trip of n
cities with e events grounds n * e such factors, each re-run whenever a day at its position
changes; one node per x does all of them in one pass over its bounded values, and the factors
it covers are not re-run by propagation (the search still checks every one of them exactly at
each leaf).

Propagation (implied, `ev` always true; at least as strong as the covered factors together):
  * a value c of x whose bounds leave some y without a value in its domain leaves x (a
    covered factor removes c exactly then: its conjunction is false);
  * when every value left in x bounds y, y is clipped to the hull of those bounds (with x fixed
    to c, the hull is c's bounds: what the covered factor enforces then).
"""
from __future__ import annotations

from typing import Any

from factorspec.graph.domain import Domains, Narrowing, dclip, dmax, dmin
from factorspec.graph.expr import Abstract, Node, T, U

_HULLS: dict[frozenset, tuple[int, int]] = {}  # a day domain -> (least, greatest): domains recur over nodes


def _hull(d: Any) -> tuple[Any, Any]:
    """(least, greatest) of a domain; explicit domains memoised (min and max walk the set)."""
    if not isinstance(d, frozenset):
        return dmin(d), dmax(d)
    got = _HULLS.get(d)
    if got is None:
        if len(_HULLS) > 100_000:
            _HULLS.clear()
        got = _HULLS[d] = (min(d), max(d))
    return got


class CaseBounds(Node):
    """Implied node over one enum slot x and the slots its values bound (see the module docstring)."""

    kind = "bool"
    __slots__ = ("x", "cases", "keys", "by_y", "covers", "bounds_of")

    def __init__(self, x: int, cases: dict[int, dict[int, tuple[Any, Any]]], covers: set[int]) -> None:
        """`cases`: internal value of x -> {y: (least, greatest)} (an unbounded side is +-inf);
        `covers`: indices of the factors whose propagation this node does."""
        self.x = x
        self.cases = [(k, tuple((y, lo, hi) for y, (lo, hi) in sorted(b.items()))) for k, b in sorted(cases.items())]
        self.keys = frozenset(cases)
        self.bounds_of = dict(self.cases)
        by_y: dict[int, list[tuple[int, Any, Any]]] = {}
        for k, b in self.cases:
            for y, lo, hi in b:
                by_y.setdefault(y, []).append((k, lo, hi))
        # y -> (the values of x that bound it, their bounds by value)
        self.by_y = [(y, frozenset(k for k, _, _ in bs), {k: (lo, hi) for k, lo, hi in bs})
                     for y, bs in sorted(by_y.items())]
        self.covers = covers
        self.vars = frozenset([x]) | frozenset(by_y)

    def fwd(self, D: Domains) -> Abstract:
        dx = D[self.x]
        if isinstance(dx, frozenset) and dx.isdisjoint(self.keys):
            return T  # no value left that bounds anything (domains only shrink: entailed)
        return U

    def ev(self, A: list) -> Any:
        return 1  # implied by the factors it was recognised from; they decide exactly

    def bwd(self, C: Narrowing, target: Abstract) -> bool:
        if target != T:
            return True
        D = C.D
        dx = D[self.x]
        if not isinstance(dx, frozenset):
            return True
        ends: dict[int, tuple[Any, Any]] = {}
        gone = []
        for k in self.keys.intersection(dx):  # the values left that bound something
            for y, lo, hi in self.bounds_of[k]:
                e = ends.get(y)
                if e is None:
                    e = ends[y] = _hull(D[y])
                if e[0] > hi or e[1] < lo:
                    gone.append(k)
                    break
        if gone:
            dx = dx.difference(gone)
            if not C.set(self.x, dx):
                return False
        for y, ks, bk in self.by_y:
            if len(dx) > len(ks) or not dx <= ks:
                continue  # a value left that does not bound y
            lo = min(bk[k][0] for k in dx)
            hi = max(bk[k][1] for k in dx)
            dy = D[y]
            a, b = _hull(dy)
            if a < lo or b > hi:
                if not C.set(y, dclip(dy, lo, hi)):
                    return False
        return True
