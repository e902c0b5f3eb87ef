"""The generator: deterministic per seed, data-shaped text, a valid golden plan at any size."""
from __future__ import annotations

import random
import re
from collections import Counter

import pytest

from benchmarks.natural_plan import (
    CITY_POOL, check_plan, generate, generate_file, golden_record, parse_instance,
)
from benchmarks.natural_plan.generate import generate_one
from benchmarks.natural_plan.problem import RAW_KEYS

SIZES = (3, 5, 10, 20, 50)


def test_pool() -> None:
    assert len(CITY_POOL) >= 60 and len(set(CITY_POOL)) == len(CITY_POOL)


@pytest.mark.parametrize("n", SIZES)
def test_deterministic_per_seed(n: int) -> None:
    a = generate(n, 11, 3)
    assert a == generate(n, 11, 3)
    assert generate(n, 11, 2) == a[:2]          # a prefix of a longer run
    assert generate(n, 12, 3) != a
    assert len({r["prompt_0shot"] for r in a}) == 3


@pytest.mark.parametrize("n", SIZES)
def test_generated_instances_valid(n: int) -> None:
    for iid, raw in generate_file(n, 5, 5).items():
        assert re.fullmatch(rf"generated_n{n}_s5_\d", iid)
        assert tuple(raw) == RAW_KEYS and all(isinstance(v, str) for v in raw.values())
        assert raw["pred_5shot_pro"] == ""
        assert raw["prompt_5shot"].endswith("TASK: " + raw["prompt_0shot"] + "\nSOLUTION:")
        p = parse_instance(iid, raw)
        assert p.n == n == int(raw["num_cities"])
        assert sum(p.stays.values()) == p.total_days + n - 1
        assert all(2 <= d <= 7 for d in p.stays.values())
        assert check_plan(p, golden_record(p)) == []
        for a, b in zip(p.golden_order, p.golden_order[1:]):
            assert (a, b) in p.flights
        for ev in p.events:   # events sit exactly on the golden window
            leg = next(leg for leg in p.golden if leg.city == ev.city)
            assert (ev.first, ev.last) == (leg.start_day, leg.end_day)


def test_rates_roughly_like_the_data() -> None:
    """Event share about 0.4, flight density like the data's, some one-way flights."""
    cities = events = one_way = items = 0
    density = []
    for raw in generate(10, 0, 40):
        p = parse_instance("g", raw)
        cities += p.n
        events += len(p.events)
        flight_text = raw["prompt_0shot"].split("direct flights:\n")[1].split("\n\n")[0]
        entries = flight_text.rstrip(".").split(", ")
        items += len(entries)
        one_way += sum(e.startswith("from ") for e in entries)
        density.append(len(p.flights) / (p.n * (p.n - 1)))
    assert 0.3 < events / cities < 0.5
    assert 0 < one_way / items < 0.15
    assert 0.4 < min(density) and max(density) < 0.85


def test_text_style_matches_data(raw_data: dict) -> None:
    """Every sentence shape of the generated prompts occurs in the data (after masking)."""
    def shapes(text: str, cities: list[str]) -> set[str]:
        head = text.split("\n\nHere are")[0]
        for c in sorted(cities, key=len, reverse=True):
            head = head.replace(c, "C")
        return set(re.split(r"(?<=\.) ", re.sub(r"\d+", "N", head)))
    data_shapes: set[str] = set()
    for r in raw_data.values():
        data_shapes |= shapes(r["prompt_0shot"], r["cities"].split("**"))
    gen_shapes: set[str] = set()
    for r in generate(8, 3, 30):
        gen_shapes |= shapes(r["prompt_0shot"], r["cities"].split("**"))
        assert r["golden_plan"].startswith("Here is the trip plan for visiting the 8 European cities for ")
    assert gen_shapes == data_shapes


def test_multi_word_city_names_parse() -> None:
    raw = generate_one(len(CITY_POOL), random.Random(0))
    p = parse_instance("all", raw)
    assert {"The Hague", "San Sebastian"} <= set(p.cities)
    assert check_plan(p, golden_record(p)) == []


def test_bad_sizes() -> None:
    with pytest.raises(ValueError):
        generate(len(CITY_POOL) + 1, 0, 1)
    with pytest.raises(ValueError):
        generate(1, 0, 1)
    assert generate(4, 0, 0) == []


def test_kinds_all_used() -> None:
    kinds = Counter(ev.kind for raw in generate(10, 1, 20) for ev in parse_instance("g", raw).events)
    assert len(kinds) == 7
