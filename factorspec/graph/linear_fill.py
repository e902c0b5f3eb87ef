"""Filling the open variables that only linear relations constrain, without search.

Why: `total == sum(a[*])` over thousands of items leaves every item open after propagation, and
the search would decide them one by one (a node each, and every node re-reads the whole sum).
Here each open variable, in the search's branch order, takes the least value that keeps every
linear relation it occurs in within reach of its target under running bounds (sum of the terms'
least and greatest values), updated per changed term, not re-read per variable: O(terms) for
the whole fill.

For `==` it also follows congruence: where every open term moves the sum by multiples of an
integer step, the sum can only meet 0 if its least value is a multiple of their gcd (so
`total == sum(3 * x for x ...)` never fills total with a value 3 does not divide).

Exactness: the fill only proposes a record; the solver accepts it only when every factor holds
on it exactly (`_Search._exact`), and otherwise searches as before. The bounds (and congruence) test is a
necessary condition of a value having a completion, so a value it refuses has none; hence when
the fill completes, its record is the least one in branch order: the very record the search
finds first (answers do not depend on whether the fill succeeded).
"""
from __future__ import annotations

import math
import time
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Optional

from factorspec.errors import BudgetExceeded
from factorspec.graph.domain import INF, dmin, dsize
from factorspec.graph.expr import Arith, Cmp, Const, Node, Scale, T, Unary, VarRef, as_bool, is_undefined
from factorspec.graph.globals.linear import LinSum

if TYPE_CHECKING:
    from factorspec.graph.solver import Problem, _Search

CMP = ("==", "!=", "<=", "<", ">=", ">")
INTERVAL_TRIES = 64  # values tried upwards from the least one the bounds allow, in a huge domain
Reading = tuple[str, list[tuple[Any, Node]], Any]  # (op, [(coef, term)], const): sum op 0


def reading(n: Node) -> Optional[Reading]:
    """A comparison of numbers `X op Y` read as `sum(coef * term) + const op 0` (X - Y flattened
    through sums, differences, negation and constant factors; any other node is a term), or
    None when `n` is not such a comparison."""
    if not isinstance(n, Cmp) or n.op not in CMP:
        return None
    if n.a.kind == "sym" or n.b.kind == "sym":
        return None
    terms: list[tuple[Any, Node]] = []
    const: Any = 0
    todo: list[tuple[Any, Node]] = [(1, n.a), (-1, n.b)]
    while todo:  # explicit stack: sums may nest deeply
        c, x = todo.pop()
        if c == 0:
            continue
        if isinstance(x, Const):
            if x.kind == "sym" or isinstance(x.v, (str, type(None))):
                return None
            const += c * x.v
        elif isinstance(x, LinSum):
            const += c * x.const
            todo.extend((c * ci, t) for ci, t in x.terms)
        elif isinstance(x, Arith) and x.op in ("+", "-"):
            todo.append((c, x.a))
            todo.append((c if x.op == "+" else -c, x.b))
        elif isinstance(x, Arith) and x.op == "*" and isinstance(x.a, Const) and x.a.kind == "num":
            todo.append((c * x.a.v, x.b))
        elif isinstance(x, Arith) and x.op == "*" and isinstance(x.b, Const) and x.b.kind == "num":
            todo.append((c * x.b.v, x.a))
        elif isinstance(x, Unary) and x.op == "neg":
            todo.append((-c, x.a))
        elif isinstance(x, Scale):
            todo.append((c * x.k, x.a))
        else:
            terms.append((c, x))
    return n.op, terms, const


def _within(op: str, lo: Any, hi: Any) -> bool:
    """Can a sum within [lo, hi] be `op 0`?"""
    if op == "==":
        return lo <= 0 <= hi
    if op == "<=":
        return lo <= 0
    if op == "<":
        return lo < 0
    if op == ">=":
        return hi >= 0
    if op == ">":
        return hi > 0
    return not (lo == hi == 0)  # !=


def _plain(t: Node) -> bool:
    return type(t) is VarRef and t.var.values is None and t.kind == "num"


class _Rel:
    """One linear relation during a fill: its running bounds and each term's share of them."""

    __slots__ = ("op", "terms", "lo", "hi", "slo", "shi", "steps")

    def __init__(self, op: str, terms: list[tuple[Any, Node]], lo: list, hi: list, const: Any) -> None:
        self.op, self.terms, self.lo, self.hi = op, terms, lo, hi
        self.slo = const + sum(lo)
        self.shi = const + sum(hi)
        # for `==`: how many open terms move the sum by each integer step (coef * var step);
        # None when some open term is not such a plain term (then no congruence is followed)
        self.steps: Optional[dict[int, int]] = {} if op == "==" else None

    def congruent(self, slo: Any, fixed: list[int]) -> bool:
        """With the terms `fixed` decided, can the open terms still bring the sum to 0 modulo
        the gcd g of their steps? Every completion's sum is slo plus a multiple of g (each
        open term moves by multiples of its step from its least value), so slo % g must be 0."""
        if not self.steps:
            return True
        left = dict(self.steps)
        for ti in fixed:
            st = _step(self.terms[ti])
            if st is not None:
                left[st] -= 1
        g = 0
        for st, k in left.items():
            if k:
                g = math.gcd(g, st)
        return g <= 1 or slo % g == 0

    def decide(self, fixed: list[int]) -> None:
        if self.steps:
            for ti in fixed:
                st = _step(self.terms[ti])
                if st is not None:
                    self.steps[st] -= 1


def _step(term: tuple[Any, Node]) -> Optional[int]:
    """coef * var step of a plain integer term, or None."""
    c, t = term
    if not _plain(t):
        return None
    st = c * t.var.step  # type: ignore[attr-defined]
    if isinstance(st, Fraction):
        if st.denominator != 1:
            return None
        st = int(st)
    return abs(st) if isinstance(st, int) else None


def _bounds(c: Any, t: Node, D: list) -> Optional[tuple[Any, Any]]:
    iv = t.fwd(D)
    if isinstance(iv, frozenset) or is_undefined(iv):
        return None
    a, b = c * iv[0], c * iv[1]
    return (a, b) if a <= b else (b, a)


def _plan(p: Problem) -> list[Optional[Reading]]:
    got = p.backend_cache.get("linear_fill")
    if got is None:
        got = [reading(f.node) for f in p.factors]
        p.backend_cache["linear_fill"] = got
    return got


def _least(v: Any, occ: list, lo: int) -> int:
    """The least internal value >= lo of var `v` that its plain occurrences (`coef * v`, every
    occurrence of it in a relation) allow by the other terms' bounds; `lo` where some relation
    has another kind of term of it."""
    best = lo
    for rel, tis in occ:
        a: Any = 0
        for ti in tis:
            c, t = rel.terms[ti]
            if not _plain(t):
                return best
            a += c * t.var.step
        if a == 0 or rel.op not in ("==", "<=", "<", ">=", ">"):
            continue
        base_lo = rel.slo - sum(rel.lo[ti] for ti in tis)
        base_hi = rel.shi - sum(rel.hi[ti] for ti in tis)
        # base + a*k within the op's target: the least k of the allowed range
        need: Any = None
        if a > 0 and rel.op in ("==", ">=", ">") and base_hi not in (INF, -INF):
            q = Fraction(-base_hi) / a  # base_hi + a*k >= 0 (> 0)
            need = math.floor(q) + 1 if rel.op == ">" else math.ceil(q)
        elif a < 0 and rel.op in ("==", "<=", "<") and base_lo not in (INF, -INF):
            q = Fraction(-base_lo) / a  # base_lo + a*k <= 0 (< 0), dividing by a < 0 flips
            need = math.floor(q) + 1 if rel.op == "<" else math.ceil(q)
        if need is not None and need > best:
            best = need
    return best


_SORTED: dict[frozenset, list[int]] = {}


def _sorted(d: frozenset) -> list[int]:
    """A small domain's values in increasing order (cached: along a fill most items share a few
    domains, and a frozenset keeps its hash)."""
    got = _SORTED.get(d)
    if got is None:
        if len(_SORTED) > 4096:
            _SORTED.clear()
        got = _SORTED[d] = sorted(d)
    return got


def fill(s: _Search, D: list) -> Optional[list]:
    """A solution extending D (propagated) by the linear fill, or None when the fill does not
    apply (a factor that is neither entailed nor linear; globals that pick the branching order)
    or does not complete exactly. D is not changed."""
    p = s.p
    if p.pickers:
        return None
    plan = _plan(p)
    rels: list[_Rel] = []
    for fi, r in enumerate(plan):
        node = p.factors[fi].node
        if as_bool(node.fwd(D)) == T:
            continue
        if r is None:
            return None  # a factor the fill cannot follow: the search decides
        op, terms, const = r
        los, his = [], []
        for c, t in terms:
            b = _bounds(c, t, D)
            if b is None:
                return None
            los.append(b[0])
            his.append(b[1])
        rels.append(_Rel(op, terms, los, his, const))
    W = list(D)
    open_ = {vid for vid, d in enumerate(W) if dsize(d) > 1}
    occ: dict[int, dict[int, tuple[_Rel, list[int]]]] = {}
    for ri, rel in enumerate(rels):
        for ti, (_c, t) in enumerate(rel.terms):
            opened = False
            for u in t.vars:
                if u in open_:
                    opened = True
                    occ.setdefault(u, {}).setdefault(ri, (rel, []))[1].append(ti)
            if opened and rel.steps is not None:
                st = _step(rel.terms[ti])
                if st is None:
                    rel.steps = None
                else:
                    rel.steps[st] = rel.steps.get(st, 0) + 1
    deadline = s.deadline
    for n, vid in enumerate(p.branch_order):
        d = W[vid]
        if dsize(d) <= 1:
            continue
        if not n & 1023 and time.monotonic() > deadline:
            used = round(time.monotonic() - deadline + s.budget.seconds, 3)
            raise BudgetExceeded("seconds", s.budget.seconds, used)
        v = p.vars[vid]
        where = list(occ.get(vid, {}).values())
        if not where or (v.guard is not None and as_bool(v.guard.fwd(W)) == (0, 0)):
            cands: Any = [dmin(d)]  # unconstrained (or an absent slot): the search takes its least value
        else:
            if isinstance(d, frozenset):  # a small domain: its values upwards (each test O(1))
                cands = _sorted(d)
            else:  # a huge one: upwards from the least value its plain occurrences allow
                k0 = max(_least(v, where, d[0]), d[0])
                cands = range(k0, min(d[1], k0 + INTERVAL_TRIES - 1) + 1)
        for k in cands:
            W[vid] = frozenset([k])
            new = []
            ok = True
            for rel, tis in where:
                dlo = dhi = 0
                got = []
                for ti in tis:
                    c, t = rel.terms[ti]
                    b = _bounds(c, t, W)
                    if b is None:
                        ok = False
                        break
                    dlo += b[0] - rel.lo[ti]
                    dhi += b[1] - rel.hi[ti]
                    got.append((ti, b))
                if not ok or not _within(rel.op, rel.slo + dlo, rel.shi + dhi) \
                        or not rel.congruent(rel.slo + dlo, tis):
                    ok = False
                    break
                new.append((rel, dlo, dhi, got))
            if ok:
                for rel, dlo, dhi, got in new:
                    rel.slo += dlo
                    rel.shi += dhi
                    rel.decide([ti for ti, _b in got])
                    for ti, b in got:
                        rel.lo[ti], rel.hi[ti] = b
                break
        else:
            return None  # no value passes the bounds test here: the search decides
    if not s._exact(W):
        return None
    return [dmin(x) for x in W]
