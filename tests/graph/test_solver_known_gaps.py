"""Known wrong answer, kept visible until fixed: the DistinctSequence gap-partition rule
(`globals/sequence.py`, `_gaps`) loses a record on this trip (found by hypothesis in
test_sequence_gaps.py::test_gaps_match_brute_force; present on main before #14's changes).
The missing record is C0, C1, C2, C3, C4 (C0 has a one-day stay, a zero-length step); without
the gap rule the count is right. strict xfail: it fails loudly once the rule is fixed."""
from __future__ import annotations

import pytest

from factorspec.graph import compile_spec

from .test_sequence import _spec

CITIES = ["C0", "C1", "C2", "C3", "C4"]
STAYS = {"C0": 1, "C1": 3, "C2": 2, "C3": 2, "C4": 2}
FLIGHTS = [["C0", "C1"], ["C0", "C2"], ["C0", "C3"], ["C0", "C4"], ["C1", "C0"], ["C1", "C2"], ["C1", "C3"],
           ["C2", "C0"], ["C2", "C1"], ["C2", "C3"], ["C2", "C4"], ["C3", "C0"], ["C3", "C1"], ["C3", "C4"],
           ["C4", "C0"], ["C4", "C1"], ["C4", "C3"]]


@pytest.mark.xfail(strict=True, reason="gap-partition rule drops a record with a zero-length step")
def test_gap_rule_keeps_every_record() -> None:
    cs = compile_spec(_spec(CITIES, 5, STAYS, FLIGHTS, [("C2", 3, 4), ("C3", 4, 5)], 6))
    assert cs.count() == 5  # brute force: C0 anywhere in C1 C2 C3 C4 with the events held
