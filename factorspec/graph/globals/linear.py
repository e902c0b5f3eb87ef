"""Linear forms of expression nodes, for recognisers that look for linear structure.

`linear_form(n)` reads an expression as sum(coef * var) + const + sum(coef * lookup) over
plain integer slots (step 1) and numeric table lookups keyed by enum slots; `Offsets` is a
union-find of variables known to differ by constants (value(u) = value(w) + c).
"""
from __future__ import annotations

from fractions import Fraction
from typing import Any, Optional

from factorspec.graph.expr import Arith, Const, Lookup, Node, Unary, VarRef

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
