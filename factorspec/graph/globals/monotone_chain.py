"""Exact bounds through a chain of non-decreasing definitions from one source variable.

Why: an invoice writes `tax == round(subtotal * 0.08, 0.01)` and `total == subtotal + tax`.
Each factor alone narrows by intervals, and together they never learn that `total <= 1500`
means `subtotal <= 1388.89`: `tax`'s lower bound comes from `subtotal`'s lower bound, so the
two paths from `subtotal` to `total` are never composed. Here every variable `y` defined
(transitively) from one source `x` by non-decreasing expressions (sums, positive scalings,
`round`) is a non-decreasing function F_y(x), evaluated exactly (Fractions, never floats) by
the factors' own `ev`. Bounds consistency is then exact: the least and greatest `x` whose every
F_y lies within y's bounds are found by bisection, and each y is clipped to [F_y(lo), F_y(hi)].
Explicit (small) domains of x are filtered value by value.
"""
from __future__ import annotations

from fractions import Fraction
from typing import Any, Optional

from factorspec.graph.domain import Domains, Narrowing, dclip, dcontains, dmax, dmin
from factorspec.graph.expr import Abstract, Node, U, Var

HOLE_STEPS = 64  # values skipped one by one at a bound whose F_y is no value of y (then bounds stay sound)


class MonotoneChain(Node):
    """Implied node: vars `ys` are non-decreasing functions of var `x` (see the module docstring).
    `defs` holds (y, defining expression) in an order where each expression reads only x and
    earlier ys. Never decides (`ev` is true): the defining factors still decide exactly."""

    kind = "bool"
    __slots__ = ("x", "defs", "steps", "n", "_memo")

    def __init__(self, x: Var, defs: list[tuple[Var, Node]], n_vars: int) -> None:
        self.x = x
        self.defs = defs
        self.steps = [Fraction(y.step) for y, _e in defs]
        self.n = n_vars
        self.vars = frozenset([x.id] + [y.id for y, _e in defs])
        self._memo: dict[int, Optional[list[Fraction]]] = {}

    def fwd(self, D: Domains) -> Abstract:
        return U

    def ev(self, A: list) -> Any:
        return 1

    def values(self, k: int) -> Optional[list[Fraction]]:
        """[F_y(k) for each y] as exact values (None where an expression has no value)."""
        hit = self._memo.get(k, False)
        if hit is not False:
            return hit  # type: ignore[return-value]
        A: list[Any] = [0] * self.n
        A[self.x.id] = k
        out: Optional[list[Fraction]] = []
        for (y, e), st in zip(self.defs, self.steps):
            try:
                v = Fraction(e.ev(A))
            except (TypeError, ZeroDivisionError, ValueError):
                out = None
                break
            out.append(v)  # type: ignore[union-attr]
            A[y.id] = v / st  # possibly not an integer: later definitions read the exact value
        if len(self._memo) > 4096:
            self._memo.clear()
        self._memo[k] = out
        return out

    def _fits(self, k: int, D: Domains) -> bool:
        """Every F_y(k) is a value of y's domain (exactly: on its step grid and in its domain)."""
        vs = self.values(k)
        if vs is None:
            return False
        for (y, _e), st, v in zip(self.defs, self.steps, vs):
            q = v / st
            if q.denominator != 1 or not dcontains(D[y.id], int(q)):
                return False
        return True

    def bwd(self, C: Narrowing, target: Abstract) -> bool:
        D = C.D
        xd = D[self.x.id]
        if isinstance(xd, frozenset):
            nd: Any = frozenset(k for k in xd if self._fits(k, D))
            if not nd:
                return False
            lo, hi = min(nd), max(nd)
        else:
            ylo = [dmin(D[y.id]) * st for (y, _e), st in zip(self.defs, self.steps)]
            yhi = [dmax(D[y.id]) * st for (y, _e), st in zip(self.defs, self.steps)]

            def above(k: int) -> bool:  # non-decreasing in k: every F_y(k) >= y's least value
                vs = self.values(k)
                return vs is not None and all(v >= b for v, b in zip(vs, ylo))

            def below(k: int) -> bool:  # non-increasing in k: every F_y(k) <= y's greatest value
                vs = self.values(k)
                return vs is not None and all(v <= b for v, b in zip(vs, yhi))

            a, b = xd
            if not above(b) or not below(a):
                return False
            while a < b:  # least k with above(k)
                m = (a + b) // 2
                if above(m):
                    b = m
                else:
                    a = m + 1
            lo = a
            a, b = lo, xd[1]
            while a < b:  # greatest k with below(k)
                m = (a + b + 1) // 2
                if below(m):
                    a = m
                else:
                    b = m - 1
            hi = a
            if not below(lo) or lo > hi:
                return False
            for _ in range(HOLE_STEPS):  # bounds that are no record's value (off y's grid)
                if lo > hi or self._fits(lo, D):
                    break
                lo += 1
            for _ in range(HOLE_STEPS):
                if hi < lo or self._fits(hi, D):
                    break
                hi -= 1
            if lo > hi:
                return False
            nd = dclip(xd, lo, hi)
        if not C.set(self.x.id, nd):
            return False
        flo, fhi = self.values(lo), self.values(hi)
        if flo is None or fhi is None:
            return True
        for (y, _e), st, a_, b_ in zip(self.defs, self.steps, flo, fhi):
            if not C.set(y.id, dclip(C.D[y.id], a_ / st, b_ / st)):
                return False
        return True
