"""The spec document: exact shape, relation strings, quoting; plus the core checker if present."""
from __future__ import annotations

import json
from typing import Any

import pytest

from benchmarks.natural_plan import (
    Event, Leg, TripProblem, check_plan, generate_file, golden_record, parse_instance, to_spec,
)


def _problem(city_b: str = "Rome") -> TripProblem:
    return TripProblem(
        id="tiny", cities=("Oslo", city_b, "Nice"), stays={"Oslo": 3, city_b: 4, "Nice": 4},
        total_days=9,
        events=[Event(city_b, 4, 5, "wedding", f"You are going to attend a wedding in {city_b} between day 4 and day 5.")],
        flights=frozenset({("Oslo", city_b), (city_b, "Oslo"), (city_b, "Nice")}),
        prompt_0shot="...",
        golden=(Leg("Oslo", 1, 3), Leg(city_b, 3, 6), Leg("Nice", 6, 9)),
    )


def test_exact_spec() -> None:
    day = {"type": "integer", "minimum": 1, "maximum": 9}
    assert to_spec(_problem()) == {
        "title": "tiny", "type": "object",
        "properties": {"itinerary": {
            "type": "array", "minItems": 3, "maxItems": 3,
            "items": {"type": "object",
                      "properties": {"city": {"type": "string", "enum": ["Oslo", "Rome", "Nice"]},
                                     "start_day": day, "end_day": day},
                      "required": ["city", "start_day", "end_day"], "additionalProperties": False}}},
        "required": ["itinerary"], "additionalProperties": False,
        "x-factorspec": {
            "tables": {"stay": {"Oslo": 3, "Rome": 4, "Nice": 4},
                       "flights": [["Oslo", "Rome"], ["Rome", "Nice"], ["Rome", "Oslo"]]},
            "relations": [
                {"name": "starts_on_day_1", "expr": "itinerary[0].start_day == 1"},
                {"name": "ends_on_last_day", "expr": "last(itinerary).end_day == 9"},
                {"name": "stay_length", "expr": "forall i: itinerary[i].end_day - itinerary[i].start_day + 1 == stay[itinerary[i].city]"},
                {"name": "fly_same_day", "expr": "forall i: itinerary[i+1].start_day == itinerary[i].end_day"},
                {"name": "direct_flight", "expr": "forall i: (itinerary[i].city, itinerary[i+1].city) in flights"},
                {"name": "visit_each_city_once", "expr": "all_different(itinerary[*].city)"},
                {"name": "event_0_Rome",
                 "expr": 'forall i: itinerary[i].city == "Rome" implies (itinerary[i].start_day <= 4 and itinerary[i].end_day >= 5)',
                 "message": "You are going to attend a wedding in Rome between day 4 and day 5."},
            ]}}
    assert golden_record(_problem()) == {"itinerary": [
        {"city": "Oslo", "start_day": 1, "end_day": 3}, {"city": "Rome", "start_day": 3, "end_day": 6},
        {"city": "Nice", "start_day": 6, "end_day": 9}]}


def test_quoting_of_odd_city_names() -> None:
    odd = 'St. "Odd" \\ Town'
    spec = to_spec(_problem(odd))
    rel = spec["x-factorspec"]["relations"][-1]
    assert rel["name"] == "event_0_St___Odd____Town"
    assert json.dumps(odd) in rel["expr"] and '"St. \\"Odd\\" \\\\ Town"' in rel["expr"]


def test_specs_for_data(problems: dict[str, TripProblem]) -> None:
    for p in problems.values():
        spec = to_spec(p)
        json.dumps(spec)   # plain JSON
        items = spec["properties"]["itinerary"]
        assert items["minItems"] == items["maxItems"] == p.n
        assert items["items"]["properties"]["city"]["enum"] == list(p.cities)
        xf = spec["x-factorspec"]
        assert list(xf["tables"]["stay"]) == list(p.cities)
        assert xf["tables"]["flights"] == sorted(xf["tables"]["flights"])
        assert {tuple(f) for f in xf["tables"]["flights"]} == set(p.flights)
        names = [r["name"] for r in xf["relations"]]
        assert len(names) == 6 + len(p.events) == len(set(names))
        assert f"== {p.total_days}" in xf["relations"][1]["expr"]


def _core_compile() -> Any:
    try:
        from factorspec.graph import compile_spec  # type: ignore[attr-defined]
    except ImportError:
        pytest.skip("factorspec.graph.compile_spec not available yet")
    return compile_spec


def _violations(result: Any) -> list[Any]:
    """Normalise the core checker's result: a list of violations, or a bool / object with them."""
    if isinstance(result, bool):
        return [] if result else ["invalid"]
    for attr in ("violations", "violated"):
        if hasattr(result, attr):
            return list(getattr(result, attr))
    return list(result)


def test_core_checker_agrees(problems: dict[str, TripProblem]) -> None:
    compile_spec = _core_compile()
    cases = list(problems.values())[:10]
    cases += [parse_instance(i, r) for i, r in generate_file(6, 0, 3).items()]
    for p in cases:
        g = compile_spec(to_spec(p))
        rec = golden_record(p)
        assert _violations(g.check(rec)) == [] == check_plan(p, rec), p.id
        bad = json.loads(json.dumps(rec))
        bad["itinerary"][0]["end_day"] += 1
        assert _violations(g.check(bad)) and check_plan(p, bad), p.id
