"""Recognition of `DistinctSequence` (globals/sequence.py) from the grounded factors.

For every `all_different` over plain, unguarded slots sharing one value list (at least three),
it reads the consecutive-pair tables and the time chain (linear equalities with one lookup per
position), and posts one `DistinctSequence`. It reads structure only, never names.
"""
from __future__ import annotations

import functools
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Optional

from factorspec.graph.domain import EXPLICIT_LIMIT, Domains, Narrowing, dom_range
from factorspec.graph.expr import Cmp, F, Member, Node, T, Var, VarRef, as_bool
from factorspec.graph.globals import case_bounds_recognition
from factorspec.graph.globals.all_different import AllDiff
from factorspec.graph.globals.linear import Offsets, add, as_int, linear_form, scale
from factorspec.graph.globals.sequence import DistinctSequence

if TYPE_CHECKING:
    from factorspec.graph.ground import Factor

MAX_SPAN = 4096  # time chains over a wider range of values are left to the factors
MAX_PROBES = 20_000  # (position, value) window probes, done once per problem


def recognise(vars: list[Var], factors: list[Factor]) -> list[Node]:
    """A `DistinctSequence` for every all_different over plain slots that shares one value list."""
    out: list[Node] = []
    for fi, f in enumerate(factors):
        node = f.node
        if not isinstance(node, AllDiff) or len(node.items) < 3:
            continue
        if not all(g is None and isinstance(x, VarRef) for g, x in node.items):
            continue
        xs = [x.var.id for _, x in node.items if isinstance(x, VarRef)]  # all are (checked above)
        if len(set(xs)) != len(xs):
            continue
        vals = vars[xs[0]].values
        if vals is None or vars[xs[0]].kind == "bool" or any(vars[v].values != vals for v in xs):
            continue
        if any(vars[v].guard is not None for v in xs):
            continue
        tables = _tables(vars, factors, xs, vals)
        succ, table_fs = tables if tables is not None else (None, set())
        chain, h, chain_fs = _chain(vars, factors, xs, vals)
        # alldiff alone: the Hall singleton rule still helps a permutation
        seq = _make(vars, factors, xs, succ, chain, h)
        _cover(seq, vars, vals, fi, table_fs, chain_fs)
        out.append(seq)
    return out


def _cover(seq: DistinctSequence, vars: list[Var], vals: list, alldiff: int, table_fs: set[int],
           chain_fs: set[int]) -> None:
    """The factors whose propagation `seq` does in their place (`DistinctSequence.links`): the
    all_different (forward checking and the pigeonhole bound are its first rules), the
    consecutive-pair tables (arc consistency over `succ`, the tables' intersection) and the
    time chain's equalities (domain consistency of tau_{j+1} = tau_j + h(x_j) and of each
    class's offsets). Only where every slot involved has an explicit domain (its rules read
    bitsets, and skip a slot that is an interval) and the values are distinct as values."""
    if any(vars[x].hi - vars[x].lo >= EXPLICIT_LIMIT for x in seq.xs):
        return
    try:
        distinct = len({(type(v).__name__, v) for v in vals}) == len(vals)
    except TypeError:  # an unhashable value (an object or array in an enum)
        distinct = False
    if not distinct:
        return
    covers = {alldiff}
    if seq.succ is not None:
        covers |= table_fs
    chain_ok = seq.chain is not None and all(vars[v].hi - vars[v].lo < EXPLICIT_LIMIT
                                             for cls in seq.chain for v, _ in cls)
    if chain_ok:
        covers |= chain_fs
    seq.covers = covers
    seq.links = (seq.succ is not None, chain_ok)


def _tables(vars: list[Var], factors: list[Factor], xs: list[int],
            vals: list) -> Optional[tuple[list[list[int]], set[int]]]:
    """Per transition i, value -> bitmask of next values allowed by (x_i, x_{i+1}) in TABLE
    factors; with the indices of those factors."""
    n, nv = len(xs), len(vals)
    pos = {v: i for i, v in enumerate(xs)}
    index = {v: k for k, v in enumerate(vals)}
    succ: list[Optional[list[int]]] = [None] * (n - 1)
    used: set[int] = set()
    for fi, f in enumerate(factors):
        node = f.node
        if not isinstance(node, Member) or len(node.elems) != 2:
            continue
        a, b = node.elems
        if not (isinstance(a, VarRef) and isinstance(b, VarRef)):
            continue
        pa, pb = pos.get(a.var.id), pos.get(b.var.id)
        if pa is None or pb is None or abs(pa - pb) != 1:
            continue
        i, flip = (pa, False) if pb == pa + 1 else (pb, True)
        s = [0] * nv
        for row in node.rows:
            x, y = (row[1], row[0]) if flip else (row[0], row[1])
            if x in index and y in index:
                s[index[x]] |= 1 << index[y]
        prev = succ[i]
        succ[i] = s if prev is None else [p & q for p, q in zip(prev, s)]
        used.add(fi)
    if any(s is None for s in succ):
        return None
    return succ, used  # type: ignore[return-value]


def _chain(vars: list[Var], factors: list[Factor], xs: list[int], vals: list):
    """The time chain tau_0..tau_L (L = n or n-1) with one step function h, and the indices of
    the factors it was read from (its step equalities, and the plain equalities that join its
    classes), or (None, None, set())."""
    pos = {v: i for i, v in enumerate(xs)}
    uf = Offsets()
    steps: dict[int, tuple] = {}  # position -> (u, w, c, l, table)
    step_f: dict[int, int] = {}  # position -> the factor of its step
    joins: list[tuple[int, int]] = []  # (factor, one of its variables) of the plain equalities
    for fi, f in enumerate(factors):
        node = f.node
        if not isinstance(node, Cmp) or node.op != "==":
            continue
        a, b = linear_form(node.a), linear_form(node.b)
        if a is None or b is None:
            continue
        vs, c, ls = add(a, scale(b, -1))
        if len(vs) != 2 or len(ls) > 1:
            continue
        (u, cu), (w, cw) = vs.items()
        if cu + cw != 0 or abs(cu) != 1:
            continue
        c = as_int(Fraction(c) / -cu) if not isinstance(c, bool) else None
        if c is None or any(vars[v].values is not None for v in (u, w)):
            continue
        # cu*u - cu*w + c0 + l*L = 0  ->  u = w + c + l'*L with c = -c0/cu, l' = -l/cu
        if not ls:
            uf.union(u, w, c)
            joins.append((fi, u))
            continue
        l, look = ls[0]
        if not isinstance(look.key, VarRef):  # linear_form keeps only lookups keyed by a slot
            continue
        key = look.key.var.id
        p = pos.get(key)
        lp = as_int(Fraction(l) / -cu)
        if p is None or lp is None or lp == 0 or p in steps:
            continue
        if lp < 0:  # w = u - c - lp*L: time runs from u to w
            u, w, c, lp = w, u, -c, -lp
        steps[p] = (u, w, c, lp, look.table)
        step_f[p] = fi
    if not uf.ok or not steps:
        return None, None, set()
    n = len(xs)
    L = n if n - 1 in steps else n - 1
    if any(p not in steps for p in range(L)):
        return None, None, set()
    chain: list[list[tuple[int, int]]] = []
    h: Optional[list[Optional[int]]] = None
    roots = []
    for p in range(L):
        u, w, c, lp, table = steps[p]
        ru, ou = uf.find(u)
        rw, ow = uf.find(w)
        if ru == rw:
            return None, None, set()
        hp = []
        for v in vals:
            t = table.get(v) if _hashable(v) else None
            hv = None if t is None else as_int(ow - ou + c + lp * t) if as_int(t) is not None else None
            hp.append(hv)
        if any(x is not None and x < 0 for x in hp):
            return None, None, set()
        if h is None:
            h = hp
        elif h != hp:
            return None, None, set()
        if p == 0:
            roots.append(rw)
        elif roots[-1] != rw:
            return None, None, set()
        roots.append(ru)
    if len(set(roots)) != len(roots):
        return None, None, set()
    members: dict[int, list[tuple[int, int]]] = {r: [] for r in roots}
    for v in list(uf.parent):
        r, o = uf.find(v)
        if r in members:
            members[r].append((v, o))
    for r in roots:
        cls = members[r]
        if any(vars[v].values is not None or vars[v].kind != "num" or vars[v].step != 1 for v, _ in cls):
            return None, None, set()
        chain.append(cls)
    used = {step_f[p] for p in range(L)} | {fi for fi, u in joins if uf.find(u)[0] in members}
    return chain, h, used


def _hashable(v: Any) -> bool:
    try:
        hash(v)
        return True
    except TypeError:
        return False


def _probe(vars: list[Var], factors: list[Factor], xs: list[int], vals: Any, seq: DistinctSequence) -> list[list[int]]:
    """Each (position, value)'s window of tau from the local factors (a module-level function, so that a
    compiled spec pickles: workers share compiled specs through a cache file)."""
    assert seq.chain is not None and seq.h is not None  # probed only with a chain
    D0 = [dom_range(v.lo, v.hi) for v in vars]
    nv = len(vals)
    out: list[list[int]] = []
    steps = len(seq.chain) - 1
    # each position's local factors in one pass over the factors (a factor is local to at
    # most the positions whose slot it reads)
    at = {x: j for j, x in enumerate(xs)}
    by_pos: list[list[Node]] = [[] for _ in xs]
    # a position's `x == c implies (bounds)` factors as one CaseBounds node (the same fixpoint:
    # with x_j fixed, the node narrows by exactly the bounds those factors impose), where the
    # node is local to the position: a trip's events cost one revision per round, not one each
    cases = {g.x: g for g in case_bounds_recognition.case_nodes(vars, factors)}
    local_cases: dict[int, Node] = {}
    covered: set[int] = set()
    for p, x in enumerate(xs):
        g = cases.get(x)
        if g is not None and p < steps and g.vars <= {x} | {v for v, _ in seq.chain[p] + seq.chain[p + 1]}:
            local_cases[p] = g
            covered |= g.covers
    for fi, f in enumerate(factors):
        if fi in covered:
            continue
        for x in f.node.vars:
            j = at.get(x)
            if j is not None and j < steps:
                by_pos[j].append(f.node)
    for j in range(len(xs)):
        if j >= steps:
            out.append([-1] * nv)
            continue
        local_vars = {xs[j]} | {v for v, _ in seq.chain[j]} | {v for v, _ in seq.chain[j + 1]}
        local = [nd for nd in by_pos[j] if nd.vars <= local_vars]
        if j in local_cases:
            local.append(local_cases[j])
        row = []
        for v in range(nv):
            D = list(D0)
            D[xs[j]] = frozenset([v])
            if not _fixpoint(local, D):
                row.append(0)
                continue
            t = seq._tau(D, j)
            t1 = seq._tau(D, j + 1)
            if t is None or t1 is None:
                row.append(-1)
                continue
            hv = seq.h[v]
            if hv is None:
                row.append(0)
                continue
            row.append(t & (t1 >> hv))
        out.append(row)
    return out


def _make(vars: list[Var], factors: list[Factor], xs: list[int], succ, chain, h) -> DistinctSequence:
    """The node, with a probe that finds each (position, value)'s window of tau from the local factors."""
    vals = vars[xs[0]].values
    assert vals is not None  # recognise() posts only slots with a value list
    if chain is not None:
        # times are bitsets over [base, base + span]: only for modest spans (huge bounds would
        # make huge ints), and the one-time probe only for modest sizes
        base = min(min(vars[v].lo - o for v, o in cls) for cls in chain)
        span = max(max(vars[v].hi - o for v, o in cls) for cls in chain) - base
        if span > MAX_SPAN or max((x for x in h if x is not None), default=0) > MAX_SPAN \
                or len(xs) * len(vals) > MAX_PROBES:
            chain, h = None, None
    seq = DistinctSequence(xs, succ, chain, h, functools.partial(_probe, vars, factors, xs, vals))
    if chain is not None:
        seq.base = base
    return seq


def _fixpoint(nodes: list[Node], D: Domains, rounds: int = 20) -> bool:
    """HC4 over a few nodes until nothing changes; False on a wipe-out."""
    ctx = Narrowing(D)
    live = list(nodes)
    for _ in range(rounds):
        ctx.changed = []
        keep = []
        for nd in live:
            r = as_bool(nd.fwd(D))
            if r == F:
                return False
            if r == T:
                continue  # entailed: domains only shrink, so it stays entailed
            keep.append(nd)
            if not nd.bwd(ctx, T):
                return False
        if not ctx.changed:
            return True
        live = keep
    return True
