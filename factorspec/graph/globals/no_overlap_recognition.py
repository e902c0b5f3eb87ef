"""Recognition of `NoOverlap` (globals/no_overlap.py) from the grounded factors.

It reads the pairwise disjunctions users write for intervals that must not overlap:
    a.end <= b.start or b.end <= a.start            (ends of their own, or start + duration)
    a.room != b.room or a.end <= b.start or ...     (only when they share a resource)
as top-level factors, inside `forall i, j: i < j implies (...)` (the constant condition folds
away) or inside a conjunction (the `no_overlap(...)` function grounds to one). Each disjunct
`X <= Y` (or `<`, `>=`, `>`) must be linear over plain integer slots with integer constants: one
start on one side, the other task's end (its end slot, or its start plus durations) on the other.
Tasks whose every pair is such a disjunction form a clique of the conflict graph; a greedy cover
by cliques of at least three tasks posts one `NoOverlap` per clique. An end slot of its own needs
end - start >= 0 to be known (from a factor such as `end > start` or `end == start + d`, or from
the initial bounds), else the pair is left to the factors. Structure only, never names.
"""
from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Optional

from factorspec.graph.expr import And, Arith, Cmp, Const, Lookup, Node, Or, Unary, Var, VarRef
from factorspec.graph.globals.linear import LinearForm, LinSum, add, as_int, scale
from factorspec.graph.globals.no_overlap import NoOverlap, Task

if TYPE_CHECKING:
    from factorspec.graph.ground import Factor

Lin = tuple[dict[int, int], int]  # sum(coef * var) + const, read as `>= 0`
# sum(coef * var) + const + sum(coef * lookup), read as `>= 0`; a lookup as (coef, least, most value)
Fact = tuple[dict[int, int], Any, list[tuple[int, Any, Any]]]
MAX_TASKS = 2_000  # distinct tasks considered (the clique cover is quadratic in them)


def recognise(vars: list[Var], factors: list[Factor]) -> list[Node]:
    """One `NoOverlap` per clique (of at least three tasks) of pairwise disjunctions."""
    clauses: list[list[Node]] = []
    owner_of: list[int] = []  # the factor each clause comes from
    for fi, f in enumerate(factors):
        cs = _clauses(f.node)
        clauses += cs
        owner_of += [fi] * len(cs)
    facts: list[Fact] = []  # linear facts G >= 0 that every valid record satisfies
    for c in clauses:
        if len(c) == 1:
            facts += _facts(c[0], vars)
    plain: list[tuple[tuple, tuple, int]] = []  # (task_i, task_j, factor) as raw (s, ends, p)
    cond: list[tuple[tuple, tuple, frozenset[int], int]] = []
    other = set()  # factors with a clause that is no pair (they keep propagating)
    for c, fi in zip(clauses, owner_of):
        pair = _pair(c, vars) if len(c) in (2, 3) else None
        if pair is None:
            other.add(fi)
            continue
        ti, tj, res = pair
        if res is None:
            plain.append((ti, tj, fi))
        else:
            cond.append((ti, tj, res, fi))
    if not plain and not cond:
        return []
    tasks: dict[tuple, Optional[Task]] = {}

    def task(raw: tuple) -> Optional[Task]:
        if raw not in tasks:
            tasks[raw] = _task(raw, vars, facts)
        return tasks[raw]

    out: list[NoOverlap] = []
    edges: list[tuple[Any, Any]] = []
    edge_factors: dict[frozenset, set[int]] = {}
    for a, b, fi in plain:
        ta, tb = task(a), task(b)
        if ta is not None and tb is not None:
            edges.append((ta, tb))
            edge_factors.setdefault(frozenset((ta, tb)), set()).add(fi)
        else:
            other.add(fi)
    plain_cliques = _cliques(edges)
    for clique in plain_cliques:
        out.append(NoOverlap(list(clique)))
    # resource-conditional pairs: a task's resource is the slot common to all its pairs
    cands: dict[Task, frozenset[int]] = {}
    typed: list[tuple[Task, Task, frozenset[int], int]] = []
    for a, b, res, fi in cond:
        ta, tb = task(a), task(b)
        if ta is None or tb is None:
            other.add(fi)
            continue
        typed.append((ta, tb, res, fi))
        for t in (ta, tb):
            cands[t] = cands[t] & res if t in cands else res
    owner = {t: next(iter(r)) for t, r in cands.items() if len(r) == 1}
    redges = []
    for ta, tb, res, fi in typed:
        ra, rb = owner.get(ta), owner.get(tb)
        if ra is None or rb is None or frozenset((ra, rb)) != res or not _same_values(vars[ra], vars[rb]):
            other.add(fi)
            continue
        redges.append(((ta, ra), (tb, rb)))
        edge_factors.setdefault(frozenset(((ta, ra), (tb, rb))), set()).add(fi)
    for clique in _cliques(redges):
        if len({r for _t, r in clique}) == len(clique):
            out.append(NoOverlap([t for t, _r in clique], [r for _t, r in clique]))
            plain_cliques.append(clique)
    # a factor made only of pairs inside posted cliques is propagated by them (edge-finding
    # with one-task sets detects what its disjunction does); it still decides exactly
    covered: dict[int, NoOverlap] = {}
    for node, clique in zip(out, plain_cliques):
        for x in clique:
            for y in clique:
                for fi in edge_factors.get(frozenset((x, y)), ()):
                    covered.setdefault(fi, node)
    for fi, node in covered.items():
        if fi not in other:
            node.covers.add(fi)
    return list(out)


# -- reading the factors --------------------------------------------------------------------------
def _step(v: Var) -> Optional[int]:
    """The integer step of a plain number slot (its value is step * internal), else None."""
    if v.values is not None or v.kind != "num":
        return None
    return as_int(v.step)


def _vform(n: Node) -> Optional[LinearForm]:
    """`n` as a linear form over slot *values* (as `linear.linear_form`, which reads step-1 slots
    only; here a slot of any integer step counts by its value: minutes in multiples of 15)."""
    if isinstance(n, Const):
        return ({}, n.v, []) if n.kind == "num" else None
    if isinstance(n, VarRef):
        return ({n.var.id: 1}, 0, []) if _step(n.var) is not None else None
    if isinstance(n, Lookup):
        if n.kind != "num" or not isinstance(n.key, VarRef) or n.key.var.values is None:
            return None
        return {}, 0, [(1, n)]
    if isinstance(n, Unary) and n.op == "neg":
        a = _vform(n.a)
        return None if a is None else scale(a, -1)
    if isinstance(n, LinSum):
        out: Optional[LinearForm] = ({}, n.const, [])
        for c, t in n.terms:
            f = _vform(t)
            if f is None or out is None:
                return None
            out = add(out, scale(f, c))
        return out
    if isinstance(n, Arith) and n.op in ("+", "-"):
        a, b = _vform(n.a), _vform(n.b)
        if a is None or b is None:
            return None
        return add(a, b if n.op == "+" else scale(b, -1))
    return None


def _const(n: Node) -> Optional[bool]:
    if n.vars:
        return None
    try:
        return bool(n.ev([]))
    except (TypeError, ZeroDivisionError):
        return None


def _clauses(n: Node) -> list[list[Node]]:
    """n as a conjunction of clauses (disjunctions of literals), constants folded away; a node
    that is no conjunction of disjunctions is one clause of one literal."""
    k = _const(n)
    if k is not None:
        return []
    if isinstance(n, And):
        out: list[list[Node]] = []
        for a in n.args:
            out += _clauses(a)
        return out
    if isinstance(n, Or):
        lits: list[Node] = []
        stack = list(n.args)
        while stack:
            a = stack.pop(0)
            k = _const(a)
            if k is True:
                return []
            if k is False:
                continue
            if isinstance(a, Or):
                stack = list(a.args) + stack
            else:
                lits.append(a)
        if len(lits) == 1:
            return _clauses(lits[0])
        return [lits]
    return [[n]]


def _lin(n: Node, vars: list[Var]) -> Optional[Lin]:
    f = _vform(n)
    if f is None or f[2]:
        return None
    vs, c, _ = f
    ci = as_int(c)
    if ci is None:
        return None
    out: dict[int, int] = {}
    for v, k in vs.items():
        ki = as_int(k)
        if ki is None or vars[v].guard is not None:
            return None
        out[v] = ki
    return out, ci


def _ineqs(n: Node, vars: list[Var], with_eq: bool = False) -> Optional[list[Lin]]:
    """The linear facts G >= 0 that the comparison `n` says (two for `==` when `with_eq`)."""
    if not isinstance(n, Cmp) or n.op not in ("<", "<=", ">", ">=") + (("==",) if with_eq else ()):
        return None
    a, b = _lin(n.a, vars), _lin(n.b, vars)
    if a is None or b is None:
        return None
    ab = add(a + ([],), scale(b + ([],), -1))  # a - b
    d = (ab[0], ab[1])
    neg = ({v: -k for v, k in d[0].items()}, -d[1])  # b - a
    if n.op == "<=":
        return [neg]
    if n.op == "<":
        return [(neg[0], neg[1] - 1)]
    if n.op == ">=":
        return [d]
    if n.op == ">":
        return [(d[0], d[1] - 1)]
    return [d, neg]


def _facts(n: Node, vars: list[Var]) -> list[Fact]:
    """The linear facts G >= 0 that the comparison `n` says, table lookups kept by their bounds
    (`end - start == dur[title]`: the least duration is the table's least value)."""
    if not isinstance(n, Cmp) or n.op not in ("<", "<=", ">", ">=", "=="):
        return []
    fa, fb = _vform(n.a), _vform(n.b)
    if fa is None or fb is None:
        return []
    vs, c, ls = add(fa, scale(fb, -1))  # a - b
    coefs: dict[int, int] = {}
    for v, k in vs.items():
        ki = as_int(k)
        if ki is None or vars[v].guard is not None:
            return []
        coefs[v] = ki
    looks = []
    for k, look in ls:
        ki = as_int(k)
        vals = list(look.table.values())
        if ki is None or not vals or any(isinstance(x, bool) or not isinstance(x, (int, Fraction)) for x in vals):
            return []
        looks.append((ki, min(vals), max(vals)))
    d: Fact = (coefs, c, looks)
    neg: Fact = ({v: -k for v, k in coefs.items()}, -c, [(-k, lo, hi) for k, lo, hi in looks])  # b - a
    if n.op == "<=":
        return [neg]
    if n.op == "<":
        return [(neg[0], neg[1] - 1, neg[2])]
    if n.op == ">=":
        return [d]
    if n.op == ">":
        return [(d[0], d[1] - 1, d[2])]
    return [d, neg]


def _pair(lits: list[Node], vars: list[Var]) -> Optional[tuple[tuple, tuple, Optional[frozenset[int]]]]:
    """(task i, task j, resource slots or None) when the clause is `i before j or j before i`
    (or `r_i != r_j or ...`)."""
    ineqs: list[Lin] = []
    res: Optional[frozenset[int]] = None
    for lit in lits:
        if isinstance(lit, Cmp) and lit.op == "!=" and isinstance(lit.a, VarRef) and isinstance(lit.b, VarRef):
            if res is not None or lit.a.var.id == lit.b.var.id:
                return None
            if lit.a.var.guard is not None or lit.b.var.guard is not None:
                return None
            res = frozenset((lit.a.var.id, lit.b.var.id))
            continue
        g = _ineqs(lit, vars)
        if g is None:
            return None
        ineqs += g
    if len(ineqs) != 2:
        return None
    sides = []
    for coefs, c in ineqs:
        pos = [v for v, k in coefs.items() if k == 1]
        if len(pos) != 1 or any(k not in (1, -1) for k in coefs.values()):
            return None
        neg = tuple(sorted(v for v, k in coefs.items() if k == -1))
        sides.append((pos[0], neg, -c))  # later start; earlier end = sum(neg) - c
    (sj, ends_i, pi), (si, ends_j, pj) = sides
    if si == sj or sj in ends_i or si in ends_j or not ends_i or not ends_j:
        return None
    if res is not None and (res & ({si, sj} | set(ends_i) | set(ends_j))):
        return None
    return (si, ends_i, pi), (sj, ends_j, pj), res


def _task(raw: tuple, vars: list[Var], facts: list[Fact]) -> Optional[Task]:
    """The task (s, ends, p), with a proven least duration >= 0; None if none is known."""
    s, ends, p = raw
    step = {v: _step(vars[v]) or 1 for v in (s, *ends)}  # values = step * internal (checked by _lin)
    steps = tuple(sorted((v, k) for v, k in step.items() if k != 1))
    lo_, hi_ = {v: vars[v].lo * step[v] for v in step}, {v: vars[v].hi * step[v] for v in step}
    if s in ends:
        lo = p + sum(lo_[v] for v in ends if v != s)
        return Task(s, ends, p, max(lo, 0), steps) if lo >= 0 else None
    best = p + sum(lo_[v] for v in ends) - hi_[s]  # from the initial bounds
    for coefs, c, looks in facts:
        if coefs.get(s) != -1 or any(coefs.get(v) != 1 for v in ends):
            continue
        # sum(ends) - s + R + c >= 0  ->  end - start >= p - c - max(R), R: the other slots
        # (by their initial bounds) and the lookups (by their tables' values)
        rest = {v: k for v, k in coefs.items() if v != s and v not in ends}
        max_r = 0
        for v, k in rest.items():
            sv = _step(vars[v])
            if sv is None:
                break
            max_r += k * sv * (vars[v].hi if k * sv > 0 else vars[v].lo)
        else:
            max_r += sum(k * (hi if k > 0 else lo) for k, lo, hi in looks)
            best = max(best, math.ceil(p - c - max_r))  # end - start is an integer
    return Task(s, ends, p, best, steps) if best >= 0 else None


def _same_values(a: Var, b: Var) -> bool:
    """Equal internal values mean equal values (one value list, or one step)."""
    if a.values is not None or b.values is not None:
        return a.values == b.values and a.values is not None and len(set(map(repr, a.values))) == len(a.values)
    return a.step == b.step


def _cliques(edges: list[tuple[Any, Any]]) -> list[list[Any]]:
    """A greedy cover of the edges by cliques; the cliques of at least three nodes."""
    index: dict[Any, int] = {}
    for a, b in edges:
        for x in (a, b):
            if x not in index:
                index[x] = len(index)
    if len(index) > MAX_TASKS:
        return []
    nodes = list(index)
    adj: list[set[int]] = [set() for _ in nodes]
    for a, b in edges:
        ia, ib = index[a], index[b]
        if ia != ib:
            adj[ia].add(ib)
            adj[ib].add(ia)
    uncovered = {frozenset((i, j)) for i in range(len(nodes)) for j in adj[i]}
    free = [set(a) for a in adj]  # neighbours by an uncovered edge
    out: list[list[Any]] = []
    while uncovered:
        u = max(range(len(nodes)), key=lambda i: (len(free[i]), -i))
        v0 = max(free[u], key=lambda w: (len(adj[w] & adj[u]), -w))  # an uncovered edge: progress
        clique = [u, v0]
        cand = adj[u] & adj[v0]
        while cand:
            v = max(cand, key=lambda w: (len(adj[w] & cand), len(free[w]), -w))
            clique.append(v)
            cand &= adj[v]
        for x in clique:
            for y in clique:
                if x < y:
                    uncovered.discard(frozenset((x, y)))
                    free[x].discard(y)
                    free[y].discard(x)
        if len(clique) >= 3:
            out.append([nodes[i] for i in sorted(clique)])
    return out
