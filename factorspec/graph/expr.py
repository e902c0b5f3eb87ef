"""Grounded expression nodes of the factor graph, with interval/set propagation (HC4-style).

Each node offers:
  fwd(D)            an over-approximation of its value under domains D (an `Abstract`): a
                    numeric interval (lo, hi) or a frozenset of symbolic values; booleans are the
                    intervals F = (0, 0), U = (0, 1), T = (1, 1);
  bwd(C, target)    narrow its variables so its value lies in `target` (sound: only values that
                    cannot be part of a solution are removed); False on a wipe-out;
  ev(A)             its exact value under a full assignment A (internal values by var id).
Soundness is all that propagation must give: exactness comes from search, which assigns every
variable and then evaluates every factor exactly. Global constraints (`graph/globals/`) are
nodes too; the domains they narrow are in `graph/domain.py`.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from fractions import Fraction
from typing import Any, Optional, Union

from factorspec.graph.domain import (
    EXPLICIT_LIMIT,
    INF,
    Domain,
    Domains,
    Narrowing,
    dclip,
    dmax,
    dmin,
    dom_range,
    dsize,
    dvalues,
    exact_div,
)

Interval = tuple[Any, Any]  # (lo, hi) of exact numbers (int or Fraction), bounds may be +-INF
Abstract = Union[frozenset[Any], Interval]  # fwd's value: a set of (symbolic) values or an interval
# Numeric and boolean nodes' abstract values are always intervals (`kind` says which form a node
# yields; the type checker cannot see it): where such a node reads its children, it binds their
# values as `Interval` with one `type: ignore[assignment]` per site.
Truth = tuple[int, int]  # an abstract boolean: F, U or T
T: Truth = (1, 1)
F: Truth = (0, 0)
U: Truth = (0, 1)


class _Undefined:
    """The value of a lookup whose key is missing from its table, or of min/max over no items.

    Any relation instance that evaluates an undefined value is false: comparisons, membership
    and all_different raise TypeError on it (as arithmetic does), and `check` and the search's
    final check both count a TypeError as the instance being violated. So propagation needs to
    be sound only for defined values (the solver's answers agree with `check` exactly)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "undefined"

    def __bool__(self) -> bool:
        raise TypeError("undefined value used as a condition")


UNDEFINED = _Undefined()


def is_undefined(x: Abstract) -> bool:
    """An abstract value that no defined value has (fwd of an UNDEFINED node)."""
    return len(x) == 0 if isinstance(x, frozenset) else x[0] > x[1]


def require_defined(*xs: Any) -> None:
    for x in xs:
        if x is UNDEFINED:
            raise TypeError("undefined value (a key missing from a table, or min/max of no items)")



class Var:
    """A solver variable: a record slot with a finite domain, an array length or a presence bit.

    Internal values are ints: enum index (`values`), or units of `step` (integer/fixed/len)."""

    __slots__ = ("id", "name", "path", "kind", "values", "step", "lo", "hi", "guard", "structural",
                 "order", "scalar")

    def __init__(self, id: int, name: str, path: tuple, kind: str, lo: int, hi: int, *,
                 values: Optional[list] = None, step: Any = 1, structural: bool = False,
                 order: tuple = (), scalar: Any = None) -> None:
        self.id, self.name, self.path, self.kind = id, name, path, kind
        self.values, self.step, self.lo, self.hi = values, step, lo, hi
        self.guard: Optional[Node] = None
        self.structural, self.order, self.scalar = structural, order, scalar

    def value(self, k: int) -> Any:
        """Internal value -> value in relation semantics (numbers exact, bools as 0/1)."""
        if self.values is not None:
            v = self.values[k]
            return int(v) if self.kind == "bool" else v
        return k * self.step

    def __repr__(self) -> str:
        return f"Var({self.name})"



def as_bool(x: Abstract) -> Truth:
    if isinstance(x, frozenset):
        return (int(min(map(bool, x))), int(max(map(bool, x)))) if x else U
    return x


def hull(a: tuple, b: tuple) -> tuple:
    return (min(a[0], b[0]), max(a[1], b[1]))


class Node:
    """An expression over solver variables (see the module docstring for fwd/bwd/ev)."""

    kind = "num"  # 'num' | 'sym' | 'bool'
    __slots__ = ("vars",)
    vars: frozenset[int]  # ids of the variables it mentions

    def fwd(self, D: Domains) -> Abstract:
        raise NotImplementedError

    def bwd(self, C: Narrowing, target: Abstract) -> bool:
        return True

    def ev(self, A: list) -> Any:
        raise NotImplementedError

    def bwd_ne(self, C: Narrowing, value: Any) -> bool:
        """Narrow so the value differs from `value` (only variables can use this)."""
        return True


class Const(Node):
    __slots__ = ("v", "kind")

    def __init__(self, v: Any) -> None:
        self.v = int(v) if isinstance(v, bool) else v
        self.kind = "bool" if isinstance(v, bool) else ("num" if isinstance(v, (int, Fraction)) else "sym")
        self.vars: frozenset[int] = frozenset()

    def fwd(self, D: Domains) -> Abstract:
        return (self.v, self.v) if self.kind != "sym" else frozenset([self.v])

    def bwd(self, C: Narrowing, target: Abstract) -> bool:
        if isinstance(target, frozenset):
            return self.v in target
        return target[0] <= self.v <= target[1]

    def ev(self, A: list) -> Any:
        return self.v


class VarRef(Node):
    __slots__ = ("var", "kind", "_numeric_table", "_cache")

    def __init__(self, var: Var) -> None:
        self.var = var
        self.vars = frozenset([var.id])
        self.kind = var.kind
        self._numeric_table = var.values is not None and var.kind == "num"
        self._cache: dict = {}  # domain -> abstract value (domains are immutable, hashes cached)

    def fwd(self, D: Domains) -> Abstract:
        d = D[self.var.id]
        hit = self._cache.get(d)
        if hit is not None:
            return hit
        v = self.var
        if v.values is None or v.kind == "bool":
            if v.values is None and v.step != 1:
                out: Any = (dmin(d) * v.step, dmax(d) * v.step)
            else:
                out = (dmin(d), dmax(d))
        else:
            ks = d if isinstance(d, frozenset) else range(d[0], d[1] + 1)
            vals = [v.values[k] for k in ks]
            out = (min(vals), max(vals)) if self._numeric_table else frozenset(vals)
        if len(self._cache) > 4096:
            self._cache.clear()
        self._cache[d] = out
        return out

    def bwd(self, C: Narrowing, target: Abstract) -> bool:
        v = self.var
        d = C.D[v.id]
        if isinstance(target, frozenset):
            nd: Domain
            if v.values is not None and v.kind != "bool":
                nd = frozenset(k for k in dvalues(d) if v.values[k] in target)
            else:
                nd = frozenset(k for k in dvalues(d) if v.value(k) in target) if dsize(d) <= EXPLICIT_LIMIT \
                    else dclip(d, exact_div(min(target, default=INF), v.step),
                                 exact_div(max(target, default=-INF), v.step))
            return C.set(v.id, nd)
        lo, hi = target
        if v.values is None or v.kind == "bool":
            if v.values is None and v.step != 1:
                lo, hi = exact_div(lo, v.step), exact_div(hi, v.step)
            return C.set(v.id, dclip(d, lo, hi))
        return C.set(v.id, frozenset(k for k in dvalues(d) if lo <= v.values[k] <= hi))

    def bwd_ne(self, C: Narrowing, value: Any) -> bool:
        v = self.var
        d = C.D[v.id]
        ks = [k for k in (d if isinstance(d, frozenset) else ()) if v.value(k) == value]
        if not ks:
            if isinstance(d, tuple):
                if v.value(d[0]) == value:
                    return C.set(v.id, dom_range(d[0] + 1, d[1]))
                if v.value(d[1]) == value:
                    return C.set(v.id, dom_range(d[0], d[1] - 1))
            return True
        assert isinstance(d, frozenset)  # ks is empty for an interval domain
        return C.set(v.id, d - frozenset(ks))

    def ev(self, A: list) -> Any:
        return self.var.value(A[self.var.id])


def _floordiv_iv(a: tuple, c: Any) -> tuple:
    x, y = a[0] // c, a[1] // c  # exact floor division (ints and Fractions; never float)
    return (min(x, y), max(x, y))


class Arith(Node):
    __slots__ = ("op", "a", "b")

    def __init__(self, op: str, a: Node, b: Node) -> None:
        self.op, self.a, self.b = op, a, b
        self.vars = a.vars | b.vars

    def fwd(self, D: Domains) -> Abstract:
        a: Interval
        b: Interval
        a, b = self.a.fwd(D), self.b.fwd(D)  # type: ignore[assignment]
        if is_undefined(a) or is_undefined(b):
            return (INF, -INF)
        op = self.op
        if op == "+":
            return (a[0] + b[0], a[1] + b[1])
        if op == "-":
            return (a[0] - b[1], a[1] - b[0])
        if op == "*":
            ps = (a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1])
            return (min(ps), max(ps))
        c = b[0]  # // and % take constant divisors (checked at grounding)
        if op == "//":
            return _floordiv_iv(a, c)
        if a[0] == a[1]:
            r = a[0] % c
            return (r, r)
        if a[0] // c == a[1] // c:
            k = (a[0] // c) * c
            return (a[0] - k, a[1] - k)
        return (0, c) if c > 0 else (c, 0)

    def bwd(self, C: Narrowing, target: Abstract) -> bool:
        op = self.op
        if op not in ("+", "-", "*"):
            return True
        a: Interval
        b: Interval
        a, b = self.a.fwd(C.D), self.b.fwd(C.D)  # type: ignore[assignment]
        if is_undefined(a) or is_undefined(b):
            return True
        lo, hi = target
        if op == "+":
            return self.a.bwd(C, (lo - b[1], hi - b[0])) and self.b.bwd(C, (lo - a[1], hi - a[0]))
        if op == "-":
            return self.a.bwd(C, (lo + b[0], hi + b[1])) and self.b.bwd(C, (a[0] - hi, a[1] - lo))
        # '*': narrow a factor when the other is a known non-zero constant
        for _x, y, xn in ((a, b, self.a), (b, a, self.b)):
            if y[0] == y[1] and y[0] != 0:
                c = y[0]
                q = (exact_div(lo, c), exact_div(hi, c)) if c > 0 else (exact_div(hi, c), exact_div(lo, c))
                if not xn.bwd(C, q):
                    return False
        return True

    def ev(self, A: list) -> Any:
        x, y = self.a.ev(A), self.b.ev(A)
        op = self.op
        if op == "+":
            r = x + y
        elif op == "-":
            r = x - y
        elif op == "*":
            r = x * y
        elif op == "//":
            r = math.floor(Fraction(x) / Fraction(y))
        else:
            r = x - math.floor(Fraction(x) / Fraction(y)) * y
        return _norm(r)


def _norm(r: Any) -> Any:
    if isinstance(r, Fraction) and r.denominator == 1:
        return int(r)
    return r


class Unary(Node):
    """neg, abs, and round-to-multiple (`round(x, q)`, half up)."""

    __slots__ = ("op", "a", "q")

    def __init__(self, op: str, a: Node, q: Any = None) -> None:
        self.op, self.a, self.q = op, a, q
        self.vars = a.vars

    def _f(self, x: Any) -> Any:
        if self.op == "neg":
            return -x
        if self.op == "abs":
            return abs(x)
        return _norm(math.floor(Fraction(x) / self.q + Fraction(1, 2)) * self.q)

    def fwd(self, D: Domains) -> Abstract:
        a: Interval = self.a.fwd(D)  # type: ignore[assignment]
        if is_undefined(a):
            return (INF, -INF)
        if self.op == "neg":
            return (-a[1], -a[0])
        if self.op == "abs":
            if a[0] >= 0:
                return a
            if a[1] <= 0:
                return (-a[1], -a[0])
            return (0, max(-a[0], a[1]))
        return (self._f(a[0]), self._f(a[1]))

    def bwd(self, C: Narrowing, target: Abstract) -> bool:
        lo, hi = target
        if self.op == "neg":
            return self.a.bwd(C, (-hi, -lo))
        if self.op == "abs":
            return self.a.bwd(C, (-hi, hi))
        # round half up: x in [lo - q/2, hi + q/2)
        half = Fraction(self.q) / 2  # exact: an integer precision's half is not a float 0.5
        return self.a.bwd(C, (lo - half, hi + half))

    def ev(self, A: list) -> Any:
        return self._f(self.a.ev(A))


def sym(x: Abstract) -> Optional[frozenset]:
    """A symbolic view of an abstract value (sets as is, singleton intervals as sets)."""
    if isinstance(x, frozenset):
        return x
    if x[0] == x[1]:
        return frozenset([x[0]])
    return None


_NEG = {"==": "!=", "!=": "==", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}


class Cmp(Node):
    kind = "bool"
    __slots__ = ("op", "a", "b")

    def __init__(self, op: str, a: Node, b: Node) -> None:
        self.op, self.a, self.b = op, a, b
        self.vars = a.vars | b.vars

    def fwd(self, D: Domains) -> Abstract:
        return self._cmp(self.op, self.a.fwd(D), self.b.fwd(D))

    @staticmethod
    def _cmp(op: str, a: Any, b: Any) -> tuple:
        if op in ("==", "!="):
            if isinstance(a, frozenset) or isinstance(b, frozenset):
                sa, sb = sym(a), sym(b)
                if sa is None or sb is None:
                    r = U
                elif len(sa) == 1 and sa == sb:
                    r = T
                elif not (sa & sb):
                    r = F
                else:
                    r = U
            elif a[0] == a[1] == b[0] == b[1]:
                r = T
            elif a[1] < b[0] or b[1] < a[0]:
                r = F
            else:
                r = U
            return r if op == "==" else (1 - r[1], 1 - r[0])
        if op in (">", ">="):
            a, b = b, a
            op = "<" if op == ">" else "<="
        if op == "<":
            return T if a[1] < b[0] else (F if a[0] >= b[1] else U)
        return T if a[1] <= b[0] else (F if a[0] > b[1] else U)

    def bwd(self, C: Narrowing, target: Abstract) -> bool:
        if target == U:
            return True
        op = self.op if target == T else _NEG[self.op]
        a, b = self.a.fwd(C.D), self.b.fwd(C.D)
        if is_undefined(a) or is_undefined(b):
            return True  # no narrowing from an undefined side (and no infinite bounds below)
        if op == "==":
            return self.a.bwd(C, b) and self.b.bwd(C, self.a.fwd(C.D))
        if op == "!=":
            sa, sb = sym(a), sym(b)
            if sb is not None and len(sb) == 1:
                return self.a.bwd_ne(C, next(iter(sb)))
            if sa is not None and len(sa) == 1:
                return self.b.bwd_ne(C, next(iter(sa)))
            return True
        if isinstance(a, frozenset) or isinstance(b, frozenset):
            return True
        if op in (">", ">="):
            a, b = b, a
            x, y = self.b, self.a
            op = "<" if op == ">" else "<="
        else:
            x, y = self.a, self.b
        # x < y or x <= y (strictness is left to search: sound either way)
        return x.bwd(C, (-INF, b[1])) and y.bwd(C, (a[0], INF))

    def ev(self, A: list) -> Any:
        x, y = self.a.ev(A), self.b.ev(A)
        require_defined(x, y)
        op = self.op
        if op == "==":
            return int(_eq(x, y))
        if op == "!=":
            return int(not _eq(x, y))
        if isinstance(x, str) or isinstance(y, str) or x is None or y is None:
            return 0
        return int({"<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y}[op])


def _eq(x: Any, y: Any) -> bool:
    if isinstance(x, str) != isinstance(y, str) or (x is None) != (y is None):
        return False
    return x == y


class _Junction(Node):
    """`and` / `or`: `absorb` decides the whole (F for and, T for or); `neutral` is the other."""

    kind = "bool"
    __slots__ = ("args",)
    absorb: tuple = F
    neutral: tuple = T

    def __init__(self, args: list[Node]) -> None:
        self.args = args
        self.vars = frozenset().union(*(a.vars for a in args)) if args else frozenset()

    def fwd(self, D: Domains) -> Abstract:
        out = self.neutral
        for a in self.args:
            r = as_bool(a.fwd(D))
            if r == self.absorb:
                return r
            if r != self.neutral:
                out = U
        return out

    def bwd(self, C: Narrowing, target: Abstract) -> bool:
        if target == self.neutral:
            return all(a.bwd(C, target) for a in self.args)
        if target == self.absorb:
            unknown = []
            for a in self.args:
                r = as_bool(a.fwd(C.D))
                if r == self.absorb:
                    return True
                if r != self.neutral:
                    unknown.append(a)
            if not unknown:
                return False
            if len(unknown) == 1:
                return unknown[0].bwd(C, target)
        return True


class And(_Junction):
    absorb, neutral = F, T

    def ev(self, A: list) -> Any:
        return int(all(a.ev(A) for a in self.args))


class Or(_Junction):
    absorb, neutral = T, F

    def ev(self, A: list) -> Any:
        return int(any(a.ev(A) for a in self.args))


class Not(Node):
    kind = "bool"
    __slots__ = ("a",)

    def __init__(self, a: Node) -> None:
        self.a = a
        self.vars = a.vars

    def fwd(self, D: Domains) -> Abstract:
        r = as_bool(self.a.fwd(D))
        return (1 - r[1], 1 - r[0])

    def bwd(self, C: Narrowing, target: Abstract) -> bool:
        lo, hi = target
        return self.a.bwd(C, (1 - hi, 1 - lo))

    def ev(self, A: list) -> Any:
        return int(not self.a.ev(A))


def implies(a: Node, b: Node) -> Node:
    return Or([Not(a), b])


class If(Node):
    """`a if c else b`: guarded terms of aggregates over items that may not exist."""

    __slots__ = ("c", "a", "b", "kind")

    def __init__(self, c: Node, a: Node, b: Node) -> None:
        self.c, self.a, self.b = c, a, b
        self.kind = a.kind
        self.vars = c.vars | a.vars | b.vars

    def fwd(self, D: Domains) -> Abstract:
        c = as_bool(self.c.fwd(D))
        if c == T:
            return self.a.fwd(D)
        if c == F:
            return self.b.fwd(D)
        x, y = self.a.fwd(D), self.b.fwd(D)
        if isinstance(x, frozenset) or isinstance(y, frozenset):
            return (sym(x) or frozenset()) | (sym(y) or frozenset())
        return hull(x, y)

    def bwd(self, C: Narrowing, target: Abstract) -> bool:
        c = as_bool(self.c.fwd(C.D))
        if c == T:
            return self.a.bwd(C, target)
        if c == F:
            return self.b.bwd(C, target)
        # if one branch cannot meet the target, the condition must pick the other
        for branch, val in ((self.a, F), (self.b, T)):
            x = branch.fwd(C.D)
            if isinstance(x, frozenset) or isinstance(target, frozenset):
                sx = sym(x)
                st = target if isinstance(target, frozenset) else sym(target)
                miss = sx is not None and st is not None and not (sx & st)
            else:
                miss = x[1] < target[0] or x[0] > target[1]
            if miss:
                return self.c.bwd(C, val)
        return True

    def ev(self, A: list) -> Any:
        return self.a.ev(A) if self.c.ev(A) else self.b.ev(A)


def consistent(value: Any, ab: Abstract) -> bool:
    if isinstance(ab, frozenset):
        return value in ab
    if isinstance(value, (str, type(None))) or isinstance(value, bool):
        return False
    return ab[0] <= value <= ab[1]


class Member(Node):
    """(a, b, ...) in TABLE: membership of a tuple of values in a set of allowed rows."""

    kind = "bool"
    __slots__ = ("elems", "rows", "rowset", "index", "vals_of")

    def __init__(self, elems: list[Node], rows: list[tuple]) -> None:
        self.elems, self.rows = elems, rows
        self.rowset = frozenset(rows)
        self.vars = frozenset().union(*(e.vars for e in elems))
        # per column: value -> bitset (a Python int) of the rows holding it, so that the rows
        # still consistent with the columns' domains are a few big-int ANDs, not a scan
        self.index: list[dict] = [{} for _ in elems]
        for r, row in enumerate(rows):
            for i, v in enumerate(row):
                if i < len(self.index):
                    self.index[i][v] = self.index[i].get(v, 0) | (1 << r)

    def _live_bits(self, abs_: list) -> int:
        live = -1
        for col, a in zip(self.index, abs_):
            m = 0
            if isinstance(a, frozenset) and len(a) < len(col):
                for v in a:
                    m |= col.get(v, 0)
            else:
                for v, bits in col.items():
                    if consistent(v, a):
                        m |= bits
            live &= m
            if not live:
                return 0
        return live

    def _live(self, D: Domains) -> tuple[list, list]:
        abs_ = [e.fwd(D) for e in self.elems]
        bits = self._live_bits(abs_)
        live = [r for i, r in enumerate(self.rows) if bits >> i & 1] if bits else []
        return abs_, live

    def fwd(self, D: Domains) -> Abstract:
        abs_ = [e.fwd(D) for e in self.elems]
        if not self._live_bits(abs_):
            return F
        if all((s := sym(a)) is not None and len(s) == 1 for a in abs_):
            return T
        return U

    def bwd(self, C: Narrowing, target: Abstract) -> bool:
        if target != T:
            if target == F:
                abs_ = [e.fwd(C.D) for e in self.elems]
                known = [next(iter(s)) if (s := sym(a)) is not None and len(s) == 1 else None for a in abs_]
                unknown = [i for i, k in enumerate(known) if k is None]
                if len(unknown) == 1:  # all but one fixed: remove the completions that are rows
                    i = unknown[0]
                    for r in self.rows:
                        if all(r[j] == known[j] for j in range(len(r)) if j != i):
                            if not self.elems[i].bwd_ne(C, r[i]):
                                return False
            return True
        abs_ = [e.fwd(C.D) for e in self.elems]
        bits = self._live_bits(abs_)
        if not bits:
            return False
        for i, e in enumerate(self.elems):
            vals: Abstract = frozenset(v for v, b in self.index[i].items() if b & bits)
            if not isinstance(e, (VarRef, Const, Lookup, Select)) and not isinstance(e.fwd(C.D), frozenset):
                vals = (min(vals), max(vals))  # arithmetic narrows by intervals only
            if not e.bwd(C, vals):
                return False
        return True

    def ev(self, A: list) -> Any:
        vals = tuple(e.ev(A) for e in self.elems)
        require_defined(*vals)
        return int(vals in self.rowset)


class Lookup(Node):
    """table[key]: a value looked up by a field; a key missing from the table has no value
    (UNDEFINED: the relation instance is false)."""

    __slots__ = ("table", "key", "kind", "_byk", "_kvid", "_cache")

    def __init__(self, table: dict, key: Node, kind: str) -> None:
        self.table, self.key, self.kind = table, key, kind
        self.vars = key.vars
        # keyed by an enum slot: internal value -> table value, so that fwd/bwd read the slot's
        # domain directly (no scan of the table per call); values missing from the table have none
        self._byk: Optional[dict] = None
        self._kvid = -1  # the enum slot's var id when _byk is set
        self._cache: dict = {}
        if isinstance(key, VarRef) and key.var.values is not None and key.var.kind != "bool":
            byk = {}
            for k, v in enumerate(key.var.values):
                try:
                    if v in table:
                        byk[k] = table[v]
                except TypeError:
                    pass
            self._byk = byk
            self._kvid = key.var.id

    def _keys(self, D: Domains) -> list:
        """The table keys consistent with the key's abstract value, kept by that value (an
        interval or a set, hashable): a computed key (the rank that min/max of strings reads
        back) is looked up at every propagation of every factor it appears in."""
        k = self.key.fwd(D)
        ck = ("keys", k)
        try:
            hit = self._cache.get(ck)
        except TypeError:  # an abstract value that is not hashable: not kept
            return [key for key in self.table if consistent(key, k)]
        if hit is None:
            hit = [key for key in self.table if consistent(key, k)]
            if len(self._cache) > 4096:
                self._cache.clear()
            self._cache[ck] = hit
        return hit

    def fwd(self, D: Domains) -> Abstract:
        if self._byk is not None:
            d = D[self._kvid]
            hit = self._cache.get(d)
            if hit is not None:
                return hit
            byk = self._byk
            vals = [byk[k] for k in (d if isinstance(d, frozenset) else range(d[0], d[1] + 1)) if k in byk]
            if not vals:
                out: Any = frozenset() if self.kind == "sym" else (INF, -INF)
            else:
                out = frozenset(vals) if self.kind == "sym" else (min(vals), max(vals))
            if len(self._cache) > 4096:
                self._cache.clear()
            self._cache[d] = out
            return out
        vals = [self.table[k] for k in self._keys(D)]
        if not vals:
            return frozenset() if self.kind == "sym" else (INF, -INF)
        if self.kind == "sym":
            return frozenset(vals)
        return (min(vals), max(vals))

    def bwd(self, C: Narrowing, target: Abstract) -> bool:
        if self._byk is not None:
            vid = self._kvid
            d = C.D[vid]
            byk = self._byk
            ks = (d if isinstance(d, frozenset) else range(d[0], d[1] + 1))
            nd = frozenset(k for k in ks if k in byk and consistent(byk[k], target))
            return C.set(vid, nd)
        keys = [k for k in self._keys(C.D) if consistent(self.table[k], target)]
        if not keys:
            return False
        return self.key.bwd(C, frozenset(keys))

    def ev(self, A: list) -> Any:
        k = self.key.ev(A)
        if k not in self.table:
            return UNDEFINED
        return self.table[k]


class Select(Node):
    """options[index]: the item picked by a variable index (last item of a variable array)."""

    __slots__ = ("index", "options", "kind")

    def __init__(self, index: Node, options: dict[int, Node]) -> None:
        self.index, self.options = index, options
        self.kind = next(iter(options.values())).kind
        self.vars = index.vars.union(*(o.vars for o in options.values()))

    def _live(self, D: Domains) -> list[int]:
        iv: Interval = self.index.fwd(D)  # type: ignore[assignment]
        return [k for k in self.options if iv[0] <= k <= iv[1]]

    def fwd(self, D: Domains) -> Abstract:
        vals: list[Any] = [self.options[k].fwd(D) for k in self._live(D)]
        if not vals:
            return frozenset() if self.kind == "sym" else (INF, -INF)
        if self.kind == "sym":
            return frozenset().union(*[sym(v) or frozenset() for v in vals])
        return (min(v[0] for v in vals), max(v[1] for v in vals))

    def bwd(self, C: Narrowing, target: Abstract) -> bool:
        live = self._live(C.D)
        ok = []
        for k in live:
            x = self.options[k].fwd(C.D)
            if isinstance(x, frozenset) or isinstance(target, frozenset):
                sx, st = sym(x), (target if isinstance(target, frozenset) else sym(target))
                if sx is None or st is None or (sx & st):
                    ok.append(k)
            elif not (x[1] < target[0] or x[0] > target[1]):
                ok.append(k)
        if not ok:
            return False
        if not self.index.bwd(C, frozenset(ok)):
            return False
        if len(ok) == 1:
            return self.options[ok[0]].bwd(C, target)
        return True

    def ev(self, A: list) -> Any:
        opt = self.options.get(self.index.ev(A))
        return UNDEFINED if opt is None else opt.ev(A)


class MinMax(Node):
    """min/max over guarded items; with no item present the value is UNDEFINED (relation false)."""

    __slots__ = ("is_max", "items", "kind")

    def __init__(self, is_max: bool, items: list[tuple[Optional[Node], Node]]) -> None:
        self.is_max, self.items = is_max, items
        self.kind = "num"
        vs: frozenset[int] = frozenset()
        for g, n in items:
            vs |= n.vars | (g.vars if g is not None else frozenset())
        self.vars = vs

    def fwd(self, D: Domains) -> Abstract:
        sure: list[Any] = []  # abstract values of numeric items: intervals
        maybe: list[Any] = []
        for g, n in self.items:
            r = T if g is None else as_bool(g.fwd(D))
            if r == F:
                continue
            (sure if r == T else maybe).append(n.fwd(D))
        allv = sure + maybe
        if not allv:
            return (INF, -INF)
        if self.is_max:
            lo = max(v[0] for v in sure) if sure else min(v[0] for v in allv)
            return (lo, max(v[1] for v in allv))
        hi = min(v[1] for v in sure) if sure else max(v[1] for v in allv)
        return (min(v[0] for v in allv), hi)

    def bwd(self, C: Narrowing, target: Abstract) -> bool:
        lo, hi = target
        for g, n in self.items:  # max <= hi bounds every present item (min >= lo likewise)
            if g is None or as_bool(g.fwd(C.D)) == T:
                if not n.bwd(C, (-INF, hi) if self.is_max else (lo, INF)):
                    return False
        return True

    def ev(self, A: list) -> Any:
        vals = [n.ev(A) for g, n in self.items if g is None or g.ev(A)]
        if not vals:
            return UNDEFINED
        require_defined(*vals)
        return max(vals) if self.is_max else min(vals)




def conj(nodes: Iterable[Node]) -> Optional[Node]:
    ns = list(nodes)
    if not ns:
        return None
    return ns[0] if len(ns) == 1 else And(ns)



# -- added for the relation language (issue #13): one block ------------------------------------
class AsInterval(Node):
    """A numeric node seen through its interval: a set-valued target (from a table lookup, an
    element `Select` or a membership) narrows it by that set's hull. Arithmetic nodes narrow by
    intervals only, so the grounder wraps them in this where a set target can reach them."""

    __slots__ = ("a", "kind")

    def __init__(self, a: Node) -> None:
        self.a, self.kind = a, a.kind
        self.vars = a.vars

    def fwd(self, D: Domains) -> Abstract:
        return self.a.fwd(D)

    def bwd(self, C: Narrowing, target: Abstract) -> bool:
        if isinstance(target, frozenset):
            nums = [x for x in target if isinstance(x, (int, Fraction)) and not isinstance(x, bool)]
            if not nums:
                return False
            return self.a.bwd(C, (min(nums), max(nums)))
        return self.a.bwd(C, target)

    def ev(self, A: list) -> Any:
        return self.a.ev(A)


class Scale(Node):
    """a * k for an exact constant k != 0 (division by a constant: a / d is a * (1/d)). Its
    narrowing divides by k exactly (Fractions, never floats), so a fixed integer `a` and an
    integer target meet exactly."""

    __slots__ = ("a", "k")

    def __init__(self, a: Node, k: Any) -> None:
        assert k != 0
        self.a, self.k = a, k
        self.vars = a.vars

    def fwd(self, D: Domains) -> Abstract:
        a: Interval = self.a.fwd(D)  # type: ignore[assignment]
        if is_undefined(a):
            return (INF, -INF)
        x, y = a[0] * self.k, a[1] * self.k
        return (x, y) if x <= y else (y, x)

    def bwd(self, C: Narrowing, target: Abstract) -> bool:
        lo, hi = target

        def div(t: Any) -> Any:
            return t / self.k if isinstance(t, float) else Fraction(t) / self.k

        x, y = div(lo), div(hi)
        return self.a.bwd(C, (x, y) if self.k > 0 else (y, x))

    def ev(self, A: list) -> Any:
        return _norm(self.a.ev(A) * self.k)
