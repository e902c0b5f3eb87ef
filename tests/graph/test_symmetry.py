"""Symmetry breaking of interchangeable array items (graph/symmetry.py) keeps every question's
answer: against brute force, a record within D exists exactly when one exists that also orders
each chain `symmetry.chains` returns; items that differ (per-index constants, per-day tables)
yield no chain."""
from __future__ import annotations

import itertools
import random
from typing import Any

from benchmarks.generality import KINDS
from factorspec.graph import compile_spec, symmetry
from factorspec.graph.backends import cpsat
from factorspec.graph.domain import dcontains, dvalues

# small instances whose full assignment space brute force can walk
SMALL = tuple(KINDS)
MAX_ASSIGNMENTS = 300_000


def _space(p: Any) -> list[list]:
    return [dvalues(d) for d in p.initial_domains()]


def _records(p: Any) -> list[tuple]:
    doms = _space(p)
    return [A for A in itertools.product(*doms) if cpsat.holds(p, list(A))]


def _domains_to_try(p: Any, r: random.Random) -> list[list]:
    """The initial domains, every structural variable fixed to each of its values, and random
    narrowings of those (a slot fixed, a slot restricted to a subset)."""
    base = p.initial_domains()
    out = [list(base)]
    for v in p.vars:
        if v.structural:
            for k in dvalues(base[v.id]):
                D = list(base)
                D[v.id] = frozenset([k])
                out.append(D)
    for D in list(out):
        for _ in range(3):
            D2 = list(D)
            v = r.choice(p.vars)
            vals = dvalues(D2[v.id])
            D2[v.id] = frozenset(r.sample(vals, r.randint(1, len(vals))))
            out.append(D2)
    return out


def test_chains_keep_feasibility_against_brute_force() -> None:
    r = random.Random("symmetry")
    ordered = 0
    for name in SMALL:
        cs = compile_spec(KINDS[name](False).doc)
        p = cs.problem
        size = 1
        for d in _space(p):
            size *= len(d)
        assert size <= MAX_ASSIGNMENTS, (name, size)
        recs = _records(p)
        for D in _domains_to_try(p, r):
            ch = symmetry.chains(p, D)
            within = [A for A in recs if all(dcontains(d, k) for d, k in zip(D, A))]
            kept = [A for A in within if all(A[a] <= A[b] for c in ch for a, b in zip(c, c[1:]))]
            assert bool(within) == bool(kept), (name, D, ch)
            ordered += bool(ch)
    assert ordered >= 10  # the chains were there to test


def test_packing_positions_are_interchangeable_once_the_length_is_fixed() -> None:
    cs = compile_spec(KINDS["packing"](True).doc)
    p = cs.problem
    D = p.initial_domains()
    n = cs.var_of[("packed",)] if ("packed",) in cs.var_of else next(v for v in p.vars if v.structural)
    D[n.id] = frozenset([10])
    ch = symmetry.chains(p, D)
    assert [[p.vars[i].name for i in c] for c in ch] == [[f"packed[{i}].item" for i in range(10)]]
    # a length still open leaves guards undecided: no item is known present, no chain
    assert symmetry.chains(p, p.initial_domains()) == []


def _spec(rels: list, tables: dict) -> dict:
    item = {"type": "integer", "minimum": 0, "maximum": 4}
    return {"type": "object", "properties": {"a": {"type": "array", "items": item, "minItems": 3, "maxItems": 3}},
            "required": ["a"], "x-factorspec": {"relations": rels, "tables": tables}}


def test_items_that_differ_give_no_chain() -> None:
    # per-index caps: a[0] <= 1 is not a[1] <= 3
    cs = compile_spec(_spec(["forall i: a[i] <= cap[i]", "all_different(a[*])"], {"cap": [1, 3, 3]}))
    p = cs.problem
    got = symmetry.chains(p, p.initial_domains())
    assert [[p.vars[i].name for i in c] for c in got] == [["a[1]", "a[2]"]]  # only the equal ones
    # an order between positions
    cs = compile_spec(_spec(["forall i: a[i] < a[i+1]"], {}))
    assert symmetry.chains(cs.problem, cs.problem.initial_domains()) == []
    # a per-day table (shift_roster: availability differs by day)
    cs = compile_spec(KINDS["shift_roster"](True).doc)
    p = cs.problem
    assert all(not p.vars[c[0]].name.startswith("roster[") or len(c) < 2
               for c in symmetry.chains(p, p.initial_domains()))
    # domains that differ between items
    cs = compile_spec(_spec(["all_different(a[*])"], {}))
    p = cs.problem
    D = p.initial_domains()
    D[cs.var_of[("a", 0)].id] = frozenset([2])
    got = symmetry.chains(p, D)
    assert [[p.vars[i].name for i in c] for c in got] == [["a[1]", "a[2]"]]
