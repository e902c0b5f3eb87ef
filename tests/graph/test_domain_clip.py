"""`dclip` on explicit domains answers from its memo (`domain._CLIPS`) exactly what the clip
computes: for random sets and bounds (ints, fractions, infinite), asked twice, from equal sets
built apart, and with bounds that are equal numbers of different types."""
from __future__ import annotations

from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from factorspec.graph import domain
from factorspec.graph.domain import INF, dclip

bounds = st.one_of(st.integers(-5, 25), st.fractions(-5, 25, max_denominator=4), st.just(INF), st.just(-INF))


@settings(max_examples=300, deadline=None)
@given(st.frozensets(st.integers(-3, 22), max_size=20), bounds, bounds)
def test_clip_from_memo_is_the_clip(d: frozenset, lo, hi) -> None:
    want = frozenset(k for k in d if lo <= k <= hi)
    assert dclip(d, lo, hi) == want
    assert dclip(d, lo, hi) == want  # (now from the memo)
    assert dclip(frozenset(sorted(d)), lo, hi) == want  # an equal set built apart


def test_equal_bounds_of_other_types_share_an_answer() -> None:
    d = frozenset(range(10))
    domain._CLIPS.clear()
    assert dclip(d, 2, Fraction(9, 2)) == frozenset({2, 3, 4})
    assert dclip(d, Fraction(2), 4.5) == frozenset({2, 3, 4})
    assert dclip(d, Fraction(5, 2), 4) == frozenset({3, 4})
    assert len(domain._CLIPS) == 2
