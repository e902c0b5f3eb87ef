"""CaseBounds (bounds on integer slots by the value of one enum slot) against brute force.

Random small specs: items with an enum `kind` and two integers, and `kind == K implies (...)`
relations with every comparison operator, the constant on either side, several relations for
one value, and the `!=`/`or` spelling. The node must be posted and cover those factors; the
feasible values along a random record, and the count, must equal enumeration of every record
(`CompiledSpec.check` is the oracle: it evaluates the relations as written)."""
from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from factorspec.errors import Unsatisfiable
from factorspec.graph import compile_spec
from factorspec.graph.globals.case_bounds import CaseBounds

KINDS = ["p", "q", "r"]
TOP = 4  # integers 0..TOP
OPS = ["<", "<=", "==", ">=", ">"]


def _spec(n: int, rels: list[str]) -> dict:
    num = {"type": "integer", "minimum": 0, "maximum": TOP}
    return {
        "type": "object",
        "properties": {"items": {"type": "array", "minItems": n, "maxItems": n, "items": {
            "type": "object", "properties": {"kind": {"type": "string", "enum": KINDS}, "a": dict(num), "b": dict(num)},
            "required": ["kind", "a", "b"], "additionalProperties": False}}},
        "required": ["items"], "additionalProperties": False,
        "x-factorspec": {"relations": [{"name": f"r{k}", "expr": e} for k, e in enumerate(rels)]},
    }


@st.composite
def instances(draw):
    n = draw(st.integers(1, 2))
    rels = []
    for _ in range(draw(st.integers(2, 5))):
        kind = draw(st.sampled_from(KINDS))
        parts = []
        for field in draw(st.lists(st.sampled_from(["a", "b"]), min_size=1, max_size=2)):
            op, k = draw(st.sampled_from(OPS)), draw(st.integers(0, TOP))
            side = f"items[i].{field}"
            parts.append(f"{side} {op} {k}" if draw(st.booleans()) else f"{k} {_flip(op)} {side}")
        body = " and ".join(parts)
        if draw(st.booleans()):
            rels.append(f'forall i: items[i].kind == "{kind}" implies ({body})')
        else:
            rels.append(f'forall i: items[i].kind != "{kind}" or ({body})')
    if draw(st.booleans()):
        rels.append("forall i: items[i].a + items[i].b >= 3")  # another relation over the same slots
    return n, rels


def _flip(op: str) -> str:
    return {"<": ">", "<=": ">=", "==": "==", ">=": "<=", ">": "<"}[op]


def _records(n: int):
    cells = list(itertools.product(KINDS, range(TOP + 1), range(TOP + 1)))
    for combo in itertools.product(cells, repeat=n):
        yield {"items": [{"kind": k, "a": a, "b": b} for k, a, b in combo]}


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(), st.randoms(use_true_random=False))
def test_case_bounds_match_brute_force(inst, rnd) -> None:
    n, rels = inst
    cs = compile_spec(_spec(n, rels))
    nodes = [g for g in cs.problem.globals if isinstance(g, CaseBounds)]
    assert len(nodes) == n  # one per item's kind (every relation qualifies)
    assert all(len(g.covers) == len(rels) - ("+" in rels[-1]) for g in nodes)
    assert cs.problem.silent >= frozenset().union(*(g.covers for g in nodes))
    sols = [r for r in _records(n) if cs.check(r) == []]
    if not sols:
        with pytest.raises(Unsatisfiable):
            cs.root()
        return
    s = cs.root()
    # a field no relation reads has no solver variable: the count is over the others
    slots = [(i, f) for i in range(n) for f in ("kind", "a", "b") if ("items", i, f) in cs.var_of]
    assert s.count() == len({tuple(r["items"][i][f] for i, f in slots) for r in sols})
    target = rnd.choice(sols)
    prefix: list[tuple[tuple, object]] = []
    for i, field in slots:
        v = cs.var_of[("items", i, field)]
        got = sorted(v.value(k) for k in s.feasible_values(v.id))
        want = sorted({r["items"][i][field] for r in sols
                       if all(r["items"][j][f] == x for (j, f), x in prefix)})
        assert got == want, (rels, prefix, field)
        x = target["items"][i][field]
        prefix.append(((i, field), x))
        s = s.assign(v.id, next(k for k in s.feasible_values(v.id) if v.value(k) == x))
        assert s is not None


def test_not_posted_for_other_shapes() -> None:
    # a disjunction that bounds by another slot (not a constant) is left to the factors
    rels = ['forall i: items[i].kind == "p" implies items[i].a <= items[i].b',
            'forall i: items[i].kind == "q" implies items[i].a <= items[i].b']
    cs = compile_spec(_spec(2, rels))
    assert not [g for g in cs.problem.globals if isinstance(g, CaseBounds)]
    assert not cs.problem.silent


def test_hull_of_the_values_left() -> None:
    # kind p needs a <= 1, kind q needs a >= 3 and a <= 3: with kind in {p, q}, a lies in the
    # hull 0..3 (never 4); once a is 2, no kind that bounds it fits, so kind is r
    rels = ['forall i: items[i].kind == "p" implies items[i].a <= 1',
            'forall i: items[i].kind == "q" implies (items[i].a >= 3 and items[i].a <= 3)']
    cs = compile_spec(_spec(1, rels))
    s = cs.root()
    kind, a = cs.var_of[("items", 0, "kind")], cs.var_of[("items", 0, "a")]
    s2 = s.narrow(kind.id, frozenset(k for k, x in enumerate(kind.values) if x in ("p", "q")))
    assert s2 is not None and sorted(a.value(k) for k in s2.D[a.id]) == [0, 1, 2, 3]
    s3 = s.assign(a.id, 2)
    assert s3 is not None and [kind.values[k] for k in s3.D[kind.id]] == ["r"]
