"""The independent checker: every golden plan is valid, every corruption is caught."""
from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from benchmarks.natural_plan import (
    TripProblem, check_plan, generate_file, golden_record, iter_plans, parse_instance,
)


def _generated() -> dict[str, TripProblem]:
    out = {}
    for n in (3, 5, 10, 20, 50):
        for iid, raw in generate_file(n, 7, 4).items():
            out[iid] = parse_instance(iid, raw)
    return out


GENERATED = _generated()


def test_golden_plans_valid(problems: dict[str, TripProblem]) -> None:
    for p in problems.values():
        assert check_plan(p, golden_record(p)) == [], p.id


def test_golden_plans_valid_generated() -> None:
    for p in GENERATED.values():
        assert check_plan(p, golden_record(p)) == [], p.id


def test_enumerator_agrees_with_checker(problems: dict[str, TripProblem]) -> None:
    """Every enumerated plan passes the checker and the golden plan is among them."""
    multi = {}
    for p in problems.values():
        plans = list(iter_plans(p))
        assert golden_record(p) in plans, p.id
        for plan in plans:
            assert check_plan(p, plan) == [], p.id
        if len(plans) > 1:
            multi[p.id] = len(plans)
    # Known: three 10-city instances admit valid plans other than the golden one.
    assert multi == {"trip_planning_example_1450": 7, "trip_planning_example_1511": 2,
                     "trip_planning_example_1568": 2}


def _corruptions(p: TripProblem, rng: random.Random) -> list[tuple[str, Any]]:
    g = golden_record(p)
    it = g["itinerary"]
    n, t = len(it), p.total_days
    out: list[tuple[str, Any]] = []

    def mut(name: str, fn: Any) -> None:
        rec = copy.deepcopy(g)
        fn(rec["itinerary"])
        out.append((name, rec))

    k = rng.randrange(n)
    field = rng.choice(["start_day", "end_day"])
    mut("day+1", lambda x: x[k].__setitem__(field, x[k][field] + 1))
    mut("day-1", lambda x: x[k].__setitem__(field, x[k][field] - 1))
    other = rng.choice([c for c in p.cities if c != it[k]["city"]])
    mut("city", lambda x: x[k].__setitem__("city", other))
    mut("unknown city", lambda x: x[k].__setitem__("city", "Atlantis"))
    j = rng.randrange(n - 1)
    mut("swap cities", lambda x: (lambda a, b: (x[j].__setitem__("city", b), x[j + 1].__setitem__("city", a)))(
        x[j]["city"], x[j + 1]["city"]))
    mut("swap legs", lambda x: x.__setitem__(slice(j, j + 2), [x[j + 1], x[j]]))
    mut("reverse", lambda x: x.reverse())
    mut("drop leg", lambda x: x.pop(k))
    mut("duplicate leg", lambda x: x.insert(k, dict(x[k])))
    mut("last day short", lambda x: x[-1].__setitem__("end_day", t - 1))
    mut("bool day", lambda x: x[0].__setitem__("start_day", True))
    mut("string day", lambda x: x[k].__setitem__("end_day", str(x[k]["end_day"])))
    mut("extra key", lambda x: x[k].__setitem__("note", "x"))
    mut("missing key", lambda x: x[k].pop("city"))
    mut("day 0", lambda x: x[0].__setitem__("start_day", 0))
    out.append(("not an object", []))
    out.append(("extra top key", {**g, "more": 1}))
    return out


@pytest.mark.parametrize("which", ["data", "generated"])
def test_corruptions_caught(which: str, request: pytest.FixtureRequest) -> None:
    probs = request.getfixturevalue("problems") if which == "data" else GENERATED
    rng = random.Random(0)
    for p in probs.values():
        for name, rec in _corruptions(p, rng):
            assert check_plan(p, rec), (p.id, name)


def test_reordered_plan_with_recomputed_days(problems: dict[str, TripProblem]) -> None:
    """A reordering with consistent days is valid exactly when the enumerator lists it."""
    rng = random.Random(1)
    for p in problems.values():
        valid = {tuple(leg["city"] for leg in plan["itinerary"]) for plan in iter_plans(p)}
        for _ in range(5):
            order = list(p.golden_order)
            rng.shuffle(order)
            legs, day = [], 1
            for c in order:
                legs.append({"city": c, "start_day": day, "end_day": day + p.stays[c] - 1})
                day += p.stays[c] - 1
            assert (check_plan(p, {"itinerary": legs}) == []) == (tuple(order) in valid), (p.id, order)


def test_event_containment_not_equality() -> None:
    """A stay that strictly contains the event window is fine; one that misses a day is not."""
    raw = generate_file(3, 0, 1)["generated_n3_s0_0"]
    p = parse_instance("x", raw)
    g = golden_record(p)["itinerary"]
    from benchmarks.natural_plan import Event
    leg = g[1]
    p.events = [Event(leg["city"], leg["start_day"] + 1, leg["end_day"], "friend", "s")]
    assert check_plan(p, {"itinerary": g}) == []
    p.events = [Event(leg["city"], leg["start_day"], leg["end_day"] + 1, "friend", "s")]
    assert any("does not cover" in v for v in check_plan(p, {"itinerary": g}))
