"""no_overlap: intervals [start, end) on one resource are pairwise disjoint (a disjunctive resource).

Posted as an implied global by `globals/no_overlap_recognition.py` from the pairwise relations a
user writes (`a.end <= b.start or b.end <= a.start` over every pair of a set of tasks, or the
`no_overlap(...)` function, which grounds to those pairs). Each pair alone is propagated by HC4,
which only sees two tasks at a time: three meetings of 2 hours cannot fit in 5 hours, but no pair
of them says so. This node reasons on the whole set, on integer bounds:
  * overload checking: every set of tasks needs its total duration inside its window;
  * edge-finding (Vilim's rule over the sets Omega = {k : lct_k <= L}): a task that cannot end
    before all of Omega must come after all of it (est_i >= ECT(Omega)), and the mirror rule for
    the latest ends;
  * with a resource per task (`a.room != b.room or ...`: the pair must not overlap only when it
    shares a resource): the rules above per resource value over the tasks fixed to it, and a
    value is removed from an unfixed task's resource when adding the task there overloads it.
Every rule only removes values that no solution has (durations are lower bounds, windows are the
current bounds); the node is implied, so `ev` is always true and the pairwise factors still
decide exactly. Integers only (integer slots with an integer step, e.g. minutes in multiples of
15; exact ints and Fractions for the bounds, never floats).
"""
from __future__ import annotations

from bisect import bisect_left, insort
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Optional

from factorspec.graph.domain import Domains, Narrowing, dclip, dmax, dmin, dsize
from factorspec.graph.expr import INF, Abstract, Node, T, U

ROUNDS = 8  # passes of the rules per call (each pass only narrows; the solver re-runs the node)


@dataclass(frozen=True)
class Task:
    """An interval: start = value(s), end = sum(value(v) for v in ends) + p.

    `s in ends` is a start plus a duration (`start + dur`, `dur` a constant in `p` or slots in
    `ends`); otherwise the end is a slot of its own and `pmin` (>= 0) is a lower bound of
    end - start known from the factors (`end > start`, `end == start + d`)."""

    s: int
    ends: tuple[int, ...]
    p: int
    pmin: int = 0
    steps: tuple[tuple[int, int], ...] = ()  # (slot, step) where a slot's value is step * internal

    def step(self, vid: int) -> int:
        for v, k in self.steps:
            if v == vid:
                return k
        return 1


def bounds(t: Task, D: Domains) -> tuple[int, int, int, int]:
    """(est, lst, lct, dur) of task t under D: earliest/latest start, latest end, least duration
    (values: internal ints times the slot's step)."""
    ds = D[t.s]
    k = t.step(t.s)
    est, lst = dmin(ds) * k, dmax(ds) * k
    if t.s in t.ends:
        lo = hi = 0
        for v in t.ends:
            if v != t.s:
                d = D[v]
                k = t.step(v)
                lo += dmin(d) * k
                hi += dmax(d) * k
        return est, lst, lst + hi + t.p, max(0, lo + t.p)
    lo = hi = 0
    for v in t.ends:
        d = D[v]
        k = t.step(v)
        lo += dmin(d) * k
        hi += dmax(d) * k
    return est, lst, hi + t.p, max(t.pmin, lo + t.p - lst, 0)


def edge_find(est: list[int], lct: list[int], p: list[int]) -> Optional[list[int]]:
    """New earliest starts by overload checking and edge-finding, or None when overloaded.

    For each L (a latest end), Omega = {k : lct_k <= L}: ECT(Omega) > L is an overload; a task i
    outside Omega with ECT(Omega + i) > L must follow all of Omega. ECT is the preemptive
    earliest completion, max over suffixes (by est) of est_b + p(suffix). O(n^2) per call."""
    n = len(est)
    order = sorted(range(n), key=lambda k: lct[k])
    new = list(est)
    keys: list[tuple[int, int]] = []  # Omega sorted by (est, index)
    pos = 0
    while pos < n:
        L = lct[order[pos]]
        while pos < n and lct[order[pos]] == L:
            k = order[pos]
            insort(keys, (est[k], k))
            pos += 1
        m = len(keys)
        suf = [0] * (m + 1)
        for q in range(m - 1, -1, -1):
            suf[q] = suf[q + 1] + p[keys[q][1]]
        pre: list[int] = [0] * m  # pre[q] = max over b <= q of est_b + suf[b]
        ect = keys[0][0] + suf[0]  # Omega is never empty here
        for q in range(m):
            ect = max(ect, keys[q][0] + suf[q])
            pre[q] = ect
        if ect > L:
            return None
        ests = [e for e, _ in keys]
        for r in range(pos, n):
            i = order[r]
            if lct[i] <= L:
                continue
            q = bisect_left(ests, est[i])
            e2 = max(ect, est[i] + p[i] + suf[q])
            if q > 0:
                e2 = max(e2, pre[q - 1] + p[i])
            if e2 > L and ect > new[i]:
                new[i] = ect
    return new


def overloaded(est: list[int], lct: list[int], p: list[int]) -> bool:
    """Some set {k : est_k >= a, lct_k <= L} needs more time than its window has."""
    order = sorted(range(len(est)), key=lambda k: lct[k])
    keys: list[tuple[int, int]] = []
    pos, n = 0, len(est)
    while pos < n:
        L = lct[order[pos]]
        while pos < n and lct[order[pos]] == L:
            insort(keys, (est[order[pos]], order[pos]))
            pos += 1
        acc = 0
        for e, k in reversed(keys):
            acc += p[k]
            if e + acc > L:
                return True
    return False


def filter_bounds(est: list[int], lct: list[int], p: list[int]) -> Optional[tuple[list[int], list[int]]]:
    """Edge-finding both ways (earliest starts, and by symmetry latest ends); None on overload."""
    ne = edge_find(est, lct, p)
    if ne is None:
        return None
    nl = edge_find([-x for x in lct], [-x for x in est], p)
    if nl is None:
        return None
    return ne, [-x for x in nl]


class NoOverlap(Node):
    """Implied disjunctive resource over `tasks` (see the module docstring).

    `resources`, when given, holds per task the var id of its resource: the tasks must be
    disjoint only where they share a resource value."""

    kind = "bool"
    __slots__ = ("tasks", "resources", "covers")

    def __init__(self, tasks: list[Task], resources: Optional[list[int]] = None) -> None:
        self.tasks = tasks
        self.resources = resources
        self.covers: set[int] = set()  # indices of the pairwise factors whose propagation this node does
        vs: set[int] = set()
        for t in tasks:
            vs.add(t.s)
            vs.update(t.ends)
        if resources is not None:
            vs.update(resources)
        self.vars = frozenset(vs)

    def fwd(self, D: Domains) -> Abstract:
        return U

    def ev(self, A: list) -> Any:
        return 1  # implied by the pairwise factors it was recognised from; they decide exactly

    def pick(self, D: Domains) -> Optional[tuple[int, int, int]]:
        """A branching hint for the search: (est, lst, start slot) of the open task that can start
        first (scheduling in time order finds and refutes schedules far sooner than document
        order); None when every start is decided. Any order keeps the search complete."""
        best = None
        for t in self.tasks:
            d = D[t.s]
            if dsize(d) > 1:
                k = (dmin(d) * t.step(t.s), dmax(d) * t.step(t.s), t.s)
                if best is None or k < best:
                    best = k
        return best

    def bwd(self, C: Narrowing, target: Abstract) -> bool:
        if target != T:
            return True
        if self.resources is None:
            return self._run(C, list(range(len(self.tasks))))
        D = C.D
        by_value: dict[int, list[int]] = {}
        open_: list[int] = []
        for i, r in enumerate(self.resources):
            d = D[r]
            if dsize(d) == 1:
                by_value.setdefault(dmin(d), []).append(i)
            elif isinstance(d, frozenset):
                open_.append(i)
        for group in by_value.values():
            if len(group) >= 2 and not self._run(C, group):
                return False
        if not self._rooms_suffice(D):
            return False
        # an unfixed task cannot take a resource value where it would overload the fixed tasks
        for i in open_:
            r = self.resources[i]
            d = D[r]
            if not isinstance(d, frozenset):
                continue
            drop = []
            for val in d:
                fixed = by_value.get(val)
                if not fixed:
                    continue
                ts = [self.tasks[k] for k in fixed] + [self.tasks[i]]
                b = [bounds(t, D) for t in ts]
                est, lct, p = [x[0] for x in b], [x[2] for x in b], [x[3] for x in b]
                out = filter_bounds(est, lct, p)
                # no room there: an overload, or a task left without a start (a wipe-out)
                if out is None or any(e > x[1] or l_ - x[3] < e
                                      for e, l_, x in zip(out[0], out[1], b)):
                    drop.append(val)
            if drop and not C.set(r, d - frozenset(drop)):
                return False
        return True

    def _rooms_suffice(self, D: Domains) -> bool:
        """The tasks that surely run at one time (compulsory parts [lst, est + dur)) need distinct
        resource values: no more of them than the values their resources still have."""
        assert self.resources is not None
        parts = []
        for t, r in zip(self.tasks, self.resources):
            est, lst, _lct, dur = bounds(t, D)
            if lst < est + dur:
                parts.append((lst, est + dur, r))
        if len(parts) < 2:
            return True
        for a, _b, _r in parts:  # the running set changes only at a start of a compulsory part
            running = [r for x, y, r in parts if x <= a < y]
            if len(running) < 2:
                continue
            vals: set = set()
            for r in running:
                d = D[r]
                vals.update(d if isinstance(d, frozenset) else range(d[0], d[1] + 1))
                if len(vals) >= len(running):
                    break
            if len(vals) < len(running):
                return False
        return True

    def _run(self, C: Narrowing, group: list[int]) -> bool:
        """Edge-finding to a fixpoint (at most ROUNDS passes) over the tasks in `group`."""
        tasks = [self.tasks[k] for k in group]
        for _ in range(ROUNDS):
            D = C.D
            b = [bounds(t, D) for t in tasks]
            est, lct, p = [x[0] for x in b], [x[2] for x in b], [x[3] for x in b]
            out = filter_bounds(est, lct, p)
            if out is None:
                return False
            ne, nl = out
            changed = False
            for t, (e0, _lst, l0, dur), e1, l1 in zip(tasks, b, ne, nl):
                if e1 > e0:
                    changed = True
                    if not _narrow(C, t.s, e1, INF, t.step(t.s)):
                        return False
                if l1 < l0:
                    changed = True
                    if not self._end_at_most(C, t, l1, dur):
                        return False
            if not changed:
                return True
        return True

    @staticmethod
    def _end_at_most(C: Narrowing, t: Task, L: int, dur: int) -> bool:
        """Narrow so that task t ends by L: each end slot by L minus the others' least values, and
        a start of its own by L minus the least duration."""
        D = C.D
        lo = {v: dmin(D[v]) * t.step(v) for v in t.ends}
        total = sum(lo.values())
        for v in t.ends:
            if not _narrow(C, v, -INF, L - t.p - (total - lo[v]), t.step(v)):
                return False
        if t.s not in t.ends:
            return _narrow(C, t.s, -INF, L - dur, t.step(t.s))
        return True


def _narrow(C: Narrowing, vid: int, lo: Any, hi: Any, step: int = 1) -> bool:
    """Narrow slot `vid` to values in [lo, hi] (its internal ints: the bounds over its step, exact)."""
    d = C.D[vid]
    if step != 1:
        lo = lo if lo == -INF else Fraction(lo, step)
        hi = hi if hi == INF else Fraction(hi, step)
    nd = dclip(d, lo, hi)
    if dsize(nd) == dsize(d):
        return True
    return C.set(vid, nd)
