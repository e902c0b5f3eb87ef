"""Interchangeable array items under a question's domains, verified: sound symmetry breaking.

Why: a packing list's positions are interchangeable (the relations read `packed[*]` as a set),
so proving that 10 items cannot fit searches every order of every choice again: CP-SAT passes
30 s on it; with the positions in order it proves it in 0.1 s. A question "is there a record
within D?" keeps its answer when ordering constraints are added that every record satisfies
after some permutation of interchangeable items: if a record exists, the permuted one exists and
satisfies them. The record found is a record of D all the same (every factor is checked on it).

Verified, never assumed: blocks are the items of one array (variables whose paths differ only in
that array's index), present under D, with equal domains slot by slot. Swapping two adjacent
blocks must map the multiset of factors onto itself, compared in a canonical form of each factor
under D: a subexpression whose variables D fixes becomes its exact value (`ev`), constant
conjuncts and branches fold away (what guards of present items become), and the operands of
commutative nodes (and, or, sums, all_different, min/max) are sorted, but only where no operand
can fail to have a value (an `ev` that short-circuits could otherwise tell orders apart). A node
type without a canonical form here makes its factor unmatchable (no symmetry is claimed).
Adjacent transpositions that hold generate every permutation of their run of blocks, so each
run may be ordered: the first slot of each block, non-decreasing (implied by sorting the blocks
lexicographically).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Hashable
from fractions import Fraction
from typing import TYPE_CHECKING, Optional

from factorspec.graph import expr as E
from factorspec.graph.domain import dmin, dsize, dvalues
from factorspec.graph.globals.all_different import AllDiff
from factorspec.graph.globals.linear import LinSum

if TYPE_CHECKING:
    from factorspec.graph.solver import Problem

MAX_BLOCKS = 64  # blocks of one array tried (each adjacent pair costs a canonical pass)
MAX_DOMAIN = 4096  # a Lookup key with more values than this is not checked (taken as may-fail)


class _NoForm(Exception):
    """A node without a canonical form: its factor matches no other."""


_UNDEF = ("undefined",)


class _Canon:
    """Canonical forms of nodes under domains D, variables renamed by `ren` (var id -> var id)."""

    def __init__(self, D: list, ren: dict[int, int], like: Optional[_Canon] = None) -> None:
        """`like`: a _Canon of the same D whose values and safety answers are shared (they do
        not depend on the renaming; every adjacent pair of blocks asks them again)."""
        self.D = D
        self.ren = ren
        self.fixed: list[bool]
        self.A: list
        self.open: frozenset[int]
        self._safe: dict[int, bool]
        self._consts: dict[int, tuple[E.Node, Optional[Hashable]]]
        if like is not None:
            self.fixed, self.A, self.open = like.fixed, like.A, like.open
            self._safe, self._consts = like._safe, like._consts
            return
        self.fixed = [dsize(d) == 1 for d in D]
        self.A = [dmin(d) if f else None for d, f in zip(D, self.fixed)]
        self.open = frozenset(i for i, f in enumerate(self.fixed) if not f)
        self._safe = {}
        self._consts = {}

    # -- values ---------------------------------------------------------------------------
    def _const(self, n: E.Node) -> Optional[Hashable]:
        """n's exact value when D fixes every variable it reads (None otherwise)."""
        if not n.vars.isdisjoint(self.open):
            return None
        k = id(n)
        hit = self._consts.get(k)
        if hit is not None and hit[0] is n:
            return hit[1]
        v = self._const_uncached(n)
        self._consts[k] = (n, v)
        return v

    def _const_uncached(self, n: E.Node) -> Optional[Hashable]:
        try:
            v = n.ev(self.A)
        except (TypeError, ZeroDivisionError):
            return _UNDEF
        if v is E.UNDEFINED:
            return _UNDEF
        if isinstance(v, bool):
            v = int(v)
        return ("c", type(v).__name__, v) if not isinstance(v, Fraction) else ("c", "num", v)

    def safe(self, n: E.Node) -> bool:
        """Whether `ev` of n has a value (raises nothing, returns no UNDEFINED) on every
        assignment within D."""
        k = id(n)
        hit = self._safe.get(k)
        if hit is None:
            hit = self._safe[k] = self._safe_uncached(n)
        return hit

    def _safe_uncached(self, n: E.Node) -> bool:
        c = self._const(n)
        if c is not None:
            return c is not _UNDEF
        t = type(n)
        if t is E.VarRef:
            return True
        if t is E.Const:
            return n.v is not E.UNDEFINED  # type: ignore[attr-defined]
        if t is E.Cmp:
            a, b = n.a, n.b  # type: ignore[attr-defined]
            ok = self.safe(a) and self.safe(b)
            return ok and (n.op in ("==", "!=") or (a.kind != "sym" and b.kind != "sym"))  # type: ignore[attr-defined]
        if t is E.Arith:
            if n.op in ("//", "%"):  # type: ignore[attr-defined]
                d = self._const(n.b)  # type: ignore[attr-defined]
                return d is not None and d is not _UNDEF and d[2] != 0 and self.safe(n.a)  # type: ignore[attr-defined,index]
            return self.safe(n.a) and self.safe(n.b)  # type: ignore[attr-defined]
        if t in (E.Unary, E.Scale, E.AsInterval, E.Not):
            return self.safe(n.a)  # type: ignore[attr-defined]
        if t in (E.And, E.Or):
            return all(self.safe(a) for a in n.args)  # type: ignore[attr-defined]
        if t is E.If:
            return self.safe(n.c) and self.safe(n.a) and self.safe(n.b)  # type: ignore[attr-defined]
        if t is LinSum:
            return all(self.safe(x) for _k, x in n.terms)  # type: ignore[attr-defined]
        if t is AllDiff or t is E.MinMax:
            items = n.items  # type: ignore[attr-defined]
            ok = all((g is None or self.safe(g)) and self.safe(x) for g, x in items)
            return ok and (t is AllDiff or any(g is None or self._const(g) == ("c", "int", 1) for g, _x in items))
        if t is E.Lookup:
            key = n.key  # type: ignore[attr-defined]
            if type(key) is not E.VarRef:
                return False
            d = self.D[key.var.id]
            if dsize(d) > MAX_DOMAIN:
                return False
            try:
                return all(key.var.value(k) in n.table for k in dvalues(d))  # type: ignore[attr-defined]
            except TypeError:
                return False
        return False

    # -- forms ----------------------------------------------------------------------------
    def form(self, n: E.Node) -> Hashable:
        c = self._const(n)
        if c is not None:
            return c
        t = type(n)
        if t is E.VarRef:
            v = n.var.id  # type: ignore[attr-defined]
            return ("v", self.ren.get(v, v))
        if t is E.Cmp:
            # `ev` reads both operands whatever their order: == and != are symmetric, and
            # a > b is b < a (one spelling per comparison, so that swapped items compare equal)
            op, a, b = n.op, self.form(n.a), self.form(n.b)  # type: ignore[attr-defined]
            if op in (">", ">="):
                op, a, b = ("<" if op == ">" else "<="), b, a
            elif op in ("==", "!=") and repr(b) < repr(a):
                a, b = b, a
            return ("cmp", op, a, b)
        if t is E.Arith:
            return ("arith", n.op, self.form(n.a), self.form(n.b))  # type: ignore[attr-defined]
        if t is E.Unary:
            return ("unary", n.op, repr(n.q), self.form(n.a))  # type: ignore[attr-defined]
        if t is E.Scale:
            return ("scale", repr(n.k), self.form(n.a))  # type: ignore[attr-defined]
        if t is E.AsInterval:
            return ("asinterval", self.form(n.a))  # type: ignore[attr-defined]
        if t is E.Not:
            return ("not", self.form(n.a))  # type: ignore[attr-defined]
        if t is E.And or t is E.Or:
            return self._junction(n, t is E.And)
        if t is E.If:
            cond = self.form(n.c)  # type: ignore[attr-defined]
            if isinstance(cond, tuple) and cond[0] == "c" and cond[1] == "int":
                return self.form(n.a if cond[2] else n.b)  # type: ignore[attr-defined]
            a, b = self.form(n.a), self.form(n.b)  # type: ignore[attr-defined]
            if a == b and self.safe(n.c):  # type: ignore[attr-defined]
                return a
            return ("if", n.kind, cond, a, b)
        if t is LinSum:
            terms = [(repr(Fraction(k)), self.form(x)) for k, x in n.terms]  # type: ignore[attr-defined]
            if all(self.safe(x) for _k, x in n.terms):  # type: ignore[attr-defined]
                terms.sort(key=repr)
            return ("linsum", repr(Fraction(n.const)), tuple(terms))  # type: ignore[attr-defined]
        if t is AllDiff or t is E.MinMax:
            items = []
            for g, x in n.items:  # type: ignore[attr-defined]
                gf = None if g is None else self.form(g)
                if gf == ("c", "int", 0):
                    continue  # an absent item
                items.append((None if gf == ("c", "int", 1) else gf, self.form(x)))
            if self.safe(n):
                items.sort(key=repr)
            return ("alldiff",) + tuple(items) if t is AllDiff else ("minmax", n.is_max) + tuple(items)  # type: ignore[attr-defined]
        if t is E.Lookup:
            return ("lookup", n.kind, _table_form(n.table), self.form(n.key))  # type: ignore[attr-defined]
        if t is E.Member:
            return ("member", n.rowset, tuple(self.form(e) for e in n.elems))  # type: ignore[attr-defined]
        raise _NoForm(t.__name__)

    def _junction(self, n: E.Node, is_and: bool) -> Hashable:
        absorb, neutral = (0, 1) if is_and else (1, 0)
        args = []
        for a in n.args:  # type: ignore[attr-defined]
            f = self.form(a)
            if f == ("c", "int", neutral) or f == ("c", "bool", neutral):
                continue
            if f == ("c", "int", absorb) or f == ("c", "bool", absorb):
                if all(self.safe(b) for b in n.args):  # type: ignore[attr-defined]
                    return ("c", "int", absorb)
            args.append(f)
        if not args:
            return ("c", "int", neutral)
        if len(args) == 1:
            # and/or of one operand: its truth (int 0/1), equal as a value to a condition's own
            # (bool or 0/1); any other operand is wrapped
            return args[0] if _is_condition(args[0]) else ("truth", args[0])
        if all(self.safe(a) for a in n.args):  # type: ignore[attr-defined]
            args.sort(key=repr)
        return ("and" if is_and else "or", tuple(args))


def _is_condition(f: Hashable) -> bool:
    """Whether a form's value is a truth value (a comparison, a junction, a negation)."""
    return isinstance(f, tuple) and f[0] in ("cmp", "and", "or", "not", "truth", "alldiff", "member")


_TABLES: dict[int, tuple[dict, Hashable]] = {}


def _table_form(table: dict) -> Hashable:
    """A table by content (kept per object: tables are shared by every instance of a relation)."""
    hit = _TABLES.get(id(table))
    if hit is not None and hit[0] is table:
        return hit[1]
    form = tuple(sorted(((repr(k), repr(v)) for k, v in table.items())))
    if len(_TABLES) > 1024:
        _TABLES.clear()
    _TABLES[id(table)] = (table, form)
    return form


def _arrays(p: Problem, D: list) -> list[list[list[int]]]:
    """Per array, its present items as blocks (var ids in slot order), with equal domains slot by
    slot, in index order; only arrays of two or more such blocks."""
    groups: dict[tuple, dict[int, dict[tuple, int]]] = {}
    for v in p.vars:
        if v.structural:
            continue
        path = v.path
        for j, part in enumerate(path):
            if isinstance(part, int) and not isinstance(part, bool):
                groups.setdefault(path[:j], {}).setdefault(part, {})[path[j + 1:]] = v.id
    out = []
    for items in groups.values():
        if len(items) < 2:
            continue
        shape = None
        blocks: list[list[int]] = []
        for i in sorted(items):
            slots = items[i]
            keys = tuple(sorted(slots, key=repr))
            if shape is None:
                shape = keys
            if keys != shape:
                blocks = []
                break
            ids = [slots[k] for k in keys]
            if any(not _present(p, D, vid) for vid in ids):
                continue
            blocks.append(ids)
        if len(blocks) >= 2:
            out.append(blocks[:MAX_BLOCKS])
    return out


def _present(p: Problem, D: list, vid: int) -> bool:
    g = p.vars[vid].guard
    return g is None or E.as_bool(g.fwd(D)) == E.T


def chains(p: Problem, D: list) -> list[list[int]]:
    """Chains of var ids that may be ordered (non-decreasing) without changing whether a record
    lies within D (module docstring); empty where no symmetry is verified."""
    out: list[list[int]] = []
    base = _Canon(D, {})
    forms: dict[int, Optional[Hashable]] = {}

    def form_of(c: _Canon, fi: int) -> Optional[Hashable]:
        try:
            return c.form(p.factors[fi].node)
        except _NoForm:
            return None  # a factor on the swapped variables without a form: no symmetry claimed

    touching: dict[int, list[int]] = {}
    for fi, f in enumerate(p.factors):
        for v in f.node.vars:
            touching.setdefault(v, []).append(fi)
    for blocks in _arrays(p, D):
        run = [blocks[0]]
        for a, b in zip(blocks, blocks[1:]):
            ok = all(D[x] == D[y] for x, y in zip(a, b))
            if ok:
                ren = dict(zip(a, b))
                ren.update({y: x for x, y in zip(a, b)})
                fis = sorted({fi for v in ren for fi in touching.get(v, ())})
                for fi in fis:
                    if fi not in forms:
                        forms[fi] = form_of(base, fi)
                swapped = _Canon(D, ren, like=base)
                after = [form_of(swapped, fi) for fi in fis]
                ok = (all(forms[fi] is not None for fi in fis) and all(f is not None for f in after)
                      and Counter(forms[fi] for fi in fis) == Counter(after))
            if ok:
                run.append(b)
                continue
            if len(run) >= 2:
                out.append(_lead(run, D))
            run = [b]
        if len(run) >= 2:
            out.append(_lead(run, D))
    return out


def _lead(run: list[list[int]], D: list) -> list[int]:
    """The slot of the blocks to order by: the one with the most values (any slot is sound)."""
    j = max(range(len(run[0])), key=lambda k: (dsize(D[run[0][k]]), -k))
    return [blk[j] for blk in run]
