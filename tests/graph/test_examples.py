"""Every spec in examples/: it compiles, its record passes, solve gives a passing record, and a
corrupted record fails naming exactly the relations it breaks."""
from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from factorspec.graph import compile_spec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NAMES = ["trip_plan", "meeting_schedule", "invoice", "seating_plan", "budget_allocation"]


def _load(name: str) -> tuple[dict, dict]:
    spec = json.loads((EXAMPLES / f"{name}.spec.json").read_text(encoding="utf-8"))
    record = json.loads((EXAMPLES / f"{name}.record.json").read_text(encoding="utf-8"))
    return spec, record


def _set(path: tuple, value: Any) -> Callable[[dict], None]:
    def f(rec: dict) -> None:
        x = rec
        for p in path[:-1]:
            x = x[p]
        x[path[-1]] = value
    return f


def _swap(arr: str, i: int, j: int) -> Callable[[dict], None]:
    def f(rec: dict) -> None:
        rec[arr][i], rec[arr][j] = rec[arr][j], rec[arr][i]
    return f


def _drop(arr: str, i: int) -> Callable[[dict], None]:
    def f(rec: dict) -> None:
        del rec[arr][i]
    return f


# (example, corruption, the exact set of relations it breaks)
CORRUPTIONS = [
    ("trip_plan", _set(("itinerary", 0, "end_day"), 6), {"stay_length", "fly_same_day"}),
    ("trip_plan", _set(("itinerary", 2, "city"), "Naples"), {"visit_each_city_once", "stay_length", "event_0_Naples"}),
    ("trip_plan", _swap("itinerary", 1, 2), {"fly_same_day", "ends_on_last_day", "direct_flight"}),
    ("meeting_schedule", _set(("meetings", 1, "end"), 675), {"duration"}),
    ("meeting_schedule", _set(("meetings", 2, "start"), 825), {"time_window", "duration"}),
    ("meeting_schedule", _set(("meetings", 1, "room"), "Fjord"), {"review_in_big_room"}),
    ("meeting_schedule", _set(("meetings", 2, "title"), "standup"), {"each_meeting_once", "duration", "time_window"}),
    ("invoice", _set(("total",), 36.17), {"total"}),
    ("invoice", _set(("tax",), 2.67), {"tax", "total"}),
    ("invoice", _set(("lines", 0, "amount"), 25.99), {"line_amount", "subtotal"}),
    ("invoice", _set(("lines", 1, "unit_price"), 2.49), {"list_price", "line_amount"}),
    ("invoice", _drop("lines", 1), {"subtotal"}),
    ("seating_plan", _swap("seats", 1, 3), {"no_feuding_neighbours"}),
    ("seating_plan", _set(("seats", 2, "menu"), "fish"), {"vegetarian_menu", "fish_limit"}),
    ("seating_plan", _swap("seats", 0, 1), {"host_in_seat_0", "no_feud_across_the_head"}),
    ("budget_allocation", _set(("items", 1, "amount"), 250), {"food_minimum", "total_is_sum"}),
    ("budget_allocation", _set(("items", 0, "category"), "gear"), {"travel_minimum", "at_most_one_gear_item"}),
    ("budget_allocation", _swap("items", 0, 1), {"largest_first"}),
]


@pytest.mark.parametrize("name", NAMES)
def test_example_record_passes_and_solve_passes(name: str) -> None:
    spec, record = _load(name)
    cs = compile_spec(spec)
    assert cs.check(record) == [], [str(v) for v in cs.check(record)]
    t0 = time.perf_counter()
    solved = cs.solve()
    assert time.perf_counter() - t0 < 1.0
    assert cs.check(solved) == []  # exact values (Fractions) as solve() returns them
    text = cs.canonical_text(solved)
    assert cs.check(json.loads(text)) == []  # and as JSON text


@pytest.mark.parametrize("name,corrupt,expected", CORRUPTIONS,
                         ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(CORRUPTIONS)])
def test_corrupted_record_names_the_relation(name: str, corrupt: Callable, expected: set) -> None:
    spec, record = _load(name)
    cs = compile_spec(spec)
    bad = copy.deepcopy(record)
    corrupt(bad)
    violations = cs.check(bad)
    assert {v.relation for v in violations} == expected, [str(v) for v in violations]
    for v in violations:
        assert v.text and str(v).startswith(v.relation)


def test_every_example_is_tested() -> None:
    on_disk = sorted(p.name[: -len(".spec.json")] for p in EXAMPLES.glob("*.spec.json"))
    assert on_disk == sorted(NAMES)
    assert {n for n, _, _ in CORRUPTIONS} == set(NAMES)


def test_example_counts() -> None:
    """Small enough to count: the trip has one plan; the seating and meeting plans a few hundred."""
    assert compile_spec(_load("trip_plan")[0]).count() == 1
    assert compile_spec(_load("seating_plan")[0]).count() == 720
    assert compile_spec(_load("meeting_schedule")[0]).count() == 816


def test_invoice_variable_length_guards() -> None:
    """A one-line invoice is valid too; lines beyond the array's length impose nothing."""
    spec, _ = _load("invoice")
    cs = compile_spec(spec)
    one = {"customer": "x", "currency": "USD",
           "lines": [{"item": "gizmo", "qty": 3, "unit_price": 7.45, "amount": 22.35}],
           "subtotal": 22.35, "tax": 1.79, "total": 24.14}
    assert cs.check(one) == []
    st = cs.root()
    n = cs.len_var_of[("lines",)]
    assert st.feasible_values(n.id) == [1, 2, 3]
