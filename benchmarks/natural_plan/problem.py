"""NATURAL PLAN trip-planning instances: strict parsing of the prompt text into a TripProblem.

Every sentence of a prompt must match a known phrasing; an unknown one is an error naming the
instance and the sentence, because a silently skipped sentence would drop a constraint and make
the compiled spec looser than the task.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from factorspec.errors import FactorSpecError

FLIGHTS_MARKER = "\n\nHere are the cities that have direct flights:\n"

RAW_KEYS = (
    "num_cities",
    "cities",
    "durations",
    "prompt_0shot",
    "prompt_5shot",
    "golden_plan",
    "pred_5shot_pro",
)


class NaturalPlanError(FactorSpecError):
    """A NATURAL PLAN instance does not parse or is inconsistent.

    Names the instance and the offending sentence so a bad record can be found as is."""

    def __init__(self, instance_id: str, message: str, sentence: str | None = None) -> None:
        self.instance_id = instance_id
        self.sentence = sentence
        self.message = message
        text = f"{instance_id}: {message}"
        if sentence is not None:
            text += f": {sentence!r}"
        super().__init__(text)


@dataclass(frozen=True)
class Event:
    """A fixed-day event: the stay in `city` must cover days first..last (inclusive)."""

    city: str
    first: int
    last: int
    kind: str
    sentence: str


@dataclass(frozen=True)
class Leg:
    """One visit of the golden plan: `city` from start_day to end_day inclusive."""

    city: str
    start_day: int
    end_day: int


@dataclass
class TripProblem:
    """One trip-planning task, parsed.

    `cities` is in prompt order (order of the stay sentences), which is also the enum order of
    the spec; `golden` is the reference plan, cross-checked between the `cities`/`durations`
    fields and the golden_plan text."""

    id: str
    cities: tuple[str, ...]
    stays: dict[str, int]
    total_days: int
    events: list[Event]
    flights: frozenset[tuple[str, str]]
    prompt_0shot: str
    golden: tuple[Leg, ...] = field(default=())

    @property
    def n(self) -> int:
        """Number of cities (= itinerary length)."""
        return len(self.cities)

    @property
    def golden_order(self) -> tuple[str, ...]:
        """Golden visiting order."""
        return tuple(leg.city for leg in self.golden)

    @property
    def prompt(self) -> str:
        """The prompt to send for JSON answers (see `json_prompt`)."""
        return json_prompt(self)


# A city name: words of letters, hyphens and apostrophes separated by single spaces, the first
# one capitalised ("The Hague", "Frankfurt am Main"). No dots, so a name can never run across a
# sentence end and swallow the next sentence. Non-greedy so the text that follows anchors it.
_C = r"(?P<city>[A-Z][\w'\u2019-]*(?: [\w'\u2019-]+)*?)"
_A = r"(?P<a>\d+)"
_B = r"(?P<b>\d+)"
_N = r"(?P<n>\d+)"

_HEADER = re.compile(r"You plan to visit (?P<n>\d+) European cities for (?P<t>\d+) days in total\.")
_DIRECT = re.compile(r"You only take direct flights to commute between cities\.")
_STAYS = [
    re.compile(rf"You want to spend {_N} days in {_C}\."),
    re.compile(rf"You plan to stay in {_C} for {_N} days\."),
    re.compile(rf"You would like to visit {_C} for {_N} days\."),
]
# (kind, pattern); the kind is a short label of the event type.
_EVENTS = [
    ("relatives", re.compile(rf"You plan to visit relatives in {_C} between day {_A} and day {_B}\.")),
    ("friend", re.compile(rf"You want to meet a friend in {_C} between day {_A} and day {_B}\.")),
    ("wedding", re.compile(rf"You are going to attend a wedding in {_C} between day {_A} and day {_B}\.")),
    ("workshop", re.compile(rf"You have to attend a workshop in {_C} between day {_A} and day {_B}\.")),
    ("conference", re.compile(rf"During day {_A} and day {_B}, you have to attend a conference in {_C}\.")),
    ("annual_show", re.compile(rf"From day {_A} to day {_B}, there is a annual show you want to attend in {_C}\.")),
    ("tour_with_friends", re.compile(
        rf"You would like to meet your friends at {_C} between day {_A} and day {_B} to tour together\.")),
]
_TAIL = re.compile(
    r"Find a trip plan of visiting the cities for (?P<t>\d+) days by taking direct flights to commute between them\.")
_SPACE = re.compile(r"\s*")

_GOLDEN_HEAD = re.compile(r"Here is the trip plan for visiting the (?P<n>\d+) European cities for (?P<t>\d+) days:")
_GOLDEN_FIRST = re.compile(rf"\*\*Day {_A}-{_B}:\*\* Arriving in {_C} and visit (?P<city2>.+?) for {_N} days\.")
_GOLDEN_VISIT = re.compile(rf"\*\*Day {_A}-{_B}:\*\* Visit {_C} for {_N} days\.")
_GOLDEN_FLY = re.compile(r"\*\*Day (?P<d>\d+):\*\* Fly from (?P<x>.+?) to (?P<y>.+?)\.")


def _sentence_at(text: str, pos: int) -> str:
    """The text from pos to the next sentence end, to quote an unparseable sentence."""
    m = re.compile(r".*?\.(?=\s|$)|.+", re.S).match(text, pos)
    return m.group(0) if m else text[pos:]


def parse_instance(instance_id: str, raw: Mapping[str, Any]) -> TripProblem:
    """Parse one raw record (the 7 string fields) into a TripProblem; NaturalPlanError on any
    sentence that matches no known phrasing or any inconsistency between the fields."""
    def fail(message: str, sentence: str | None = None) -> NaturalPlanError:
        return NaturalPlanError(instance_id, message, sentence)

    for key in ("num_cities", "cities", "durations", "prompt_0shot", "golden_plan"):
        if not isinstance(raw.get(key), str):
            raise fail(f"field {key!r} missing or not a string")
    prompt = raw["prompt_0shot"]
    if prompt.count(FLIGHTS_MARKER) != 1:
        raise fail("prompt has no (single) 'Here are the cities that have direct flights:' section")
    head, rest = prompt.split(FLIGHTS_MARKER)
    if "\n\n" not in rest:
        raise fail("prompt has no task sentence after the flight list", rest)
    flight_text, tail = rest.split("\n\n", 1)

    # --- head: header, stays, events -------------------------------------------------------
    header: re.Match[str] | None = None
    stays: dict[str, int] = {}
    raw_events: list[tuple[str, int, int, str, str]] = []
    pos = _SPACE.match(head, 0).end()
    while pos < len(head):
        m: re.Match[str] | None = None
        if (m := _HEADER.match(head, pos)) is not None:
            if header is not None:
                raise fail("repeated header sentence", m.group(0))
            header = m
        elif (m := _DIRECT.match(head, pos)) is not None:
            pass
        else:
            for pat in _STAYS:
                if (m := pat.match(head, pos)) is not None:
                    city, days = m["city"], int(m["n"])
                    if city in stays:
                        raise fail(f"second stay sentence for {city}", m.group(0))
                    if days < 1:
                        raise fail("stay of less than one day", m.group(0))
                    stays[city] = days
                    break
            else:
                for kind, pat in _EVENTS:
                    if (m := pat.match(head, pos)) is not None:
                        raw_events.append((m["city"], int(m["a"]), int(m["b"]), kind, m.group(0)))
                        break
                else:
                    raise fail("unrecognised sentence", _sentence_at(head, pos))
        assert m is not None
        pos = _SPACE.match(head, m.end()).end()
    if header is None:
        raise fail("no 'You plan to visit N European cities for N days in total.' sentence")
    total = int(header["t"])
    if int(header["n"]) != len(stays):
        raise fail(f"header says {header['n']} cities but {len(stays)} stay sentences found", header.group(0))
    if len(stays) < 1:
        raise fail("no cities")
    cities = tuple(stays)

    events: list[Event] = []
    for city, a, b, kind, sentence in raw_events:
        if city not in stays:
            raise fail(f"event in {city}, which has no stay sentence", sentence)
        if not 1 <= a <= b <= total:
            raise fail(f"event window {a}..{b} outside 1..{total}", sentence)
        events.append(Event(city, a, b, kind, sentence))

    # --- tail ------------------------------------------------------------------------------
    t = _TAIL.fullmatch(tail.strip())
    if t is None:
        raise fail("unrecognised closing sentence", tail.strip())
    if int(t["t"]) != total:
        raise fail(f"closing sentence says {t['t']} days, header says {total}", tail.strip())

    # --- flights ---------------------------------------------------------------------------
    ft = flight_text.strip()
    if not ft.endswith("."):
        raise fail("flight list does not end with '.'", ft)
    flights: set[tuple[str, str]] = set()
    for item in ft[:-1].split(", "):
        pair: list[tuple[str, str]]
        if (m := re.fullmatch(r"from (.+) to (.+)", item)) is not None:
            pair = [(m[1], m[2])]
        elif (m := re.fullmatch(r"(.+) and (.+)", item)) is not None:
            pair = [(m[1], m[2]), (m[2], m[1])]
        else:
            raise fail("unrecognised flight", item)
        for a, b in pair:
            if a not in stays or b not in stays:
                raise fail("flight names a city with no stay sentence", item)
            if a == b:
                raise fail("flight from a city to itself", item)
            flights.add((a, b))

    problem = TripProblem(
        id=instance_id, cities=cities, stays=stays, total_days=total, events=events,
        flights=frozenset(flights), prompt_0shot=prompt,
    )
    problem.golden = _parse_golden(problem, raw, fail)
    return problem


def _parse_golden(problem: TripProblem, raw: Mapping[str, Any], fail: Any) -> tuple[Leg, ...]:
    """The golden plan from `cities`/`durations`, cross-checked against the golden_plan text
    and the prompt's stays (a mismatch means one of them was misread)."""
    order = raw["cities"].split("**")
    try:
        durations = [int(x) for x in raw["durations"].split("**")]
    except ValueError:
        raise fail("durations field is not '**'-separated integers", raw["durations"]) from None
    if str(len(order)) != raw["num_cities"].strip() or len(durations) != len(order):
        raise fail(f"num_cities {raw['num_cities']!r}, {len(order)} cities, {len(durations)} durations")
    if sorted(order) != sorted(problem.cities):
        raise fail(f"golden cities {order} are not the prompt's cities {list(problem.cities)}")
    for c, d in zip(order, durations):
        if problem.stays[c] != d:
            raise fail(f"golden duration {d} for {c}, prompt says {problem.stays[c]}")
    legs: list[Leg] = []
    day = 1
    for c, d in zip(order, durations):
        legs.append(Leg(c, day, day + d - 1))
        day += d - 1
    if legs[-1].end_day != problem.total_days:
        raise fail(f"golden stays end on day {legs[-1].end_day}, total is {problem.total_days}")

    # golden_plan text: header, then visit lines alternating with fly lines.
    lines = [ln.strip() for ln in raw["golden_plan"].split("\n") if ln.strip()]
    if not lines or (h := _GOLDEN_HEAD.fullmatch(lines[0])) is None:
        raise fail("golden_plan does not start with its header", lines[0] if lines else "")
    if int(h["n"]) != problem.n or int(h["t"]) != problem.total_days:
        raise fail("golden_plan header disagrees with the prompt", lines[0])
    body = lines[1:]
    if len(body) != 2 * len(legs) - 1:
        raise fail(f"golden_plan has {len(body)} day lines, expected {2 * len(legs) - 1}")
    for k, leg in enumerate(legs):
        line = body[2 * k]
        m = (_GOLDEN_FIRST if k == 0 else _GOLDEN_VISIT).fullmatch(line)
        if m is None or (k == 0 and m["city2"] != m["city"]):
            raise fail("unrecognised golden_plan line", line)
        if (m["city"], int(m["a"]), int(m["b"]), int(m["n"])) != (
                leg.city, leg.start_day, leg.end_day, leg.end_day - leg.start_day + 1):
            raise fail(f"golden_plan line disagrees with cities/durations ({leg})", line)
        if k + 1 < len(legs):
            fly = body[2 * k + 1]
            f = _GOLDEN_FLY.fullmatch(fly)
            if f is None:
                raise fail("unrecognised golden_plan line", fly)
            if (int(f["d"]), f["x"], f["y"]) != (leg.end_day, leg.city, legs[k + 1].city):
                raise fail("golden_plan flight line disagrees with cities/durations", fly)
    return tuple(legs)


def json_prompt(problem: TripProblem) -> str:
    """prompt_0shot plus a short instruction to answer as JSON of the spec's shape.

    The flight-day rule is stated because the JSON fields depend on it; the original prompts
    only show it through their 5-shot examples."""
    return (
        problem.prompt_0shot
        + '\n\nAnswer with only a JSON object of the form {"itinerary": [{"city": ..., '
        '"start_day": ..., "end_day": ...}, ...]}'
        + f", listing all {problem.n} cities once each in visiting order. The day of a flight counts"
        " as a day in both cities, so each city's start_day is the previous city's end_day."
    )


def load_instances(path: str) -> dict[str, TripProblem]:
    """Parse every instance of a NATURAL PLAN file (a JSON object keyed by instance id)."""
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    if not isinstance(data, dict):
        raise NaturalPlanError(path, "file is not a JSON object keyed by instance id")
    return {iid: parse_instance(iid, raw) for iid, raw in data.items()}
