"""Generality (issue #13): ten problem kinds beyond trips (benchmarks/generality.py), each written as a
user writes it first, on instances small enough to enumerate every record. Against the brute
force (the kind's plain-Python oracle over every record):

- `check` agrees with the oracle on every record, and names exactly the relations that fail
  (each relation has a plain-Python predicate of its own; their conjunction is cross-checked
  against the kind's whole-record oracle);
- the same problem written another way (each kind's variant) decides the same records;
- `count()` equals the number of valid records, and `solve()` finds a valid one;
- solver-level decoding walks (random feasible value at every slot, in document order) never
  dead-end, their feasible values equal brute force's after every prefix, and they end valid;
- token-level walks over a real tokenizer's masks never dead-end and end in a record the oracle
  accepts.
"""
from __future__ import annotations

import json
import random
from typing import Any

import pytest

from benchmarks.generality import KINDS, Kind
from factorspec.graph import compile_spec
from factorspec.graph.spec import CompiledSpec
from factorspec.graph.textstate import TextMachine

from .conftest import TOKENIZERS

WILD = -(10**9)  # a slot of an absent item (any value)
_CACHE: dict[str, tuple[Kind, CompiledSpec, list[dict], list[tuple]]] = {}


def _projection(cs: CompiledSpec, rec: dict) -> tuple:
    A, bad = cs.assignment_of(rec)
    assert A is not None, bad
    return tuple(A[v.id] if v.guard is None or v.guard.ev(A) else WILD for v in _order(cs))


def _order(cs: CompiledSpec) -> list:
    return sorted(cs.vars, key=lambda v: (v.order, v.id))


def _brute(name: str) -> tuple[Kind, CompiledSpec, list[dict], list[tuple]]:
    """The kind's small instance, compiled, with every valid record (by the oracle) and their
    projections on the solver's variables; `check` is compared with the oracle on every record."""
    if name not in _CACHE:
        kind = KINDS[name](False)
        cs = compile_spec(kind.doc)
        assert kind.records is not None
        valid, n = [], 0
        for r in kind.records():
            n += 1
            want = kind.valid(r)
            got = cs.check(r)
            assert (got == []) == want, f"{name}: check says {[str(v) for v in got] or 'valid'}, oracle {want}: {r}"
            # check names exactly the relations that fail (each relation's own plain-Python oracle)
            broken = {rel for rel, holds in kind.parts.items() if not holds(r)}
            assert {v.relation for v in got} == broken, f"{name}: check names {[str(v) for v in got]}, " \
                                                        f"oracle {sorted(broken)}: {r}"
            if want:
                valid.append(r)
        assert n > len(valid) > 0, f"{name}: {len(valid)} of {n} records valid (the instance decides nothing)"
        _CACHE[name] = (kind, cs, valid, sorted({_projection(cs, r) for r in valid}))
    return _CACHE[name]


@pytest.mark.parametrize("name", sorted(KINDS))
def test_check_count_and_solve_match_brute_force(name: str) -> None:
    kind, cs, valid, projs = _brute(name)
    assert set(kind.parts) == {r.name for r in cs.relations}  # a predicate per relation
    # every field of the small instances takes part in a relation: records and assignments match
    assert len(projs) == len(valid)
    assert cs.count() == len(valid)
    rec = json.loads(cs.canonical_text(cs.solve()))
    assert kind.valid(rec) and cs.check(rec) == []


def walk_against_projections(cs: Any, order: list, projs: list, rng: random.Random, label: str) -> list[int]:
    """One random decoding walk in `order` whose every `feasible_values` answer must equal the
    values that brute force's valid projections extending the prefix have; the values taken."""
    st: Any = cs.root()
    prefix: list[int] = []
    for k, var in enumerate(order):
        live = [p for p in projs if all(a == WILD or a == b for a, b in zip(p, prefix))]
        want: set = set()
        for p in live:
            want |= set(range(var.lo, var.hi + 1)) if p[k] == WILD else {p[k]}
        got = st.feasible_values(var.id)
        assert set(got) == want, f"{label}: {var.name} after {prefix}: {sorted(got)} != {sorted(want)}"
        value = rng.choice(got)  # never empty: `want` is not (a live projection extends the prefix)
        st = st.assign(var.id, value)
        assert st is not None, f"{label}: dead end after {var.name}={value}"
        prefix.append(value)
    return prefix


@pytest.mark.parametrize("name", sorted(KINDS))
def test_solver_walks_match_brute_force(name: str) -> None:
    kind, cs, _valid, projs = _brute(name)
    order = _order(cs)
    rng = random.Random(13)
    for _walk in range(6):
        prefix = walk_against_projections(cs, order, projs, rng, name)
        A = [0] * len(cs.vars)
        for var, value in zip(order, prefix):
            A[var.id] = value
        rec = cs.record_from_assignment(A)
        assert kind.valid(rec), f"{name}: walk ended in an invalid record {rec}"


@pytest.mark.parametrize("name", sorted(KINDS))
def test_token_walks_end_valid(name: str, vocab_of: Any, walker: Any) -> None:
    kind, cs, _valid, _projs = _brute(name)
    tm = TextMachine(cs)
    v = vocab_of(TOKENIZERS[1])
    for seed in range(2):
        text = walker.walk(cs, tm, v, seed, oracle_steps=2, complete=1, disallowed=16)
        assert kind.valid(json.loads(text.decode("utf-8"))), text


def test_large_instances_compile_and_solve() -> None:
    """The benchmark's sizes build, and one record of each is valid by the oracle (timed in
    microbench/generality_bench.py, not here)."""
    for name, make in KINDS.items():
        if name in ("round_robin", "latin", "meetings", "seating"):
            continue  # the hard searches run in the benchmark only
        kind = make(True)
        cs = compile_spec(kind.doc)
        rec = json.loads(cs.canonical_text(cs.solve()))
        assert kind.valid(rec) and cs.check(rec) == [], name


@pytest.mark.parametrize("name", sorted(KINDS))
def test_other_formulations_decide_the_same_records(name: str) -> None:
    """The kind written another way (item generators, Python spellings, other aggregates):
    check agrees with the oracle on every record, and count equals brute force's."""
    kind, _cs, valid, _projs = _brute(name)
    assert kind.variants, name
    assert kind.records is not None
    for k in range(len(kind.variants)):
        cs = compile_spec(kind.variant_doc(k))
        for r in kind.records():
            got = cs.check(r)
            assert (got == []) == kind.valid(r), f"{name} variant {k}: {[str(v) for v in got] or 'valid'}: {r}"
        assert cs.count() == len({_projection(cs, r) for r in valid}) == len(valid)
