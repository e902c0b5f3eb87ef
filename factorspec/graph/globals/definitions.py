"""Equations that define one numeric slot by an expression (`y == e`), read the same way by every
recogniser that follows definitions (sum_reach, monotone_chain)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Optional

from factorspec.graph.expr import Cmp, Node, Var, VarRef


def plain_num_var(n: Node) -> Optional[Var]:
    """The numeric slot `n` reads, when `n` is that slot alone (no table values, no guard)."""
    if isinstance(n, VarRef) and n.var.values is None and n.var.kind == "num" and n.var.guard is None:
        return n.var
    return None


def equation_sides(n: Node) -> Iterator[tuple[Var, Node]]:
    """(y, e) for each side of `n` that reads `y == e`: y a plain numeric slot, e an expression
    over other slots."""
    if not isinstance(n, Cmp) or n.op != "==":
        return
    for y_side, e in ((n.a, n.b), (n.b, n.a)):
        y = plain_num_var(y_side)
        if y is not None and e.vars and y.id not in e.vars:
            yield y, e
