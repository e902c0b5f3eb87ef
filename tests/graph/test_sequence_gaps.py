"""The DistinctSequence node's gap-partition rule against brute force.

Values whose start time is forced (events whose window equals the stay) cut the timeline into
gaps; the rule checks that the other values can fill the gaps exactly (short gaps as paths of the
flight table, long gaps by their steps) and narrows the next slot to the values that can open the
first gap. Every answer here is compared with enumeration of all permutations: counts (several
solutions), unsatisfiable instances, and feasible values along random prefixes."""
from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from factorspec.errors import Unsatisfiable
from factorspec.graph import compile_spec
from factorspec.graph.globals import sequence as Q
from factorspec.graph.globals.sequence import DistinctSequence, _partition
from tests.graph.test_sequence import _brute, _spec, check_against_brute_force

# -- the partition check alone --------------------------------------------------------------------

@settings(max_examples=400, deadline=None)
@given(st.lists(st.integers(0, 9), min_size=1, max_size=4), st.data())
def test_partition_matches_brute_force(lens, data) -> None:
    ng = len(lens)
    items = data.draw(st.lists(st.tuples(st.integers(1, 4), st.integers(1, (1 << ng) - 1)), max_size=7))
    types = sorted(set(items))
    counts = [items.count(t) for t in types]
    want = False
    for choice in itertools.product(range(ng), repeat=len(items)):
        if any(not m >> g & 1 for (_, m), g in zip(items, choice)):
            continue
        sums = [0] * ng
        for (hv, _), g in zip(items, choice):
            sums[g] += hv
        if sums == list(lens):
            want = True
            break
    assert _partition(tuple(lens), types, counts) is want


# -- whole instances ------------------------------------------------------------------------------

@st.composite
def anchored_instances(draw):
    """Trip specs whose events pin stays to fixed days (the windows equal the stays), from a
    random golden order; sometimes a wrong total, sparse flights or an extra city."""
    nc = draw(st.integers(4, 7))
    cities = [f"C{i}" for i in range(nc)]
    n = draw(st.integers(max(4, nc - 1), nc))
    stays = {c: draw(st.integers(1, 5)) for c in cities}
    order = draw(st.permutations(cities))[:n]
    dense = draw(st.sampled_from([0.9, 0.6, 0.35]))
    rnd = random.Random(draw(st.integers(0, 10**6)))
    pairs = [(a, b) for a in cities for b in cities if a != b]
    flights = {p for p in pairs if rnd.random() < dense}
    if draw(st.booleans()):  # the golden order flies
        flights |= set(zip(order, order[1:]))
    events, day = [], 1
    for c in order:
        end = day + stays[c] - 1
        if draw(st.integers(0, 2)) == 0:
            events.append((c, day, end))
        day = end
    total = day + draw(st.sampled_from([0, 0, 0, 1, -1]))
    return cities, n, stays, [list(f) for f in sorted(flights)], events, max(total, 1)


def _check(inst, rnd, short_gap: int) -> None:
    old = Q.SHORT_GAP
    Q.SHORT_GAP = short_gap
    try:
        _check_exact(inst, rnd)
    finally:
        Q.SHORT_GAP = old


_check_exact = check_against_brute_force


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(anchored_instances(), st.randoms(use_true_random=False))
def test_gaps_match_brute_force(inst, rnd) -> None:
    _check(inst, rnd, 12)  # short gaps enumerated as paths


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(anchored_instances(), st.randoms(use_true_random=False))
def test_gaps_long_only_match_brute_force(inst, rnd) -> None:
    _check(inst, rnd, -1)  # every gap by the step partition only


def test_gap_rule_fires_and_stays_exact(monkeypatch) -> None:
    """On fixed random instances the rule narrows the next slot (so the tests above exercise it),
    and the answers still equal brute force."""
    fired = {"fail": 0, "narrow": 0}
    orig = DistinctSequence._gaps

    def spy(self, D, dm, k, *rest):
        before = dm[k] if k < len(dm) else None
        r = orig(self, D, dm, k, *rest)
        if not r:
            fired["fail"] += 1
        elif before is not None and dm[k] != before:
            fired["narrow"] += 1
        return r

    monkeypatch.setattr(DistinctSequence, "_gaps", spy)
    rnd = random.Random(7)
    for _ in range(40):
        nc = rnd.randint(5, 7)
        cities = [f"C{i}" for i in range(nc)]
        stays = {c: rnd.randint(2, 5) for c in cities}
        order = rnd.sample(cities, nc)
        flights = {(a, b) for a in cities for b in cities if a != b and rnd.random() < 0.5}
        flights |= set(zip(order, order[1:]))
        events, day = [], 1
        for c in order:
            end = day + stays[c] - 1
            if rnd.random() < 0.4:
                events.append((c, day, end))
            day = end
        _check((cities, nc, stays, [list(f) for f in sorted(flights)], events, day), rnd, 12)
    assert fired["narrow"] > 0, fired  # (a failing split is mostly seen one level up, as a narrowing)


def test_consecutive_anchors_need_a_flight() -> None:
    # A (days 1-2) and B (days 2-3) are both pinned and adjacent, with no flight A -> B
    cities = ["A", "B", "C"]
    stays = {"A": 2, "B": 2, "C": 2}
    flights = [["B", "C"], ["C", "A"], ["A", "C"], ["C", "B"]]
    events = [("A", 1, 2), ("B", 2, 3)]
    assert _brute(cities, 3, stays, flights, events, 4) == []
    cs = compile_spec(_spec(cities, 3, stays, flights, events, 4))
    with pytest.raises(Unsatisfiable):
        cs.root()


def test_value_fixed_in_prefix_is_not_open() -> None:
    """Regression (found by test_gaps_match_brute_force): one-day stays (step 0) and two events on
    the same day. After x_0 = C4 the rules fixed x_4 = C3, which left x_3 = C0 in the same
    forward-checking pass; C0 then still sat in the open slots 5 and 6, so the path rule saw it as
    unvisited without a successor, forced it last, and wiped out the valid record
    C4 C5 C6 C0 C3 C2 C1 (61 counted, 62 exist). Forward checking now runs to a fixpoint."""
    cities = [f"C{i}" for i in range(7)]
    stays = {"C0": 2, "C1": 1, "C2": 1, "C3": 2, "C4": 1, "C5": 1, "C6": 1}
    flights = [["C0", "C3"], ["C0", "C4"], ["C0", "C5"], ["C0", "C6"], ["C1", "C0"], ["C1", "C2"],
               ["C1", "C4"], ["C1", "C5"], ["C1", "C6"], ["C2", "C0"], ["C2", "C1"], ["C2", "C4"],
               ["C3", "C2"], ["C3", "C4"], ["C3", "C6"], ["C4", "C0"], ["C4", "C1"], ["C4", "C5"],
               ["C5", "C1"], ["C5", "C2"], ["C5", "C3"], ["C5", "C4"], ["C5", "C6"], ["C6", "C0"],
               ["C6", "C3"], ["C6", "C4"]]
    events = [("C2", 3, 3), ("C1", 3, 3)]
    inst = (cities, 7, stays, flights, events, 3)
    sols = _brute(*inst)
    assert len(sols) == 62
    lost = ("C4", "C5", "C6", "C0", "C3", "C2", "C1")
    assert lost in sols
    for short_gap in (12, -1):
        old = Q.SHORT_GAP
        Q.SHORT_GAP = short_gap
        try:
            cs = compile_spec(_spec(*inst))
            st_ = cs.root()
            assert st_.count() == 62
            for i, c in enumerate(lost):  # every step of the once-lost record stays feasible
                v = cs.var_of[("itinerary", i, "city")]
                got = sorted(v.values[k] for k in st_.feasible_values(v.id))
                want = sorted({s[i] for s in sols if s[:i] == lost[:i]})
                assert got == want, i
                st_ = st_.assign(v.id, v.values.index(c))
                assert st_ is not None
            for seed in range(5):
                check_against_brute_force(inst, random.Random(seed))
        finally:
            Q.SHORT_GAP = old
