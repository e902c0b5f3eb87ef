"""Complete backends beside the project's own search, chosen per question by `Budget.backend`.

  cpsat.py   the grounded factors as an OR-tools CP-SAT model (a relaxation where a node has no
             exact translation); its answers are exact: INFEASIBLE on a relaxation proves
             infeasibility, and a solution counts only once every factor holds on it exactly
  portfolio  (`solve_portfolio` below) `own`, `cpsat` or `auto`: propagation and the linear fill
             first (every mode: exact and O(size)); then `auto` is the own search on trips, elsewhere
             the own search with a small budget, then CP-SAT (the own search again only where
             CP-SAT's relaxed answer breaks a factor)

`ortools` is imported lazily, inside cpsat.py's functions: the core imports without it, and
`auto` is `own` where it is absent.
"""
from __future__ import annotations

import os
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Optional

from factorspec.errors import BudgetExceeded, SpecError

if TYPE_CHECKING:
    from factorspec.graph.solver import _Search

BACKENDS = ("own", "cpsat", "auto")
ENV = "FACTORSPEC_BACKEND"
# auto: the own search first, within this many nodes and this share of the question's time
# (most questions along a walk are witness hits or a few nodes; CP-SAT's model costs more)
AUTO_NODES = 400
AUTO_SHARE = 0.05
AUTO_MAX_SECONDS = 0.05
AUTO_GIVE_UP = 3
# AUTO_GIVE_UP own-search answers in a row that each cost more thread CPU than this hand the
# problem to CP-SAT as misses do (each is still returned): a CP-SAT question costs 5-20 ms on the
# families of microbench/solver_families.py, and meetings 12 in 3 rooms spent 562 ms CPU on one
# feasible_values in ~25 own searches of 20 ms. In a row: a latin square's own searches take 1 ms
# but now and then 30, and counting those apart handed it to CP-SAT (p50 1.0 -> 3.4 ms)
AUTO_SLOW = 0.01


def default_backend() -> str:
    """The backend named by FACTORSPEC_BACKEND (`auto` when unset)."""
    name = os.environ.get(ENV, "auto").strip().lower() or "auto"
    if name not in BACKENDS:
        raise SpecError(f"${ENV}", f"unknown solver backend {name!r}; expected one of {', '.join(BACKENDS)}")
    return name


def check_backend(name: str) -> str:
    if name not in BACKENDS:
        raise SpecError("Budget.backend", f"unknown solver backend {name!r}; expected one of {', '.join(BACKENDS)}")
    return name


def _is_trip(p: object) -> bool:
    """Whether the problem has the trip propagator the own search is built around: a
    `DistinctSequence` with a transition table or a time chain. A bare one (distinct values and
    nothing else, e.g. an invoice's distinct items) is not a trip: CP-SAT answers those faster."""
    return any(type(g).__name__ == "DistinctSequence"
               and (getattr(g, "succ", None) is not None or getattr(g, "chain", None) is not None)
               for g in getattr(p, "globals", ()))


def own_only(p: object, mode: str) -> bool:
    """Whether `solve_portfolio` answers every question on p by the own search alone: backend
    own, or auto on a trip or without ortools (then auto decodes as own does, record for
    record, and nothing may hand it other records)."""
    from factorspec.graph.backends import cpsat

    return mode == "own" or (mode == "auto" and (_is_trip(p) or not cpsat.available()))


def solve_portfolio(s: _Search, D: list, propagated: bool = False, hint: Optional[list] = None) -> Optional[list]:
    """One solution extending D (internal values), or None; exact. BudgetExceeded when the
    question's budget ends first (a CP-SAT UNKNOWN is that, never a guess). `propagated`: the
    caller has just propagated D (its first propagation is not repeated: a full pass over every
    factor and global costs as much as several search nodes on a 50-city trip).

    auto: the own search first with a small budget (most questions along a walk take it a few
    nodes), then CP-SAT. Once the own search has missed its small budget `AUTO_GIVE_UP` times on
    this problem, or answered slower than `AUTO_SLOW` that many times in a row, later questions go
    to CP-SAT directly. Where the problem
    has the propagator the own search is built around (a trip's `DistinctSequence`), auto is the
    own search (measured faster there on every size); `cpsat` still runs CP-SAT first. `hint`: a
    record near the one sought (the asking state's witness), CP-SAT's solution hint."""
    from factorspec.graph import solver as S
    from factorspec.graph.backends import cpsat

    mode = check_backend(s.budget.backend)
    changed: Optional[list] = [] if propagated else None
    if mode == "own":
        return s.solve(D, changed)
    # propagation and the linear fill first: no model, no search (and no import of ortools,
    # which takes seconds, where they decide)
    decided, sol = s.quick(D, changed)
    if decided:
        return sol
    p = s.p
    if mode == "auto" and _is_trip(p):
        # measured (microbench/results/solver_backends.md, NATURAL PLAN rows; natural_plan_decode):
        # on trips the own search, built around DistinctSequence, is never slower than CP-SAT and
        # at 30 cities 3x faster per question; auto there is the own search, so a trip decodes the
        # same with `auto` as with `own` by construction. Asked before `available()`: a trip
        # never needs ortools, whose import (0.7 s of CPU, pandas included) would otherwise land
        # on a worker's first trip question, or on a kill's re-adds in a standby that held specs
        return s.solve(D, changed)
    if not cpsat.available():
        return s.solve(D, changed)
    tally = p.backend_cache.setdefault("auto", {"own_missed": 0, "own_slow": 0})
    if mode == "auto" and tally["own_missed"] < AUTO_GIVE_UP and tally["own_slow"] < AUTO_GIVE_UP:
        left = s.deadline - time.monotonic()
        small = replace(s.budget, nodes=min(AUTO_NODES, s.budget.nodes),
                        seconds=max(0.0, min(AUTO_MAX_SECONDS, AUTO_SHARE * left)))
        cpu = time.thread_time()
        try:
            sol = S._Search(p, small).solve(D, changed)
        except BudgetExceeded:
            tally["own_missed"] += 1
        else:
            tally["own_slow"] = tally["own_slow"] + 1 if time.thread_time() - cpu > AUTO_SLOW else 0
            return sol
    model = cpsat.model_of(p, s.deadline)
    if model is None:  # some variable is not representable (e.g. a domain past int64)
        return s.solve(D, changed)
    left = s.deadline - time.monotonic()
    if left <= 0:
        raise BudgetExceeded("seconds", s.budget.seconds, round(s.budget.seconds - left, 3))
    found, sol = model.solve(D, left, s.budget.seconds, hint=hint)
    if not found:
        return None  # INFEASIBLE of a relaxation: no record extends D
    if sol is not None and cpsat.holds(p, sol):
        return sol
    # the relaxation's solution breaks a factor that has no exact translation: undecided
    p.stats.backend_fallbacks += 1
    tally["own_missed"] = tally["own_slow"] = 0  # the own search decides such problems: its small budget again
    return s.solve(D, changed)


def bounds_portfolio(s: _Search, D: list, vid: int) -> Optional[tuple[int, int]]:
    """(least, greatest) feasible value of var `vid` over D by two CP-SAT optimisations, or None
    when CP-SAT cannot say exactly (no ortools, a relaxed optimum that breaks a factor): then the
    caller bisects. Exact: an optimum of the relaxation that satisfies every factor is a record,
    and no record lies beyond a relaxation's optimum. D must admit a record."""
    from factorspec.graph.backends import cpsat

    if check_backend(s.budget.backend) == "own" or not cpsat.available():
        return None
    model = cpsat.model_of(s.p, s.deadline)
    if model is None:
        return None
    out = []
    for maximise in (False, True):
        left = s.deadline - time.monotonic()
        if left <= 0:
            raise BudgetExceeded("seconds", s.budget.seconds, round(s.budget.seconds - left, 3))
        try:
            found, sol = model.solve(D, left, s.budget.seconds, objective=(vid, maximise))
        except BudgetExceeded:
            if s.budget.backend == "cpsat":
                raise
            return None
        if not found or sol is None or not cpsat.holds(s.p, sol):
            return None
        out.append(sol[vid])
    return out[0], out[1]
