"""The linear fill and the explicit-stack search (issue #14): answers over long arrays under
linear relations (sum, count, weighted sums) are right, at sizes the recursive search could not
reach (2,000 and 5,000 items), and on small instances they agree with brute force over every
assignment (`check` is the independent oracle). Speed is measured in microbench/linear_sums.py."""
from __future__ import annotations

import itertools
import random
from typing import Any

import pytest

from factorspec.errors import Unsatisfiable
from factorspec.graph import compile_spec
from factorspec.graph.linear_fill import reading
from factorspec.graph.solver import Budget

BACKENDS = ("own", "cpsat", "auto")


def _doc(n: int, rels: list[str], lo: int = 0, hi: int = 10, fixed: bool = True, first: str = "a") -> dict:
    a: dict[str, Any] = {"type": "array", "items": {"type": "integer", "minimum": lo, "maximum": hi}, "maxItems": n}
    if fixed:
        a["minItems"] = n
    total = {"type": "integer", "minimum": -1000, "maximum": 10**6}
    props = {"a": a, "total": total} if first == "a" else {"total": total, "a": a}
    return {"type": "object", "properties": props, "required": ["a", "total"],
            "x-factorspec": {"relations": rels}}


def _py(rel: str, a: list[int], total: int) -> bool:
    """The relations below in plain Python (independent of the solver and of `check`)."""
    return {
        "total == sum(a[*])": total == sum(a),
        "total == count(x >= 5 for x in a[*])": total == sum(1 for x in a if x >= 5),
        "total == sum(3 * x - 1 for x in a[*])": total == sum(3 * x - 1 for x in a),
        "total >= 2 * sum(a[*]) + 1": total >= 2 * sum(a) + 1,
        "sum(a[*]) != 4": sum(a) != 4,
    }[rel] if not rel.startswith("total ") or "sum" in rel or "count" in rel else eval(rel, {}, {"total": total})


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", [2000, 5000])
def test_sum_over_thousands_of_fixed_items_answers(n: int, backend: str) -> None:
    cs = compile_spec(_doc(n, ["total == sum(a[*])", f"total == {7 * n // 2}"]), Budget(backend=backend))
    rec = cs.solve()
    assert len(rec["a"]) == n and sum(rec["a"]) == rec["total"] == 7 * n // 2 and cs.check(rec) == []
    st = cs.root()
    assert st.feasible_values(cs.var_of[("a", 0)].id) == list(range(11))
    assert st.feasible_values(cs.var_of[("a", n - 1)].id) == list(range(11))
    tv = cs.var_of[("total",)].id
    assert st.exists(tv, (7 * n // 2, 7 * n // 2)) and not st.exists(tv, (0, 7 * n // 2 - 1))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("rels,want", [
    (["total == sum(a[*])", "total >= 25"], lambda a: sum(a) >= 25),
    (["total == count(x >= 5 for x in a[*])", "total >= 700"], lambda a: sum(x >= 5 for x in a) >= 700),
    (["total == sum(3 * x - 1 for x in a[*])", "total >= 2001"], lambda a: sum(3 * x - 1 for x in a) >= 2001),
])
def test_count_and_weighted_sums_over_2000_items(rels: list[str], want: Any, backend: str) -> None:
    n = 2000
    cs = compile_spec(_doc(n, rels, first="total"), Budget(backend=backend))
    rec = cs.solve()
    assert cs.check(rec) == [] and len(rec["a"]) == n and want(rec["a"])
    assert _py(rels[0], rec["a"], rec["total"])


def test_sum_over_5000_optional_items() -> None:
    # the length is tried upwards (a term per item reads it): a total that needs 25 items
    cs = compile_spec(_doc(5000, ["total == sum(a[*])", "total >= 250"], fixed=False))
    rec = cs.solve()
    assert cs.check(rec) == [] and rec["total"] == sum(rec["a"]) == 250 and len(rec["a"]) == 25


def test_unreachable_total_over_5000_items_is_unsatisfiable() -> None:
    cs = compile_spec(_doc(5000, ["total == sum(a[*])", "total == 50001"]))
    with pytest.raises(Unsatisfiable):
        cs.solve()


SMALL_RELS = [
    ["total == sum(a[*])"],
    ["total == sum(a[*])", "total >= 5"],
    ["total == count(x >= 5 for x in a[*])"],
    ["total == sum(3 * x - 1 for x in a[*])", "total <= 4"],
    ["total >= 2 * sum(a[*]) + 1", "total <= 7"],
    ["total == sum(a[*])", "sum(a[*]) != 4", "total <= 6"],
]


def _brute(n: int, lo: int, hi: int, rels: list[str], cs: Any) -> list[dict]:
    """Every valid record, by `check` over every assignment of the items and total's window."""
    out = []
    for a in itertools.product(range(lo, hi + 1), repeat=n):
        for total in range(-20, 40):
            rec = {"a": list(a), "total": total}
            if cs.check(rec) == []:
                assert all(_py(r, list(a), total) for r in rels), (rels, rec)
                out.append(rec)
    return out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("rels", SMALL_RELS, ids=lambda r: " & ".join(r))
def test_small_instances_agree_with_brute_force(rels: list[str], backend: str) -> None:
    rng = random.Random(hash((tuple(rels), backend)) & 0xFFFF)
    for n, lo, hi in ((1, 0, 3), (2, -1, 2), (3, 0, 2)):
        first = rng.choice(["a", "total"])
        doc = _doc(n, rels, lo, hi, first=first)
        doc["properties"]["total"] = {"type": "integer", "minimum": -20, "maximum": 39}
        cs = compile_spec(doc, Budget(backend=backend))
        valid = _brute(n, lo, hi, rels, cs)
        if not valid:
            with pytest.raises(Unsatisfiable):
                cs.solve()
            continue
        rec = cs.solve()
        assert cs.check(rec) == []
        # the solved record is the least one in branch order (fill or search: the same record)
        key = (lambda r: (r["a"], r["total"])) if first == "a" else (lambda r: (r["total"], r["a"]))
        assert key(rec) == min(key(r) for r in valid)
        assert cs.count() == len(valid)
        st = cs.root()
        for path in [("a", i) for i in range(n)] + [("total",)]:
            vid = cs.var_of[path].id
            node = cs.vars[vid]
            got = sorted(node.value(k) for k in st.feasible_values(vid, limit=100))
            want = sorted({r["a"][path[1]] if path[0] == "a" else r["total"] for r in valid})
            assert got == want, (path, got, want)


def test_reading_flattens_linear_comparisons() -> None:
    cs = compile_spec(_doc(3, ["total + 2 == sum(3 * x - 1 for x in a[*]) - (a[0] - 4)"]))
    op, terms, const = reading(cs.factors[0].node)  # type: ignore[misc]
    assert op == "=="
    # total + 2 - (sum(3*x - 1) - a[0] + 4) = total - 3*a0 - 3*a1 - 3*a2 + a0 + 3 + 2 - 4
    coefs: dict[str, int] = {}
    for c, t in terms:
        coefs[t.var.name] = coefs.get(t.var.name, 0) + c
    assert coefs == {"total": 1, "a[0]": -2, "a[1]": -3, "a[2]": -3} and const == 1
    assert reading(compile_spec(_doc(2, ["a[0] < 3 or a[1] < 3"])).factors[0].node) is None
