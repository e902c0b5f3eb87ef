"""Linear forms of expression nodes, for recognisers that look for linear structure.

`linear_form(n)` reads an expression as sum(coef * var) + const + sum(coef * lookup) over
plain integer slots (step 1) and numeric table lookups keyed by enum slots; `Offsets` is a
union-find of variables known to differ by constants (value(u) = value(w) + c).
"""
from __future__ import annotations

from fractions import Fraction
from typing import Any, Optional

from factorspec.graph.domain import INF as INF_
from factorspec.graph.domain import Domains, Narrowing, exact_div
from factorspec.graph.expr import Abstract, Arith, Const, Lookup, Node, Unary, VarRef, _norm, is_undefined

LinearForm = tuple[dict[int, Any], Any, list[tuple[Any, Lookup]]]  # ({vid: coef}, const, [(coef, lookup)])


def linear_form(n: Node) -> Optional[LinearForm]:
    """n as sum(coef*var) + const + sum(coef*lookup): ({vid: coef}, const, [(coef, Lookup)]), or None."""
    if isinstance(n, Const):
        if n.kind != "num":
            return None
        return {}, n.v, []
    if isinstance(n, VarRef):
        v = n.var
        if v.values is not None or v.kind != "num" or v.step != 1:
            return None
        return {v.id: 1}, 0, []
    if isinstance(n, Lookup):
        if n.kind != "num" or not isinstance(n.key, VarRef) or n.key.var.values is None:
            return None
        return {}, 0, [(1, n)]
    if isinstance(n, Unary) and n.op == "neg":
        a = linear_form(n.a)
        return None if a is None else scale(a, -1)
    if isinstance(n, LinSum):
        out: Optional[LinearForm] = ({}, n.const, [])
        for c, t in n.terms:
            f = linear_form(t)
            if f is None or out is None:
                return None
            out = add(out, scale(f, c))
        return out
    if isinstance(n, Arith) and n.op in ("+", "-"):
        a, b = linear_form(n.a), linear_form(n.b)
        if a is None or b is None:
            return None
        return add(a, b if n.op == "+" else scale(b, -1))
    return None


def scale(a: LinearForm, k: int) -> LinearForm:
    return {v: c * k for v, c in a[0].items()}, a[1] * k, [(c * k, l) for c, l in a[2]]


def add(a: LinearForm, b: LinearForm) -> LinearForm:
    vs = dict(a[0])
    for v, c in b[0].items():
        vs[v] = vs.get(v, 0) + c
    return {v: c for v, c in vs.items() if c != 0}, a[1] + b[1], a[2] + b[2]


def as_int(x: Any) -> Optional[int]:
    if isinstance(x, bool):
        return None
    if isinstance(x, int):
        return x
    if isinstance(x, Fraction) and x.denominator == 1:
        return int(x)
    return None


class Offsets:
    """Union-find with offsets: value(var) = value(root) + off(var)."""

    def __init__(self) -> None:
        self.parent: dict[int, int] = {}
        self.off: dict[int, int] = {}
        self.ok = True

    def find(self, v: int) -> tuple[int, int]:
        if v not in self.parent:
            self.parent[v], self.off[v] = v, 0
            return v, 0
        path, o = [], 0
        while self.parent[v] != v:
            path.append(v)
            o += self.off[v]
            v = self.parent[v]
        acc = o
        for p in path:  # compress
            po = self.off[p]
            self.parent[p], self.off[p] = v, acc
            acc -= po
        return v, o

    def union(self, u: int, w: int, c: int) -> None:
        """value(u) = value(w) + c."""
        ru, ou = self.find(u)
        rw, ow = self.find(w)
        if ru == rw:
            if ou != ow + c:
                self.ok = False
            return
        # value(ru) = value(u) - ou = value(w) + c - ou = value(rw) + ow + c - ou
        self.parent[ru], self.off[ru] = rw, ow + c - ou


_BOUNDS: dict[frozenset, tuple[int, int]] = {}  # least and greatest value of small domains seen


class LinSum(Node):
    """sum(coef * term) + const over any number of terms, as one flat node.

    Why: a sum of n items grounded as a chain of binary `+` nests n deep (RecursionError at
    1,000 items) and costs O(n**2) per propagation (each level re-reads its subtree); one
    flat node reads every term once. Propagation is bounds reasoning: each term lies within
    the target minus the other terms' bounds, divided exactly by its coefficient."""

    kind = "num"
    __slots__ = ("terms", "const")

    def __init__(self, terms: list[tuple[Any, Node]], const: Any = 0) -> None:
        self.terms = [(c, t) for c, t in terms if c != 0]
        self.const = const
        vs: frozenset[int] = frozenset()
        self.vars = vs.union(*(t.vars for _c, t in self.terms)) if self.terms else vs

    def _contribs(self, D: Domains) -> Optional[list[tuple[Any, Any]]]:
        out = []
        for c, t in self.terms:
            if type(t) is VarRef and t.var.values is None:  # a plain number slot: read its domain
                d = D[t.var.id]
                if isinstance(d, frozenset):
                    b = _BOUNDS.get(d)
                    if b is None:
                        if len(_BOUNDS) > 4096:
                            _BOUNDS.clear()
                        b = _BOUNDS[d] = (min(d), max(d))
                    lo, hi = b
                else:
                    lo, hi = d
                cs = c * t.var.step
                out.append((cs * lo, cs * hi) if cs > 0 else (cs * hi, cs * lo))
                continue
            iv = t.fwd(D)
            if isinstance(iv, frozenset) or is_undefined(iv):
                return None
            lo, hi = iv
            out.append((c * lo, c * hi) if c > 0 else (c * hi, c * lo))
        return out

    def fwd(self, D: Domains) -> Abstract:
        cs = self._contribs(D)
        if cs is None:
            return (INF_, -INF_)
        return (self.const + sum(lo for lo, _ in cs), self.const + sum(hi for _, hi in cs))

    def bwd(self, C: Narrowing, target: Abstract) -> bool:
        if isinstance(target, frozenset):
            if not target:
                return False
            target = (min(target), max(target))
        tlo, thi = target
        for _round in range(4):  # to a fixpoint of the bounds (a few rounds suffice in practice)
            cs = self._contribs(C.D)
            if cs is None:
                return True
            slo = self.const + sum(lo for lo, _ in cs)
            shi = self.const + sum(hi for _, hi in cs)
            if slo > thi or shi < tlo:
                return False
            changed = False
            for i, (c, t) in enumerate(self.terms):
                clo, chi = cs[i]
                # c * t in [tlo - (shi - chi), thi - (slo - clo)]
                lo, hi = tlo - (shi - chi), thi - (slo - clo)
                if lo <= clo and hi >= chi:
                    continue
                q = (exact_div(lo, c), exact_div(hi, c)) if c > 0 else (exact_div(hi, c), exact_div(lo, c))
                n0 = len(C.changed)
                if not t.bwd(C, q):
                    return False
                if len(C.changed) != n0:
                    changed = True
                    iv = t.fwd(C.D)  # only this term's bounds are refreshed: the others' stale
                    if isinstance(iv, frozenset) or is_undefined(iv):  # ones are wider, so sound
                        return True
                    nlo, nhi = (c * iv[0], c * iv[1]) if c > 0 else (c * iv[1], c * iv[0])
                    slo, shi = slo - clo + nlo, shi - chi + nhi
                    cs[i] = (nlo, nhi)
            if not changed:
                return True
        return True

    def ev(self, A: list) -> Any:
        return _norm(self.const + sum(c * t.ev(A) for c, t in self.terms))
