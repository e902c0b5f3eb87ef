"""A TripProblem as a FactorSpec spec document (docs/spec.md) and its golden record."""
from __future__ import annotations

import json
import re
from typing import Any

from benchmarks.natural_plan.problem import TripProblem


def _ident(city: str) -> str:
    """City name as a relation-name fragment: non-alphanumerics become underscores."""
    return re.sub(r"\W", "_", city, flags=re.ASCII)


def to_spec(problem: TripProblem) -> dict[str, Any]:
    """The spec: a fixed-length itinerary whose relations are exactly the task's rules.

    Event relations impose containment (the stay covers the window), which is what the task
    asks; in the data the window always equals the stay, but that is a property of the answer."""
    n, t = problem.n, problem.total_days
    day = {"type": "integer", "minimum": 1, "maximum": t}
    relations: list[dict[str, str]] = [
        {"name": "starts_on_day_1", "expr": "itinerary[0].start_day == 1"},
        {"name": "ends_on_last_day", "expr": f"last(itinerary).end_day == {t}"},
        {"name": "stay_length",
         "expr": "forall i: itinerary[i].end_day - itinerary[i].start_day + 1 == stay[itinerary[i].city]"},
        {"name": "fly_same_day", "expr": "forall i: itinerary[i+1].start_day == itinerary[i].end_day"},
        {"name": "direct_flight", "expr": "forall i: (itinerary[i].city, itinerary[i+1].city) in flights"},
        {"name": "visit_each_city_once", "expr": "all_different(itinerary[*].city)"},
    ]
    for k, ev in enumerate(problem.events):
        relations.append({
            "name": f"event_{k}_{_ident(ev.city)}",
            "expr": (f"forall i: itinerary[i].city == {json.dumps(ev.city, ensure_ascii=False)} implies "
                     f"(itinerary[i].start_day <= {ev.first} and itinerary[i].end_day >= {ev.last})"),
            "message": ev.sentence,
        })
    return {
        "title": problem.id,
        "type": "object",
        "properties": {
            "itinerary": {
                "type": "array",
                "minItems": n,
                "maxItems": n,
                "items": {
                    "type": "object",
                    "properties": {
                        "city": {"type": "string", "enum": list(problem.cities)},
                        "start_day": dict(day),
                        "end_day": dict(day),
                    },
                    "required": ["city", "start_day", "end_day"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["itinerary"],
        "additionalProperties": False,
        "x-factorspec": {
            "tables": {
                "stay": {c: problem.stays[c] for c in problem.cities},
                "flights": [[a, b] for a, b in sorted(problem.flights)],
            },
            "relations": relations,
        },
    }


def golden_record(problem: TripProblem) -> dict[str, Any]:
    """The golden plan as a record of the spec (keys in schema order)."""
    return {"itinerary": [{"city": leg.city, "start_day": leg.start_day, "end_day": leg.end_day}
                          for leg in problem.golden]}
