"""Decoding walks answer the same with every backend, and each speed device keeps answers exact:
feasible values along walks of the small generality kinds (round robin, packing, ...) equal brute
force's with backend own, cpsat and auto; with CP-SAT's light try cut to nothing (every question
then goes to the full solver, with symmetry breaking); with the symmetry breaking off. The record
pool (graph/record_pool.py) hands out only records within the asked domains."""
from __future__ import annotations

import pickle
import random
from typing import Any

import pytest

pytest.importorskip("ortools")

from benchmarks.generality import KINDS  # noqa: E402
from factorspec.graph import compile_spec  # noqa: E402
from factorspec.graph.backends import cpsat  # noqa: E402
from factorspec.graph.record_pool import RecordPool  # noqa: E402
from factorspec.graph.solver import Budget  # noqa: E402

from .test_generality import _brute, _order, walk_against_projections  # noqa: E402

WALKED = ("round_robin", "packing", "latin", "shift_roster", "meetings", "seating")


def _walks(name: str, backend: str, walks: int = 2) -> None:
    """Random walks (seeded) whose every question's answer must equal brute force's."""
    kind, _cs, _valid, projs = _brute(name)
    cs = compile_spec(kind.doc, budget=Budget(seconds=60, backend=backend))
    order = _order(cs)
    rng = random.Random(f"{name}-{backend}")
    for _walk in range(walks):
        walk_against_projections(cs, order, projs, rng, f"{name}/{backend}")


@pytest.mark.parametrize("backend", ["own", "cpsat", "auto"])
@pytest.mark.parametrize("name", WALKED)
def test_walks_match_brute_force_with_every_backend(name: str, backend: str) -> None:
    _walks(name, backend)


@pytest.mark.parametrize("name", ["round_robin", "packing", "seating"])
def test_full_solver_and_symmetry_breaking_keep_answers(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every CP-SAT question past the light try (cut to nothing here), so each goes through the
    symmetry breaking and the full solver; then with the symmetry breaking off."""
    monkeypatch.setattr(cpsat, "LIGHT_DTIME", 1e-9)
    _walks(name, "cpsat", walks=1)
    monkeypatch.setattr(cpsat, "SYMMETRY", False)
    _walks(name, "cpsat", walks=1)


@pytest.mark.parametrize("name", ["round_robin", "meetings", "packing", "seating"])
def test_supports_and_moves_keep_answers(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """feasible_values by supports with one-value moves (the default), without the moves, and
    by one question per value: each equal to brute force's, with the light try on and cut to
    nothing; the moves decide some values on three of these kinds (they are not skipped)."""
    from factorspec.graph import solver

    kind, _cs, _valid, _projs = _brute(name)
    cs = compile_spec(kind.doc, budget=Budget(seconds=60, backend="auto"))
    walk_against_projections(cs, _order(cs), _brute(name)[3], random.Random(f"moves-{name}"), name)
    if name != "round_robin":  # (a round robin's every one-value change breaks a factor)
        assert cs.problem.stats.move_hits > 0, name
    for light in (cpsat.LIGHT_DTIME, 1e-9):
        monkeypatch.setattr(cpsat, "LIGHT_DTIME", light)
        monkeypatch.setattr(solver, "MOVES", False)
        _walks(name, "cpsat", walks=1)
        monkeypatch.setattr(solver, "SUPPORTS", False)
        _walks(name, "cpsat", walks=1)
        monkeypatch.setattr(solver, "SUPPORTS", True)
        monkeypatch.setattr(solver, "MOVES", True)
        _walks(name, "cpsat", walks=1)


def test_moved_records_are_exactly_the_valid_ones() -> None:
    """record_moves.moved keeps exactly the one-value changes of a valid record that every
    factor holds on (brute force: `holds` on each), for every variable of small kinds."""
    from factorspec.graph.domain import dvalues
    from factorspec.graph.record_moves import moved

    seen = dict.fromkeys(("round_robin", "meetings", "packing"), 0)
    for name in seen:
        _kind, cs, _valid, _projs = _brute(name)
        p = cs.problem
        st = cs.root()
        rng = random.Random(name)
        records = [st.witness] + [list(r) for r in p.pool.within(p.initial_domains())][:3]
        for r in records:
            assert cpsat.holds(p, r)
            for v in rng.sample(p.vars, min(12, len(p.vars))):
                values = dvalues(p.initial_domains()[v.id])
                want = [k for k in values if k != r[v.id] and cpsat.holds(p, [*r[:v.id], k, *r[v.id + 1:]])]
                got = [m[v.id] for m in moved(p, r, v.id, values)]
                assert got == want, (name, v.name)
                seen[name] += len(got)
    assert seen["meetings"] > 0 and seen["packing"] > 0, seen  # (none in a round robin)


@pytest.mark.parametrize("slow", [-1.0, 1e9])
def test_auto_hands_slow_own_searches_to_cpsat(slow: float, monkeypatch: pytest.MonkeyPatch) -> None:
    """AUTO_GIVE_UP own-search answers in a row slower than AUTO_SLOW hand the problem to
    CP-SAT: with every answer slow, the own search runs AUTO_GIVE_UP times on a problem and CP-SAT
    answers the rest; answers equal brute force's either way."""
    from factorspec.graph import backends, solver

    monkeypatch.setattr(backends, "AUTO_SLOW", slow)
    monkeypatch.setattr(backends, "AUTO_MAX_SECONDS", 60.0)  # the small budget in nodes alone:
    monkeypatch.setattr(backends, "AUTO_SHARE", 1.0)  # no miss by wall-clock under load
    own = []
    solve = solver._Search.solve

    def counted(self: Any, *a: Any, **k: Any) -> Any:
        own.append(self.budget.nodes)
        return solve(self, *a, **k)

    monkeypatch.setattr(solver._Search, "solve", counted)
    kind, _cs, _valid, projs = _brute("meetings")
    cs = compile_spec(kind.doc, budget=Budget(seconds=60, backend="auto"))
    walk_against_projections(cs, _order(cs), projs, random.Random("slow"), "meetings")
    small = [n for n in own if n == backends.AUTO_NODES]
    if slow < 0:
        assert len(small) == backends.AUTO_GIVE_UP
    else:
        assert len(small) > backends.AUTO_GIVE_UP  # (the own search answers this small kind in time)


def test_auto_counts_slow_answers_in_a_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """Slow own-search answers hand the problem to CP-SAT only AUTO_GIVE_UP in a row: with every
    other answer slow (a clock that jumps a second inside every other own search), the own search
    answers as often as with none slow; answers equal brute force's."""
    import time
    import types

    from factorspec.graph import backends, solver

    monkeypatch.setattr(backends, "AUTO_MAX_SECONDS", 60.0)  # the small budget in nodes alone:
    monkeypatch.setattr(backends, "AUTO_SHARE", 1.0)  # no miss by wall-clock under load
    clock = {"t": 0.0}
    monkeypatch.setattr(backends, "time", types.SimpleNamespace(monotonic=time.monotonic,
                                                                thread_time=lambda: clock["t"]))
    solve = solver._Search.solve

    def own_searches(every_other_slow: bool) -> int:
        own = []

        def counted(self: Any, *a: Any, **k: Any) -> Any:
            out = solve(self, *a, **k)
            if self.budget.nodes == backends.AUTO_NODES:
                own.append(1)
                if every_other_slow and len(own) % 2:
                    clock["t"] += 1.0
            return out

        monkeypatch.setattr(solver._Search, "solve", counted)
        kind, _cs, _valid, projs = _brute("round_robin")
        cs = compile_spec(kind.doc, budget=Budget(seconds=60, backend="auto"))
        walk_against_projections(cs, _order(cs), projs, random.Random("slow"), "round_robin")
        assert cs.problem.backend_cache["auto"]["own_slow"] < backends.AUTO_GIVE_UP
        return len(own)

    fast = own_searches(False)
    # enough answers that counting slow ones apart would stop the own search early (after the
    # 5th: slow 1st, 3rd, 5th)
    assert fast > backends.AUTO_GIVE_UP + 2
    assert own_searches(True) == fast


def test_round_robin_model_is_exact() -> None:
    """min/max of team names (a rank read back through a table) has a translation: no factor
    is relaxed away, so CP-SAT's answers need no fallback to the own search."""
    for large in (False, True):
        cs = compile_spec(KINDS["round_robin"](large).doc, budget=Budget(backend="cpsat"))
        m = cpsat.model_of(cs.problem)
        assert m is not None and m.exact and m.dropped == []


def test_pool_hands_out_records_within_the_domains() -> None:
    pool = RecordPool(size=3)
    for r in ([0, 1, 2], [1, 1, 2], [2, 0, 0], [0, 0, 0]):
        pool.add(r)
    assert len(pool) == 3  # bounded: [0, 1, 2] is gone
    D = [frozenset([0, 1, 2]), frozenset([1]), (0, 5)]
    assert pool.find(D) == [1, 1, 2]
    assert pool.find([frozenset([0]), (0, 9), (0, 9)]) == [0, 0, 0]
    assert pool.find([frozenset([0]), frozenset([1]), (0, 9)]) is None
    assert list(pool.within([(0, 9)] * 3, first=0)) == [(0, 0, 0), (2, 0, 0), (1, 1, 2)]


def test_pooled_record_decides_the_next_state_without_search(monkeypatch: pytest.MonkeyPatch) -> None:
    kind = KINDS["round_robin"](False)
    cs = compile_spec(kind.doc, budget=Budget(backend="cpsat"))
    calls = []
    solve = cpsat.Model.solve

    def counted(self: Any, *a: Any, **k: Any) -> Any:
        calls.append(1)
        return solve(self, *a, **k)

    monkeypatch.setattr(cpsat.Model, "solve", counted)
    st = cs.root()
    v = _order(cs)[0]
    vals = st.feasible_values(v.id)
    assert len(vals) > 1 and calls
    before, hits = len(calls), cs.problem.stats.pool_hits
    for k in vals:
        nxt = st.assign(v.id, k)
        assert nxt is not None and nxt.witness[v.id] == k
        assert cs.check(cs.record_from_assignment(nxt.witness)) == []
    assert len(calls) == before  # every value's record came from the witness or the pool
    assert cs.problem.stats.pool_hits > hits  # (a value whose narrowing was asked already is memoised)
    # a compiled problem travels without its records
    assert len(pickle.loads(pickle.dumps(cs.problem)).pool) == 0


def test_narrowing_moves_the_witness_and_answers_as_the_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    """State.narrow tries the witness with the asked variable moved (solver._moved_witness) before
    the backend: on a uniqueItems enum array (an all_different over guarded items) every
    exists question along a few decided items answers as with the moves off (the backend alone),
    refusals included (a value another item took), and the moves answer most of them."""
    from factorspec.graph import solver

    vals = [f"v{i:03d}" for i in range(90)]
    doc = {"type": "object", "required": ["c"], "properties": {"c": {
        "type": "array", "items": {"type": "string", "enum": vals}, "uniqueItems": True, "minItems": 1}}}

    def answers() -> tuple[list[bool], int]:
        cs = compile_spec(doc, budget=Budget(backend="auto"))
        items = [cs.var_of[("c", k)].id for k in range(4)]
        lv = cs.len_var_of[("c",)].id
        st, out = cs.root().narrow(lv, (4, 90)), []
        assert st is not None
        for k, vid in enumerate(items):
            taken = {int(st.witness[v]) for v in items[:k]}
            for lo in range(0, 90, 9):
                out.append(st.exists(vid, frozenset(range(lo, lo + 9))))
            out += [st.exists(vid, frozenset(taken))] if taken else []
            st = st.assign(vid, 17 * k + 3)
            assert st is not None
        return out, cs.problem.stats.move_hits

    with_moves, hits = answers()
    monkeypatch.setattr(solver, "MOVES", False)
    without, no_hits = answers()
    assert with_moves == without and no_hits == 0 and hits > 10
    assert not all(with_moves)  # the values other items took are refused
