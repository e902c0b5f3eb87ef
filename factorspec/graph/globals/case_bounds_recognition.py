"""Recognition of `CaseBounds` (globals/case_bounds.py) from the grounded factors.

A factor qualifies when it is a disjunction of two parts, `not (x == c)` (or `x != c`) and a
comparison or conjunction of comparisons `y op k` (op one of <, <=, ==, >=, >; either side), with
x an unguarded enum slot and each y an unguarded plain integer slot of step 1, c and k constants;
that is how `x == c implies (...)` grounds. The qualifying factors are grouped by x: one node per
x, covering them. Structure only, never names.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from factorspec.graph.domain import INF
from factorspec.graph.expr import And, Cmp, Const, Node, Not, Or, Var, VarRef, _eq
from factorspec.graph.globals.case_bounds import CaseBounds

if TYPE_CHECKING:
    from factorspec.graph.ground import Factor

_FLIP = {"<": ">", "<=": ">=", "==": "==", ">=": "<=", ">": "<"}


def recognise(vars: list[Var], factors: list[Factor]) -> list[Node]:
    """One `CaseBounds` per enum slot with at least two qualifying factors."""
    return list(case_nodes(vars, factors))


def case_nodes(vars: list[Var], factors: list[Factor]) -> list[CaseBounds]:
    """`recognise`, typed (the sequence probe reads the nodes' slots and covers)."""
    groups: dict[int, tuple[dict[int, dict[int, tuple[Any, Any]]], set[int]]] = {}
    for fi, f in enumerate(factors):
        got = _case(f.node, vars)
        if got is None:
            continue
        x, ks, bounds = got
        cases, covers = groups.setdefault(x, ({}, set()))
        covers.add(fi)
        for k in ks:
            b = cases.setdefault(k, {})
            for y, (lo, hi) in bounds.items():
                plo, phi = b.get(y, (-INF, INF))
                b[y] = (max(plo, lo), min(phi, hi))
    return [CaseBounds(x, cases, covers) for x, (cases, covers) in groups.items() if len(covers) >= 2]


def _case(node: Node, vars: list[Var]) -> Optional[tuple[int, list[int], dict[int, tuple[Any, Any]]]]:
    """(x, the internal values of x equal to c, {y: (least, greatest)}) of `not (x == c) or body`."""
    if not isinstance(node, Or) or len(node.args) != 2:
        return None
    for guard, body in (node.args, node.args[::-1]):
        g = _guard(guard, vars)
        if g is None:
            continue
        bounds = _bounds(body, vars)
        if bounds is None:
            return None
        x, c = g
        v = vars[x]
        assert v.values is not None  # _guard takes enum slots only
        ks = [k for k, val in enumerate(v.values) if _eq(val, c)]
        if not ks:
            return None  # x never equals c: the factor is always true (left to itself)
        return x, ks, bounds
    return None


def _guard(n: Node, vars: list[Var]) -> Optional[tuple[int, Any]]:
    """(x, c) when `n` is `not (x == c)` or `x != c` over an enum slot x."""
    if isinstance(n, Not) and isinstance(n.a, Cmp) and n.a.op == "==":
        a, b = n.a.a, n.a.b
    elif isinstance(n, Cmp) and n.op == "!=":
        a, b = n.a, n.b
    else:
        return None
    if isinstance(b, VarRef):
        a, b = b, a
    if not isinstance(a, VarRef) or not isinstance(b, Const):
        return None
    v = a.var
    if v.values is None or v.kind == "bool" or v.guard is not None:
        return None
    return v.id, b.v


def _bounds(n: Node, vars: list[Var]) -> Optional[dict[int, tuple[Any, Any]]]:
    """{y: (least, greatest)} of a comparison `y op k` or a conjunction of them, else None."""
    parts = [n]
    out: dict[int, tuple[Any, Any]] = {}
    while parts:
        p = parts.pop()
        if isinstance(p, And):
            parts += p.args
            continue
        if not isinstance(p, Cmp) or p.op not in _FLIP:
            return None
        a, b, op = p.a, p.b, p.op
        if isinstance(a, Const):
            a, b, op = b, a, _FLIP[op]
        if not isinstance(a, VarRef) or not isinstance(b, Const):
            return None
        y, k = a.var, b.v
        if y.values is not None or y.kind != "num" or y.step != 1 or y.guard is not None \
                or not isinstance(k, int) or isinstance(k, bool):
            return None
        lo, hi = {"<": (-INF, k - 1), "<=": (-INF, k), "==": (k, k), ">=": (k, INF), ">": (k + 1, INF)}[op]
        plo, phi = out.get(y.id, (-INF, INF))
        out[y.id] = (max(plo, lo), min(phi, hi))
    return out or None
