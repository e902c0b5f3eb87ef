"""An independent plain-Python checker for trip plans.

Written from the task's rules directly (not from the spec), so it can confirm golden plans and
serve as a reference for the factor-graph checker without sharing its bugs."""
from __future__ import annotations

from typing import Any, Iterator

from benchmarks.natural_plan.problem import TripProblem

_KEYS = ("city", "start_day", "end_day")


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def check_plan(problem: TripProblem, record: Any) -> list[str]:
    """Every violated rule of `record` (a {"itinerary": [...]} dict), as readable strings;
    an empty list means the plan is valid. Shape errors stop the check early."""
    out: list[str] = []
    if not isinstance(record, dict) or set(record) != {"itinerary"}:
        return ["record must be an object with exactly the key 'itinerary'"]
    items = record["itinerary"]
    if not isinstance(items, list):
        return ["itinerary must be an array"]
    if len(items) != problem.n:
        out.append(f"itinerary has {len(items)} entries, expected {problem.n}")
    t = problem.total_days
    legs: list[tuple[str, int, int]] = []
    for k, it in enumerate(items):
        if not isinstance(it, dict) or set(it) != set(_KEYS):
            return out + [f"itinerary[{k}] must have exactly the keys {list(_KEYS)}"]
        city, a, b = it["city"], it["start_day"], it["end_day"]
        if city not in problem.stays:
            out.append(f"itinerary[{k}].city {city!r} is not one of the cities")
        if not _is_int(a) or not _is_int(b):
            return out + [f"itinerary[{k}] days must be integers"]
        for name, v in (("start_day", a), ("end_day", b)):
            if not 1 <= v <= t:
                out.append(f"itinerary[{k}].{name} {v} outside 1..{t}")
        legs.append((city, a, b))
    if not legs:
        return out
    if legs[0][1] != 1:
        out.append(f"first stay starts on day {legs[0][1]}, not day 1")
    if legs[-1][2] != t:
        out.append(f"last stay ends on day {legs[-1][2]}, not day {t}")
    for k, (city, a, b) in enumerate(legs):
        if city in problem.stays and b - a + 1 != problem.stays[city]:
            out.append(f"itinerary[{k}] stays {b - a + 1} days in {city}, required {problem.stays[city]}")
    for k, ((c1, _, b1), (c2, a2, _)) in enumerate(zip(legs, legs[1:])):
        if a2 != b1:
            out.append(f"itinerary[{k + 1}] starts on day {a2}, but the flight day is {b1}")
        if (c1, c2) not in problem.flights:
            out.append(f"no direct flight from {c1} to {c2}")
    seen: set[str] = set()
    for city, _, _ in legs:
        if city in seen:
            out.append(f"{city} visited more than once")
        seen.add(city)
    for ev in problem.events:
        for city, a, b in legs:
            if city == ev.city and not (a <= ev.first and b >= ev.last):
                out.append(f"stay in {city} (days {a}-{b}) does not cover days {ev.first}-{ev.last}: {ev.sentence}")
    return out


def iter_plans(problem: TripProblem, limit: int | None = None) -> Iterator[dict[str, Any]]:
    """All valid plans, by depth-first search over city orders (days follow from the order).

    For small instances: lets tests and reports ask whether the golden plan is the only one."""
    events: dict[str, list[tuple[int, int]]] = {}
    for ev in problem.events:
        events.setdefault(ev.city, []).append((ev.first, ev.last))
    found = 0
    path: list[tuple[str, int, int]] = []

    def ok(city: str, a: int, b: int) -> bool:
        return b <= problem.total_days and all(a <= f and b >= l for f, l in events.get(city, []))

    def rec(day: int) -> Iterator[dict[str, Any]]:
        nonlocal found
        if len(path) == problem.n:
            if day == problem.total_days:
                found += 1
                yield {"itinerary": [{"city": c, "start_day": a, "end_day": b} for c, a, b in path]}
            return
        used = {c for c, _, _ in path}
        for city in problem.cities:
            if city in used or (path and (path[-1][0], city) not in problem.flights):
                continue
            a, b = day, day + problem.stays[city] - 1
            if not ok(city, a, b):
                continue
            path.append((city, a, b))
            yield from rec(b)
            path.pop()
            if limit is not None and found >= limit:
                return

    yield from rec(1)
