"""The DistinctSequence global propagator (alldiff + consecutive tables + time chain) against brute force.

Random small trip-like specs (random directed graphs, stays, day windows, sometimes more values
than slots): the solver's count and its feasible values along random prefixes must equal
enumeration of all permutations; instances with no Hamiltonian path must be unsatisfiable."""
from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from factorspec.errors import Unsatisfiable
from factorspec.graph import compile_spec
from factorspec.graph.globals.sequence import DistinctSequence

STAY = "forall i: itinerary[i].end_day - itinerary[i].start_day + 1 == stay[itinerary[i].city]"
# the same chain written the other way round (the recogniser must orient it by itself)
STAY_REVERSED = "forall i: itinerary[i].start_day == itinerary[i].end_day + 1 - stay[itinerary[i].city]"


def _spec(cities: list[str], n: int, stays: dict, flights: list, events: list, total: int,
          stay_expr: str = STAY) -> dict:
    rels = [
        {"name": "start", "expr": "itinerary[0].start_day == 1"},
        {"name": "end", "expr": f"last(itinerary).end_day == {total}"},
        {"name": "stay", "expr": stay_expr},
        {"name": "fly", "expr": "forall i: itinerary[i+1].start_day == itinerary[i].end_day"},
        {"name": "edge", "expr": "forall i: (itinerary[i].city, itinerary[i+1].city) in flights"},
        {"name": "once", "expr": "all_different(itinerary[*].city)"},
    ]
    for k, (c, a, b) in enumerate(events):
        rels.append({"name": f"ev{k}", "expr": f'forall i: itinerary[i].city == "{c}" implies '
                                               f"(itinerary[i].start_day <= {a} and itinerary[i].end_day >= {b})"})
    day = {"type": "integer", "minimum": 1, "maximum": total}
    return {
        "type": "object",
        "properties": {"itinerary": {"type": "array", "minItems": n, "maxItems": n, "items": {
            "type": "object",
            "properties": {"city": {"type": "string", "enum": cities}, "start_day": dict(day), "end_day": dict(day)},
            "required": ["city", "start_day", "end_day"], "additionalProperties": False}}},
        "required": ["itinerary"], "additionalProperties": False,
        "x-factorspec": {"tables": {"stay": stays, "flights": flights}, "relations": rels},
    }


def _brute(cities: list[str], n: int, stays: dict, flights: list, events: list, total: int) -> list[tuple]:
    fl = {tuple(f) for f in flights}
    ev = {c: (a, b) for c, a, b in events}
    out = []
    for perm in itertools.permutations(cities, n):
        if any((x, y) not in fl for x, y in zip(perm, perm[1:])):
            continue
        day, ok = 1, True
        for c in perm:
            end = day + stays[c] - 1
            if c in ev and not (day <= ev[c][0] and end >= ev[c][1]):
                ok = False
                break
            day = end
        if ok and day == total:
            out.append(perm)
    return out


@st.composite
def instances(draw):
    nc = draw(st.integers(3, 6))
    n = draw(st.integers(max(3, nc - 1), nc))  # sometimes more values than slots
    cities = [f"C{i}" for i in range(nc)]
    stays = {c: draw(st.integers(1, 4)) for c in cities}
    pairs = [(a, b) for a in cities for b in cities if a != b]
    flights = [list(p) for p in pairs if draw(st.booleans())]
    events = []
    for c in cities:
        if draw(st.integers(0, 3)) == 0:
            a = draw(st.integers(1, 12))
            events.append((c, a, a + stays[c] - 1 - draw(st.integers(0, max(0, stays[c] - 1)))))
    # the total: mostly one that some permutation of the right length reaches, sometimes any
    if draw(st.booleans()):
        perm = draw(st.permutations(cities))[:n]
        total = 1 + sum(stays[c] - 1 for c in perm)
    else:
        total = draw(st.integers(1, 14))
    return cities, n, stays, flights, events, max(total, 1)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(), st.randoms(use_true_random=False))
def test_sequence_matches_brute_force(inst, rnd) -> None:
    check_against_brute_force(inst, rnd)


def check_against_brute_force(inst, rnd) -> None:
    """Solution count, and the feasible cities at every step along a random solution, equal
    brute-force enumeration of every ordering (infeasible instances must be Unsatisfiable)."""
    cities, n, stays, flights, events, total = inst
    sols = _brute(cities, n, stays, flights, events, total)
    cs = compile_spec(_spec(cities, n, stays, flights, events, total))
    assert any(isinstance(g, DistinctSequence) for g in cs.problem.globals)
    if not sols:
        with pytest.raises(Unsatisfiable):
            cs.root()
        return
    st_ = cs.root()
    assert st_.count() == len(sols)
    target = rnd.choice(sols)
    for i in range(n):
        v = cs.var_of[("itinerary", i, "city")]
        got = sorted(v.values[k] for k in st_.feasible_values(v.id))
        want = sorted({s[i] for s in sols if s[:i] == target[:i]})
        assert got == want, (i, target)
        st_ = st_.assign(v.id, v.values.index(target[i]))
        assert st_ is not None


def test_no_hamiltonian_path_is_unsatisfiable() -> None:
    # a star: C0 <-> C1, C0 <-> C2, C0 <-> C3: no path visits all four
    cities = ["C0", "C1", "C2", "C3"]
    flights = [[a, b] for a, b in [("C0", "C1"), ("C1", "C0"), ("C0", "C2"), ("C2", "C0"), ("C0", "C3"), ("C3", "C0")]]
    stays = dict.fromkeys(cities, 2)
    cs = compile_spec(_spec(cities, 4, stays, flights, [], 5))
    with pytest.raises(Unsatisfiable):
        cs.root()


def test_several_paths_all_counted() -> None:
    cities = ["C0", "C1", "C2", "C3"]
    flights = [[a, b] for a in cities for b in cities if a != b]  # complete: every order works
    stays = dict.fromkeys(cities, 2)
    cs = compile_spec(_spec(cities, 4, stays, flights, [], 5))
    assert cs.count() == 24
    # a window that pins C2 to the third stop: 6 orders remain
    cs = compile_spec(_spec(cities, 4, stays, flights, [("C2", 3, 4)], 5))
    assert cs.count() == 6 == len(_brute(cities, 4, stays, flights, [("C2", 3, 4)], 5))


def test_chain_recognised_on_trip_spec() -> None:
    cities = ["A", "B", "C"]
    flights = [["A", "B"], ["B", "C"]]
    cs = compile_spec(_spec(cities, 3, {"A": 2, "B": 3, "C": 2}, flights, [], 5))
    (seq,) = [g for g in cs.problem.globals if isinstance(g, DistinctSequence)]
    assert seq.chain is not None and len(seq.chain) == 4 and seq.succ is not None
    assert seq.h == [1, 2, 1]
    # it propagates the all_different, the flight tables and the chain's equalities itself
    names = {cs.problem.factors[fi].relation.name for fi in seq.covers}
    assert seq.links == (True, True) and names == {"once", "edge", "stay", "fly"}
    assert cs.problem.silent >= seq.covers
    assert cs.solve()["itinerary"][1]["city"] == "B"


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_reversed_chain_counts_match(inst) -> None:
    cities, n, stays, flights, events, total = inst
    sols = _brute(cities, n, stays, flights, events, total)
    cs = compile_spec(_spec(cities, n, stays, flights, events, total, STAY_REVERSED))
    (seq,) = [g for g in cs.problem.globals if isinstance(g, DistinctSequence)]
    assert seq.chain is not None
    if not sols:
        with pytest.raises(Unsatisfiable):
            cs.root()
        return
    assert cs.count() == len(sols)


def test_values_fixed_by_hall_cascade_before_the_path_rule() -> None:
    # found by hypothesis (test_sequence_gaps): Hall fixes C4 and C5, which leaves C2 the one
    # value of slot 2; a single clean-up pass kept C2 in slot 3 as well, and the path rule read
    # the open suffix {C2, C3, C5} as a permutation and refuted the only valid record
    inst = (["C0", "C1", "C2", "C3", "C4", "C5"], 5, {"C0": 2, "C1": 3, "C2": 2, "C3": 2, "C4": 1, "C5": 2},
            [["C0", "C2"], ["C0", "C4"], ["C1", "C4"], ["C2", "C0"], ["C2", "C1"], ["C2", "C3"], ["C3", "C0"],
             ["C3", "C1"], ["C3", "C5"], ["C4", "C0"], ["C4", "C2"], ["C4", "C5"]],
            [("C4", 2, 2), ("C5", 4, 5)], 5)
    assert _brute(*inst) == [("C0", "C4", "C2", "C3", "C5")]
    cs = compile_spec(_spec(*inst))
    assert cs.count() == 1
    assert [leg["city"] for leg in cs.solve()["itinerary"]] == ["C0", "C4", "C2", "C3", "C5"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(), st.randoms(use_true_random=False))
def test_links_state_kept_between_runs_changes_nothing(inst, rnd) -> None:
    """`_links` starts from the fixpoint its last run left (`_last`, from any other node): a run
    on each of several random states narrows exactly as a run of a node with nothing kept."""
    from factorspec.graph.domain import Narrowing
    from factorspec.graph.expr import T
    cities, n, stays, flights, events, total = inst
    cs = compile_spec(_spec(cities, n, stays, flights, events, total))
    g = next(x for x in cs.problem.globals if isinstance(x, DistinctSequence))
    D0 = cs.problem.initial_domains()
    for _ in range(6):
        D = list(D0)
        for vid in rnd.sample(g.xs, rnd.randint(0, len(g.xs))):
            D[vid] = frozenset([rnd.choice(sorted(D[vid]))])
        warm = Narrowing(list(D))
        ok_warm = g.bwd(warm, T)
        g._last = None
        cold = Narrowing(list(D))
        ok_cold = g.bwd(cold, T)
        assert ok_warm == ok_cold
        if ok_cold:
            assert warm.D == cold.D
        # g._last is now this state's fixpoint: the next state's warm run starts from it
