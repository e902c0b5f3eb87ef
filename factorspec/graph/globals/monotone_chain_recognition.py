"""Recognition of `MonotoneChain` (globals/monotone_chain.py) from the grounded factors.

A definition is a top-level factor `y == e` (either side) where y is a plain number slot that e
does not mention. From each plain number slot x, the chain takes every definition whose
expression reads only x and slots already in the chain and is non-decreasing in each of them
(slots, constants, `+`, `-` of a constant, `*` or `/` by a positive constant, `round`, sums with
positive coefficients), in factor order, each y once. A chain is posted only where composing
pays: some definition reads two or more chain slots (two paths from x meet, as `total ==
subtotal + tax` with `tax` a function of `subtotal`); a single path is what the factors' own
interval narrowing already does exactly enough. Structure only, never names.
"""
from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any, Optional

from factorspec.graph.expr import Arith, AsInterval, Const, Node, Scale, Unary, Var, VarRef
from factorspec.graph.globals.definitions import equation_sides, plain_num_var
from factorspec.graph.globals.linear import LinSum
from factorspec.graph.globals.monotone_chain import MonotoneChain

if TYPE_CHECKING:
    from factorspec.graph.ground import Factor

MAX_CHAIN = 64  # definitions followed from one source


def _const(n: Node) -> Optional[Any]:
    if isinstance(n, Const) and n.kind == "num":
        return n.v
    return None


def non_decreasing(n: Node) -> bool:
    """Whether n is non-decreasing in each variable it reads (a sufficient, structural test)."""
    if isinstance(n, Const):
        return n.kind == "num"
    if isinstance(n, VarRef):
        return plain_num_var(n) is not None
    if isinstance(n, AsInterval):
        return non_decreasing(n.a)
    if isinstance(n, Scale):
        return n.k > 0 and non_decreasing(n.a)
    if isinstance(n, Unary):
        return n.op == "round" and non_decreasing(n.a)
    if isinstance(n, LinSum):
        return all(c > 0 and non_decreasing(t) for c, t in n.terms)
    if isinstance(n, Arith):
        if n.op == "+":
            return non_decreasing(n.a) and non_decreasing(n.b)
        if n.op == "-":
            return non_decreasing(n.a) and not n.b.vars and _const(n.b) is not None
        if n.op in ("*", "/"):
            ca, cb = _const(n.a), _const(n.b)
            if n.op == "*" and ca is not None and ca >= 0:
                return non_decreasing(n.b)
            if cb is not None and Fraction(cb) > 0:
                return non_decreasing(n.a)
        return False
    return False


def definitions(factors: list[Factor]) -> list[tuple[Var, Node]]:
    out = []
    for f in factors:
        for y, e in equation_sides(f.node):
            if non_decreasing(e):
                out.append((y, e))
                break
    return out


def recognise(vars: list[Var], factors: list[Factor]) -> list[Node]:
    """One `MonotoneChain` per source slot whose chain has two paths that meet."""
    defs = definitions(factors)
    if len(defs) < 2:
        return []
    out: list[Node] = []
    for x in vars:
        if x.values is not None or x.kind != "num" or x.guard is not None or x.structural:
            continue
        inside = {x.id}
        chain: list[tuple[Var, Node]] = []
        grew = True
        while grew and len(chain) < MAX_CHAIN:
            grew = False
            for y, e in defs:
                if y.id not in inside and e.vars <= inside:
                    chain.append((y, e))
                    inside.add(y.id)
                    grew = True
        if any(len(e.vars) >= 2 for _y, e in chain):
            out.append(MonotoneChain(x, chain, len(vars)))
    return out
