"""A global "sequence" propagator, recognised from the factors: alldiff + consecutive tables + a time chain.

Pattern (generic, by structure only, never by names):
  * an `all_different` over plain, unguarded slots x_0..x_{n-1} sharing one value list;
  * optionally, for each consecutive pair, `(x_i, x_{i+1}) in TABLE` (a Hamiltonian-path flavour);
  * optionally, a time chain: linear equalities with a table lookup that make
    tau_{j+1} = tau_j + h(x_j) for integer slots tau_j (through `u == w + c` equalities), with the
    same h >= 0 at every position (stays of a trip, durations of jobs in a sequence).

Such factors are each propagated locally (HC4), which cannot see that the slots form one path
or that a time is a sum of *distinct* items. The `Sequence` node adds that reasoning; it is an
implied (redundant) constraint: `ev` is always true, the original factors still decide exactly,
and every rule below only removes values that provably have no completion:
  * Hall singletons: when the slots are a permutation of their values, a value with no slot left
    is a wipe-out; a value with one slot left takes it;
  * path (with tables, permutation, fixed prefix x_0..x_{k-1}): the unvisited values must all be
    reachable from x_{k-1} through unvisited values; a value without a successor among them must
    be last; one without a predecessor among them (other than x_{k-1}) must be x_k;
  * time (with a chain): tau_j for j > k is tau_k plus a sum of j-k distinct items h(v) of the
    values still open (a knapsack with cardinality, as bitsets), which narrows the tau slots;
    value v stays at position j only if tau_j can lie in v's window at j, found once by probing
    the local factors of position j with x_j = v from the initial domains.
"""
from __future__ import annotations

from fractions import Fraction
from typing import Any, Optional

from factorspec.graph import nodes as N

MAX_SPAN = 4096  # time chains over a wider range of values are left to the factors
MAX_PROBES = 20_000  # (position, value) window probes, done once per problem


# -- linear forms ---------------------------------------------------------------------------------

def _linear(n: N.Node) -> Optional[tuple[dict, Any, list]]:
    """n as sum(coef*var) + const + sum(coef*lookup): ({vid: coef}, const, [(coef, Lookup)]), or None."""
    if isinstance(n, N.Const):
        if n.kind != "num":
            return None
        return {}, n.v, []
    if isinstance(n, N.VarRef):
        v = n.var
        if v.values is not None or v.kind != "num" or v.step != 1:
            return None
        return {v.id: 1}, 0, []
    if isinstance(n, N.Lookup):
        if n.kind != "num" or not isinstance(n.key, N.VarRef) or n.key.var.values is None:
            return None
        return {}, 0, [(1, n)]
    if isinstance(n, N.Unary) and n.op == "neg":
        a = _linear(n.a)
        return None if a is None else _scale(a, -1)
    if isinstance(n, N.Arith) and n.op in ("+", "-"):
        a, b = _linear(n.a), _linear(n.b)
        if a is None or b is None:
            return None
        return _add(a, b if n.op == "+" else _scale(b, -1))
    return None


def _scale(a: tuple, k: int) -> tuple:
    return {v: c * k for v, c in a[0].items()}, a[1] * k, [(c * k, l) for c, l in a[2]]


def _add(a: tuple, b: tuple) -> tuple:
    vs = dict(a[0])
    for v, c in b[0].items():
        vs[v] = vs.get(v, 0) + c
    return {v: c for v, c in vs.items() if c != 0}, a[1] + b[1], a[2] + b[2]


def _int(x: Any) -> Optional[int]:
    if isinstance(x, bool):
        return None
    if isinstance(x, int):
        return x
    if isinstance(x, Fraction) and x.denominator == 1:
        return int(x)
    return None


class _Offsets:
    """Union-find with offsets: value(var) = value(root) + off(var)."""

    def __init__(self) -> None:
        self.parent: dict[int, int] = {}
        self.off: dict[int, int] = {}
        self.ok = True

    def find(self, v: int) -> tuple[int, int]:
        if v not in self.parent:
            self.parent[v], self.off[v] = v, 0
            return v, 0
        path, o = [], 0
        while self.parent[v] != v:
            path.append(v)
            o += self.off[v]
            v = self.parent[v]
        acc = o
        for p in path:  # compress
            po = self.off[p]
            self.parent[p], self.off[p] = v, acc
            acc -= po
        return v, o

    def union(self, u: int, w: int, c: int) -> None:
        """value(u) = value(w) + c."""
        ru, ou = self.find(u)
        rw, ow = self.find(w)
        if ru == rw:
            if ou != ow + c:
                self.ok = False
            return
        # value(ru) = value(u) - ou = value(w) + c - ou = value(rw) + ow + c - ou
        self.parent[ru], self.off[ru] = rw, ow + c - ou


# -- the node -------------------------------------------------------------------------------------

def _mask(d: Any) -> int:
    m = 0
    for k in d:
        m |= 1 << k
    return m


def _bits(m: int) -> list[int]:
    out = []
    while m:
        low = m & -m
        out.append(low.bit_length() - 1)
        m ^= low
    return out


class Sequence(N.Node):
    """Implied global constraint over a sequence of distinct slots (see the module docstring)."""

    kind = "bool"
    __slots__ = ("xs", "succ", "pred", "chain", "h", "windows", "_probe", "base", "_gap_memo", "_fill_memo", "adj")

    def __init__(self, xs: list[int], succ: Optional[list[list[int]]], chain: Optional[list[list[tuple[int, int]]]],
                 h: Optional[list[Optional[int]]], probe: Any) -> None:
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
        vs = set(xs)
        if chain is not None:
            for cls in chain:
                vs.update(v for v, _ in cls)
        self.vars = frozenset(vs)

    def fwd(self, D: list) -> tuple:
        return N.U

    def ev(self, A: list) -> Any:
        return 1  # implied by the factors it was recognised from; they decide exactly

    # -- time helpers ---------------------------------------------------------------------------
    def _tau(self, D: list, j: int) -> Optional[int]:
        """Bitset of tau_j's possible values (bit t - base), or None when a slot is an interval."""
        out = -1
        for vid, off in self.chain[j]:
            d = D[vid]
            if not isinstance(d, frozenset):
                return None
            m = 0
            for t in d:
                b = t - off - self.base
                if b >= 0:
                    m |= 1 << b
            out &= m
        return out

    def _set_tau(self, C: N.Ctx, j: int, allowed: int) -> bool:
        for vid, off in self.chain[j]:
            d = C.D[vid]
            nd = frozenset(t for t in d if t - off - self.base >= 0 and allowed >> (t - off - self.base) & 1)
            if len(nd) != len(d) and not C.set(vid, nd):
                return False
        return True

    def _ensure_windows(self, D: list) -> None:
        if self.windows is None:
            self.windows = self._probe(self)

    # -- propagation ----------------------------------------------------------------------------
    def bwd(self, C: N.Ctx, target: Any) -> bool:
        if target != N.T:
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
            if dm[j] != orig[j]:
                d = D[xs[j]]
                if not C.set(xs[j], frozenset(k for k in d if dm[j] >> k & 1)):
                    return False
        return True

    def _narrow(self, D: list, C: N.Ctx, dm: list[int]) -> bool:
        n = len(dm)
        for _round in range(4):
            before = list(dm)
            # forward checking (values fixed at one slot leave the others)
            fixed = 0
            for m in dm:
                if m & (m - 1) == 0:
                    if m == 0 or fixed & m:
                        return False
                    fixed |= m
            union = 0
            for j in range(n):
                m = dm[j]
                if m & (m - 1):
                    m &= ~fixed
                    if not m:
                        return False
                    dm[j] = m
                union |= dm[j]
            perm = bin(union).count("1") == n
            if bin(union).count("1") < n:
                return False
            if perm:  # Hall singletons: every value needs a slot
                where: dict[int, int] = {}
                for j in range(n):
                    for v in _bits(dm[j]):
                        where[v] = where.get(v, 0) | (1 << j)
                taken = 0
                for v, pm in where.items():
                    if pm & (pm - 1) == 0:
                        if taken & pm:  # two values whose only slot is the same one
                            return False
                        taken |= pm
                        dm[pm.bit_length() - 1] = 1 << v
            k = 0
            while k < n and dm[k] & (dm[k] - 1) == 0:
                k += 1
            if k == n:
                return True
            if perm and self.succ is not None and not self._path(dm, k):
                return False
            if self.chain is not None and not self._time(D, C, dm, k):
                return False
            if dm == before or _round == 3:
                # the gap split (the costliest rule) once the cheaper ones are settled
                if perm and self.chain is not None:
                    settled = list(dm)
                    if not self._gaps(D, dm, k):
                        return False
                    if dm != settled and _round < 3:
                        continue
                return True
        return True

    def _path(self, dm: list[int], k: int) -> bool:
        """Hamiltonian-path rules over the open suffix k..n-1 (a permutation of its values)."""
        n = len(dm)
        U = 0
        for j in range(k, n):
            U |= dm[j]
        nv = len(self.succ[0])
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
            p = pre[v] & (U | last) & ~(1 << v)
            if not p:
                if last:
                    return False
                if not dm[0] >> v & 1:
                    return False
                dm[0] &= 1 << v  # no predecessor at all: it must open the path
            elif last and p == last:
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

    def _time(self, D: list, C: N.Ctx, dm: list[int], k: int) -> bool:
        """Knapsack bounds on tau_j (j > k) and window checks of the open values."""
        n = len(dm)
        steps = len(self.chain) - 1  # tau_0..tau_steps; positions 0..steps-1 have an h-step
        if k >= steps:
            return True
        self._ensure_windows(D)
        tk = self._tau(D, k)
        if tk is None:
            return True
        if tk == 0:
            return False
        items = 0
        for j in range(k, n):
            items |= dm[j]
        h = self.h
        maxm = steps - k
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
        tks = _bits(tk) if tk & (tk - 1) else None
        W = self.windows
        for j in range(k, steps + 1):
            if j == k:
                allowed = tk
            else:
                r = R[j - k]
                if tks is None:
                    allowed = r << (tk.bit_length() - 1)
                else:
                    allowed = 0
                    for b in tks:
                        allowed |= r << b
                cur = self._tau(D, j)
                if cur is None:
                    continue
                if cur & ~allowed:
                    if not cur & allowed:
                        return False
                    if not self._set_tau(C, j, allowed):
                        return False
                allowed &= cur
            if j < n:
                m = dm[j]
                wj = W[j]
                keep = 0
                for v in _bits(m):
                    if wj[v] & allowed:
                        keep |= 1 << v
                if keep != m:
                    if not keep:
                        return False
                    dm[j] = keep
        return True

    def _gaps(self, D: list, dm: list[int], k: int) -> bool:
        """Gap partition: values whose start time is forced (one possible tau) cut the remaining
        timeline into gaps; the other open values must fill each gap exactly (their steps sum to
        its length), each in a gap where its window lets it start and end. With tables, a short
        gap's fillings are enumerated as paths (from the value before it to the one after it,
        each value starting inside its window); the sets of the short gaps must be disjoint and
        the values left must split into the long gaps by their steps. A relaxation (long gaps
        ignore order and tables; tables are the union over transitions), exact for what it
        sees; it also narrows x_k to the values that open the first gap in some such split."""
        n = len(dm)
        if len(self.chain) - 1 != n or k >= n:
            return True  # the last value is not on the timeline: not this pattern
        self._ensure_windows(D)
        taus = []
        for j in range(k, n + 1):
            t = self._tau(D, j)
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
        win: dict[int, int] = {}
        for j in range(k, n):
            tj, tj1 = taus[j - k], taus[j + 1 - k]
            wj = W[j]
            for v in _bits(dm[j]):
                hv = h[v]
                if hv is None:
                    continue
                w = wj[v] & tj & (tj1 >> hv)
                if w:
                    win[v] = win.get(v, 0) | w
        U = 0
        for j in range(k, n):
            U |= dm[j]
        anchors = []
        free = []
        zero = False
        for v in _bits(U):
            w = win.get(v, 0)
            if not w:
                return False  # no position and start left for v
            if h[v] == 0:
                zero = True  # zero-length steps fill nothing: left out of the partition
                if w & (w - 1) == 0:
                    anchors.append((w.bit_length() - 1, 0, v))
                continue
            if w & (w - 1) == 0:
                anchors.append((w.bit_length() - 1, h[v], v))
            else:
                free.append((v, w))
        anchors.sort()
        prev = None
        if k > 0:
            prev = dm[k - 1].bit_length() - 1
        gaps = []  # (start offset, end offset, value before or None, value after or None)
        cur, before = a0, prev
        for s, hv, v in anchors:
            if s < cur:
                return False  # forced stays overlap (or start before the open stretch)
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

    def _gap_solve(self, gaps: list, free: list, zero: bool, fcache: dict, narrow: bool):
        """False if no split exists; else a mask of the values that can open the first gap
        (-1: no narrowing known). `fcache` keeps the short gaps' fillings between calls on the
        same windows; with `narrow` false only feasibility is decided."""
        h = self.h
        ng = len(gaps)
        gm_of: dict[int, int] = {}
        for v, w in free:
            hv = h[v]
            gm = 0
            for gi, (ga, gb, _, _) in enumerate(gaps):
                if gb - ga >= hv:
                    rng = ((1 << (gb - hv - ga + 1)) - 1) << ga
                    if w & rng:
                        gm |= 1 << gi
            if not gm:
                return False
            gm_of[v] = gm
        win = dict(free)
        fmask = 0
        for v, _ in free:
            fmask |= 1 << v
        # short gaps: fillings as paths (set of values -> mask of possible first values)
        fills: dict[int, dict[int, int]] = {}
        if self.succ is not None and not zero:
            adj = self._adj_all()
            for gi, (ga, gb, s, e) in enumerate(gaps):
                if gb - ga > SHORT_GAP:
                    continue
                inside = 0
                for v in _bits(fmask):
                    if gm_of[v] >> gi & 1:
                        inside |= 1 << v
                ck = (ga, gb, s, e)
                hit = fcache.get(ck)
                if hit is not None and not inside & ~hit[0]:
                    f = hit[1]
                    if f is not None and inside != hit[0]:  # the same paths, less the ones through values gone
                        f = {sm: fm for sm, fm in f.items() if not sm & ~inside}
                else:
                    # the paths depend on the values inside and their windows within the gap
                    span = (1 << (gb - ga + 1)) - 1
                    pk = (ga, gb, s, e, tuple((v, win[v] >> ga & span) for v in _bits(inside)))
                    f = self._fill_memo.get(pk, 0)
                    if f == 0:
                        f = _fillings(adj, h, win, inside, ga, gb, s, e)
                        if len(self._fill_memo) > 20_000:
                            self._fill_memo.clear()
                        self._fill_memo[pk] = f
                    fcache[ck] = (inside, f)
                if f is None:
                    continue  # too many paths: treat the gap as long
                if not f:
                    return False
                fills[gi] = f
        short = sorted(fills, key=lambda g: (g != 0, len(fills[g])))
        long_ = [g for g in range(ng) if g not in fills]
        lmask = 0
        for g in long_:
            lmask |= 1 << g
        lens = tuple(gaps[g][1] - gaps[g][0] for g in long_)
        remap = {g: i for i, g in enumerate(long_)}
        steps = [0]
        leaf_memo: dict = {}

        ltype: dict[int, tuple] = {}  # value -> (step, mask of long gaps it fits), None if none
        for v in _bits(fmask):
            gm = gm_of[v] & lmask
            ltype[v] = (h[v], sum(1 << remap[g] for g in _bits(gm))) if gm else None

        def leaf(used: int):
            """The long gaps' split of the free values not in `used`: False, or True."""
            r = leaf_memo.get(used)
            if r is not None:
                return r
            types: dict = {}
            for v in _bits(fmask & ~used):
                t = ltype[v]
                if t is None:
                    leaf_memo[used] = False
                    return False
                types[t] = types.get(t, 0) + 1
            tl = sorted(types)
            if not lens:
                r = not tl
            else:
                pkey = (lens, tuple((t, types[t]) for t in tl))
                r = self._gap_memo.get(pkey)
                if r is None:
                    r = _partition(lens, tl, [types[t] for t in tl])  # True past its cap
                    self._gap_memo[pkey] = r
            leaf_memo[used] = r
            return r

        def tick() -> None:
            steps[0] += 1
            if steps[0] > COVER_STEPS:
                raise _Cap

        dead: set = set()

        def exists(i: int, used: int) -> bool:
            """Some choice of sets for short[i:] disjoint from `used` leaves a feasible split."""
            tick()
            if i == len(short):
                return leaf(used)
            if (i, used) in dead:
                return False
            for sm in fills[short[i]]:
                if not sm & used and exists(i + 1, used | sm):
                    return True
            dead.add((i, used))
            return False

        empty0 = gaps[0][0] == gaps[0][1]
        try:
            if short and short[0] == 0:
                allowed, found = 0, False
                for sm, fm in fills[0].items():
                    if found and not fm & ~allowed and not empty0:
                        continue  # its first values are already known to be possible
                    if exists(1, sm):
                        found = True
                        allowed |= fm
                        if empty0:
                            break
                if not found:
                    return False
                return -1 if empty0 else allowed
            # gap 0 is long
            if not exists(0, 0):
                return False
        except _Cap:
            return -1
        if not narrow or zero or empty0:
            return -1
        # which values can open it: v first leaves [start + h(v), end) to fill from v
        ga0, gb0, s0, e0 = gaps[0]
        adj = self._adj_all() if self.succ is not None else None
        allowed = 0
        for v, w in free:
            hv = h[v]
            if not w >> ga0 & 1 or ga0 + hv > gb0 or (adj is not None and s0 is not None and not adj[s0] >> v & 1):
                continue
            sub_gaps = [(ga0 + hv, gb0, v, e0)] + gaps[1:]
            sub_free = [(u, x) for u, x in free if u != v]
            key = (tuple(sub_gaps), tuple(sub_free), zero)
            r = self._gap_memo.get(key)
            if r is None:
                r = self._gap_solve(sub_gaps, sub_free, zero, fcache, False)
                self._gap_memo[key] = r
            if r is not False:
                allowed |= 1 << v
        return allowed

    def _adj_all(self) -> list[int]:
        adj = self.adj
        if adj is None:
            nv = len(self.succ[0])
            adj = [0] * nv
            for s in self.succ:
                for v in range(nv):
                    adj[v] |= s[v]
            self.adj = adj
        return adj


SHORT_GAP = 12  # gaps up to this long have their fillings enumerated as paths
FILL_STEPS = 3_000  # path steps per gap; past it the gap counts as long
COVER_STEPS = 20_000  # choices of short-gap sets per question; past it: no narrowing


def _fillings(adj: list, h: list, win: dict, inside: int, ga: int, gb: int, s, e) -> Optional[dict]:
    """{set of values: mask of first values} of the paths s -> v1 .. vm -> e through `inside`
    whose steps tile [ga, gb) with each v_i starting inside its window; None past FILL_STEPS."""
    out: dict[int, int] = {}
    steps = [0]

    def rec(cur, t: int, used: int, first: int) -> None:
        steps[0] += 1
        if steps[0] > FILL_STEPS:
            raise _Cap
        if t == gb:
            if e is None or cur is None or adj[cur] >> e & 1:
                out[used] = out.get(used, 0) | first
            return
        cand = inside & ~used
        if cur is not None:
            cand &= adj[cur]
        for v in _bits(cand):
            hv = h[v]
            if t + hv <= gb and win[v] >> t & 1:
                rec(v, t + hv, used | (1 << v), first or (1 << v))

    try:
        rec(s, ga, 0, 0)
    except _Cap:
        return None
    return out


PARTITION_STEPS = 20_000  # enumeration steps per gap-partition question; past it: no answer


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
        return True


class _Cap(Exception):
    pass


# -- recognition ----------------------------------------------------------------------------------

def find_sequences(vars: list, factors: list) -> list[Sequence]:
    """Sequence nodes for every all_different over plain slots that shares one value list."""
    out = []
    for f in factors:
        node = f.node
        if not isinstance(node, N.AllDiff) or len(node.items) < 3:
            continue
        if not all(g is None and isinstance(x, N.VarRef) for g, x in node.items):
            continue
        xs = [x.var.id for _, x in node.items]
        if len(set(xs)) != len(xs):
            continue
        vals = vars[xs[0]].values
        if vals is None or vars[xs[0]].kind == "bool" or any(vars[v].values != vals for v in xs):
            continue
        if any(vars[v].guard is not None for v in xs):
            continue
        succ = _tables(vars, factors, xs, vals)
        chain, h = _chain(vars, factors, xs, vals)
        if succ is None and chain is None:
            # alldiff alone: the Hall singleton rule still helps a permutation
            pass
        out.append(_make(vars, factors, xs, succ, chain, h))
    return out


def _tables(vars: list, factors: list, xs: list[int], vals: list) -> Optional[list[list[int]]]:
    """Per transition i, value -> bitmask of next values allowed by (x_i, x_{i+1}) in TABLE factors."""
    n, nv = len(xs), len(vals)
    pos = {v: i for i, v in enumerate(xs)}
    index = {v: k for k, v in enumerate(vals)}
    succ: list[Optional[list[int]]] = [None] * (n - 1)
    for f in factors:
        node = f.node
        if not isinstance(node, N.Member) or len(node.elems) != 2:
            continue
        a, b = node.elems
        if not (isinstance(a, N.VarRef) and isinstance(b, N.VarRef)):
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
        if succ[i] is None:
            succ[i] = s
        else:
            succ[i] = [p & q for p, q in zip(succ[i], s)]
    if any(s is None for s in succ):
        return None
    return succ  # type: ignore[return-value]


def _chain(vars: list, factors: list, xs: list[int], vals: list):
    """The time chain tau_0..tau_L (L = n or n-1) with one step function h, or (None, None)."""
    pos = {v: i for i, v in enumerate(xs)}
    uf = _Offsets()
    steps: dict[int, tuple] = {}  # position -> (u, w, c, l, table)
    for f in factors:
        node = f.node
        if not isinstance(node, N.Cmp) or node.op != "==":
            continue
        a, b = _linear(node.a), _linear(node.b)
        if a is None or b is None:
            continue
        vs, c, ls = _add(a, _scale(b, -1))
        if len(vs) != 2 or len(ls) > 1:
            continue
        (u, cu), (w, cw) = vs.items()
        if cu + cw != 0 or abs(cu) != 1:
            continue
        c = _int(Fraction(c) / -cu) if not isinstance(c, bool) else None
        if c is None or any(vars[v].values is not None for v in (u, w)):
            continue
        # cu*u - cu*w + c0 + l*L = 0  ->  u = w + c + l'*L with c = -c0/cu, l' = -l/cu
        if not ls:
            uf.union(u, w, c)
            continue
        l, look = ls[0]
        key = look.key.var.id
        p = pos.get(key)
        lp = _int(Fraction(l) / -cu)
        if p is None or lp is None or lp == 0 or p in steps:
            continue
        if lp < 0:  # w = u - c - lp*L: time runs from u to w
            u, w, c, lp = w, u, -c, -lp
        steps[p] = (u, w, c, lp, look.table)
    if not uf.ok or not steps:
        return None, None
    n = len(xs)
    L = n if n - 1 in steps else n - 1
    if any(p not in steps for p in range(L)):
        return None, None
    chain: list[list[tuple[int, int]]] = []
    h: Optional[list[Optional[int]]] = None
    roots = []
    for p in range(L):
        u, w, c, lp, table = steps[p]
        ru, ou = uf.find(u)
        rw, ow = uf.find(w)
        if ru == rw:
            return None, None
        hp = []
        for v in vals:
            t = table.get(v) if _hashable(v) else None
            hv = None if t is None else _int(ow - ou + c + lp * t) if _int(t) is not None else None
            hp.append(hv)
        if any(x is not None and x < 0 for x in hp):
            return None, None
        if h is None:
            h = hp
        elif h != hp:
            return None, None
        if p == 0:
            roots.append(rw)
        elif roots[-1] != rw:
            return None, None
        roots.append(ru)
    if len(set(roots)) != len(roots):
        return None, None
    members: dict[int, list[tuple[int, int]]] = {r: [] for r in roots}
    for v in list(uf.parent):
        r, o = uf.find(v)
        if r in members:
            members[r].append((v, o))
    for r in roots:
        cls = members[r]
        if any(vars[v].values is not None or vars[v].kind != "num" or vars[v].step != 1 for v, _ in cls):
            return None, None
        chain.append(cls)
    return chain, h


def _hashable(v: Any) -> bool:
    try:
        hash(v)
        return True
    except TypeError:
        return False


def _make(vars: list, factors: list, xs: list[int], succ, chain, h) -> Sequence:
    """The node, with a probe that finds each (position, value)'s window of tau from the local factors."""
    def probe(seq: Sequence) -> list[list[int]]:
        D0 = [N.dom_range(v.lo, v.hi) for v in vars]
        nv = len(vars[xs[0]].values)
        out: list[list[int]] = []
        steps = len(seq.chain) - 1
        for j in range(len(xs)):
            if j >= steps:
                out.append([-1] * nv)
                continue
            local_vars = {xs[j]} | {v for v, _ in seq.chain[j]} | {v for v, _ in seq.chain[j + 1]}
            local = [f.node for f in factors if f.node.vars and f.node.vars <= local_vars
                     and xs[j] in f.node.vars]
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

    if chain is not None:
        # times are bitsets over [base, base + span]: only for modest spans (huge bounds would
        # make huge ints), and the one-time probe only for modest sizes
        base = min(min(vars[v].lo - o for v, o in cls) for cls in chain)
        span = max(max(vars[v].hi - o for v, o in cls) for cls in chain) - base
        if span > MAX_SPAN or max((x for x in h if x is not None), default=0) > MAX_SPAN \
                or len(xs) * len(vars[xs[0]].values) > MAX_PROBES:
            chain, h = None, None
    seq = Sequence(xs, succ, chain, h, probe)
    if chain is not None:
        seq.base = base
    return seq


def _fixpoint(nodes: list, D: list, rounds: int = 20) -> bool:
    """HC4 over a few nodes until nothing changes; False on a wipe-out."""
    ctx = N.Ctx(D)
    for _ in range(rounds):
        ctx.changed = []
        for nd in nodes:
            r = N._as_bool(nd.fwd(D))
            if r == N.F:
                return False
            if r == N.T:
                continue
            if not nd.bwd(ctx, N.T):
                return False
        if not ctx.changed:
            return True
    return True
