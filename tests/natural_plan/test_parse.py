"""Parsing the shared data: every instance, every sentence, and loud failures on bad text."""
from __future__ import annotations

import copy
from collections import Counter
from typing import Any

import pytest

from benchmarks.natural_plan import NaturalPlanError, TripProblem, json_prompt, parse_instance
from factorspec.errors import FactorSpecError

FIRST = "trip_planning_example_1060"


def test_all_75_parse(problems: dict[str, TripProblem]) -> None:
    assert len(problems) == 75
    by_n = Counter(p.n for p in problems.values())
    # Counts stated in the data README.
    assert by_n == {3: 11, 4: 7, 5: 10, 6: 9, 7: 11, 8: 10, 9: 4, 10: 13}
    days = [p.total_days for p in problems.values()]
    assert min(days) == 7 and max(days) == 32


def test_parsed_fields_consistent(problems: dict[str, TripProblem], raw_data: dict[str, Any]) -> None:
    kinds: Counter[str] = Counter()
    for iid, p in problems.items():
        raw = raw_data[iid]
        assert p.id == iid
        assert len(p.cities) == int(raw["num_cities"]) == len(set(p.cities))
        assert sum(p.stays.values()) == p.total_days + p.n - 1
        assert list(p.golden_order) == raw["cities"].split("**")
        assert [p.stays[c] for c in p.golden_order] == [int(x) for x in raw["durations"].split("**")]
        # Every stay sentence was read: each city's stay appears in the prompt before its event.
        for c in p.cities:
            assert c in raw["prompt_0shot"]
        for ev in p.events:
            kinds[ev.kind] += 1
            assert ev.sentence in raw["prompt_0shot"]
            leg = next(leg for leg in p.golden if leg.city == ev.city)
            # In the data every event window equals the golden stay exactly.
            assert (ev.first, ev.last) == (leg.start_day, leg.end_day)
        # Every flight item was read: one entry per ', '-separated item, both ways for 'and'.
        items = raw["prompt_0shot"].split("direct flights:\n")[1].split("\n\n")[0].rstrip(".").split(", ")
        expected = sum(1 if it.startswith("from ") else 2 for it in items)
        assert len(p.flights) == expected
    assert len(kinds) == 7
    assert sum(kinds.values()) == 198


def test_prompt_order_is_stay_sentence_order(problems: dict[str, TripProblem]) -> None:
    p = problems[FIRST]
    text = p.prompt_0shot
    positions = [text.index(f" {c} ") if f" {c} " in text else text.index(f" {c}.") for c in p.cities]
    assert positions == sorted(positions)


def test_json_prompt(problems: dict[str, TripProblem]) -> None:
    p = problems[FIRST]
    jp = json_prompt(p)
    assert jp.startswith(p.prompt_0shot) and jp == p.prompt
    assert '{"itinerary": [{"city": ..., "start_day": ..., "end_day": ...}, ...]}' in jp


def _bad(raw: dict[str, Any], old: str, new: str, field: str = "prompt_0shot") -> dict[str, Any]:
    out = copy.deepcopy(raw)
    assert old in out[field]
    out[field] = out[field].replace(old, new, 1)
    return out


@pytest.mark.parametrize("old,new,needle", [
    ("You only take direct flights", "You only ever take direct flights", "You only ever take"),
    ("You want to spend 6 days in Valencia.", "You wish to spend 6 days in Valencia.", "You wish to spend"),
    ("You plan to visit relatives in Athens between day 1 and day 6.",
     "You plan to visit relatives in Athens on day 1.", "relatives in Athens on day 1"),
    ("Valencia and Naples, ", "Valencia or Naples, ", "Valencia or Naples"),
    ("Valencia and Naples, ", "Valencia and Lima, ", "Valencia and Lima"),
    ("wedding in Naples", "wedding in Lima", "Lima"),
    ("between day 16 and day 20", "between day 16 and day 21", "day 21"),
    ("Find a trip plan of visiting the cities for 20 days", "Find a trip plan of visiting the cities for 21 days",
     "21 days"),
    ("visit 4 European cities", "visit 5 European cities", "5 European cities"),
])
def test_bad_sentence_is_an_error(raw_data: dict[str, Any], old: str, new: str, needle: str) -> None:
    iid = next(k for k, r in raw_data.items() if "Valencia and Naples, from Valencia to Athens" in r["prompt_0shot"])
    with pytest.raises(NaturalPlanError) as e:
        parse_instance(iid, _bad(raw_data[iid], old, new))
    assert isinstance(e.value, FactorSpecError)
    assert iid in str(e.value) and needle in str(e.value)
    assert e.value.instance_id == iid


@pytest.mark.parametrize("field,old,new", [
    ("golden_plan", "**Day 6:** Fly from Athens to Zurich.", "**Day 7:** Fly from Athens to Zurich."),
    ("golden_plan", "Visit Zurich for 6 days.", "Visit Zurich for 5 days."),
    ("golden_plan", "**Day 11-16:** Visit", "**Day 11-16**: Visit"),
    ("durations", "6**6**6**5", "6**6**5**6"),
    ("cities", "Athens**Zurich", "Zurich**Athens"),
    ("num_cities", "4", "5"),
])
def test_golden_cross_check(raw_data: dict[str, Any], field: str, old: str, new: str) -> None:
    iid = next(k for k, r in raw_data.items() if r["cities"] == "Athens**Zurich**Valencia**Naples")
    with pytest.raises(NaturalPlanError, match=iid):
        parse_instance(iid, _bad(raw_data[iid], old, new, field))


def test_missing_field(raw_data: dict[str, Any]) -> None:
    iid, raw = next(iter(raw_data.items()))
    raw = dict(raw)
    del raw["golden_plan"]
    with pytest.raises(NaturalPlanError, match="golden_plan"):
        parse_instance(iid, raw)
