"""Recognition of `SumReach` (globals/sum_reach.py) from the grounded factors.

It reads a top-level `s == sum(coef * term)` (a flat `LinSum`, either side) over a plain number
slot s, where every term is a line of a few small slots: either an expression over explicit
(small-domain) slots, as `sum(qty * price for ...)`, or a number slot `a` that a factor `a == e`
defines from such slots, as an invoice's `amount == qty * price[item]`. Each line's rows (its
slots' values and the term's value) are enumerated once from the slots' initial domains; a row
whose expression has no value, or whose value is no value of `a`, is dropped (its factor is
false there). Lines are keyed when one slot of each line is an item of one plain
`all_different` (distinct items per invoice line). Structure only, never names.
"""
from __future__ import annotations

import itertools
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Optional

from factorspec.graph.expr import Cmp, Node, Var, VarRef
from factorspec.graph.globals.all_different import AllDiff
from factorspec.graph.globals.definitions import equation_sides, plain_num_var
from factorspec.graph.globals.linear import LinSum
from factorspec.graph.globals.sum_reach import Row, SumReach

if TYPE_CHECKING:
    from factorspec.graph.ground import Factor

MAX_ROWS = 4096  # rows enumerated per line
MAX_LINES = 2_000


def _small(vs: list[Var]) -> bool:
    size = 1
    for v in vs:
        if v.guard is not None or v.structural:
            return False
        size *= v.hi - v.lo + 1
        if size > MAX_ROWS:
            return False
    return True


def _rows(vs: list[Var], e: Node, coef: Any, defined: Optional[Var], n_vars: int) -> list[Row]:
    out: list[Row] = []
    A: list[Any] = [0] * n_vars
    for combo in itertools.product(*(range(v.lo, v.hi + 1) for v in vs)):
        for v, k in zip(vs, combo):
            A[v.id] = k
        try:
            val = Fraction(e.ev(A))
        except (TypeError, ZeroDivisionError, ValueError, KeyError, IndexError):
            continue
        r = tuple((v.id, k) for v, k in zip(vs, combo))
        if defined is not None:
            q = val / Fraction(defined.step)
            if q.denominator != 1 or not defined.lo <= q <= defined.hi:
                continue
            r += ((defined.id, int(q)),)
        out.append((r, Fraction(coef) * val))
    return out


def _progressions(lines: list[list[Row]]) -> bool:
    """Whether every line's contributions form an arithmetic progression of one common step
    (integer slots summed as they are): their sums are then every point of one progression
    between the least and the greatest sum, and a dynamic program adds nothing to bounds
    reasoning (short of holes that `!=` cuts, which are left to search)."""
    step = None
    for rows in lines:
        vals = sorted({c for _r, c in rows})
        for a, b in zip(vals, vals[1:]):
            if step is None:
                step = b - a
            if b - a != step:
                return False
    return True


def recognise(vars: list[Var], factors: list[Factor]) -> list[Node]:
    defs: dict[int, Node] = {}
    for f in factors:
        for y, e in equation_sides(f.node):
            if y.id not in defs and _small([vars[i] for i in sorted(e.vars)]):
                defs[y.id] = e
    alldiffs = [frozenset(x.var.id for _g, x in f.node.items if isinstance(x, VarRef)) for f in factors
                if isinstance(f.node, AllDiff) and all(g is None and isinstance(x, VarRef) for g, x in f.node.items)]
    out: list[Node] = []
    for f in factors:
        n = f.node
        if not isinstance(n, Cmp) or n.op != "==":
            continue
        for s_side, total in ((n.a, n.b), (n.b, n.a)):
            s = plain_num_var(s_side)
            if s is None or not isinstance(total, LinSum) or s.id in total.vars or len(total.terms) > MAX_LINES:
                continue
            lines: list[list[Row]] = []
            line_vars: list[frozenset[int]] = []
            for c, t in total.terms:
                a = plain_num_var(t)
                if a is not None and a.id in defs:
                    e = defs[a.id]
                    vs = [vars[i] for i in sorted(e.vars)]
                    rows = _rows(vs, e, c, a, len(vars))
                elif t.vars and _small([vars[i] for i in sorted(t.vars)]):
                    vs = [vars[i] for i in sorted(t.vars)]
                    rows = _rows(vs, t, c, None, len(vars))
                else:
                    break
                if not rows:
                    break
                lines.append(rows)
                line_vars.append(frozenset(v for v, _k in rows[0][0]))
            else:
                if len(lines) < 2:
                    continue
                keys = None
                for ad in alldiffs:
                    ks = [line & ad for line in line_vars]
                    if all(len(k) == 1 for k in ks) and len({next(iter(k)) for k in ks}) == len(ks):
                        keys = [(next(iter(k)), vars[next(iter(k))]) for k in ks]
                        break
                if keys is None and _progressions(lines):
                    break  # the sums are one progression too: bounds reasoning (LinSum) is as exact
                out.append(SumReach(s, Fraction(total.const), lines, keys))
                break
    return out
