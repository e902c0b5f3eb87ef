"""Synthetic trip-planning instances in the NATURAL PLAN format, of any size.

Instances are built backwards from a random golden plan, so each has a known valid plan; the
text uses the same phrasings as the data so `parse_instance` reads them with no special case."""
from __future__ import annotations

import random
from typing import Any

# 48 cities seen in the data plus others; two multi-word names exercise the parser.
CITY_POOL: tuple[str, ...] = (
    "Amsterdam", "Athens", "Barcelona", "Berlin", "Brussels", "Bucharest", "Budapest",
    "Copenhagen", "Dublin", "Dubrovnik", "Edinburgh", "Florence", "Frankfurt", "Geneva",
    "Hamburg", "Helsinki", "Istanbul", "Krakow", "Lisbon", "London", "Lyon", "Madrid",
    "Manchester", "Milan", "Munich", "Mykonos", "Naples", "Nice", "Oslo", "Paris", "Porto",
    "Prague", "Reykjavik", "Riga", "Rome", "Salzburg", "Santorini", "Seville", "Split",
    "Stockholm", "Stuttgart", "Tallinn", "Valencia", "Venice", "Vienna", "Vilnius", "Warsaw",
    "Zurich",
    "Belgrade", "Bergen", "Bologna", "Bordeaux", "Bratislava", "Bruges", "Cologne", "Dresden",
    "Gdansk", "Gothenburg", "Granada", "Ljubljana", "Luxembourg", "Malaga", "Marseille",
    "Palermo", "Sofia", "Thessaloniki", "Turin", "Verona", "Zagreb", "San Sebastian",
    "The Hague",
)

PREAMBLE = (
    "You are an expert at planning trips. You are given a few constraints regarding the cities to "
    "visit and the durations of staying at each city. You are also given the flight information "
    "between the cities."
)

_STAY_TEMPLATES = (
    "You want to spend {n} days in {c}.",
    "You plan to stay in {c} for {n} days.",
    "You would like to visit {c} for {n} days.",
)
_EVENT_TEMPLATES = (
    "You plan to visit relatives in {c} between day {a} and day {b}.",
    "You want to meet a friend in {c} between day {a} and day {b}.",
    "You are going to attend a wedding in {c} between day {a} and day {b}.",
    "You have to attend a workshop in {c} between day {a} and day {b}.",
    "During day {a} and day {b}, you have to attend a conference in {c}.",
    "From day {a} to day {b}, there is a annual show you want to attend in {c}.",
    "You would like to meet your friends at {c} between day {a} and day {b} to tour together.",
)

EVENT_RATE = 0.4          # share of cities with a fixed-day event (data: about 0.3 to 0.5)
ONE_WAY_RATE = 0.07       # share of flight entries that are one-way (data: about 0.06)
DENSITY = (0.45, 0.8)     # two-way-equivalent edges / (n choose 2) (data: 0.43 to 0.92 directed)


def golden_plan_text(order: list[str], stays: list[int]) -> str:
    """The golden_plan text, in the data's style."""
    total = sum(stays) - (len(order) - 1)
    lines = [f"Here is the trip plan for visiting the {len(order)} European cities for {total} days:", ""]
    day = 1
    for k, (c, d) in enumerate(zip(order, stays)):
        end = day + d - 1
        if k == 0:
            lines.append(f"**Day {day}-{end}:** Arriving in {c} and visit {c} for {d} days.")
        else:
            lines.append(f"**Day {day}:** Fly from {order[k - 1]} to {c}.")
            lines.append(f"**Day {day}-{end}:** Visit {c} for {d} days.")
        day = end
    return "\n".join(lines)


def generate_one(n_cities: int, rng: random.Random) -> dict[str, Any]:
    """One raw instance (the 7 string fields) drawn from `rng`."""
    if not 2 <= n_cities <= len(CITY_POOL):
        raise ValueError(f"n_cities must be in 2..{len(CITY_POOL)}, got {n_cities}")
    order = rng.sample(CITY_POOL, n_cities)
    stays = [rng.randint(2, 7) for _ in order]
    total = sum(stays) - (n_cities - 1)

    windows: dict[str, tuple[int, int]] = {}
    day = 1
    for c, d in zip(order, stays):
        windows[c] = (day, day + d - 1)
        day += d - 1

    # Prompt body: cities in a random order, each stay sentence followed by its event (if any).
    stay_of = dict(zip(order, stays))
    sentences = [
        f"You plan to visit {n_cities} European cities for {total} days in total.",
        "You only take direct flights to commute between cities.",
    ]
    for c in rng.sample(order, n_cities):
        sentences.append(rng.choice(_STAY_TEMPLATES).format(n=stay_of[c], c=c))
        if rng.random() < EVENT_RATE:
            a, b = windows[c]
            sentences.append(rng.choice(_EVENT_TEMPLATES).format(c=c, a=a, b=b))

    # Flights: the golden path (some one-way, in golden direction) plus random extra edges.
    edges: dict[frozenset[str], tuple[str, str] | None] = {}  # None = two-way
    for a, b in zip(order, order[1:]):
        edges[frozenset((a, b))] = (a, b) if rng.random() < ONE_WAY_RATE else None
    n_pairs = n_cities * (n_cities - 1) // 2
    target = max(n_cities - 1, min(n_pairs, round(rng.uniform(*DENSITY) * n_pairs)))
    others = [frozenset((a, b)) for i, a in enumerate(order) for b in order[i + 1:]]
    others = [e for e in others if e not in edges]
    for e in rng.sample(others, target - len(edges)):
        a, b = sorted(e)
        if rng.random() < ONE_WAY_RATE:
            edges[e] = (a, b) if rng.random() < 0.5 else (b, a)
        else:
            edges[e] = None
    items = []
    for e, direction in edges.items():
        if direction is None:
            a, b = rng.sample(sorted(e), 2)
            items.append(f"{a} and {b}")
        else:
            items.append(f"from {direction[0]} to {direction[1]}")
    rng.shuffle(items)

    prompt = (
        " ".join(sentences)
        + "\n\nHere are the cities that have direct flights:\n"
        + ", ".join(items) + "."
        + f"\n\nFind a trip plan of visiting the cities for {total} days by taking direct flights "
          "to commute between them."
    )
    return {
        "num_cities": str(n_cities),
        "cities": "**".join(order),
        "durations": "**".join(map(str, stays)),
        "prompt_0shot": prompt,
        "prompt_5shot": f"{PREAMBLE}\n\nTASK: {prompt}\nSOLUTION:",
        "golden_plan": golden_plan_text(order, stays),
        "pred_5shot_pro": "",
    }


def instance_id(n_cities: int, seed: int, k: int) -> str:
    """Id of the k-th generated instance for (n_cities, seed)."""
    return f"generated_n{n_cities}_s{seed}_{k}"


def generate(n_cities: int, seed: int, count: int) -> list[dict[str, Any]]:
    """`count` raw instances with `n_cities` cities; deterministic per (n_cities, seed).

    Instance k has its own string-seeded Random, so a prefix of a longer run equals a shorter
    run, and results do not depend on PYTHONHASHSEED or the Python build."""
    if count < 0:
        raise ValueError("count must be >= 0")
    return [generate_one(n_cities, random.Random(f"natural_plan:{n_cities}:{seed}:{k}"))
            for k in range(count)]


def generate_file(n_cities: int, seed: int, count: int) -> dict[str, dict[str, Any]]:
    """Generated instances keyed by id, i.e. the shared data file's layout."""
    return {instance_id(n_cities, seed, k): raw for k, raw in enumerate(generate(n_cities, seed, count))}
