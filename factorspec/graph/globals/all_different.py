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
    __slots__ = ("items", "_guard_vars", "_present_memo", "_at_memo")

    def __init__(self, items: list[tuple[Optional[Node], Node]]) -> None:
        self.items = items
        vs: frozenset[int] = frozenset()
        gs: frozenset[int] = frozenset()
        for g, n in items:
            vs |= n.vars | (g.vars if g is not None else frozenset())
            gs |= g.vars if g is not None else frozenset()
        self.vars = vs
        self._guard_vars = tuple(sorted(gs))
        self._present_memo: dict[tuple, tuple[list, bool]] = {}
        self._at_memo: dict[tuple, tuple[int, ...]] = {}

    def _present(self, D: Domains) -> tuple[list, bool]:
        """The items whose guard holds, and whether some guard is undecided: a function of the
        guards' variables alone, kept per their domains. Why: an array of n items has n guards
        (`length > i`) and every propagation and check read all of them, n guard evaluations
        where one lookup does (865 items: a third of a uniqueItems enum's mask time). The list
        is shared: callers only read it."""
        key = tuple(D[v] for v in self._guard_vars)
        hit = self._present_memo.get(key)
        if hit is not None:
            return hit
        out, undecided = [], False
        for g, n in self.items:
            r = T if g is None else as_bool(g.fwd(D))
            if r == T:
                out.append(n)
            elif r == U:
                undecided = True
        if len(self._present_memo) >= 256:
            self._present_memo.clear()
        self._present_memo[key] = (out, undecided)
        return out, undecided

    def _present_at(self, A: list) -> tuple[int, ...]:
        """The indices of the items whose guard holds on the complete assignment A, kept per the
        guards' values (as `_present` per their domains: a check of a record read every guard)."""
        key = tuple(A[v] for v in self._guard_vars)
        hit = self._at_memo.get(key)
        if hit is None:
            if len(self._at_memo) >= 256:
                self._at_memo.clear()
            hit = self._at_memo[key] = tuple(i for i, (g, _n) in enumerate(self.items) if g is None or g.ev(A))
        return hit

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
        items = self.items
        vals = [items[i][1].ev(A) for i in self._present_at(A)]
        require_defined(*vals)
        return int(len(vals) == len(set(vals)))
