"""The bit helpers of `globals/sequence.py` against the plain loops they replace: the union of
table rows over a mask by byte lookups (`_union_tables`, `_union`), the bits of a mask
(`_bits`, `_bits_once`), and slot domains as masks and back (`_mask`, `_set_of`)."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from factorspec.graph.globals import sequence as Q


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 70), st.data())
def test_union_by_bytes_matches_the_loop(nv: int, data) -> None:
    row = [data.draw(st.integers(0, (1 << nv) - 1)) for _ in range(nv)]
    m = data.draw(st.integers(0, (1 << nv) - 1))
    want = 0
    for v in range(nv):
        if m >> v & 1:
            want |= row[v]
    assert Q._union(Q._union_tables(row), m) == want


@settings(max_examples=200, deadline=None)
@given(st.integers(0, (1 << 200) - 1))
def test_bits_and_sets(m: int) -> None:
    want = [v for v in range(m.bit_length()) if m >> v & 1]
    assert list(Q._bits(m)) == want
    assert Q._bits_once(m) == want
    d = Q._set_of(m)
    assert d == frozenset(want) and Q._set_of(m) is d  # one object per set
    assert Q._mask(frozenset(want)) == m
