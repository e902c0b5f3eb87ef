"""NATURAL PLAN is unchanged by the default backend (`auto`, issue #13): along decoding walks on
small trip instances, `own`, `auto` and `cpsat` give the same mask at every position, the same
draft tree at every verify step (so the same certain tokens and tokens per verify step) and the
same record, and that record passes the independent plan checker.

The decoder is microbench/natural_plan_backends.py's `decode` with scripted models (the golden
plan as teacher; seeded uniform choices among the allowed tokens) in place of a neural one."""
from __future__ import annotations

import json

import pytest

from benchmarks.natural_plan import check_plan, golden_record, parse_instance, to_spec
from factorspec.data import natural_plan_file
from factorspec.graph import Budget, compile_spec
from factorspec.graph.backends import cpsat
from factorspec.graph.matcher import Matcher
from microbench.natural_plan_backends import decode, teacher, uniform

# a 3- and a 5-city instance (one plan each) and the 10-city ones with 7 and 2 valid plans
IDS = ("trip_planning_example_29", "trip_planning_example_409", "trip_planning_example_1450",
       "trip_planning_example_1511")
BACKENDS = ("own", "auto", "cpsat")
SEEDS = (1, 2)


@pytest.fixture(scope="module")
def problems() -> dict:
    path = natural_plan_file()
    if not path.is_file():
        pytest.fail(f"NATURAL PLAN data not found at {path} (set FACTORSPEC_SHARED_DATA)", pytrace=False)
    raw = json.loads(path.read_text(encoding="utf-8"))
    return {i: parse_instance(i, raw[i]) for i in IDS if i in raw}


def test_instances_and_backend_present(problems: dict) -> None:
    assert set(problems) == set(IDS)
    assert cpsat.available(), "ortools is installed by scripts/install.sh: without it auto is own"


def _decode(problem, vocab, backend: str, seed) -> dict:
    cs = compile_spec(to_spec(problem), budget=Budget(seconds=60.0, backend=backend))
    if seed is None:
        path = Matcher.for_spec(cs, vocab).token_path(cs.canonical_text(golden_record(problem)).encode())
        assert path is not None
        model = teacher(path)
    else:
        model = uniform(seed)
    r = decode(Matcher.for_spec(cs, vocab), model)
    assert r["record"] is not None, f"{problem.id} {backend}: the decode did not finish"
    assert cs.check(r["record"]) == [] and check_plan(problem, r["record"]) == [], (problem.id, backend)
    return r


@pytest.mark.parametrize("iid", IDS)
def test_same_masks_drafts_and_records(problems: dict, vocab_of, iid: str) -> None:
    vocab = vocab_of("smollm2-135m")
    p = problems[iid]
    for seed in (None, *SEEDS):
        got = {be: _decode(p, vocab, be, seed) for be in BACKENDS}
        ref = got["own"]
        if seed is None:
            assert ref["record"] == golden_record(p)
        for be in BACKENDS[1:]:
            # trace: a digest of every mask and every draft tree along the walk
            assert got[be] == ref, (iid, seed, be)
        assert ref["accepted"] > 0 and ref["tokens_per_verify_step"] > 1


def test_uniform_walks_reach_other_plans(problems: dict, vocab_of) -> None:
    """The seeded walks are not all the golden plan where several plans are valid, so the
    comparison above covers choices the witness does not make."""
    vocab = vocab_of("smollm2-135m")
    p = problems["trip_planning_example_1450"]
    recs = {json.dumps(_decode(p, vocab, "auto", s)["record"], sort_keys=True) for s in range(1, 9)}
    assert len(recs) > 1


def test_auto_takes_the_own_search_on_trips_only(problems: dict) -> None:
    """`auto` sends a trip (a DistinctSequence with flights or a day chain) to the own search, and
    a bare DistinctSequence (an invoice's distinct items) to CP-SAT, which answers those faster
    (microbench/results/solver_backends.md, invoice rows)."""
    from factorspec.graph.backends import _is_trip
    from microbench.solver_families import invoice_spec

    for pid, prob in problems.items():
        assert _is_trip(compile_spec(to_spec(prob)).problem), pid
    invoice = compile_spec(invoice_spec(4)).problem
    assert any(type(g).__name__ == "DistinctSequence" for g in invoice.globals)
    assert not _is_trip(invoice)
