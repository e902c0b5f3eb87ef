"""Exact arithmetic at any magnitude (issue #14): no float on a value path of the solver.

Each case was a wrong answer or a crash before: float division in `VarRef.bwd` above 2**53
units, float halves in `round` with an integer precision, OverflowError near 10**400, search
depth on huge domains, and a binary `+` chain per item for `sum` over long arrays."""
from __future__ import annotations

import pytest

from factorspec.errors import Unsatisfiable
from factorspec.graph import compile_spec

X = 1000000000000000006  # 7 * 142857142857142858, past 7 * (2**53 + 1)


def _spec(props: dict, rels: list[str]) -> dict:
    return {"type": "object", "properties": props, "required": list(props),
            "x-factorspec": {"relations": rels}}


def _var(cs, name: str):  # type: ignore[no-untyped-def]
    return next(v for p, v in cs.var_of.items() if p[-1] == name)


BIG7 = {"type": "integer", "minimum": 0, "maximum": 10**19, "multipleOf": 7}


def test_equality_above_2_pow_53_units() -> None:
    cs = compile_spec(_spec({"x": BIG7}, [f"x == {X}"]))
    assert cs.check({"x": X}) == []
    assert cs.solve() == {"x": X}
    assert cs.count() == 1


def test_feasible_values_above_2_pow_53_units() -> None:
    cs = compile_spec(_spec({"x": BIG7}, [f"x >= {X}", f"x <= {X + 70}"]))
    st = cs.root()
    vals = st.feasible_values(_var(cs, "x").id)
    assert [k * 7 for k in vals] == list(range(X, X + 71, 7))  # all 11, not 1
    assert cs.count() == 11


def test_round_with_integer_precision_counts_ties() -> None:
    """grams 10..150 step 10, kcal = round(grams * 3.89, 1): 15 records (50 * 3.89 = 194.5 is a tie)."""
    cs = compile_spec(_spec({"grams": {"type": "integer", "minimum": 10, "maximum": 150, "multipleOf": 10},
                             "kcal": {"type": "number", "multipleOf": 0.1, "minimum": 0, "maximum": 1000}},
                            ["kcal == round(grams * 3.89, 1)"]))
    assert cs.count() == 15
    assert cs.check({"grams": 50, "kcal": 195}) == []
    st = cs.root()
    g, k = _var(cs, "grams"), _var(cs, "kcal")
    st50 = st.assign(g.id, 5)  # grams = 50
    assert st50 is not None and st50.feasible_values(k.id) == [1950]  # kcal = 195.0 (units of 0.1)


@pytest.mark.parametrize("step", [1, 3, 7])
def test_bounds_near_10_pow_400_no_overflow(step: int) -> None:
    p = {"type": "integer", "minimum": -10**400, "maximum": 10**400, "multipleOf": step}
    cs = compile_spec(_spec({"x": p}, ["x >= 5"]))
    rec = cs.solve()
    assert rec["x"] >= 5 and rec["x"] % step == 0 and cs.check(rec) == []


@pytest.mark.parametrize("step", [1, 7, 0.001])
def test_ne_over_huge_domains_is_satisfiable(step: float) -> None:
    typ = "number" if isinstance(step, float) else "integer"
    p = {"type": typ, "minimum": -10**400, "maximum": 10**400, "multipleOf": step}
    cs = compile_spec(_spec({"x": p, "y": p}, ["x != y"]))
    rec = cs.solve()
    assert rec["x"] != rec["y"] and cs.check(rec) == []


def test_constant_false_relation_is_unsatisfiable() -> None:
    p = {"type": "integer", "minimum": -10**400, "maximum": 10**400}
    with pytest.raises(Unsatisfiable):
        compile_spec(_spec({"x": p}, ["1 == 2"])).solve()


def test_modulo_over_huge_decimal_domain() -> None:
    p = {"type": "number", "minimum": -10**400, "maximum": 10**400, "multipleOf": 0.001}
    cs = compile_spec(_spec({"x": p, "y": p}, ["x % 5 == 3", "y == x"]))
    rec = cs.solve()
    assert cs.check(rec) == [] and rec["x"] % 5 == 3


def test_sum_over_1000_optional_items_no_recursion_error() -> None:
    cs = compile_spec({"type": "object", "properties": {
        "a": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 10}, "maxItems": 1000},
        "total": {"type": "integer", "minimum": 0, "maximum": 100000}}, "required": ["a", "total"],
        "x-factorspec": {"relations": ["total == sum(a[*])", "total >= 25"]}})
    rec = cs.solve()
    assert cs.check(rec) == [] and rec["total"] == sum(rec["a"]) >= 25


def test_sum_over_300_fixed_items() -> None:
    n = 300
    cs = compile_spec({"type": "object", "properties": {
        "a": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 10},
              "minItems": n, "maxItems": n},
        "total": {"type": "integer", "minimum": 0, "maximum": 100000}}, "required": ["a", "total"],
        "x-factorspec": {"relations": ["total == sum(a[*])", "total >= 777"]}})
    rec = cs.solve()
    assert cs.check(rec) == [] and rec["total"] == sum(rec["a"]) == 777
