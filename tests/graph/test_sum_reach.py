"""SumReach (globals/sum_reach.py) and MonotoneChain (globals/monotone_chain.py) against brute
force: small invoices with distinct items, rounded tax and a budget on the total (the shape of
microbench/solver_families.py's invoice), and the propagators alone on random lines.

The oracle enumerates every record in plain Python (rounding half up with Fractions) and never
calls FactorSpec's evaluator."""
from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction
from typing import Any

import pytest

from factorspec.graph import compile_spec
from factorspec.graph.domain import Narrowing, dmax, dmin, dom_range, dsize
from factorspec.graph.expr import Var
from factorspec.graph.globals.monotone_chain import MonotoneChain
from factorspec.graph.globals.sum_reach import SumReach
from factorspec.graph.solver import Budget

try:
    import ortools  # noqa: F401
    BACKENDS = ["own", "cpsat", "auto"]
except ImportError:  # the CP-SAT backends are optional (factorspec[solver])
    BACKENDS = ["own"]

CENT = Fraction(1, 100)


def _round(x: Fraction, q: Fraction) -> Fraction:
    return math.floor(x / q + Fraction(1, 2)) * q


def invoice(n: int, prices: dict[str, str], qmax: int, cap: str, rate: str) -> dict:
    money = {"type": "number", "minimum": 0, "maximum": 40, "multipleOf": 0.01}
    line = {"type": "object", "properties": {"item": {"enum": list(prices)},
                                             "qty": {"type": "integer", "minimum": 1, "maximum": qmax},
                                             "amount": money}, "required": ["item", "qty", "amount"]}
    return {"type": "object", "properties": {
        "lines": {"type": "array", "items": line, "minItems": n, "maxItems": n},
        "subtotal": money, "tax": money, "total": money},
        "required": ["lines", "subtotal", "tax", "total"],
        "x-factorspec": {"tables": {"price": {k: float(v) for k, v in prices.items()}}, "relations": [
            "forall i: lines[i].amount == lines[i].qty * price[lines[i].item]",
            "all_different(lines[*].item)",
            "subtotal == sum(lines[*].amount)",
            f"tax == round(subtotal * {rate}, 0.01)",
            "total == subtotal + tax",
            f"total <= {cap}"]}}


def invoice_records(n: int, prices: dict[str, str], qmax: int, cap: str, rate: str) -> list[dict]:
    """Every valid record by enumeration, as {path tuple: exact value}."""
    out = []
    p = {k: Fraction(v) for k, v in prices.items()}
    for items in itertools.permutations(p, n):
        for qs in itertools.product(range(1, qmax + 1), repeat=n):
            amounts = [q * p[it] for it, q in zip(items, qs)]
            sub = sum(amounts, Fraction(0))
            tax = _round(sub * Fraction(rate), CENT)
            total = sub + tax
            if total > Fraction(cap) or max(amounts + [sub, tax, total]) > 40:
                continue
            rec: dict[tuple, Any] = {("subtotal",): sub, ("tax",): tax, ("total",): total}
            for i, (it, q, a) in enumerate(zip(items, qs, amounts)):
                rec[("lines", i, "item")] = it
                rec[("lines", i, "qty")] = q
                rec[("lines", i, "amount")] = a
            out.append(rec)
    return out


CASES = [  # (lines, prices, most per line, budget on the total, tax rate)
    (2, {"a": "1.05", "b": "4.42", "c": "7.79", "d": "0.49"}, 3, "12.34", "0.08"),
    (3, {"a": "1.05", "b": "2.5", "c": "3.37", "d": "0.99", "e": "5.01"}, 2, "13.13", "0.2"),
    (2, {"a": "3.33", "b": "6.67", "c": "1.11"}, 4, "20", "0.075"),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", range(len(CASES)))
def test_invoice_walks_match_brute_force(case: int, backend: str) -> None:
    """Bounds of every slot at the root and along random walks, and feasible values of every
    small slot, equal brute force's; no walk dead-ends."""
    n, prices, qmax, cap, rate = CASES[case]
    cs = compile_spec(invoice(n, prices, qmax, cap, rate), budget=Budget(seconds=60, backend=backend))
    recs = invoice_records(n, prices, qmax, cap, rate)
    assert recs
    assert {type(g).__name__ for g in cs.root().problem.globals} >= {"SumReach", "MonotoneChain"}
    order = sorted(cs.vars, key=lambda v: (v.order, v.id))
    rng = random.Random(case)
    for _walk in range(3):
        st: Any = cs.root()
        live = recs
        for v in order:
            want = sorted({r[v.path] for r in live}, key=lambda x: (str(type(x)), x))
            if dsize(st.D[v.id]) <= 1024:
                got = [v.value(k) for k in st.feasible_values(v.id)]
                assert sorted(got, key=lambda x: (str(type(x)), x)) == want, v.name
            else:
                lo, hi = st.value_bounds(v.id)
                assert (v.value(lo), v.value(hi)) == (min(want), max(want)), v.name
            pick = rng.choice(want)
            k = next(k for k in range(v.lo, v.hi + 1) if v.value(k) == pick)
            st = st.assign(v.id, k)
            assert st is not None, f"dead end after {v.name} = {pick}"
            live = [r for r in live if r[v.path] == pick]
        assert len(live) == 1


def test_budget_out_of_reach_is_refuted_by_propagation() -> None:
    """A total the budget allows but no choice of lines reaches: refuted without search."""
    prices = {"a": "1.05", "b": "4.42", "c": "7.79", "d": "0.49"}
    recs = invoice_records(2, prices, 3, "12.34", "0.08")
    best = max(r[("total",)] for r in recs)
    assert best < Fraction("12.34")
    cs = compile_spec(invoice(2, prices, 3, "12.34", "0.08"), budget=Budget(backend="own"))
    st = cs.root()
    tv = cs.var_of[("total",)]
    assert dmax(st.D[tv.id]) * tv.step == best  # the root's propagation already knows it


def _var(i: int, lo: int, hi: int, step: Any = 1) -> Var:
    return Var(i, f"v{i}", (f"v{i}",), "num", lo, hi, step=step)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("keyed", [False, True])
def test_sum_reach_bounds_are_sound_and_exact_on_interchangeable_lines(seed: int, keyed: bool) -> None:
    """The propagator alone on random lines: its bounds of the sum contain the true least and
    greatest sum (brute force over the lines' rows, distinct keys when keyed), and equal them
    where lines are interchangeable (the same rows) or independent."""
    rng = random.Random(seed)
    n = rng.randint(2, 3)
    same = rng.random() < 0.5
    keys = rng.randint(n, n + 2)
    s = _var(0, -500, 500, Fraction(1, 2))
    lines, keyvars = [], []
    base = [(k, Fraction(rng.randint(-20, 40), rng.choice([1, 2, 4]))) for k in range(keys) for _ in range(2)]
    for i in range(n):
        kv = _var(1 + i, 0, keys - 1)
        keyvars.append((kv.id, kv))
        rows = base if same else [(k, Fraction(rng.randint(-20, 40), rng.choice([1, 2, 4])))
                                  for k in range(keys) for _ in range(rng.randint(0, 2))]
        if not rows:
            rows = base
        lines.append([(((kv.id, k),), c) for k, c in rows])
    node = SumReach(s, Fraction(rng.randint(-3, 3)), lines, keyvars if keyed else None)
    D: list[Any] = [dom_range(s.lo, s.hi)] + [dom_range(0, keys - 1) for _ in range(n)]
    sums = set()
    for choice in itertools.product(*lines):
        ks = [r[0][1] for r, _c in choice]
        if keyed and len(set(ks)) < n:
            continue
        sums.add(node.const + sum(c for _r, c in choice))
    on_grid = {x for x in sums if (x / s.step).denominator == 1 and s.lo <= x / s.step <= s.hi}
    C = Narrowing(D)
    ok = node.bwd(C, (1, 1))
    if not sums:
        assert not ok
        return
    if not ok:
        assert not on_grid
        return
    lo, hi = dmin(C.D[0]) * s.step, dmax(C.D[0]) * s.step
    assert lo <= min(sums) + s.step and hi >= max(sums) - s.step  # sound (up to s's grid)
    if on_grid:
        assert lo <= min(on_grid) and hi >= max(on_grid)
    if (same or not keyed) and sums == on_grid:
        assert (lo, hi) == (min(sums), max(sums))
        # a window inside the sums' range: the least and greatest sums within it, exactly
        lo_k, hi_k = int(min(sums) / s.step), int(max(sums) / s.step)
        a, b = sorted((rng.randint(lo_k, hi_k), rng.randint(lo_k, hi_k)))
        inside = [x for x in sums if a <= x / s.step <= b]
        D2 = list(C.D)
        D2[0] = dom_range(a, b)
        C2 = Narrowing(D2)
        if not node.bwd(C2, (1, 1)):
            assert not inside
        else:
            assert (dmin(C2.D[0]) * s.step, dmax(C2.D[0]) * s.step) == (min(inside), max(inside))


@pytest.mark.parametrize("seed", range(8))
def test_monotone_chain_bounds_match_brute_force(seed: int) -> None:
    """x, y == round(x * r, q), z == x + y, with bounds on z: the chain's bounds of x, y, z are the
    least and greatest values of the pairs that satisfy every definition and bound."""
    rng = random.Random(seed)
    r = Fraction(rng.randint(1, 30), 100)
    cap = rng.randint(50, 3000)
    floor_ = rng.randint(0, 40)
    doc = {"type": "object", "properties": {
        "x": {"type": "number", "minimum": 0, "maximum": 30, "multipleOf": 0.01},
        "y": {"type": "number", "minimum": 0, "maximum": 30, "multipleOf": 0.01},
        "z": {"type": "number", "minimum": 0, "maximum": 60, "multipleOf": 0.01}},
        "required": ["x", "y", "z"], "x-factorspec": {"relations": [
            f"y == round(x * {float(r)}, 0.01)", "z == x + y",
            f"z <= {float(Fraction(cap, 100))}", f"z >= {float(Fraction(floor_, 100))}"]}}
    cs = compile_spec(doc, budget=Budget(backend="own"))
    st = cs.root()
    assert any(isinstance(g, MonotoneChain) for g in st.problem.globals)
    valid = []
    for xi in range(0, 3001):
        x = xi * CENT
        y = _round(x * r, CENT)
        z = x + y
        if y <= 30 and Fraction(floor_, 100) <= z <= Fraction(cap, 100):
            valid.append((x, y, z))
    for j, path in enumerate(("x", "y", "z")):
        v = cs.var_of[(path,)]
        assert (dmin(st.D[v.id]) * v.step, dmax(st.D[v.id]) * v.step) == (min(t[j] for t in valid),
                                                                         max(t[j] for t in valid)), path
