"""Exact feasibility over the factor graph: propagation plus complete search, with budgets.

A `State` is the set of records still reachable after some decisions (slot values, array
lengths). It keeps a witness (one complete valid record) so that following the witness costs no
search; any other question is answered by propagation plus depth-first search, which is complete,
so answers are exact: no value is kept that no valid record has, none is dropped that one has.
"""
from __future__ import annotations

import heapq
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Optional

from factorspec.errors import BudgetExceeded
from factorspec.graph.backends import bounds_portfolio, check_backend, default_backend, own_only, solve_portfolio
from factorspec.graph.domain import (
    EXPLICIT_LIMIT,
    Narrowing,
    dclip,
    dcontains,
    dmax,
    dmin,
    dom_range,
    dsize,
    dvalues,
)
from factorspec.graph.expr import F, Node, T, Var, VarRef, as_bool
from factorspec.graph.globals.all_different import AllDiff
from factorspec.graph.globals.registry import post_globals
from factorspec.graph.ground import Factor, nodes_hold
from factorspec.graph.linear_fill import fill
from factorspec.graph.record_moves import moved
from factorspec.graph.record_pool import RecordPool

SUPPORTS = True  # feasible_values by supports with a complete backend (State._supports)
# supports one value away from a known record (graph/record_moves.py), from the witness, the
# first pooled records within the state and each record the backend finds
MOVES = True
MOVE_SEEDS = 4
NARROW_MOVES = 8  # values of the asked domain a narrowing tries as moves of the witness (State.narrow)


@dataclass
class Budget:
    """Explicit limits of one question to the solver (search nodes and wall time)."""

    nodes: int = 200_000
    seconds: float = 30.0
    revisions: int = 2_000_000  # propagation steps per question; past it propagation just stops
    # who searches when propagation does not decide: "own" (this module), "cpsat" (OR-tools
    # CP-SAT, graph/backends/cpsat.py) or "auto" (own with a small budget, then CP-SAT, then own);
    # default from $FACTORSPEC_BACKEND, else auto (own where ortools is not installed)
    backend: str = field(default_factory=default_backend)

    def __post_init__(self) -> None:
        check_backend(self.backend)


@dataclass
class Stats:
    searches: int = 0
    nodes: int = 0
    witness_hits: int = 0
    backend_fallbacks: int = 0  # CP-SAT solutions of a relaxation that broke a factor
    fills: int = 0  # solutions found by the linear fill, without branching
    good_hits: int = 0  # search nodes completed from an earlier search's first solution (Problem.goods)
    pool_hits: int = 0  # questions answered by a record an earlier question found (Problem.pool)
    move_hits: int = 0  # feasible values supported by a known record with one value changed (record_moves)


class Problem:
    """Variables and factors with their watch lists."""

    def __init__(self, vars: list[Var], factors: list[Factor]) -> None:
        self.vars = vars
        self.factors = factors
        # implied global nodes (recognised by the registry's recognisers) propagate after the
        # factors, never decide
        self.globals: list[Node] = post_globals(vars, factors)
        self.nodes: list[Node] = [f.node for f in factors] + self.globals
        self.n_factors = len(factors)
        # factors whose propagation a global does in their place (its `covers`): they are still
        # checked exactly at every leaf, but not re-run by each narrowing
        self.silent: frozenset[int] = frozenset().union(*(getattr(g, "covers", ()) for g in self.globals))
        self.watch: list[list[int]] = [[] for _ in vars]
        for ci, node in enumerate(self.nodes):
            if ci in self.silent:
                continue
            for vid in node.vars:
                self.watch[vid].append(ci)
        guard_watch: list[list[int]] = [[] for _ in vars]
        for v in vars:
            if v.guard is not None:
                for g in v.guard.vars:
                    guard_watch[g].append(v.id)
        self.guard_watch = guard_watch
        # nogood signatures: per factor its vars; all_different over plain slots depends on the
        # assigned values only as a set (so prefixes that used the same values in another order
        # share their failures)
        self.fvars = [tuple(sorted(f.node.vars)) for f in factors]
        self.set_sig = [isinstance(f.node, AllDiff) and all(g is None and isinstance(n, VarRef)
                                                               for g, n in f.node.items) for f in factors]
        self.fgroups = _factor_groups(self.fvars, self.set_sig)  # the same by their variables (`_key`)
        self.nogoods: set = set()  # keys of search nodes proven to have no solution
        # keys of search nodes with a solution -> that node's first solution on its open
        # variables (`_Search._dfs`): a later node with the same key has the same solutions
        # there, hence the same first one, found without searching again. Only where branching
        # is static (no pickers, no guards: `_pick` then depends on the domains alone)
        self.goods: dict[tuple, tuple] = {}
        self.decided: dict[tuple, bool] = {}  # (factor group, its variables' values) -> whether all hold
        # globals that suggest the next slot to branch on (a schedule: the task that can start
        # first); consulted once structure is decided, before document order
        self.pickers: list[Any] = [g for g in self.globals if callable(getattr(g, "pick", None))]
        # branch on structure (lengths, presence) first, then slots in document order
        self.branch_order = sorted(range(len(vars)), key=lambda i: (not vars[i].structural, vars[i].order, i))
        self.static_order = not self.pickers and all(v.guard is None for v in vars)
        self.stats = Stats()
        self.backend_cache: dict[str, Any] = {}  # e.g. the CP-SAT model (graph/backends), built once
        self.pool = RecordPool()  # records found by earlier questions (graph/record_pool.py)
        # `deadline` is set while one question (e.g. feasible_values) runs several searches: they
        # share one wall-clock budget instead of each getting a fresh one (per thread: engines
        # may draft on one thread while masking on another)
        self._question = threading.local()

    @contextmanager
    def question(self, budget: Budget) -> Iterator[None]:
        """Scope of one question: every search inside shares `budget.seconds` (nested scopes keep
        the outermost deadline)."""
        q = self._question
        if getattr(q, "deadline", None) is not None:
            yield
            return
        q.deadline = time.monotonic() + budget.seconds
        try:
            yield
        finally:
            q.deadline = None

    def initial_domains(self) -> list:
        return [dom_range(v.lo, v.hi) for v in self.vars]

    def __getstate__(self) -> dict:
        """Pickled without its caches (nogoods, decided factors, a backend's model: results only,
        rebuilt on demand) and without the per-thread question scope, so that a compiled spec
        travels between processes (the mask workers share compiled specs, workers/checkpoint.py)."""
        state = dict(self.__dict__)
        state.update(nogoods=set(), goods={}, decided={}, backend_cache={})
        del state["_question"]
        state.pop("_reading", None)  # record_moves.reading, rebuilt on demand
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._question = threading.local()


def split_fixed(D: list) -> tuple[list, int, list]:
    """(assignment of the fixed variables, None elsewhere; their ids as one bitmask; (id, domain)
    of the open ones): the split a search node's key starts from."""
    A: list = [None] * len(D)
    fixed = 0
    open_l = []
    for i, d in enumerate(D):
        if (len(d) if isinstance(d, frozenset) else d[1] - d[0] + 1) == 1:
            A[i] = dmin(d)
            fixed |= 1 << i
        else:
            open_l.append((i, d))
    return A, fixed, open_l


def _factor_groups(fvars: list[tuple[int, ...]], set_sig: list[bool]) -> list[tuple[int, tuple, tuple, bool]]:
    """The factors grouped by their variables, for `_Search._key`: (mask of the variables, the
    variables, the factors' indices, whether the key reads the assigned values as a set). An
    all_different over plain slots (`set_sig`) stays a group of its own."""
    by: dict[tuple[int, ...], list[int]] = {}
    out: list[tuple[tuple[int, ...], list[int], bool]] = []
    for ci, vs in enumerate(fvars):
        if set_sig[ci]:
            out.append((vs, [ci], True))
            continue
        g = by.get(vs)
        if g is None:
            g = by[vs] = []
            out.append((vs, g, False))
        g.append(ci)
    return [(sum(1 << v for v in vs), vs, tuple(cis), ss) for vs, cis, ss in out]


class _Frame:
    """One open node of the explicit-stack search: its propagated domains, entailed nodes, nogood
    key (None until needed), the variable it branches on, its branches and the next one to try,
    where its `_pick` scan stopped, and (counting) the solutions found before it was entered."""

    __slots__ = ("D", "ent", "key", "vid", "branches", "next", "at", "found")

    def __init__(self, D: list, ent: set, key: Optional[tuple], vid: int, branches: list, at: int) -> None:
        self.D, self.ent, self.key, self.vid, self.branches, self.at = D, ent, key, vid, branches, at
        self.next = 0
        self.found = 0


class _Search:
    def __init__(self, problem: Problem, budget: Budget) -> None:
        self.p = problem
        self.budget = budget
        self.nodes = 0
        self.revisions = 0
        self.use_goods = False  # whether _frame may answer from Problem.goods (depth-first solve only)
        self.deadline = time.monotonic() + budget.seconds
        shared = getattr(problem._question, "deadline", None)
        if shared is not None:  # a search inside a larger question shares its clock
            self.deadline = min(self.deadline, shared)

    def _tick(self) -> None:
        self.nodes += 1
        self.p.stats.nodes += 1
        if self.nodes > self.budget.nodes:
            raise BudgetExceeded("search nodes", self.budget.nodes, self.nodes)
        # every node: nodes can cost milliseconds, and one question may run many short searches
        if time.monotonic() > self.deadline:
            used = round(time.monotonic() - self.deadline + self.budget.seconds, 3)
            raise BudgetExceeded("seconds", self.budget.seconds, used)

    def propagate(self, D: list, changed: Optional[Iterable[int]] = None, ent: Optional[set] = None) -> bool:
        """Narrow D in place to a fixpoint (or until the revision budget); False if infeasible.

        `ent` (optional, updated in place) holds the nodes already entailed (true for every
        completion) under domains that D only narrows: they are skipped, since domains only
        shrink along a search path and an entailed node stays entailed."""
        p = self.p
        nodes, nf = p.nodes, p.n_factors
        if changed is None:
            pending = [ci for ci in range(len(nodes)) if ci not in p.silent]
        else:
            pending = sorted({ci for v in changed for ci in p.watch[v]})
        if ent:
            pending = [ci for ci in pending if ci not in ent]
        # cheap factors first; a global node runs only once the factors are at a fixpoint
        queue = [ci for ci in pending if ci < nf]
        gqueue = [ci for ci in pending if ci >= nf]
        inq = set(pending)
        ctx = Narrowing(D)
        while queue or gqueue:
            ci = queue.pop() if queue else gqueue.pop()
            inq.discard(ci)
            node = nodes[ci]
            r = as_bool(node.fwd(D))
            if r == F:
                return False
            if r == T:
                if ent is not None:
                    ent.add(ci)
                continue
            ctx.changed = []
            if not node.bwd(ctx, T):
                return False
            self.revisions += 1
            if self.revisions > self.budget.revisions:
                return True  # stop narrowing; search still decides exactly
            if not self.revisions & 255 and time.monotonic() > self.deadline:
                # a long narrowing (e.g. bounds of huge domains shaved step by step) is still
                # held to the question's wall-clock budget
                used = round(time.monotonic() - self.deadline + self.budget.seconds, 3)
                raise BudgetExceeded("seconds", self.budget.seconds, used)
            for v in ctx.changed:
                for cj in p.watch[v]:
                    if cj != ci and cj not in inq and (ent is None or cj not in ent):
                        inq.add(cj)
                        (queue if cj < nf else gqueue).append(cj)
        return True

    def _pick(self, D: list, start: int = 0) -> tuple[Optional[int], int]:
        """(the variable to branch on, where in `branch_order` the scan stopped), or (None, end)
        when every variable is decided. The scan starts at `start`: a child node's variables
        before its parent's stop are decided already (domains only shrink along a path)."""
        pickers = self.p.pickers
        order = self.p.branch_order
        for at in range(start, len(order)):
            vid = order[at]
            s = dsize(D[vid])
            if s <= 1:
                continue
            v = self.p.vars[vid]
            if pickers and not v.structural:
                best = None
                for g in pickers:
                    hint = g.pick(D)
                    if hint is not None and (best is None or hint < best):
                        best = hint
                pickers = []
                if best is not None:
                    return best[-1], at
            if v.guard is not None and as_bool(v.guard.fwd(D)) == F:
                D[vid] = frozenset([dmin(D[vid])])  # absent slot: its value does not matter
                continue
            return vid, at  # structure first, then slots in document order
        return None, len(order)

    def _key(self, D: list) -> tuple:
        """What the rest of the search depends on: the open variables' domains, and for each factor
        that mixes assigned and open variables the assigned values (as a set for all_different).
        Two search nodes with equal keys have the same solutions on the open variables. (Entailed
        factors cannot be left out: `fwd` is sound for defined values only, so a factor it calls
        true may still be false on an undefined one, which only the leaf check sees.)
        Factors over the same variables are read as one group (`Problem.fgroups`): their assigned
        values are the same, so one entry stands for all (on a 50-city trip, 151 groups for 1,251
        factors); two nodes' keys are equal exactly when they were per factor."""
        p = self.p
        # which variables are fixed, as one bitmask: a group with none of them (most, high in
        # the tree) is skipped by one AND of its own mask, without reading its variables
        A, fixed, open_l = split_fixed(D)
        open_ = tuple(open_l)
        groups = p.fgroups
        sigs: list[tuple[int, Any]] = []
        decided = p.decided
        if len(decided) > 200_000:
            decided.clear()
        factors = p.factors
        for gi, (fm, vs, cis, set_sig) in enumerate(groups):
            m = fm & fixed
            if not m:
                continue
            if m == fm:
                # decided exactly (not by the interval view, which is only an over-approximation);
                # `ev` reads only the factors' own variables, so the answer is kept by their values
                dkey = (gi, tuple(A[v] for v in vs))
                holds = decided.get(dkey)
                if holds is None:
                    holds = decided[dkey] = nodes_hold((factors[ci].node for ci in cis), A)
                if holds:
                    continue
                sigs.append((gi, tuple(D[v] for v in vs)))
                continue
            fixed_vs = [v for v in vs if fixed >> v & 1]
            if set_sig:
                sigs.append((gi, frozenset(D[v] for v in fixed_vs)))
            else:
                sigs.append((gi, tuple((v, D[v]) for v in fixed_vs)))
        return open_, tuple(sigs)

    def _remember_failure(self, key: tuple) -> None:
        ng = self.p.nogoods
        if len(ng) > 200_000:
            ng.clear()
        ng.add(key)

    def _exact(self, D: list) -> bool:
        return self._holds([dmin(d) for d in D])

    def _holds(self, A: list) -> bool:
        """Every factor holds on the complete assignment A: group by group (`Problem.fgroups`),
        each group's answer kept by its variables' values in `Problem.decided`, the cache `_key`
        fills. Why: the records of one question share most groups' values (each search of a
        feasible_values question differs from the others in a prefix), and the check of every
        factor cost as much as a search node on a 50-city trip. `ev` reads only a factor's own
        variables, so a group's answer is a function of the values in the key."""
        p = self.p
        decided = p.decided
        if len(decided) > 200_000:
            decided.clear()
        factors = p.factors
        for gi, (_, vs, cis, _) in enumerate(p.fgroups):
            dkey = (gi, tuple([A[v] for v in vs]))
            holds = decided.get(dkey)
            if holds is None:
                holds = decided[dkey] = nodes_hold((factors[ci].node for ci in cis), A)
            if not holds:
                return False
        return True

    def _branches(self, d: Any) -> list:
        if isinstance(d, frozenset):
            return [frozenset([k]) for k in sorted(d)]
        # an interval (huge domain): galloping from its smallest value, as sibling branches
        # [lo], [lo+1], [lo+2, lo+3], [lo+4, lo+7], ... up to hi. The first solution is the same
        # as by bisection (both take the least value first), but values near the low end are
        # reached at a depth of a few levels, not log2(size) nested ones (10**400 units would
        # pass the recursion limit), and a question the least value answers costs one node
        lo, hi = d
        out: list = [frozenset([lo])]
        a, w = lo + 1, 1
        while a <= hi:
            b = min(hi, a + w - 1)
            out.append(dom_range(a, b))
            a, w = b + 1, w * 2
        return out

    def solve(self, D: list, changed: Optional[Iterable[int]] = None) -> Optional[list]:
        """One solution (a list of internal values) extending D, or None.

        First a linear fill (`linear_fill.fill`: open variables that only linear relations
        constrain are given their least values by running bounds, no branching; its answer is
        the same record the search would find first, or nothing), then the search."""
        self.p.stats.searches += 1
        D = list(D)
        ent: set = set()
        self._tick()
        if not self.propagate(D, changed, ent):
            return None
        sol = fill(self, D)
        if sol is not None:
            self.p.stats.fills += 1
            return sol
        return self._dfs(D, [], ent, root_ticked=True)

    def quick(self, D: list, changed: Optional[Iterable[int]] = None) -> tuple[bool, Optional[list]]:
        """Propagation and the linear fill alone, no branching: (True, a solution), (True, None)
        when propagation refutes D, or (False, None) when they do not decide. Backends ask this
        before their own search: it costs O(size of the factors). `changed` as in `propagate`
        (`[]`: D is propagated already)."""
        D = list(D)
        if not self.propagate(D, changed):
            return True, None
        sol = fill(self, D)
        if sol is not None:
            self.p.stats.fills += 1
            return True, sol
        return False, None

    def _frame(self, D: list, changed: Optional[Iterable[int]], ent: set, start: int) -> Any:
        """Enter one search node: a leaf's solution (a list), None for a dead node, or the node's
        `_Frame` to branch from."""
        self._tick()
        if not self.propagate(D, changed, ent):
            return None
        vid, at = self._pick(D, start)
        if vid is None:
            return [dmin(d) for d in D] if self._exact(D) else None
        p = self.p
        goods = self.use_goods and p.goods
        key = self._key(D) if p.nogoods or goods else None
        if key is not None:
            if key in p.nogoods:
                return None
            if goods:
                done = p.goods.get(key)
                if done is not None:
                    sol = [dmin(d) for d in D]
                    for (i, _), k in zip(key[0], done):
                        sol[i] = k
                    if self._holds(sol):  # always, by the key's soundness; checked all the same
                        p.stats.good_hits += 1
                        return sol
        return _Frame(D, ent, key, vid, self._branches(D[vid]), at)

    def _remember_goods(self, stack: list[_Frame], sol: list) -> None:
        """`sol` is the first solution under every frame on the stack (the search stops at it):
        keep it, on each frame's open variables, by the frame's key."""
        goods = self.p.goods
        if len(goods) > 20_000:
            goods.clear()
        for fr in stack:
            if fr.key is None:
                fr.key = self._key(fr.D)
            goods[fr.key] = tuple(sol[i] for i, _ in fr.key[0])

    def _failed(self, fr: _Frame) -> None:
        """Remember that fr's node has no solution (its key is computed only now, and only for
        failed nodes, unless nogoods exist to look it up on entry)."""
        self._remember_failure(fr.key if fr.key is not None else self._key(fr.D))

    def _child(self, fr: _Frame) -> Any:
        """Enter fr's next branch (see `_frame`)."""
        b = fr.branches[fr.next]
        fr.next += 1
        D = list(fr.D)
        D[fr.vid] = b
        return self._frame(D, [fr.vid], set(fr.ent), fr.at)

    def _dfs(self, D: list, changed: Optional[Iterable[int]], ent: set, root_ticked: bool = False) -> Optional[list]:
        """Depth-first search with an explicit stack (no recursion: the depth grows with the
        number of decided items, which may be thousands). Branches take least values first, so
        the first solution found is the least one in branch order."""
        if root_ticked:  # the root node's propagation is done (and counted) by the caller
            self.nodes -= 1
            self.p.stats.nodes -= 1
        self.use_goods = self.p.static_order  # first solutions are kept and reused (see Problem.goods)
        try:
            got = self._frame(D, changed, ent, 0)
            stack: list[_Frame] = []
            while True:
                if isinstance(got, _Frame):
                    stack.append(got)
                elif got is not None:
                    if self.use_goods:
                        self._remember_goods(stack, got)
                    return got
                while stack:
                    fr = stack[-1]
                    if fr.next < len(fr.branches):
                        got = self._child(fr)
                        break
                    self._failed(fr)
                    stack.pop()
                else:
                    return None
        finally:
            self.use_goods = False

    def count(self, D: list, limit: int, on_solution: Optional[Callable[[list], None]] = None) -> int:
        """Number of solutions extending D (at most about `limit`), by the same explicit-stack
        search; `on_solution` sees each one."""
        self.p.stats.searches += 1
        D = list(D)
        got = self._frame(D, None, set(), 0)
        stack: list[_Frame] = []
        total = 0
        while True:
            if isinstance(got, _Frame):
                got.found = total  # solutions found before it: those under it are total - found
                stack.append(got)
            elif got is not None:
                if on_solution:
                    on_solution(got)
                total += 1
            while stack:
                fr = stack[-1]
                if total < limit and fr.next < len(fr.branches):
                    got = self._child(fr)
                    break
                if total == fr.found:
                    self._failed(fr)
                stack.pop()
            else:
                return total


class State:
    """The records still reachable after some decisions; immutable, answers are memoised."""

    __slots__ = ("problem", "D", "witness", "budget", "_memo")

    def __init__(self, problem: Problem, D: list, witness: list, budget: Budget) -> None:
        self.problem, self.D, self.witness, self.budget = problem, D, witness, budget
        self._memo: dict = {}

    def __getstate__(self) -> tuple:
        """Pickled by value without its memo (answers only, found again on demand)."""
        return self.problem, self.D, self.witness, self.budget

    def answers(self) -> int:
        """How many answers this state holds memoised (grows as questions are asked from it)."""
        return len(self._memo)

    def __setstate__(self, state: tuple) -> None:
        self.problem, self.D, self.witness, self.budget = state
        self._memo = {}

    @classmethod
    def root(cls, problem: Problem, budget: Optional[Budget] = None) -> Optional[State]:
        budget = budget if budget is not None else Budget()
        s = _Search(problem, budget)
        D = problem.initial_domains()
        if not s.propagate(D):
            return None
        sol = solve_portfolio(s, D, propagated=True)
        if sol is None:
            return None
        problem.pool.add(sol)
        return cls(problem, D, sol, budget)

    def _restrict(self, vid: int, allowed: Any) -> Optional[list]:
        d = self.D[vid]
        if isinstance(allowed, tuple):
            nd = dclip(d, allowed[0], allowed[1])
        else:
            nd = frozenset(k for k in allowed if dcontains(d, k))
        if dsize(nd) == 0:
            return None
        D2 = list(self.D)
        D2[vid] = nd
        return D2

    def exists(self, vid: int, allowed: Any) -> bool:
        """Is there a valid record with var `vid` in `allowed` (a set of ints or (lo, hi))?"""
        return self.narrow(vid, allowed) is not None

    def narrow(self, vid: int, allowed: Any) -> Optional[State]:
        """The state after deciding var `vid` in `allowed`; None if no valid record remains."""
        key = (vid, allowed if isinstance(allowed, tuple) else frozenset(allowed))
        if key in self._memo:
            return self._memo[key]
        D2 = self._restrict(vid, allowed)
        out = None
        if D2 is not None:
            w = self.witness[vid]
            s = _Search(self.problem, self.budget)
            if dcontains(D2[vid], w):
                self.problem.stats.witness_hits += 1
                if s.propagate(D2, [vid]):
                    out = State(self.problem, D2, self.witness, self.budget)
            elif s.propagate(D2, [vid]):
                # a record an earlier question found, else a search (whose record is kept)
                sol = self.problem.pool.find(D2, vid)
                if sol is not None:
                    self.problem.stats.pool_hits += 1
                else:
                    sol = self._moved_witness(vid, D2)
                if sol is None:
                    sol = solve_portfolio(s, D2, propagated=True, hint=self.witness)
                    if sol is not None:
                        self.problem.pool.add(sol)
                if sol is not None:
                    out = State(self.problem, D2, sol, self.budget)
        self._memo[key] = out
        return out

    def _moved_witness(self, vid: int, D: list) -> Optional[list]:
        """The witness with var `vid` moved to one of the least `NARROW_MOVES` values of D[vid] (D:
        the asked domains, propagated) where every factor reading `vid` holds on it
        (record_moves.py) and that lies within D, else None. Why: a question that excludes the
        witness's value is mostly answered by such a record (an enum item of a uniqueItems array:
        any value no other item took), found by
        evaluating the factors reading one variable instead of a backend's call (a CP-SAT solve
        over 865 items cost 50 ms; JsonSchemaStore/github-workflow-template-properties asked 800
        per walk). Exact: a moved record counts only once the factors hold on it, and the answer
        (a record exists) is the backend's; only which record becomes the witness may differ. Not
        where the portfolio is the own search (`own_only`), whose least records walks follow."""
        p = self.problem
        if not MOVES or own_only(p, self.budget.backend):
            return None
        d = D[vid]
        if isinstance(d, frozenset):
            vals: Any = heapq.nsmallest(NARROW_MOVES, d)
        else:
            vals = range(d[0], min(d[1], d[0] + NARROW_MOVES - 1) + 1)
        got = moved(p, self.witness, vid, vals, first=True)
        # within D: the witness lies in this state's domains; check where propagation changed one
        if not got or not all(dcontains(x, k) for x, y, k in zip(D, self.D, got[0]) if x is not y):
            return None
        p.stats.move_hits += 1
        p.pool.add(got[0])
        return got[0]

    def assign(self, vid: int, k: int) -> Optional[State]:
        return self.narrow(vid, frozenset([k]))

    def feasible_values(self, vid: int, limit: int = EXPLICIT_LIMIT) -> list[int]:
        """Exactly the values of var `vid` that some valid record extending this state has."""
        key = ("values", vid)
        if key in self._memo:
            return self._memo[key]
        d = self.D[vid]
        if dsize(d) > limit:
            raise BudgetExceeded(f"domain size of {self.problem.vars[vid].name}", limit, dsize(d))
        with self.problem.question(self.budget):
            if self.budget.backend == "own" or not SUPPORTS:
                out = [k for k in dvalues(d) if self.assign(vid, k) is not None]
            else:
                out = self._supports(vid, d)
        self._memo[key] = out
        return out

    def _supports(self, vid: int, d: Any) -> list[int]:
        """feasible_values by supports: the witness's value and those of pooled records within
        this state are feasible; then ask for a record with `vid` among the values not yet
        supported, take its value, repeat; one refutation covers every value left. Why: a
        complete backend pays per call, and most of a walk's cost is refuting values one by one
        (#feasible + 1 calls here instead of #values, fewer where earlier records support some).
        Each record found is pooled, so the state after deciding one of its values follows it
        without a search of its own."""
        p = self.problem
        todo = set(dvalues(d))
        out = set()
        seeds = [self.witness, *p.pool.within(self.D, vid)]
        for r in seeds:
            if r[vid] in todo:
                out.add(r[vid])
                todo.discard(r[vid])

        # no moves where the portfolio is the own search (a trip under auto): its records, the
        # least in branch order, are the ones a walk follows, as under backend own
        use_moves = MOVES and not own_only(p, self.budget.backend)

        def moves(r: Sequence[Any]) -> None:
            # records with only `vid` changed (record_moves.py); pooled, so that deciding one
            # of their values follows it without a search
            if use_moves and todo:
                for r2 in moved(p, r, vid, sorted(todo)):
                    p.stats.move_hits += 1
                    out.add(r2[vid])
                    todo.discard(r2[vid])
                    p.pool.add(r2)

        for r in seeds[:MOVE_SEEDS]:
            moves(r)
        while todo:
            st = self.narrow(vid, frozenset(todo))
            if st is None:
                break
            k = st.witness[vid]
            out.add(k)
            todo.discard(k)
            moves(st.witness)
        return sorted(out)

    def value_bounds(self, vid: int) -> tuple[int, int]:
        """Smallest and largest feasible value of var `vid` (two CP-SAT optimisations where the
        backend allows, else bisection over its domain)."""
        key = ("bounds", vid)
        if key in self._memo:
            return self._memo[key]
        d = self.D[vid]
        lo, hi = dmin(d), dmax(d)
        with self.problem.question(self.budget):
            # the propagated bounds first: where propagation is exact (sums, monotone chains),
            # one witness each decides them, and an optimisation would have to prove what
            # propagation already knows (a subset-sum gap CP-SAT cannot close within budget)
            first = lo if self.witness[vid] == lo or self.exists(vid, (lo, lo)) else None
            last = hi if self.witness[vid] == hi or self.exists(vid, (hi, hi)) else None
            if first is None or last is None:
                got = bounds_portfolio(_Search(self.problem, self.budget), self.D, vid)
                if got is not None:
                    self._memo[key] = got
                    return got
            if first is None:
                a, b = lo + 1, hi
                while a < b:  # smallest feasible
                    mid = (a + b) // 2
                    if self.exists(vid, (a, mid)):
                        b = mid
                    else:
                        a = mid + 1
                first = a
            if last is None:
                a, b = first, hi - 1 if first < hi else hi
                while a < b:
                    mid = (a + b + 1) // 2
                    if self.exists(vid, (mid, b)):
                        a = mid
                    else:
                        b = mid - 1
                last = a
        self._memo[key] = (first, last)
        return first, last

    def count(self, limit: int = 10**9, on_solution: Optional[Callable[[list], None]] = None) -> int:
        return _Search(self.problem, self.budget).count(self.D, limit, on_solution)
