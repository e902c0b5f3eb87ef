"""An implied global constraint over a sequence of distinct slots: `DistinctSequence`.

The pattern (found by `globals/sequence_recognition.py`, by structure only, never by names):
  * an `all_different` over plain, unguarded slots x_0..x_{n-1} sharing one value list;
  * optionally, for each consecutive pair, `(x_i, x_{i+1}) in TABLE` (a Hamiltonian path through
    the allowed transitions);
  * optionally, a time chain: integer slots tau_0..tau_L with tau_{j+1} = tau_j + h(x_j), one
    non-negative step h per value, the same at every position (from `u == w + c` equalities and
    one table lookup per position): the items tile a timeline one after another, with no idle
    time between them (jobs with durations on one machine; a trip's stays, where h = stay - 1
    because consecutive stays share a day).

Such factors are each propagated locally (HC4), which cannot see that the slots form one path
or that a time is a sum of *distinct* items. This node adds that reasoning; it is implied
(redundant): `ev` is always true, the original factors still decide exactly, and every rule
below only removes values that provably have no completion:
  * Hall singletons: when the slots are a permutation of their values, a value with no slot left
    is a wipe-out; a value with one slot left takes it;
  * path (with tables, permutation, fixed prefix x_0..x_{k-1}): the unvisited values must all be
    reachable from x_{k-1} through unvisited values; a value without a successor among them must
    be last; one without a predecessor among them (other than x_{k-1}) must be x_k;
  * time (with a chain): tau_j for j > k is tau_k plus a sum of j-k distinct steps h(v) of the
    values still open (a knapsack with cardinality, as bitsets), which narrows the tau slots;
    value v remains possible at position j only if tau_j can lie in v's window at j (found once
    by probing the local factors of position j with x_j = v from the initial domains);
  * gap partition (permutation, chain over every position): values whose start time is forced cut
    the open timeline into gaps that the other values must fill exactly.
Where every slot has an explicit domain, the node also covers (`covers`, set by the
recogniser) the all_different, the pair tables and the chain's equalities: the solver no longer
re-runs those factors on every narrowing (they still decide every leaf exactly), and the node
propagates them itself, at least as strongly, in `_links` (arc consistency of each pair with its
table, domain consistency of each step with the probe's windows), by a worklist, to its own
fixpoint. Covering makes it one run per search node instead of several: on a 50-city trip the
factors it replaces cost more than the node itself.
What is shaped by its first use (trips) and not general: the chain must be exact (no idle time,
`==` rather than `<=`), one step function for every position, and every value a single item;
release times, due dates and windows come only from the local factors of each position. General
scheduling (idle time, several resources) needs no-overlap/cumulative constraints of their own.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional

from factorspec.graph.domain import Domains, Narrowing
from factorspec.graph.expr import Abstract, Node, T, U

Probe = Callable[["DistinctSequence"], list[list[int]]]  # the windows [j][v] -> bitset of tau_j


# answers known without their computation, each the computation's own (see `_opens`, `_opener`,
# `_opening_path`, `_fill_of` and `_time`'s `linked`); False runs every computation (tests
# compare the two, node for node)
SHORTCUTS = True

_MASKS: dict[frozenset, int] = {}  # a slot's domain -> its bitmask (domains recur over runs and nodes)
_SETS: dict[int, frozenset] = {}  # the reverse, for the domains this node writes: one object per set


def _keep(cache: dict, key: Any, value: Any, limit: int = 100_000) -> Any:
    """cache[key] = value, emptying the cache first once it holds `limit` entries; returns value."""
    if len(cache) > limit:
        cache.clear()
    cache[key] = value
    return value


def _mask(d: frozenset) -> int:
    got = _MASKS.get(d)
    if got is not None:
        return got
    m = 0
    for k in d:
        m |= 1 << k
    return _keep(_MASKS, d, m)


def _set_of(m: int) -> frozenset:
    """The domain with the values of bitmask m (the same object each time: its hash is kept)."""
    got = _SETS.get(m)
    if got is None:
        got = _keep(_SETS, m, frozenset(_bits(m)))
        _keep(_MASKS, got, m)
    return got


_BITS: dict[int, tuple[int, ...]] = {}  # mask -> its bits: the same masks recur at every search node


def _bits_once(m: int) -> list[int]:
    """The bits of m, ascending, not kept in `_BITS` (for masks that seldom recur)."""
    out = []
    while m:
        low = m & -m
        out.append(low.bit_length() - 1)
        m ^= low
    return out


def _bits(m: int) -> tuple[int, ...]:
    got = _BITS.get(m)
    if got is not None:
        return got
    return _keep(_BITS, m, tuple(_bits_once(m)))


class DistinctSequence(Node):
    """Implied global constraint over a sequence of distinct slots (see the module docstring)."""

    kind = "bool"
    __slots__ = ("xs", "succ", "pred", "chain", "h", "windows", "_probe", "base", "_gap_memo", "_fill_memo", "adj",
                 "_tau_memo", "covers", "links", "_by_step", "_img_memo", "_sum_memo",
                 "_win_memo", "_last", "_wgroups", "_time_sets", "_chunk_memo", "_fill_last")

    def __init__(self, xs: list[int], succ: Optional[list[list[int]]], chain: Optional[list[list[tuple[int, int]]]],
                 h: Optional[list[Optional[int]]], probe: Probe) -> None:
        self.xs = xs
        self.succ = succ  # per transition i (x_i -> x_{i+1}): value -> bitmask of allowed next values
        self.pred = None
        if succ is not None:
            nv = len(succ[0])
            self.pred = []
            for s in succ:
                p = [0] * nv
                for a, m in enumerate(s):
                    for b in _bits(m):
                        p[b] |= 1 << a
                self.pred.append(p)
        self.chain = chain  # chain[j]: [(vid, off)] with value(vid) = tau_j + off, j = 0..len(xs)
        self.h = h  # value -> step (None: undefined, the value cannot sit on the chain)
        self.windows: Optional[list[list[int]]] = None  # [j][v] -> bitset of tau_j (bit t - base)
        self._probe = probe
        self.base = 0
        self._gap_memo: dict = {}  # gap-partition answers
        self._fill_memo: dict = {}  # a short gap's fillings by its ends and the values' windows
        self.adj: Optional[list[int]] = None  # union of the transition tables (lazy)
        self._tau_memo: dict = {}  # (offset + base, a slot's domain) -> its bitset of tau (domains recur)
        # factors whose propagation this node does in their place (set by the recogniser:
        # sequence_recognition._cover), and which links it then propagates itself: (the
        # consecutive-pair tables, the time chain's equalities)
        self.covers: set[int] = set()
        self.links = (False, False)
        self._by_step: Optional[list[tuple[int, int]]] = None  # (step, mask of the values with it)
        self._img_memo: dict = {}  # (transition or ~transition, mask) -> successors' / predecessors' union
        self._sum_memo: dict = {}  # (positions, open values per step) -> the time rule's sums
        # the time rule's window check by its inputs, (position, slot mask, times allowed) -> the
        # values left: the same masks and times recur over rounds, nodes and searches (2 in 3 hit)
        self._win_memo: dict = {}
        # (slot masks, tau bitsets, chain) where the links last reached their fixpoint (`_links`)
        self._last: Optional[tuple[list[int], list[int], bool]] = None
        self._wgroups: Optional[list] = None  # the values of one step by their window (`_window_groups`)
        self._time_sets: dict[tuple[int, int], frozenset] = {}  # a chain member's narrowed domains (`_set_tau`)
        self._chunk_memo: dict[int, list[list[int]]] = {}  # a table's union lookups (`_chunks`)
        # a short gap's last fillings enumerated within the cap, by the gap (start, end, value
        # before, value after): (values inside, their windows there, the fillings) (`_fill_of`)
        self._fill_last: dict[tuple, tuple[int, dict[int, int], dict[int, int]]] = {}
        vs = set(xs)
        if chain is not None:
            for cls in chain:
                vs.update(v for v, _ in cls)
        self.vars = frozenset(vs)

    def fwd(self, D: Domains) -> Abstract:
        return U

    def ev(self, A: list) -> Any:
        return 1  # implied by the factors it was recognised from; they decide exactly

    # -- time helpers ---------------------------------------------------------------------------
    def _tau(self, D: Domains, j: int, tc: Optional[dict] = None) -> Optional[int]:
        """Bitset of tau_j's possible values (bit t - base), or None when a slot is an interval.
        `tc`: the bitsets one run has read (it changes them only through `_set_tau`)."""
        if tc is not None:
            got = tc.get(j)
            if got is not None:
                return got
        assert self.chain is not None  # the time rules run only with a chain
        out = -1
        for vid, off in self.chain[j]:
            d = D[vid]
            if not isinstance(d, frozenset):
                return None
            out &= self._bitset(off, d)
        if tc is not None:
            tc[j] = out
        return out

    def _bitset(self, off: int, d: frozenset) -> int:
        """A chain member's values (value - off) as a bitset of tau (bit t - base); memoised."""
        memo = self._tau_memo
        key = (off + self.base, d)
        m = memo.get(key)
        if m is None:
            m = 0
            for t in d:
                b = t - key[0]
                if b >= 0:
                    m |= 1 << b
            if len(memo) > 50_000:
                memo.clear()
            memo[key] = m
        return m

    def _set_tau(self, C: Narrowing, j: int, allowed: int, tc: Optional[dict] = None) -> bool:
        assert self.chain is not None
        base = self.base
        memo = self._tau_memo
        for vid, off in self.chain[j]:
            d = C.D[vid]
            if isinstance(d, frozenset):
                m = self._bitset(off, d)
                if len(d) == m.bit_count():
                    # every value of the member is on its bitset: drop the times not allowed, and
                    # keep the narrowed member's bitset (read again by the next narrowing)
                    gone = m & ~allowed
                    if not gone:
                        continue
                    kept = m & allowed
                    lo = off + base
                    sets = getattr(self, "_time_sets", None)  # (lo, kept) -> the narrowed domain,
                    if sets is None:  # one object per set (absent from a node pickled before it)
                        sets = self._time_sets = {}
                    nd = sets.get((lo, kept))
                    if nd is None:
                        if gone.bit_count() <= kept.bit_count():
                            nd = d.difference([b + lo for b in _bits_once(gone)])
                        else:
                            nd = frozenset([b + lo for b in _bits_once(kept)])
                        if len(sets) > 50_000:
                            sets.clear()
                        sets[(lo, kept)] = nd
                        memo[(lo, nd)] = kept
                    if not C.set(vid, nd):
                        return False
                    continue
            nd = frozenset(t for t in d if t - off - base >= 0 and allowed >> (t - off - base) & 1)
            if len(nd) != len(d) and not C.set(vid, nd):
                return False
        if tc is not None and j in tc:
            tc[j] &= allowed  # each member keeps the times in `allowed`: so does their meet
        return True

    def _ensure_windows(self, D: Domains) -> None:
        if self.windows is None:
            self.windows = self._probe(self)

    # -- propagation ----------------------------------------------------------------------------
    def bwd(self, C: Narrowing, target: Abstract) -> bool:
        if target != T:
            return True
        D = C.D
        xs = self.xs
        n = len(xs)
        dm = []
        for vid in xs:
            d = D[vid]
            if not isinstance(d, frozenset):
                return True
            dm.append(_mask(d))
        orig = list(dm)
        ok = self._narrow(D, C, dm)
        if not ok:
            return False
        for j in range(n):
            if dm[j] != orig[j]:  # (a subset of the slot's domain: only values of it were ever in dm)
                if not C.set(xs[j], _set_of(dm[j])):
                    return False
        return True

    def _narrow(self, D: Domains, C: Narrowing, dm: list[int]) -> bool:
        n = len(dm)
        # covering factors, the node must reach its own fixpoint: nothing else re-runs it after
        # its own narrowing (the propagation queue does not wake a node by its own changes)
        covering = self.links[0] or self.links[1]
        last = FIXPOINT_ROUNDS - 1 if covering else 3
        tc: dict[int, int] = {}  # tau bitsets read in this run (kept current by _set_tau)
        run: dict = {}  # what the last `_links` of this run left
        for _round in range(last + 1):
            before = list(dm)
            taus_before = len(C.changed)
            if not _forward(dm):
                return False
            if covering and not self._links(D, C, dm, tc, run):
                return False
            mid, mid_changed = list(dm), len(C.changed)  # what the links left (at their fixpoint)
            union = 0
            for m in dm:
                union |= m
            perm = bin(union).count("1") == n
            if bin(union).count("1") < n:
                return False
            if perm:  # Hall singletons: every value needs a slot
                once = twice = 0  # values in at least one slot, in at least two
                for m in dm:
                    twice |= once & m
                    once |= m
                singles = once & ~twice  # values with one slot left: they take it
                if singles:
                    for j in range(n):
                        sj = dm[j] & singles
                        if sj:
                            if sj & (sj - 1):  # two values whose only slot is the same one
                                return False
                            dm[j] = sj
                if singles and not _forward(dm):
                    # values just fixed by Hall leave the other slots, to a fixpoint, before
                    # the path rules read the open suffix as a permutation of its values (a
                    # stale copy there made _path refute a valid record; a single pass left
                    # the values fixed by the pass itself, which stronger links made reachable)
                    return False
            k = 0
            while k < n and dm[k] & (dm[k] - 1) == 0:
                k += 1
            if k == n:
                return True
            if perm and self.succ is not None and not self._path(dm, k):
                return False
            # (whether the links revised the time chain this round: `_time` then knows the
            # windows of the times it leaves as they are already checked)
            linked = SHORTCUTS and covering and bool(run.get("last") and run["last"][2])
            if self.chain is not None and not self._time(D, C, dm, k, tc, linked):
                return False
            stable = dm == before and len(C.changed) == taus_before
            if not stable and covering and dm == mid and len(C.changed) == mid_changed:
                # no rule after the links changed anything, so the links are still at their
                # fixpoint; with forward checking at its own, the next round would change
                # nothing (each rule reads only the slots and times): it is skipped
                fwd = list(dm)
                if not _forward(dm):
                    return False
                stable = dm == fwd
            if stable or _round == last:
                # the gap split (the costliest rule) once the cheaper ones are settled
                if perm and self.chain is not None:
                    if not _forward(dm):  # the gap rule reads the open values: none may be fixed elsewhere
                        return False
                    settled = list(dm)
                    if not self._gaps(D, dm, k, tc):
                        return False
                    if dm != settled and _round < last:
                        continue
                return True
        return True

    def _links(self, D: Domains, C: Narrowing, dm: list[int], tc: dict, run: dict) -> bool:
        """What the covered factors would do, to a fixpoint of these links: arc consistency of
        each consecutive pair with its table (`succ`), and domain consistency of each step of
        the time chain, tau_{j+1} = tau_j + h(x_j) with x_j starting inside its window (the
        probe's), every class of tau_j one bitset (its members agree). Link j joins x_j, x_{j+1},
        tau_j, tau_{j+1}; a worklist revises a link when one of those changed, so that the later
        calls of one run (`run`: what the last call left) revise only around what the other
        rules changed since."""
        n = len(dm)
        tables, chain = self.links
        taus: list[int] = []
        steps = 0
        W: list[list[int]] = []
        if chain:
            assert self.chain is not None
            steps = len(self.chain) - 1
            for j in range(steps + 1):
                t = tc.get(j)  # (read by this run already, else from the domains)
                if t is None:
                    t = self._tau(D, j, tc)
                if t is None:
                    chain = False  # an interval slot (not when covering: checked all the same)
                    taus = []
                    break
                taus.append(t)
            if chain:
                self._ensure_windows(D)
                assert self.windows is not None and self.h is not None
                W = self.windows
        groups = self._window_groups() if chain else []
        stepped = 0  # the values with a step (the others cannot sit on the chain)
        for _, hm in self._steps_of() if chain else ():
            stepped |= hm
        full = (1 << n) - 1
        # a link's revision reads only its four members (and static tables and windows), so a
        # link whose members are as at the end of an earlier call (of this run, else of the
        # last run of any search node: `_last`, one tuple, replaced whole) is at its fixpoint
        last = run.get("last") or getattr(self, "_last", None)
        if last is None or last[2] != chain or len(last[0]) != n:
            pending = full
        else:
            prev, prev_taus = last[0], last[1]
            pending = 0
            for p in range(n):
                if dm[p] != prev[p]:
                    pending |= 3 << p >> 1  # links p - 1 and p
            for p, t in enumerate(prev_taus):
                if taus[p] != t:
                    pending |= 3 << p >> 1
            pending &= full
        orig = list(taus)
        succ, pred = self.succ, self.pred
        uniform = tables and self._uniform()
        memo = self._img_memo
        if len(memo) > 50_000:
            memo.clear()
        while pending:
            low = pending & -pending
            pending ^= low
            j = low.bit_length() - 1
            x0, x1 = dm[j], dm[j + 1] if j + 1 < n else 0
            if chain and j < steps:
                # v stays at j iff some start in tau_j and in its window ends in tau_{j+1}; by
                # step (the values of one step share their starts' bound t & (t1 >> step))
                # step, and among the values of one step those with the same window at j
                # (`_window_groups`: most values but those with events) as one
                t, t1 = taus[j], taus[j + 1]
                wj, back, keep, ahead = W[j], 0, x0 & stepped, 0
                for hs, hm, shared, single in groups[j]:
                    xs = x0 & hm
                    if not xs:
                        continue
                    a = t & (t1 >> hs)
                    if not a:  # no start of this step ends in tau_{j+1}: none of its values stays
                        keep &= ~xs
                        continue
                    b = 0
                    for gm, gw in shared:
                        xg = xs & gm
                        if xg:
                            w = gw & a
                            if w:
                                b |= w
                            else:
                                keep &= ~xg
                    xs &= single
                    for v in _BITS.get(xs) or _bits(xs):
                        w = wj[v] & a
                        if w:
                            b |= w
                        else:
                            keep ^= 1 << v
                    back |= b
                    ahead |= b << hs
                if not back:
                    return False
                if back != t:
                    taus[j] = back
                    pending |= low >> 1
                if ahead != t1:
                    taus[j + 1] = ahead
                    pending |= low << 1
                dm[j] = keep
            if tables and j + 1 < n:
                assert succ is not None and pred is not None
                tj = 0 if uniform else j  # (one table everywhere: one memo entry per mask)
                key = (tj, dm[j])
                img = memo.get(key)
                if img is None:
                    img = memo[key] = _union(self._chunks(succ, tj), dm[j])
                m1 = dm[j + 1] & img
                if not m1:
                    return False
                dm[j + 1] = m1
                key = (~tj, m1)
                img = memo.get(key)
                if img is None:
                    img = memo[key] = _union(self._chunks(pred, ~tj), m1)
                m0 = dm[j] & img
                if not m0:
                    return False
                if m0 != dm[j] and chain and j < steps:
                    pending |= low  # the step at j reads x_j again
                dm[j] = m0
            if dm[j] != x0:
                pending |= low >> 1
            if j + 1 < n and dm[j + 1] != x1:
                pending |= low << 1
            pending &= full
        for j, t in enumerate(taus):
            if t != orig[j] and not self._set_tau(C, j, t, tc):
                return False
        run["last"] = self._last = (list(dm), [tc.get(j, t) for j, t in enumerate(taus)], chain)
        return True

    def _window_groups(self) -> list[list[tuple[int, int, list[tuple[int, int]], int]]]:
        """Per position j, per step: (step, mask of the values with it, [(mask of values, their
        common window at j)] for windows that two or more of them share, mask of the others).
        A link's revision reads a shared window once for all its values (on a trip, the values
        of one stay share their window; those with an event have one each)."""
        got = getattr(self, "_wgroups", None)  # (a node pickled before the groups existed)
        if got is None:
            W = self.windows
            assert W is not None
            got = []
            for wj in W:
                row = []
                for hs, hm in self._steps_of():
                    by_w: dict[int, int] = {}
                    for v in _bits(hm):
                        by_w[wj[v]] = by_w.get(wj[v], 0) | 1 << v
                    shared = [(m, w) for w, m in by_w.items() if m & (m - 1)]
                    single = hm
                    for m, _ in shared:
                        single &= ~m
                    row.append((hs, hm, shared, single))
                got.append(row)
            self._wgroups = got
        return got

    def _steps_of(self) -> list[tuple[int, int]]:
        """(step, mask of the values with that step), for the values that have one."""
        got = self._by_step
        if got is None:
            assert self.h is not None
            masks: dict[int, int] = {}
            for v, hv in enumerate(self.h):
                if hv is not None:
                    masks[hv] = masks.get(hv, 0) | (1 << v)
            got = self._by_step = sorted(masks.items())
        return got

    def _path(self, dm: list[int], k: int) -> bool:
        """Hamiltonian-path rules over the open suffix k..n-1 (a permutation of its values)."""
        n = len(dm)
        U = 0
        for j in range(k, n):
            U |= dm[j]
        assert self.succ is not None and self.pred is not None  # the path rules run only with tables
        nv = len(self.succ[0])
        if self._uniform():  # one table at every transition (a trip's flights): no union to take
            adj, pre = self.succ[0], self.pred[0]
        else:
            adj = [0] * nv
            pre = [0] * nv
            for i in range(max(k - 1, 0), n - 1):  # transitions the rest of the path can use
                s, p = self.succ[i], self.pred[i]
                for v in _bits(U | (dm[k - 1] if k > 0 else 0)):
                    adj[v] |= s[v]
                    pre[v] |= p[v]
        last = dm[k - 1] if k > 0 else 0
        if last:
            lv = last.bit_length() - 1
            seen, frontier = 0, adj[lv] & U
            while frontier:
                seen |= frontier
                nxt = 0
                for v in _bits(frontier):
                    nxt |= adj[v]
                frontier = nxt & U & ~seen
            if seen != U:
                return False
        ends = 0
        for v in _bits(U):
            if not (adj[v] & U & ~(1 << v)):
                ends |= 1 << v
            pv = pre[v] & (U | last) & ~(1 << v)
            if not pv:
                if last:
                    return False
                if not dm[0] >> v & 1:
                    return False
                dm[0] &= 1 << v  # no predecessor at all: it must open the path
            elif last and pv == last:
                dm[k] &= 1 << v  # only x_{k-1} leads to it: it comes next
                if not dm[k]:
                    return False
        if ends:
            if ends & (ends - 1):
                return False
            dm[n - 1] &= ends
            if not dm[n - 1]:
                return False
        return True

    def _time(self, D: Domains, C: Narrowing, dm: list[int], k: int, tc: Optional[dict] = None,
              linked: bool = False) -> bool:
        """Knapsack bounds on tau_j (j > k) and window checks of the open values. `linked`: the
        links (`_links`) revised the chain this round, so every value left at a position j with
        a step starts within its window at some time of tau_j (their fixpoint; the rules since
        only removed values): the window check there can remove a value only where this call
        narrows tau_j, and is skipped elsewhere (it would keep every value). Why: most of the
        check's calls changed nothing, a twentieth of a 50-city trip's feasible_values."""
        n = len(dm)
        assert self.chain is not None and self.h is not None
        steps = len(self.chain) - 1  # tau_0..tau_steps; positions 0..steps-1 have an h-step
        if k >= steps:
            return True
        self._ensure_windows(D)
        tk = self._tau(D, k, tc)
        if tk is None:
            return True
        if tk == 0:
            return False
        items = 0
        for j in range(k, n):
            items |= dm[j]
        h = self.h
        maxm = steps - k
        # the sums depend on the open values only through how many have each step: kept by
        # those counts (the rounds of one run, and the nodes of one search, repeat them)
        key = (maxm, tuple([(items & hm).bit_count() for _, hm in self._steps_of()]))
        R = self._sum_memo.get(key)
        if R is None:
            R = [0] * (maxm + 1)
            R[0] = 1
            cnt = 0
            for v in _bits(items):
                w = h[v]
                if w is None:
                    continue
                cnt += 1
                for m in range(min(cnt, maxm), 0, -1):
                    R[m] |= R[m - 1] << w
            if len(self._sum_memo) > 10_000:
                self._sum_memo.clear()
            self._sum_memo[key] = R
        tks = _bits(tk) if tk & (tk - 1) else None
        wmemo = self._win_memo  # (j, x_j, times allowed) -> the values of x_j with a start there
        if len(wmemo) > 50_000:
            wmemo.clear()
        W = self.windows
        assert W is not None
        groups = self._window_groups()
        for j in range(k, steps + 1):
            if j == k:
                if linked and j < steps:
                    continue  # (allowed is tau_k itself)
                allowed = tk
            else:
                r = R[j - k]
                if tks is None:
                    allowed = r << (tk.bit_length() - 1)
                else:  # the sums r shifted by each start in tau_k (by the fewer bits of the two)
                    allowed = 0
                    if len(tks) <= r.bit_count():
                        for b in tks:
                            allowed |= r << b
                    else:
                        for b in _bits_once(r):
                            allowed |= tk << b
                cur = self._tau(D, j, tc)
                if cur is None:
                    continue
                if cur & ~allowed:
                    if not cur & allowed:
                        return False
                    if not self._set_tau(C, j, allowed, tc):
                        return False
                elif linked and j < steps:
                    continue  # tau_j as the links left it: every value at j starts within it
                allowed &= cur
            if j < n:
                m = dm[j]
                wk = (j, m, allowed)
                keep = wmemo.get(wk, -1)
                if keep < 0:
                    # by window: a window that several values share (`_window_groups`) is read
                    # once; the values without a step have none (the probe's window is 0)
                    wj = W[j]
                    keep = 0
                    if j < steps:
                        for _, hm, shared, single in groups[j]:
                            x = m & hm
                            if not x:
                                continue
                            for gm, gw in shared:
                                if x & gm and gw & allowed:
                                    keep |= x & gm
                            x &= single
                            for v in _BITS.get(x) or _bits(x):
                                if wj[v] & allowed:
                                    keep |= 1 << v
                    else:
                        for v in _bits(m):
                            if wj[v] & allowed:
                                keep |= 1 << v
                    wmemo[wk] = keep
                if keep != m:
                    if not keep:
                        return False
                    dm[j] = keep
        return True

    def _gaps(self, D: Domains, dm: list[int], k: int, tc: Optional[dict] = None) -> bool:
        """Gap partition: values whose start time is forced (one possible tau) cut the remaining
        timeline into gaps; the other open values must fill each gap exactly (their steps sum to
        its length), each in a gap where its window lets it start and end. With tables, a short
        gap's fillings are enumerated as paths (from the value before it to the one after it,
        each value starting inside its window); the sets of the short gaps must be disjoint and
        the values left must split into the long gaps by their steps. A relaxation (long gaps
        ignore order and tables; tables are the union over transitions), exact for what it
        sees; it also narrows x_k to the values that open the first gap in some such split."""
        n = len(dm)
        assert self.chain is not None and self.h is not None
        if len(self.chain) - 1 != n or k >= n:
            return True  # the last value is not on the timeline: not this pattern
        self._ensure_windows(D)
        taus = []
        for j in range(k, n + 1):
            t = self._tau(D, j, tc)
            if t is None:
                return True
            taus.append(t)
        tk, tn = taus[0], taus[-1]
        if not tk or not tn:
            return False
        if tk & (tk - 1) or tn & (tn - 1):
            return True  # start or end of the open stretch not known yet
        a0, b0 = tk.bit_length() - 1, tn.bit_length() - 1  # as bit offsets from base
        h, W = self.h, self.windows
        assert W is not None
        win = [0] * len(h)  # value -> its possible starts over the open positions
        by_step = self._steps_of()
        U = 0
        for j in range(k, n):
            tj, tj1 = taus[j - k], taus[j + 1 - k]
            wj = W[j]
            x = dm[j]
            U |= x
            for hv, hm in by_step:  # (values without a step get no start: their win stays 0)
                xs = x & hm
                if xs:
                    a = tj & (tj1 >> hv)
                    for v in _BITS.get(xs) or _bits(xs):
                        win[v] |= wj[v] & a
        anchors: list[tuple[int, int, int]] = []  # (start, step, value) of the forced values
        free = []
        zero = False
        for v in _bits(U):
            w = win[v]
            if not w:
                return False  # no position and start left for v
            hs = h[v]
            assert hs is not None  # win holds only values with a step
            hv = hs
            if hv == 0:
                zero = True  # zero-length steps fill nothing: left out of the partition
                if w & (w - 1) == 0:
                    anchors.append((w.bit_length() - 1, 0, v))
                continue
            if w & (w - 1) == 0:
                anchors.append((w.bit_length() - 1, hv, v))
            else:
                free.append((v, w))
        anchors.sort()
        prev = None
        if k > 0:
            prev = dm[k - 1].bit_length() - 1
        gaps: list[tuple[int, int, Optional[int], Optional[int]]] = []  # (start, end, value before, value after)
        cur, before = a0, prev
        for s, hv, v in anchors:
            if s < cur:
                return False  # forced items overlap (or start before the open stretch)
            gaps.append((cur, s, before, v))
            cur, before = s + hv, v
        if cur > b0:
            return False
        gaps.append((cur, b0, before, None))
        key = (tuple(gaps), tuple(free), zero)
        memo = self._gap_memo
        ans = memo.get(key)
        if ans is None:
            ans = self._gap_solve(gaps, free, zero, {}, True)
            if len(memo) > 50_000:
                memo.clear()
            memo[key] = ans
        if ans is False:
            return False
        if gaps[0][0] == gaps[0][1] and not zero and gaps[0][3] is not None:
            ans = 1 << gaps[0][3]  # the first gap is empty: the next value is the anchor there
        if ans == -1:
            return True
        keep = dm[k] & ans
        if keep != dm[k]:
            if not keep:
                return False
            dm[k] = keep
        return True

    def _gap_solve(self, gaps: list, free: list, zero: bool, fcache: dict, narrow: bool,
                   shared: Optional[tuple[dict, list]] = None, splits: Optional[list[int]] = None):
        """False if no split exists; else a mask of the values that can open the first gap
        (-1: no narrowing known). `fcache` keeps the short gaps' fillings between calls on the
        same windows; with `narrow` false only feasibility is decided. `shared`: the caller's
        (gaps of each value, values of each gap) where the caller's gaps after the first are
        these (the narrowing's sub-splits): only the first gap is matched again. `splits`, if
        given, receives the first split found, as the union of the sets it takes for the short
        gaps after the first (with the values of `seed`)."""
        h = self.h
        assert h is not None
        ng = len(gaps)
        gm_of: dict[int, int] = {}  # value -> mask of the gaps it fits (starts and ends inside)
        ins = [0] * ng  # gap -> mask of the values that fit it
        ga0, gb0 = gaps[0][0], gaps[0][1]
        for v, w in free:
            hv = h[v]
            bit = 1 << v
            if shared is None:
                gm = 0
                for gi, (ga, gb, _, _) in enumerate(gaps):
                    if gb - ga >= hv and w & (((1 << (gb - hv - ga + 1)) - 1) << ga):
                        gm |= 1 << gi
                        ins[gi] |= bit
            else:
                gm = shared[0][v] & ~1
                if gb0 - ga0 >= hv and w & (((1 << (gb0 - hv - ga0 + 1)) - 1) << ga0):
                    gm |= 1
                    ins[0] |= bit
            if not gm:
                return False
            gm_of[v] = gm
        if shared is not None:
            fmask0 = 0
            for v, _ in free:
                fmask0 |= 1 << v
            for gi in range(1, ng):
                ins[gi] = shared[1][gi] & fmask0
        win = dict(free)
        fmask = 0
        for v, _ in free:
            fmask |= 1 << v
        # short gaps: fillings as paths (set of values -> mask of possible first values)
        fills: dict[int, dict[int, int]] = {}
        sizes: dict[int, int] = {}  # gap -> how many of its fillings hold no value of `seed`
        # values out of `free` that the fillings reused from `fcache` still hold (the caller's
        # first opener, in a narrowing's sub-split): `used` starts with them, so that a filling
        # through one of them is passed over by the search, as if it had been filtered out
        seed = 0
        if self.succ is not None and not zero:
            adj = self._adj_all()
            for gi, (ga, gb, s, e) in enumerate(gaps):
                if gb - ga > SHORT_GAP:
                    continue
                inside = ins[gi]
                ck = (ga, gb, s, e)
                hit = fcache.get(ck)
                if hit is not None and not inside & ~hit[0]:
                    f = hit[1]
                    gone = hit[0] & ~inside
                    if f is not None and gone:  # the same paths, less the ones through values gone
                        if gone & fmask:  # (not from a sub-split: filtered as such)
                            f = {sm: fm for sm, fm in f.items() if not sm & gone}
                        else:
                            seed |= gone
                            sizes[gi] = _left(hit, gone)
                else:
                    f = self._fill_of(adj, win, inside, ga, gb, s, e)
                    fcache[ck] = [inside, f, None]
                if f is None:
                    continue  # too many paths: treat the gap as long
                size = sizes.setdefault(gi, len(f))
                if not size:
                    return False
                fills[gi] = f
        short = sorted(fills, key=lambda g: (g != 0, sizes[g]))
        long_ = [g for g in range(ng) if g not in fills]
        lmask = 0
        for g in long_:
            lmask |= 1 << g
        lens = tuple(gaps[g][1] - gaps[g][0] for g in long_)
        remap = {g: i for i, g in enumerate(long_)}
        steps = [0]
        leaf_memo: dict = {}
        split = [-1]  # the `used` of the last leaf that split: the split `exists` found

        # each value's type for the long gaps, (step, mask of long gaps it fits), as the mask of
        # the values of each type (in type order), and the mask of the values that fit none
        by_type: dict[tuple, int] = {}
        nowhere = 0
        for v in _bits(fmask):
            gm = gm_of[v] & lmask
            if gm:
                t = (h[v], sum(1 << remap[g] for g in _bits(gm)))
                by_type[t] = by_type.get(t, 0) | 1 << v
            else:
                nowhere |= 1 << v
        tmasks = sorted(by_type.items())

        def leaf(used: int):
            """The long gaps' split of the free values not in `used`: False, or True."""
            r = leaf_memo.get(used)
            if r is not None:
                if r:
                    split[0] = used
                return r
            rest = fmask & ~used
            if rest & nowhere:
                leaf_memo[used] = False
                return False
            tl, counts = [], []  # the types left, in order, and how many values of each
            for t, tm in tmasks:
                c = (rest & tm).bit_count()
                if c:
                    tl.append(t)
                    counts.append(c)
            if not lens:
                r = not tl
            else:
                pkey = (lens, tuple(zip(tl, counts)))
                r = self._gap_memo.get(pkey)
                if r is None:
                    r = _partition(lens, tl, counts)  # True past its cap
                    self._gap_memo[pkey] = r
            leaf_memo[used] = r
            if r:
                split[0] = used
            return r

        nshort = len(short)
        fl = [fills[g] for g in short]
        dead: list[set[int]] = [set() for _ in range(nshort + 1)]  # per level: `used` masks without a split

        def exists(i: int, used: int) -> bool:
            """Some choice of sets for short[i:] disjoint from `used` leaves a feasible split.
            Every call counts one step (COVER_STEPS), also one that the caller does not make
            because its answer is known (the next level's leaf, or a `used` already dead there)."""
            steps[0] += 1
            if steps[0] > COVER_STEPS:
                raise _Cap
            if i == nshort:
                return leaf(used)
            di = dead[i]
            if used in di:
                return False
            nxt = i + 1
            dn = dead[nxt]
            for sm in fl[i]:
                if sm & used:
                    continue
                u = used | sm
                if nxt == nshort or u in dn:
                    steps[0] += 1
                    if steps[0] > COVER_STEPS:
                        raise _Cap
                    if nxt == nshort and leaf(u):
                        return True
                    continue
                if exists(nxt, u):
                    return True
            di.add(used)
            return False

        empty0 = gaps[0][0] == gaps[0][1]
        try:
            if short and short[0] == 0:
                allowed, found = 0, False
                for sm, fm in fills[0].items():
                    if sm & seed:
                        continue  # through a value gone (see `seed`)
                    if found and not fm & ~allowed and not empty0:
                        continue  # its first values are already known to be possible
                    if exists(1, sm | seed):
                        if splits is not None and not found:
                            splits.append(split[0] & ~sm)
                        found = True
                        allowed |= fm
                        if empty0:
                            break
                if not found:
                    return False
                return -1 if empty0 else allowed
            # gap 0 is long
            if not exists(0, seed):
                return False
            if splits is not None:
                splits.append(split[0])
        except _Cap:
            return -1
        if not narrow or zero or empty0:
            return -1
        # which values can open it: v first leaves [start + h(v), end) to fill from v
        ga0, gb0, s0, e0 = gaps[0]
        tadj = self._adj_all() if self.succ is not None else None
        allowed = 0
        # splits known, each as the values it leaves to the long gaps (gap 0 among them): the
        # one found above, then one from each sub-split that finds one (v and the values after
        # it in gap 0 are a filling of gap 0 as a long gap)
        rests = [fmask & ~split[0]] if split[0] >= 0 else []
        for v, w in free:
            hv = h[v]
            if not w >> ga0 & 1 or ga0 + hv > gb0 or (tadj is not None and s0 is not None and not tadj[s0] >> v & 1):
                continue
            sub_gaps = [(ga0 + hv, gb0, v, e0)] + gaps[1:]
            sub_free = [(u, x) for u, x in free if u != v]
            key = (tuple(sub_gaps), tuple(sub_free), zero)
            r = self._gap_memo.get(key)
            if r is None:
                known = None
                for rest in rests if SHORTCUTS else ():
                    if rest >> v & 1:
                        known = self._opens(v, rest, ga0 + hv, gb0, e0, win, gm_of, lmask, remap, lens, fcache)
                        if known is not None:
                            break
                if known is None and SHORTCUTS:
                    # no split known leaves v to the long gaps: search one among the short
                    # gaps' sets (none through v), each leaf asked as `_opens` asks
                    opened = self._opener(v, ga0 + hv, gb0, e0, fmask, seed, fl, win, gm_of, lmask, remap, lens,
                                          fcache)
                    if opened is not None:
                        known = opened[0]
                        if len(rests) < 8:
                            rests.append(fmask & ~opened[1])
                if known == 1:  # (a sub-split with a short first gap answers a mask: not kept)
                    allowed |= 1 << v
                    continue
                if known == -1:
                    r = -1  # what the sub-split answers once it has found a split (gap 0 long)
                else:
                    got: list[int] = []
                    r = self._gap_solve(sub_gaps, sub_free, zero, fcache, False, (gm_of, ins), got)
                    if got and len(rests) < 8:
                        rests.append(fmask & ~(got[0] & ~(1 << v)))
                self._gap_memo[key] = r
            if r is not False:
                allowed |= 1 << v
        return allowed

    def _opener(self, v: int, a: int, b: int, e0: Optional[int], fmask: int, seed: int, fl: list, win: dict,
                gm_of: dict, lmask: int, remap: dict, lens: tuple, fcache: dict) -> Optional[tuple[int, int]]:
        """A split with v first in (long) gap 0, what is left of it [a, b): the short gaps' sets
        (`fl`, in `_gap_solve`'s order; none through v), then at each leaf the values left, v
        among them, asked as `_opens` asks. (`_opens`'s answer, the union of the sets taken), or
        None when none is found within OPEN_STEPS sets: the caller runs the sub-split, which
        alone may say there is none (its own search, with its own step cap). The same leaf is
        one the sub-split's search reaches (the short gaps are those of the caller's fillings,
        less the sets through v), so a split found here is one it has."""
        bit = 1 << v
        nshort = len(fl)
        steps = [0]
        dead: set[tuple[int, int]] = set()

        def go(i: int, used: int) -> Optional[tuple[int, int]]:
            if i == nshort:
                r = self._opens(v, (fmask & ~used) | bit, a, b, e0, win, gm_of, lmask, remap, lens, fcache)
                return None if r is None else (r, used & ~bit)
            if (i, used) in dead:
                return None
            for sm in fl[i]:
                if sm & used:
                    continue
                steps[0] += 1
                if steps[0] > OPEN_STEPS:
                    raise _Cap
                got = go(i + 1, used | sm)
                if got is not None:
                    return got
            dead.add((i, used))
            return None

        try:
            return go(0, seed | bit)
        except _Cap:
            return None

    def _fill_of(self, adj: list[int], win: dict, inside: int, ga: int, gb: int, s: Optional[int],
                 e: Optional[int]) -> Optional[dict[int, int]]:
        """`_fillings` of a short gap, memoised: the paths depend on the values inside and their
        windows within the gap."""
        h = self.h
        assert h is not None
        span = (1 << (gb - ga + 1)) - 1
        vals = _bits(inside)
        wins = tuple([win[v] >> ga & span for v in vals])
        pk = (ga, gb, s, e, inside, wins)
        f = self._fill_memo.get(pk, 0)
        if f != 0:
            return f
        lasts = self._fill_last
        ck = (ga, gb, s, e)
        last = lasts.get(ck)
        if SHORTCUTS and last is not None and not inside & ~last[0] and all(
                w == last[1].get(v) for v, w in zip(vals, wins)):
            # the last fillings of this gap had every value inside now, each with the same
            # window there: the paths now are theirs less those through a value gone (a path
            # reads only its own values' windows), in the same order, and their enumeration
            # tree is a part of that one, within the cap too; a set's first values are those of
            # its own paths. Why: along a search path the values inside a gap often only lose
            # some, and a third of the fillings enumerated were such
            gone = last[0] & ~inside
            f = {sm: fm for sm, fm in last[2].items() if not sm & gone}
        else:
            f = _fillings(adj, h, win, inside, ga, gb, s, e)
        if f is not None:
            _keep(lasts, ck, (inside, dict(zip(vals, wins)), f), 20_000)
        return _keep(self._fill_memo, pk, f, 20_000)

    def _opens(self, v: int, rest: int, a: int, b: int, e0: Optional[int], win: dict, gm_of: dict, lmask: int,
               remap: dict, lens: tuple, fcache: dict) -> Optional[int]:
        """Whether the sub-split of `_gap_solve`'s narrowing with v first in gap 0 (gap 0 long;
        what is left of it, [a, b), filled from v) has a split, known without its search: the
        short gaps keep the sets of the split found above (none holds v: v is in `rest`, the
        values that split leaves to the long gaps), and `rest` less v splits anew. Where [a, b)
        stays long there, into the long gaps with gap 0 now [a, b): -1, what the sub-split
        answers then; where it is short (a filling of it from v, as the sub-split finds them),
        one filling within `rest` and the others into the other long gaps: 1 (the sub-split
        would answer a mask of first values: some split). Either is a leaf the sub-split's own
        search reaches, computed as it does (same types, same memoised `_partition`). None: not
        known so; the caller runs the sub-split. Why: the openers of a long first gap mostly
        keep the short gaps as they were, and the sub-splits' searches cost a third of a 50-city
        trip's feasible_values."""
        rest &= ~(1 << v)
        if self.succ is not None and b - a <= SHORT_GAP:
            sub_remap = {g: i - 1 for g, i in remap.items() if g}
            if self._opening_path(v, rest, a, b, e0, win, lmask & ~1, sub_remap, lens[1:], gm_of):
                return 1
            f = self._opening_fillings(v, a, b, e0, win, fcache)
            if f is not None:  # (None: too many paths, long there too)
                for sm in f:
                    if not sm & ~rest and self._long_split(rest & ~sm, lmask & ~1, sub_remap, lens[1:], gm_of):
                        return 1
                return None
        return -1 if self._long_split(rest, lmask, remap, (b - a,) + lens[1:], gm_of, (a, b, win)) else None

    def _opening_path(self, v: int, rest: int, a: int, b: int, e0: Optional[int], win: dict, lmask: int,
                      remap: dict, lens: tuple, gm_of: dict) -> bool:
        """Whether a path from v through values of `rest` tiles [a, b) (each value starting
        within its window, by the transition tables, on to e0) and leaves the rest of `rest`
        split exactly (`_long_split` with `exact`) into the long gaps after gap 0: found by a
        depth-first search of at most OPEN_STEPS steps, without the gap's fillings. Such a path
        is a filling of [a, b) from v wherever the sub-split with v first enumerates them (each
        value on it fits the gap, and a path that ends is never cut by `live`), and where it
        finds too many and counts the gap long, the path's values fill it there: either way the
        sub-split has a split (`_opens`). Why: most openers have such a path among the first
        few, and their fillings were a twelfth of a 50-city trip's feasible_values."""
        h = self.h
        assert h is not None
        adj = self._adj_all()
        steps = [0]

        def dfs(cur: int, t: int, used: int) -> bool:
            if t == b:
                return (e0 is None or adj[cur] >> e0 & 1 == 1) and self._long_split(
                    rest & ~used, lmask, remap, lens, gm_of, exact=True)
            cand = rest & ~used & adj[cur]
            while cand:
                low = cand & -cand
                cand ^= low
                u = low.bit_length() - 1
                hu = h[u]
                assert hu is not None  # (free values have a step)
                t2 = t + hu
                if t2 > b or not win[u] >> t & 1:
                    continue
                steps[0] += 1
                if steps[0] > OPEN_STEPS:
                    raise _Cap
                if dfs(u, t2, used | low):
                    return True
            return False

        try:
            return dfs(v, a, 0)
        except _Cap:
            return False

    def _opening_fillings(self, v: int, a: int, b: int, e0: Optional[int], win: dict,
                          fcache: dict) -> Optional[dict[int, int]]:
        """The fillings of gap [a, b) from v as the sub-split with v first computes them (the
        free values but v that fit it inside), kept in `fcache` as it would keep them."""
        h = self.h
        assert h is not None
        inside = 0
        for u, w in win.items():
            hu = h[u]
            if u != v and b - a >= hu and w & (((1 << (b - hu - a + 1)) - 1) << a):
                inside |= 1 << u
        ck = (a, b, v, e0)
        hit = fcache.get(ck)
        if hit is not None and hit[0] == inside:
            return hit[1]
        f = self._fill_of(self._adj_all(), win, inside, a, b, v, e0)
        fcache[ck] = [inside, f, None]
        return f

    def _long_split(self, rest: int, lmask: int, remap: dict, lens: tuple, gm_of: dict,
                    first: Optional[tuple[int, int, dict]] = None, exact: bool = False) -> bool:
        """`_gap_solve`'s leaf: whether the values of `rest` split into the long gaps (`lmask`,
        numbered by `remap`, lengths `lens`) by their types. `first`: (a, b, windows) where gap
        0 is [a, b) instead of the gaps' own (which values fit it is read again). `exact`: a
        split proven, not `_partition`'s True past its cap (`_CAPPED`)."""
        h = self.h
        assert h is not None
        by_type: dict[tuple[int, int], int] = {}
        for u in _bits_once(rest):
            hu = h[u]
            assert hu is not None  # (free values have a step)
            gm = gm_of[u] & lmask
            if first is not None:
                a, b, win = first
                gm &= ~1
                if b - a >= hu and win[u] & (((1 << (b - hu - a + 1)) - 1) << a):
                    gm |= 1
            if not gm:
                return False  # fits no long gap
            t = (hu, sum(1 << remap[g] for g in _bits(gm)))
            by_type[t] = by_type.get(t, 0) + 1
        if not lens:
            return not by_type
        tl = sorted(by_type)
        counts = [by_type[t] for t in tl]
        pkey = (lens, tuple(zip(tl, counts)))
        r = self._gap_memo.get(pkey)
        if r is None:
            r = self._gap_memo[pkey] = _partition(lens, tl, counts)
        return bool(r) and not (exact and pkey in _CAPPED)

    def _chunks(self, rows: list[list[int]], key: int) -> list[list[int]]:
        """The union table (`_union_tables`) of rows[key] (key j: transition j of succ; ~j of
        pred), built once per table."""
        memo = getattr(self, "_chunk_memo", None)  # (absent from a node pickled before it)
        if memo is None:
            memo = self._chunk_memo = {}
        got = memo.get(key)
        if got is None:
            got = memo[key] = _union_tables(rows[key if key >= 0 else ~key])
        return got

    def _uniform(self) -> bool:
        """Whether every transition has the same table."""
        got = self._img_memo.get("uniform")
        if got is None:
            assert self.succ is not None
            got = self._img_memo["uniform"] = all(s == self.succ[0] for s in self.succ)
        return bool(got)

    def _adj_all(self) -> list[int]:
        adj = self.adj
        if adj is None:
            assert self.succ is not None
            nv = len(self.succ[0])
            adj = [0] * nv
            for s in self.succ:
                for v in range(nv):
                    adj[v] |= s[v]
            self.adj = adj
        return adj


def _left(entry: list, gone: int) -> int:
    """How many of a gap's fillings hold no value of `gone`. `entry`: `_gap_solve`'s fcache
    entry [inside, fillings, per-value counts (built here on first use)]: a narrowing's
    sub-splits each leave out one value, so a count per value answers each of them at once."""
    f = entry[1]
    if gone & (gone - 1):
        return sum(1 for sm in f if not sm & gone)
    per = entry[2]
    if per is None:
        per = entry[2] = {}
        for sm in f:
            for v in _bits(sm):
                per[v] = per.get(v, 0) + 1
    return len(f) - per.get(gone.bit_length() - 1, 0)


def _union_tables(row: list[int]) -> list[list[int]]:
    """For each byte of a value mask, the union of row[v] over each subset of that byte's values:
    the union over a mask is then one lookup per byte (`_union`) instead of one per value."""
    out = []
    for c in range(0, len(row), 8):
        part = row[c:c + 8]
        t = [0] * (1 << len(part))
        for b in range(1, len(t)):
            low = b & -b
            t[b] = t[b ^ low] | part[low.bit_length() - 1]
        out.append(t)
    return out


def _union(tables: list[list[int]], m: int) -> int:
    """The union of row[v] over the values v of mask m (tables: `_union_tables(row)`)."""
    out = 0
    for t in tables:
        if not m:
            break
        b = m & 255
        if b:
            out |= t[b]
        m >>= 8
    return out


def _forward(dm: list[int]) -> bool:
    """Forward checking to a fixpoint: a value fixed at one slot leaves every other slot, and a
    slot left with one value fixes it in turn. The path and gap rules read the open values as
    the union of the open slots, so a value already fixed in the prefix must not linger there
    (one pass leaves it where a slot became fixed by the pass itself: an unsound wipe-out).
    Each pass removes only the values fixed since the last one (the others are gone from every
    open slot already), from the open slots that hold one."""
    fixed = 0
    for m in dm:
        if m & (m - 1) == 0:
            if m == 0 or fixed & m:
                return False
            fixed |= m
    while fixed:
        more = 0  # values fixed by this pass
        for j, m in enumerate(dm):
            if m & fixed and m & (m - 1):
                m &= ~fixed
                if not m:
                    return False
                dm[j] = m
                if m & (m - 1) == 0:
                    if m & more:
                        return False  # two slots left with the same value
                    more |= m
        fixed = more
    return True


FIXPOINT_ROUNDS = 64  # rounds of the rules per run when the node covers factors (a fixpoint in practice)
SHORT_GAP = 12  # gaps up to this long have their fillings enumerated as paths
FILL_STEPS = 400  # path steps per gap; past it the gap counts as long (at 30 and 50 cities, the
# gaps that pass 400 pass 3,000 too: same search nodes, a third of the enumeration time)
COVER_STEPS = 20_000  # choices of short-gap sets per question; past it: no narrowing


def _fillings(adj: list, h: list, win: Any, inside: int, ga: int, gb: int, s, e) -> Optional[dict]:
    """{set of values: mask of first values} of the paths s -> v1 .. vm -> e through `inside`
    whose steps tile [ga, gb) with each v_i starting inside its window; None past FILL_STEPS."""
    out: dict[int, int] = {}
    # live[t - ga]: the values that can start at t and still end a path at gb (ignoring that
    # values are distinct: a DP over (value, time), last time first); the enumeration below
    # extends a path only by those, so it skips every extension that cannot finish
    live = [0] * (gb - ga + 1)
    rows = []  # (bit, step, window, successors, whether it may end the gap) of the values inside
    for v in _bits(inside):
        wv = win[v]
        if wv >> ga:  # (none with no start from ga on)
            rows.append((1 << v, h[v], wv, adj[v], e is None or adj[v] >> e & 1))
    for t in range(gb - 1, ga - 1, -1):
        m = 0
        for bit, hv, wv, av, ends in rows:
            if not wv >> t & 1:
                continue
            t2 = t + hv
            if t2 > gb:
                continue
            if t2 == gb:
                if ends:
                    m |= bit
            elif not hv or av & live[t2 - ga]:  # (a zero step: kept, not looked through)
                m |= bit
        live[t - ga] = m

    if _over_cap(adj, h, live, inside, ga, gb, s):
        return None
    if ga == gb:  # the empty path alone
        if e is None or s is None or adj[s] >> e & 1:
            out[0] = 0
        return out
    steps = [1]  # the nodes of the enumeration tree so far (the root first)

    def rec(cur, t: int, used: int, first: int) -> None:
        # each child counts as a node (FILL_STEPS) before it is entered; a child that ends the
        # gap is a leaf, done here: it ends well, since `live` let it in (a value in live at t
        # with t + step == gb may precede e)
        cand = inside & ~used & live[t - ga]  # (live: each v in it starts in its window and fits)
        if cur is not None:
            cand &= adj[cur]
        while cand:  # the values of cand in ascending order (inlined `_bits`: the hot loop)
            low = cand & -cand
            cand ^= low
            v = low.bit_length() - 1
            n = steps[0] = steps[0] + 1
            if n > FILL_STEPS:
                raise _Cap
            t2 = t + h[v]
            if t2 == gb:
                u = used | low
                out[u] = out.get(u, 0) | (first or low)
            else:
                rec(v, t2, used | low, first or low)

    try:
        rec(s, ga, 0, 0)
    except _Cap:
        return None
    return out


def _over_cap(adj: list, h: list, live: list, inside: int, ga: int, gb: int, s: Optional[int]) -> bool:
    """Whether the enumeration of `_fillings` would pass FILL_STEPS, known from its first three
    levels alone: each node's children are one mask (counted, not walked), and the enumeration
    visits every node of its tree unless cut, so more nodes than the cap in those levels means
    it is cut. About a quarter of the cost of walking them, and on a 50-city trip three in four
    of the gaps that pass the cap are found so (the others are walked as before: same answers)."""
    if ga == gb:
        return False
    c1 = inside & live[0]
    if s is not None:
        c1 &= adj[s]
    n = 1 + c1.bit_count()
    while c1:
        low = c1 & -c1
        c1 ^= low
        v1 = low.bit_length() - 1
        t1 = ga + h[v1]
        if t1 == gb:
            continue
        c2 = inside & ~low & live[t1 - ga] & adj[v1]
        n += c2.bit_count()
        while c2:
            low2 = c2 & -c2
            c2 ^= low2
            v2 = low2.bit_length() - 1
            t2 = t1 + h[v2]
            if t2 != gb:
                n += (inside & ~(low | low2) & live[t2 - ga] & adj[v2]).bit_count()
        if n > FILL_STEPS:
            return True
    return n > FILL_STEPS


PARTITION_STEPS = 20_000  # enumeration steps per gap-partition question; past it: no answer
# the questions (lens, ((type, count), ...)) that `_partition` answered True past its cap: not
# proven splits (`_long_split` with `exact`). Never emptied: a cap costs PARTITION_STEPS steps,
# so there are few
_CAPPED: set = set()
OPEN_STEPS = 64  # steps of `_opening_path`'s search; past it the fillings decide


def _partition(lens: tuple, types: list, counts: list) -> bool:
    """Can the items (types[i] = (step, gap mask), counts[i] of each) fill every gap exactly
    (gap g's items' steps sum to lens[g], each item in a gap of its mask)? True also past the
    step cap (unknown)."""
    if sum(lens) != sum(hv * c for (hv, _), c in zip(types, counts)):
        return False
    order = sorted(range(len(lens)), key=lambda g: lens[g])  # tight gaps first: fail early
    steps = [0]
    memo: dict = {}
    nt = len(types)

    def fillings(g: int, cnt: tuple):
        """Each way to fill gap g exactly from cnt: yields the counts left."""
        bit = 1 << g
        idx = [i for i in range(nt) if types[i][1] & bit and cnt[i]]
        cap = [0] * (len(idx) + 1)  # steps the items idx[p:] can give at most
        for p in range(len(idx) - 1, -1, -1):
            cap[p] = cap[p + 1] + types[idx[p]][0] * cnt[idx[p]]
        c = list(cnt)

        def rec(p: int, r: int):
            steps[0] += 1
            if steps[0] > PARTITION_STEPS:
                raise _Cap
            if r == 0:
                yield tuple(c)
                return
            if cap[p] < r:
                return
            i = idx[p]
            hv = types[i][0]
            for m in range(min(cnt[i], r // hv), -1, -1):
                c[i] = cnt[i] - m
                yield from rec(p + 1, r - m * hv)
            c[i] = cnt[i]

        yield from rec(0, lens[g])

    def rest(pos: int, cnt: tuple) -> bool:
        if pos == len(order):
            return True
        key = (pos, cnt)
        r = memo.get(key)
        if r is None:
            r = any(rest(pos + 1, c2) for c2 in fillings(order[pos], cnt))
            memo[key] = r
        return r

    try:
        return rest(0, tuple(counts))
    except _Cap:
        _CAPPED.add((lens, tuple(zip(types, counts))))
        return True


class _Cap(Exception):
    pass
