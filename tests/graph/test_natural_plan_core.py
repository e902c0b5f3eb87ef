"""NATURAL PLAN through the core: every golden plan passes check and is counted; corrupted
golden records fail naming the relation they break; contradictions are Unsatisfiable naming a
minimal set of relations."""
from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from factorspec.data import natural_plan_file
from factorspec.errors import Unsatisfiable
from factorspec.graph import compile_spec
from benchmarks.natural_plan import TripProblem, check_plan, golden_record, parse_instance, to_spec

# ten-city instances with more than one valid plan (all others have exactly one)
KNOWN_COUNTS = {"trip_planning_example_1511": 2, "trip_planning_example_1568": 2,
                "trip_planning_example_1450": 7}


@pytest.fixture(scope="module")
def compiled() -> dict[str, tuple[TripProblem, Any]]:
    path = natural_plan_file()
    if not path.is_file():
        pytest.skip(f"NATURAL PLAN data not found at {path} (set FACTORSPEC_SHARED_DATA)")
    raw = json.loads(path.read_text(encoding="utf-8"))
    out = {}
    for iid, r in raw.items():
        p = parse_instance(iid, r)
        out[iid] = (p, compile_spec(to_spec(p)))
    assert len(out) == 75
    return out


def _names(cs: Any, record: dict) -> set[str]:
    return {v.relation for v in cs.check(record)}


def test_every_golden_plan_passes(compiled: dict) -> None:
    for iid, (p, cs) in compiled.items():
        assert cs.check(golden_record(p)) == [], iid


def test_counts(compiled: dict) -> None:
    counts = {iid: cs.count() for iid, (p, cs) in compiled.items()}
    assert all(c >= 1 for c in counts.values())
    assert {iid: c for iid, c in counts.items() if c != 1} == KNOWN_COUNTS
    for iid, n in KNOWN_COUNTS.items():
        p, cs = compiled[iid]
        assert p.n == 10
        plans: list[list] = []
        cs.root().count(on_solution=plans.append)
        assert len(plans) == n
        for A in plans:  # every counted plan is valid, by the core and by the independent checker
            rec = cs.record_from_assignment(A)
            assert cs.check(rec) == [] and check_plan(p, rec) == [], iid


def test_solve_finds_a_valid_plan(compiled: dict) -> None:
    for iid, (p, cs) in compiled.items():
        rec = cs.solve()
        assert cs.check(rec) == [] and check_plan(p, rec) == [], iid
        if iid not in KNOWN_COUNTS:
            assert rec == golden_record(p), iid


def test_corrupt_a_day(compiled: dict) -> None:
    for iid, (p, cs) in compiled.items():
        bad = copy.deepcopy(golden_record(p))
        bad["itinerary"][0]["end_day"] += 1
        names = _names(cs, bad)
        assert {"stay_length", "fly_same_day"} <= names, (iid, names)
        bad = copy.deepcopy(golden_record(p))
        bad["itinerary"][-1]["end_day"] -= 1
        assert {"stay_length", "ends_on_last_day"} <= _names(cs, bad), iid


def test_corrupt_a_city(compiled: dict) -> None:
    for iid, (p, cs) in compiled.items():
        bad = copy.deepcopy(golden_record(p))
        bad["itinerary"][1]["city"] = bad["itinerary"][0]["city"]  # a city twice
        names = _names(cs, bad)
        assert "visit_each_city_once" in names, (iid, names)
        bad = copy.deepcopy(golden_record(p))
        bad["itinerary"][0]["city"] = "Atlantis"  # not in the enum: the schema names it
        v = cs.check(bad)
        assert [x.relation for x in v] == ["schema"] and "itinerary[0].city" in str(v[0]), iid


def test_corrupt_the_order(compiled: dict) -> None:
    for iid, (p, cs) in compiled.items():
        bad = copy.deepcopy(golden_record(p))
        legs = bad["itinerary"]
        legs[0], legs[1] = legs[1], legs[0]  # swap two whole legs
        names = _names(cs, bad)
        assert {"starts_on_day_1", "fly_same_day"} <= names, (iid, names)
        if iid not in KNOWN_COUNTS:  # a plan with the same days but other cities is wrong too
            bad = copy.deepcopy(golden_record(p))
            a, b = bad["itinerary"][0], bad["itinerary"][1]
            a["city"], b["city"] = b["city"], a["city"]
            assert cs.check(bad), iid


def test_violations_show_paths_and_values(compiled: dict) -> None:
    p, cs = compiled["trip_planning_example_344"]
    bad = copy.deepcopy(golden_record(p))
    bad["itinerary"][0]["end_day"] += 1
    text = [str(v) for v in cs.check(bad)]
    assert any(t.startswith("stay_length [i=0]: forall i:") and "itinerary[0].end_day=" in t for t in text), text


@pytest.mark.parametrize("iid", ["trip_planning_example_344", "trip_planning_example_90",
                                 "trip_planning_example_1450"])
def test_contradiction_is_unsatisfiable_naming_relations(compiled: dict, iid: str) -> None:
    p, _ = compiled[iid]
    spec = to_spec(p)
    # every stay is at least 2 days, so the first stay cannot end on day 1
    spec["x-factorspec"]["relations"].append(
        {"name": "too_short_first_stay", "expr": "itinerary[0].end_day == 1"})
    cs = compile_spec(spec)
    with pytest.raises(Unsatisfiable) as ei:
        cs.root()
    core = ei.value.relations
    assert "too_short_first_stay" in core and "stay_length" in core
    assert set(core) <= {r["name"] for r in spec["x-factorspec"]["relations"]}
    assert all(name in str(ei.value) for name in core)
    # minimal: dropping any one relation of the core makes the rest satisfiable
    for name in core:
        trial = copy.deepcopy(spec)
        trial["x-factorspec"]["relations"] = [r for r in trial["x-factorspec"]["relations"]
                                              if r["name"] in core and r["name"] != name]
        compile_spec(trial).root()


def test_unsat_core_of_two_conflicting_relations(compiled: dict) -> None:
    p, _ = compiled["trip_planning_example_90"]
    spec = to_spec(p)
    spec["x-factorspec"]["relations"] += [
        {"name": "start_in_vienna", "expr": "itinerary[0].city == \"Vienna\""},
        {"name": "start_in_vilnius", "expr": "first(itinerary).city == \"Vilnius\""},
    ]
    with pytest.raises(Unsatisfiable) as ei:
        compile_spec(spec).solve()
    assert ei.value.relations == ["start_in_vienna", "start_in_vilnius"]
