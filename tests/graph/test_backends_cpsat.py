"""The CP-SAT backend answers exactly what the own search and brute force answer.

Random small instances of several problem kinds (linear sums, all_different, lookup tables and
membership, pairwise no-overlap, string enums, fixed-point decimals, optional fields, abs / min /
max / conditionals / floor division / rounding), each question asked with backend own, cpsat
and auto: the feasible values of every slot at the root and after one decision, against the
projection of every assignment that `holds` (the factors evaluated exactly).
"""
from __future__ import annotations

import itertools
import random
from typing import Any

import pytest

pytest.importorskip("ortools")

from factorspec.errors import BudgetExceeded, SpecError, Unsatisfiable  # noqa: E402
from factorspec.graph import (
    backends,  # noqa: E402
    compile_spec,  # noqa: E402
)
from factorspec.graph.backends import cpsat  # noqa: E402
from factorspec.graph.domain import dvalues  # noqa: E402
from factorspec.graph.solver import Budget  # noqa: E402

BACKENDS = ("own", "cpsat", "auto")


def _int(lo: int, hi: int) -> dict:
    return {"type": "integer", "minimum": lo, "maximum": hi}


def _spec(props: dict, rels: list, tables: Any = None, required: Any = None) -> dict:
    ext: dict = {"relations": rels}
    if tables:
        ext["tables"] = tables
    return {"type": "object", "properties": props,
            "required": list(props) if required is None else required, "x-factorspec": ext}


def kind_sum(r: random.Random) -> dict:
    n = r.randint(2, 4)
    props = {f"x{i}": _int(r.randint(-2, 0), r.randint(1, 4)) for i in range(n)}
    terms = " + ".join(f"{r.choice([1, 2, -1, 3])} * x{i}" for i in range(n))
    op = r.choice(["==", "<=", ">=", "!=", "<", ">"])
    rels = [f"{terms} {op} {r.randint(-3, 6)}"]
    if r.random() < 0.5:
        rels.append(f"x0 {r.choice(['<', '!=', '>='])} x1")
    return _spec(props, rels)


def kind_alldiff(r: random.Random) -> dict:
    n = r.randint(3, 4)
    props = {f"x{i}": _int(0, r.randint(n - 2, n)) for i in range(n)}
    rels = ["all_different(" + ", ".join(f"x{i}" for i in range(n)) + ")",
            f"x0 + x1 {r.choice(['<=', '>=', '=='])} {r.randint(1, 5)}"]
    return _spec(props, rels)


def kind_table(r: random.Random) -> dict:
    items = ["tea", "cake", "soup", "pie"]
    price = {k: r.choice([1, 2, 3, 1.5, 2.25]) for k in items[:r.randint(2, 4)]}  # keys may be missing
    props = {"item": {"enum": items}, "qty": _int(0, 3), "side": {"enum": items[:3]}}
    pairs = [[a, b] for a in items for b in items[:3] if r.random() < 0.5] or [["tea", "tea"]]
    rels = [f"price[item] * qty {r.choice(['<=', '>=', '=='])} {r.choice([2, 3, 4.5, 6])}",
            "(item, side) in pairs" if r.random() < 0.7 else "not ((item, side) in pairs) or qty == 0"]
    return _spec(props, rels, {"price": price, "pairs": pairs})


def kind_overlap(r: random.Random) -> dict:
    n = 3
    dur = [r.randint(1, 3) for _ in range(n)]
    horizon = r.randint(sum(dur) - 1, sum(dur) + 2)
    props = {"m": {"type": "array", "minItems": n, "maxItems": n, "items": {
        "type": "object", "properties": {"start": _int(0, horizon - 1), "room": {"enum": ["a", "b"]}},
        "required": ["start", "room"]}}}
    apart = "m[i].start + dur[i] <= m[j].start or m[j].start + dur[j] <= m[i].start"
    rels = [f"forall i, j: i < j implies ({apart})" if r.random() < 0.5
            else f"forall i, j: i < j implies (m[i].room != m[j].room or {apart})",
            f"forall i: m[i].start + dur[i] <= {horizon}"]
    return _spec(props, rels, {"dur": dur})


def kind_strings(r: random.Random) -> dict:
    colours = ["red", "green", "blue"]
    props = {"a": {"enum": colours}, "b": {"enum": colours + [None]}, "c": {"enum": colours[:2]}}
    rels = [r.choice(["a != b", "a == c or b == null", "a == 'red' implies b == 'blue'"]),
            r.choice(["b != c", "c == 'green' implies a != 'green'", "a != c"])]
    return _spec(props, rels)


def kind_decimal(r: random.Random) -> dict:
    props = {"a": {"type": "number", "minimum": 0, "maximum": 2, "multipleOf": 0.25},
             "b": {"type": "number", "minimum": 0, "maximum": 1.5, "multipleOf": 0.5},
             "c": _int(0, 3)}
    rels = [f"a + b {r.choice(['==', '<=', '>='])} {r.choice([1.25, 1.5, 2, 0.75])}",
            r.choice(["a * 2 <= b + c", "a / 2 + c >= b", "round(a, 0.5) == b", "a * b <= 1"])]
    return _spec(props, rels)


def kind_optional(r: random.Random) -> dict:
    props = {"subtotal": _int(0, 5), "discount": _int(0, 3), "note": {"enum": ["x", "y"]}}
    rels = [r.choice(["discount <= subtotal", "discount + subtotal == 4"]),
            r.choice(["note == 'x' implies subtotal >= 2", "subtotal >= 3 implies note == 'y'"])]
    return _spec(props, rels, required=["subtotal"])


def kind_nonlinear(r: random.Random) -> dict:
    props = {"x": _int(-3, 3), "y": _int(-2, 4), "z": _int(0, 5)}
    rels = [r.choice(["abs(x - y) >= 2", "min(x, y) + max(x, z) == 3", "(5 if x > 0 else 1) + y == z",
                      "x * y == z - 1", "z // 2 == y", "z % 3 == abs(x)", "(x + z) // 2 >= y"]),
            r.choice(["x != 0", "y <= z", "x + y + z >= 1"])]
    return _spec(props, rels)


def kind_array(r: random.Random) -> dict:
    n = r.randint(1, 3)
    props = {"a": {"type": "array", "minItems": 0, "maxItems": n, "items": _int(0, 3)}, "t": _int(0, 6)}
    rels = [r.choice(["t == sum(a[*])", "t >= sum(a[*]) + 1", "t == len(a) + 1"]),
            r.choice(["all_different(a[*])", "forall i: a[i] >= 1", "t != 2"])]
    return _spec(props, rels)


PAIR_EQS = ["x == y", "y != x", "2 * x == y - 1", "x + y != 3", "x - 2 * z == y", "z == x", "c == d", "d != c",
            "y == 2 * z - 1", "c != 'red'"]


def kind_pairs(r: random.Random) -> dict:
    """Reified == / != of two variables (c1*x + c2*y + c0 against 0, numeric or symbolic: the
    value-literal clauses of `_Builder._pair_eq`), among three-variable ones and constants."""
    props = {"x": _int(-2, 3), "y": _int(0, 4), "z": _int(1, 3), "c": {"enum": ["red", "green", "blue"]},
             "d": {"enum": ["red", "green", None]}}
    rels = [f"{r.choice(PAIR_EQS)} or {r.choice(PAIR_EQS)}", f"{r.choice(PAIR_EQS)} implies {r.choice(PAIR_EQS)}",
            f"not ({r.choice(PAIR_EQS)}) or z == 2"]
    return _spec(props, rels)


KINDS = {f.__name__[5:]: f for f in (kind_sum, kind_alldiff, kind_table, kind_overlap, kind_strings,
                                      kind_decimal, kind_optional, kind_nonlinear, kind_array, kind_pairs)}


def brute(cs: Any) -> list[list]:
    """Every assignment of the solver's variables that every factor holds on."""
    p = cs.problem
    doms = [dvalues(d) for d in p.initial_domains()]
    assert all(len(d) <= 64 for d in doms)
    return [list(A) for A in itertools.product(*doms) if cpsat.holds(p, list(A))]


def answers(doc: dict, backend: str) -> Any:
    """Feasible values of every variable at the root and after fixing var 0 to its least feasible
    value (None: unsatisfiable)."""
    cs = compile_spec(doc, budget=Budget(seconds=20, backend=backend))
    try:
        try:
            st = cs.root()
        except Unsatisfiable:
            return None
        bounds = [st.value_bounds(v.id) for v in cs.vars]
        out = [st.feasible_values(v.id) for v in cs.vars]
        nxt = st.assign(cs.vars[0].id, out[0][0])
        assert nxt is not None
        return bounds, out, [nxt.feasible_values(v.id) for v in cs.vars]
    finally:
        m = cs.problem.backend_cache.get("cpsat")
        if backend == "cpsat" and m is not None and m.exact:
            # an exact model's solutions hold exactly: none falls back to the own search (a
            # translation looser than its factor would, and the fallback would hide it)
            assert cs.problem.stats.backend_fallbacks == 0, doc


def oracle(doc: dict) -> Any:
    cs = compile_spec(doc, budget=Budget(backend="own"))
    sols = brute(cs)
    if not sols:
        return None
    n = len(cs.vars)
    first = [sorted({A[i] for A in sols}) for i in range(n)]
    k0 = first[0][0]
    sub = [A for A in sols if A[0] == k0]
    return [(f[0], f[-1]) for f in first], first, [sorted({A[i] for A in sub}) for i in range(n)]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_backends_agree_with_brute_force(kind: str) -> None:
    r = random.Random(f"cpsat-{kind}")
    for _ in range(20):
        doc = KINDS[kind](r)
        want = oracle(doc)
        for be in BACKENDS:
            got = answers(doc, be)
            assert got == want, (kind, be, doc)


@pytest.mark.parametrize("pairs, order", [(0, True), (64, False), (0, False)])
@pytest.mark.parametrize("kind", ["pairs", "strings", "overlap", "sum", "nonlinear"])
def test_other_encodings_agree_with_brute_force(kind: str, pairs: int, order: bool,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The other encodings answer the same: == / != of two variables as linear constraints
    (`PAIR_VALUES = 0`, as for wider domains); order comparisons each with its own literal and
    every `or` operand fully reified (`ORDER_SHARED = False`)."""
    monkeypatch.setattr(cpsat, "PAIR_VALUES", pairs)
    monkeypatch.setattr(cpsat, "ORDER_SHARED", order)
    r = random.Random(f"cpsat-linear-{kind}")
    for _ in range(10):
        doc = KINDS[kind](r)
        cs = compile_spec(doc, budget=Budget(backend="cpsat"))
        b = cpsat.model_of(cs.problem).builder  # type: ignore[union-attr]
        assert (not pairs and b._pair_cache == b._pair_half == {}) or pairs
        assert (not order and b._order_lits == b._order_half == {}) or order
        want = oracle(doc)
        for be in ("cpsat", "auto"):
            assert answers(doc, be) == want, (kind, be, doc)


def test_order_comparisons_share_literals() -> None:
    """`x < y` and `y > x` are one comparison: one full literal; as operands of a factor's `or`
    they are literals that imply them (one conditional constraint each), and the full literal
    is reused there once it exists."""
    doc = _spec({"x": _int(0, 3), "y": _int(0, 3), "w": _int(0, 3)},
                ["(x < y) == (w == 1)", "(y > x) == (w != 2)", "x + 1 <= y or w == 2", "y >= x + 1 or w == 3",
                 "x >= y or w == 0"])
    cs = compile_spec(doc, budget=Budget(backend="cpsat"))
    b = cpsat.model_of(cs.problem).builder  # type: ignore[union-attr]
    assert len(b._order_lits) == 1  # x - y < 0
    assert len(b._order_half) == 2  # x - y + 1 <= 0 (both spellings), y - x <= 0
    assert oracle(doc) == answers(doc, "cpsat")


def test_pairs_use_value_literals_once_per_relation(monkeypatch: pytest.MonkeyPatch) -> None:
    """`x == y`, `y != x` and `y - x == 0` are one relation: one literal, the value clauses
    posted once, and reused as the operand of an `or`; an operand of an `or` with no full
    literal gets an implying one (one clause per value); a comparison over a domain wider than
    PAIR_VALUES stays linear."""
    monkeypatch.setattr(cpsat, "PAIR_VALUES", 8)
    doc = _spec({"x": _int(0, 3), "y": _int(0, 3), "w": _int(0, 8)},
                ["(x == y) == (w == 1)", "y != x or w == 2", "y - x == 0 or w == 3", "x != w or y == 1",
                 "x == y + 1 or w == 0", "y + 1 != x or w == 4"])
    cs = compile_spec(doc, budget=Budget(backend="cpsat"))
    ids = {v.name: v.id for v in cs.vars}
    xy = tuple(sorted((ids["x"], ids["y"])))
    b = cpsat.model_of(cs.problem).builder  # type: ignore[union-attr]
    assert list(b._pair_cache) == [(*xy, -1, 0)]
    shift = -1 if ids["x"] < ids["y"] else 1  # x - y - 1 == 0, over the lower var id first
    assert sorted(b._pair_half) == [((*xy, -1, shift), "!="), ((*xy, -1, shift), "==")]
    assert oracle(doc) == answers(doc, "cpsat")


def test_every_kind_translates_exactly_somewhere() -> None:
    """Every factor of every kind has a translation (none is relaxed away), and the model is
    exact on most instances (a lookup whose table misses some key leaves that value free), so
    the comparison above tests CP-SAT's answers, not fallbacks to the own search."""
    for kind, make in KINDS.items():
        r = random.Random(f"exact-{kind}")
        exact = 0
        for _ in range(8):
            cs = compile_spec(make(r), budget=Budget(backend="cpsat"))
            m = cpsat.model_of(cs.problem)
            assert m is not None and m.dropped == [], kind
            exact += m.exact
        assert exact >= 3, kind


def test_cpsat_decides_without_the_own_search() -> None:
    """With backend cpsat the own search runs no node on a question that propagation leaves open."""
    doc = KINDS["alldiff"](random.Random(3))
    cs = compile_spec(doc, budget=Budget(backend="cpsat"))
    st = cs.root()
    for v in cs.vars:
        st.feasible_values(v.id)
    assert cs.problem.stats.nodes == 0 and cs.problem.stats.searches == 0


def test_unknown_is_budget_exceeded(monkeypatch: pytest.MonkeyPatch) -> None:
    """CP-SAT stopped by its time limit answers BudgetExceeded (never feasible or infeasible)."""
    n = 12  # pigeonhole: 12 all-different values in 0..10 (CP-SAT needs more than 1 ms to prove it)
    props = {f"x{i}": _int(0, n - 2) for i in range(n)}
    rels = [f"x{i} != x{j}" for i in range(n) for j in range(i + 1, n)]
    cs = compile_spec(_spec(props, rels), budget=Budget(seconds=5, backend="cpsat"))
    m = cpsat.model_of(cs.problem)
    assert m is not None
    with pytest.raises(BudgetExceeded):
        m.solve(cs.problem.initial_domains(), 0.0, 5)
    # the whole question, with a time budget spent before CP-SAT starts
    cs2 = compile_spec(_spec(props, rels), budget=Budget(seconds=0.0, backend="cpsat"))
    with pytest.raises(BudgetExceeded):
        cs2.root()


def test_pigeonhole_infeasible_by_cpsat() -> None:
    n = 7
    props = {f"x{i}": _int(0, 5) for i in range(n)}
    rels = [f"x{i} != x{j}" for i in range(n) for j in range(i + 1, n)]
    cs = compile_spec(_spec(props, rels), budget=Budget(seconds=20, backend="cpsat"))
    with pytest.raises(Unsatisfiable):
        cs.root()


def test_relaxed_solution_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    """A factor with no translation is relaxed away; CP-SAT's solution of the relaxation that
    breaks it is not taken: the own search decides, and the answer stays exact."""
    doc = _spec({"x": _int(0, 4), "y": _int(0, 4)}, ["x + y == 4", "x * y == 3"])

    def refuse(self: Any, n: Any) -> Any:
        raise cpsat.Unsupported("test")

    monkeypatch.setattr(cpsat._Builder, "_arith", refuse)
    cs = compile_spec(doc, budget=Budget(backend="cpsat"))
    st = cs.root()
    m = cpsat.model_of(cs.problem)
    assert m is not None and not m.exact and m.dropped
    assert st.feasible_values(cs.var_of[("x",)].id) == [1, 3]


def test_backend_names_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SpecError):
        Budget(backend="gurobi")
    monkeypatch.setenv(backends.ENV, "cpsat")
    assert Budget().backend == "cpsat"
    monkeypatch.setenv(backends.ENV, "nope")
    with pytest.raises(SpecError, match="FACTORSPEC_BACKEND"):
        Budget()


def test_auto_without_ortools_is_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpsat, "_AVAILABLE", False)
    doc = KINDS["alldiff"](random.Random(5))
    assert answers(doc, "auto") == oracle(doc)
    cs = compile_spec(doc, budget=Budget(backend="auto"))
    cs.root()
    assert "cpsat" not in cs.problem.backend_cache


def test_huge_domains_are_left_to_the_own_search() -> None:
    doc = _spec({"x": _int(0, 10 ** 30), "y": _int(0, 5)}, ["x == y + 100000000000000000000"])
    cs = compile_spec(doc, budget=Budget(backend="cpsat"))
    st = cs.root()
    assert cpsat.model_of(cs.problem) is None
    assert st.feasible_values(cs.var_of[("y",)].id) == list(range(6))


def test_round_robin_walk_agrees_with_own() -> None:
    """A 4-team round robin (products inside all_different, nested arrays): along a decoding
    walk, every slot's feasible values by CP-SAT equal the own search's."""
    n = 4
    props = {"r": {"type": "array", "minItems": n - 1, "maxItems": n - 1, "items": {
        "type": "array", "minItems": n // 2, "maxItems": n // 2, "items": {
            "type": "object", "properties": {"home": _int(0, n - 1), "away": _int(0, n - 1)},
            "required": ["home", "away"]}}}}
    rels = ["forall k: all_different(" + ", ".join(f"r[k][{g}].home, r[k][{g}].away" for g in range(n // 2)) + ")"]
    rels.append("all_different(" + ", ".join(
        f"r[{k}][{g}].home * {n} + r[{k}][{g}].away" for k in range(n - 1) for g in range(n // 2)) + ")")
    rels.append("forall k, g: r[k][g].home < r[k][g].away")
    walks = []
    for be in ("own", "cpsat"):
        cs = compile_spec(_spec(props, rels), budget=Budget(seconds=20, backend=be))
        st = cs.root()
        seen = []
        for v in sorted(cs.vars, key=lambda v: v.order):
            vals = st.feasible_values(v.id)
            seen.append(vals)
            st = st.assign(v.id, vals[-1])  # the largest value: off the witness
        walks.append(seen)
        if be == "cpsat":
            m = cpsat.model_of(cs.problem)
            assert m is not None and m.exact
    assert walks[0] == walks[1]


def test_implied_no_overlap_intervals_keep_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The optional interval translation of the implied no_overlap (off by default) restates the
    pairwise factors: the answers stay those of brute force."""
    monkeypatch.setattr(cpsat, "NO_OVERLAP", True)
    r = random.Random("intervals")
    for _ in range(10):
        doc = kind_overlap(r)
        assert answers(doc, "cpsat") == oracle(doc), doc


def test_all_different_past_max_pairs_is_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """An all_different that needs pairwise constraints (here: inside an 'or', so not enforced)
    over more than MAX_PAIRS pairs is relaxed away instead of built (865 items made 373,680 pairs,
    38 s of build, in one corpus schema); answers stay those of brute force."""
    monkeypatch.setattr(cpsat, "MAX_PAIRS", 5)  # 4 items: 6 pairs
    doc = _spec({**{k: _int(0, 3) for k in "abcd"}, "x": _int(0, 1)}, ["x == 1 or all_different(a, b, c, d)"])
    cs = compile_spec(doc, budget=Budget(backend="cpsat"))
    cs.root()
    m = cpsat.model_of(cs.problem)
    assert m is not None and not m.exact and any("pairwise" in d for d in m.dropped), m and m.dropped
    assert answers(doc, "cpsat") == oracle(doc)


def test_model_build_past_the_question_deadline_leaves_cpsat_out() -> None:
    """A model whose build passes the asking question's deadline is not kept: that question ends
    within its budget, and later questions go to the own search, with exact answers."""
    import time

    doc = KINDS["alldiff"](random.Random(5))
    cs = compile_spec(doc, budget=Budget(backend="cpsat"))
    assert cpsat.model_of(cs.problem, deadline=time.monotonic() - 1.0) is None
    assert cs.problem.backend_cache["cpsat"] is None
    assert answers(doc, "cpsat") == oracle(doc)
