"""all_different: the values of the present items are pairwise distinct.

Posted explicitly: the grounder builds one `AllDiff` node per `all_different(...)` relation
instance (it is a factor, decided exactly by `ev`). Propagation is forward checking (a value
fixed at one item leaves the others) plus the pigeonhole bound (the items need as many distinct
values as there are items); over plain slots it runs directly on the variables' domains.
Stronger reasoning on recognised patterns (Hall sets, paths, time chains) is the implied
`DistinctSequence` of `globals/sequence.py`, posted by the registry.
"""
from __future__ import annotations

from typing import Any, Optional

from factorspec.graph.domain import Domains, Narrowing, dmin, dsize
from factorspec.graph.expr import Abstract, F, Node, T, U, VarRef, as_bool, require_defined, sym


class AllDiff(Node):
    """all_different over guarded items (absent items are ignored)."""

    kind = "bool"
    __slots__ = ("items",)

    def __init__(self, items: list[tuple[Optional[Node], Node]]) -> None:
        self.items = items
        vs: frozenset[int] = frozenset()
        for g, n in items:
            vs |= n.vars | (g.vars if g is not None else frozenset())
        self.vars = vs

    def _present(self, D: Domains) -> tuple[list, bool]:
        out, undecided = [], False
        for g, n in self.items:
            r = T if g is None else as_bool(g.fwd(D))
            if r == T:
                out.append(n)
            elif r == U:
                undecided = True
        return out, undecided

    def fwd(self, D: Domains) -> Abstract:
        nodes, undecided = self._present(D)
        seen = set()
        fixed = True
        for n in nodes:
            s = sym(n.fwd(D))
            if s is not None and len(s) == 1:
                v = next(iter(s))
                if v in seen:
                    return F
                seen.add(v)
            else:
                fixed = False
        return T if fixed and not undecided else U

    def bwd(self, C: Narrowing, target: Abstract) -> bool:
        if target != T:
            return True
        nodes, _ = self._present(C.D)
        if all(isinstance(n, VarRef) for n in nodes):
            return self._bwd_vars(C, nodes)
        changed = True
        while changed:
            changed = False
            fixed = []
            for n in nodes:
                s = sym(n.fwd(C.D))
                if s is not None and len(s) == 1:
                    fixed.append((n, next(iter(s))))
            seen: dict = {}
            for n, v in fixed:
                if v in seen:
                    return False
                seen[v] = n
            for n in nodes:
                for v, owner in seen.items():
                    if owner is not n:
                        before = len(C.changed)
                        if not n.bwd_ne(C, v):
                            return False
                        if len(C.changed) != before:
                            changed = True
        # pigeonhole: the items need at least as many distinct values as there are items
        union: set = set()
        for n in nodes:
            s = sym(n.fwd(C.D))
            if s is None:
                return True
            union |= s
        return len(union) >= len(nodes)

    @staticmethod
    def _bwd_vars(C: Narrowing, nodes: list[VarRef]) -> bool:
        """Forward checking plus pigeonhole, directly on the variables' domains."""
        D = C.D
        done: set = set()
        while True:
            fixed: dict = {}
            for n in nodes:
                vid = n.var.id
                d = D[vid]
                if dsize(d) == 1:
                    val = n.var.value(dmin(d))
                    if val in fixed and fixed[val] != vid:
                        return False
                    fixed[val] = vid
            new = [val for val in fixed if val not in done]
            if not new:
                break
            done.update(new)
            newset = set(new)
            for n in nodes:
                vid = n.var.id
                d = D[vid]
                if dsize(d) == 1 or not isinstance(d, frozenset):
                    continue
                var = n.var
                drop = [k for k in d if var.value(k) in newset]
                if drop and not C.set(vid, d - frozenset(drop)):
                    return False
        union: set = set()
        for n in nodes:
            s = sym(n.fwd(D))
            if s is None:
                return True
            union |= s
        return len(union) >= len(nodes)

    def ev(self, A: list) -> Any:
        vals = [n.ev(A) for g, n in self.items if g is None or g.ev(A)]
        require_defined(*vals)
        return int(len(vals) == len(set(vals)))
