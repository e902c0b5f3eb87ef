"""Differential test (issue #14): on random specs with huge bounds and steps, `check` (the
independent evaluator), `solve`, `count`, `feasible_values` and the token masks agree.

Each spec has two numbers x, y whose schema domains are astronomic (up to 10**30 units past
bounds of 10**40) and whose relations pin each to a small window far from zero, so the valid
records can be enumerated by brute force through `check` over the windows."""
from __future__ import annotations

import itertools
import time
from fractions import Fraction
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from factorspec.errors import BudgetExceeded
from factorspec.graph import compile_spec
from factorspec.graph.matcher import Matcher
from factorspec.graph.relations import format_decimal
from factorspec.graph.solver import Budget, State
from factorspec.graph.token_vocab import TokenVocab, unpack_mask

STOP = 256
VOCAB = TokenVocab([bytes([i]) for i in range(256)] + [b""], [STOP], 264, name="bytes")
STEPS = [1, 3, 7, Fraction(1, 2), Fraction(1, 1000), Fraction(5, 4)]
RELS = ["x != y", "x + y >= {c}", "x - y <= {d}", "x % {m} == {r}", "y // {m} >= {q}",
        "round(x * 3, {qr}) != y", "x * 2 == y", "x + y == {c}", "sum([x, y]) <= {c}"]


def _num(v: Any) -> Any:
    return int(v) if isinstance(v, int) or Fraction(v).denominator == 1 else float(v)


@st.composite
def specs(draw: st.DrawFn) -> tuple[dict, dict[str, list]]:
    windows: dict[str, list] = {}
    props = {}
    rels = []
    for name in ("x", "y"):
        step = draw(st.sampled_from(STEPS))
        base_units = draw(st.integers(-10**30, 10**30))
        width = draw(st.integers(0, 6))
        props[name] = {"type": "integer" if isinstance(step, int) else "number",
                       "minimum": -10**40, "maximum": 10**40, "multipleOf": _num(step)}
        lo = base_units * step
        hi = (base_units + width) * step
        rels += [f"{name} >= {format_decimal(Fraction(lo))}", f"{name} <= {format_decimal(Fraction(hi))}"]
        windows[name] = [(base_units + k) * step for k in range(width + 1)]
    # constants near the windows so that relations cut through them
    cx, cy = windows["x"][0], windows["y"][0]
    for tmpl in draw(st.lists(st.sampled_from(RELS), min_size=1, max_size=3)):
        c = cx + cy + draw(st.integers(-3, 3))
        d = cx - cy + draw(st.integers(-3, 3))
        m = draw(st.integers(2, 9))
        rels.append(tmpl.format(c=format_decimal(Fraction(c)), d=format_decimal(Fraction(d)), m=m,
                                r=draw(st.integers(0, m - 1)), q=format_decimal(Fraction(cy // m)),
                                qr=draw(st.sampled_from(["1", "0.5", "0.001"]))))
    doc = {"type": "object", "properties": props, "required": ["x", "y"],
           "x-factorspec": {"relations": rels}}
    return doc, windows


def _norm(v: Any) -> Any:
    f = Fraction(v)
    return int(f) if f.denominator == 1 else f


def _mask_accepts(cs: Any, text: str) -> bool:
    """Walk the text byte by byte: every byte in the mask and accepted, then the stop token."""
    m = Matcher.for_spec(cs, VOCAB)
    for b in text.encode():
        if b not in {int(i) for i in unpack_mask(m.next_token_mask(), VOCAB.vocab_size)}:
            return False
        assert m.accept_token(b)
    allowed = {int(i) for i in unpack_mask(m.next_token_mask(), VOCAB.vocab_size)}
    return STOP in allowed


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs())
def test_check_solve_count_values_masks_agree(case: tuple[dict, dict[str, list]]) -> None:
    doc, windows = case
    cs = compile_spec(doc)
    valid = []
    invalid = []
    for x, y in itertools.product(windows["x"], windows["y"]):
        rec = {"x": _norm(x), "y": _norm(y)}
        (valid if cs.check(rec) == [] else invalid).append(rec)
    if not valid:
        # the solver's own answer (the unsatisfiable core that `solve` adds is spec.py's, with
        # its own budget, and searches subsets that may drop the windows)
        # Known gap (closing note): without gcd reasoning some unsatisfiable cases over huge
        # domains are only refuted by a long narrowing; those must end in an explicit
        # BudgetExceeded within the budget (never a hang or a wrong "satisfiable").
        t0 = time.monotonic()
        try:
            assert State.root(cs.problem, Budget(seconds=3.0)) is None
        except BudgetExceeded:
            assert time.monotonic() - t0 < 10.0
        return
    assert cs.count() == len(valid)
    rec = cs.solve()
    assert {k: _norm(v) for k, v in rec.items()} in valid
    st_ = cs.root()
    for name in ("x", "y"):
        var = next(v for p, v in cs.var_of.items() if p[-1] == name)
        want = sorted({Fraction(r[name]) / var.step for r in valid})
        assert [Fraction(k) for k in st_.feasible_values(var.id)] == want
    # token masks: every valid record's canonical text decodes; a few invalid ones do not
    for r in valid[:3]:
        assert _mask_accepts(cs, cs.canonical_text(r))
    for r in invalid[:3]:
        assert not _mask_accepts(cs, cs.canonical_text(r))


def test_mask_helper_rejects_and_accepts() -> None:
    """The helper itself can fail: a record outside the relation is refused, one inside accepted."""
    cs = compile_spec({"type": "object", "properties": {"x": {"type": "integer", "minimum": 0, "maximum": 10**20}},
                       "required": ["x"], "x-factorspec": {"relations": ["x == 10000000000000000001"]}})
    assert _mask_accepts(cs, cs.canonical_text({"x": 10000000000000000001}))
    assert not _mask_accepts(cs, cs.canonical_text({"x": 10000000000000000002}))
    assert np.asarray(Matcher.for_spec(cs, VOCAB).next_token_mask()).size > 0
