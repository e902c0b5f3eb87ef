"""Soft relations (preferences): `"soft": true` relations never restrict records, the solver or
the masks (count and feasible values equal the spec without them), and `soft_violations` /
`soft_penalty` report exactly the instances a record breaks (brute force, plain-Python oracle)."""
from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path

import pytest

from factorspec.cli import main
from factorspec.errors import RelationError, SpecError
from factorspec.graph import compile_spec

from .test_language_features import I, arr, spec

PROPS = {"a": I(0, 4), "b": I(0, 4), "c": I(0, 2), "xs": arr(I(0, 2), 1, 3)}
HARD = ["a + b <= 5", "sum(xs) >= 1"]
SOFT = [{"name": "a_big", "expr": "a >= 3", "soft": True, "weight": 2},
        {"name": "balanced", "expr": "abs(a - b) <= 1", "soft": True},
        {"name": "c_two", "expr": "c == 2", "soft": True, "weight": 5},  # c is in no hard relation
        {"name": "rising", "expr": "forall i: xs[i] < xs[i+1]", "soft": True, "weight": 3}]


def _records() -> list[dict]:
    return [{"a": a, "b": b, "c": c, "xs": list(xs)} for a, b, c in itertools.product(range(5), range(5), range(3))
            for n in (1, 2, 3) for xs in itertools.product(range(3), repeat=n)]


def _hard_ok(r: dict) -> bool:
    return r["a"] + r["b"] <= 5 and sum(r["xs"]) >= 1


def _soft_broken(r: dict) -> list[tuple[str, int]]:
    """(relation, weight) per broken instance."""
    out = []
    if not r["a"] >= 3:
        out.append(("a_big", 2))
    if not abs(r["a"] - r["b"]) <= 1:
        out.append(("balanced", 1))
    if r["c"] != 2:
        out.append(("c_two", 5))
    out += [("rising", 3) for x, y in zip(r["xs"], r["xs"][1:]) if not x < y]
    return out


def test_soft_relations_are_reported_never_enforced() -> None:
    soft = compile_spec(spec(PROPS, HARD + SOFT))
    hard = compile_spec(spec(PROPS, HARD))
    assert [r.name for r in soft.soft_relations] == ["a_big", "balanced", "c_two", "rising"]
    assert {f.relation.name for f in soft.factors} == {r.name for r in hard.relations}
    for r in _records():
        assert (soft.check(r) == []) == _hard_ok(r), r
        broken = _soft_broken(r)
        assert sorted(v.relation for v in soft.soft_violations(r)) == sorted(n for n, _w in broken), r
        assert soft.soft_penalty(r) == sum(w for _n, w in broken), r
    # the solver sees the hard relations only: same variables, count and feasible values
    assert [v.name for v in soft.vars] == [v.name for v in hard.vars]
    assert soft.count() == hard.count() > 0
    s1, s2 = soft.root(), hard.root()
    for v1, v2 in zip(soft.vars, hard.vars):
        assert s1.feasible_values(v1.id) == s2.feasible_values(v2.id)
    # a record that breaks every preference is still what solve may return
    worst = {"a": 0, "b": 4, "c": 0, "xs": [2, 1, 0]}
    assert soft.check(worst) == [] and soft.soft_penalty(worst) == 2 + 1 + 5 + 3 + 3


def test_soft_relation_errors_point_at_the_key() -> None:
    cases = [({"name": "p", "expr": "a > 1", "soft": "yes"}, "/x-factorspec/relations/0/soft"),
             ({"name": "p", "expr": "a > 1", "soft": True, "weight": 0}, "/x-factorspec/relations/0/weight"),
             ({"name": "p", "expr": "a > 1", "soft": True, "weight": 1.5}, "/x-factorspec/relations/0/weight"),
             ({"name": "p", "expr": "a > 1", "weight": 2}, "/x-factorspec/relations/0/weight")]
    for rel, ptr in cases:
        with pytest.raises(SpecError) as ei:
            compile_spec(spec({"a": I(0, 3)}, [rel]))
        assert ei.value.pointer == ptr, (rel, str(ei.value))
    with pytest.raises(RelationError) as re_:
        compile_spec(spec({"a": I(0, 3)}, [{"name": "p", "expr": "zz > 1", "soft": True}]))
    assert re_.value.relation == "p" and "unknown name 'zz'" in str(re_.value)


def test_cli_check_prints_soft_violations(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = spec(PROPS, HARD + SOFT)
    sp, rp = tmp_path / "s.json", tmp_path / "r.json"
    sp.write_text(json.dumps(doc), encoding="utf-8")
    rp.write_text(json.dumps({"a": 3, "b": 2, "c": 2, "xs": [1, 1]}), encoding="utf-8")
    assert main(["check", str(sp), str(rp)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("valid\nsoft: 1 preference not met (penalty 3)") and "rising [i=0]" in out
    hard_only = copy.deepcopy(doc)
    hard_only["x-factorspec"]["relations"] = HARD
    sp.write_text(json.dumps(hard_only), encoding="utf-8")
    assert main(["check", str(sp), str(rp)]) == 0
    assert capsys.readouterr().out == "valid\n"


def _greedy_oracle(doc_soft: list[dict]) -> tuple[list[str], list[dict]]:
    """The greedy pass by brute force: heaviest first (ties in order), keep a soft relation when
    some valid record still meets it and every one kept before."""
    holds = {"a_big": lambda r: r["a"] >= 3, "balanced": lambda r: abs(r["a"] - r["b"]) <= 1,
             "c_two": lambda r: r["c"] == 2, "rising": lambda r: all(x < y for x, y in zip(r["xs"], r["xs"][1:])),
             "a_small": lambda r: r["a"] <= 1}
    live = [r for r in _records() if _hard_ok(r)]
    kept = []
    for rel in sorted(doc_soft, key=lambda x: -x.get("weight", 1)):  # sorted is stable: ties in order
        nxt = [r for r in live if holds[rel["name"]](r)]
        if nxt:
            live, kept = nxt, kept + [rel["name"]]
    return kept, live


@pytest.mark.parametrize("extra_weight", [1, 4])
def test_solve_preferring_meets_soft_relations_greedily(extra_weight: int) -> None:
    from factorspec.graph.soft import solve_preferring
    soft = SOFT + [{"name": "a_small", "expr": "a <= 1", "soft": True, "weight": extra_weight}]
    cs = compile_spec(spec(PROPS, HARD + soft))
    pref = solve_preferring(cs)
    kept, live = _greedy_oracle(soft)
    assert pref.kept == kept and sorted(pref.left_out) == sorted({r["name"] for r in soft} - set(kept))
    rec = json.loads(cs.canonical_text(pref.record))
    assert rec in live and cs.check(rec) == []
    # a_small (weight 4) is tried before a_big (weight 2) and wins; at weight 1 a_big wins
    assert ("a_small" in kept) == (extra_weight == 4) and ("a_big" in kept) == (extra_weight == 1)


def test_cli_solve_prefer_soft(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sp = tmp_path / "s.json"
    sp.write_text(json.dumps(spec(PROPS, HARD + SOFT)), encoding="utf-8")
    assert main(["solve", "--prefer-soft", str(sp)]) == 0
    out, err = capsys.readouterr()
    rec = json.loads(out)
    assert _hard_ok(rec) and _soft_broken(rec) == [] and err.startswith("soft: met c_two, rising, a_big, balanced")
