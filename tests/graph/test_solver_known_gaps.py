"""A wrong count on main, fixed: DistinctSequence lost a record on this trip (found by
hypothesis in test_sequence_gaps.py::test_gaps_match_brute_force). The record C0, C1, C2, C3,
C4 was refuted by the Hamiltonian-path rule, which read a value just fixed by the Hall
singleton rule as still open in a later slot (`globals/sequence.py`, `_narrow`)."""
from __future__ import annotations

from factorspec.graph import compile_spec

from .test_sequence import _spec

CITIES = ["C0", "C1", "C2", "C3", "C4"]
STAYS = {"C0": 1, "C1": 3, "C2": 2, "C3": 2, "C4": 2}
FLIGHTS = [["C0", "C1"], ["C0", "C2"], ["C0", "C3"], ["C0", "C4"], ["C1", "C0"], ["C1", "C2"], ["C1", "C3"],
           ["C2", "C0"], ["C2", "C1"], ["C2", "C3"], ["C2", "C4"], ["C3", "C0"], ["C3", "C1"], ["C3", "C4"],
           ["C4", "C0"], ["C4", "C1"], ["C4", "C3"]]


def test_gap_rule_keeps_every_record() -> None:
    cs = compile_spec(_spec(CITIES, 5, STAYS, FLIGHTS, [("C2", 3, 4), ("C3", 4, 5)], 6))
    assert cs.count() == 5  # brute force: C0 anywhere in C1 C2 C3 C4 with the events held
