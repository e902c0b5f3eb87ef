"""The DistinctSequence window probe and the solver's one propagation per question, on small trips.

Two speed changes for 30- and 50-city trips must change no answer:
  * the probe (sequence_recognition `_make`) reads each position's local factors from one pass
    over the factors and drops entailed factors from its fixpoint rounds: its windows must equal
    those of a plain reference (a scan of every factor per position, every factor every round);
  * `solve_portfolio(..., propagated=True)` does not repeat the caller's propagation: the
    feasible values along a walk must equal brute force under every backend, and the witnesses
    (the records drafts follow) must be the same under own and auto."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from factorspec.graph import Budget, compile_spec
from factorspec.graph.domain import Narrowing, dom_range
from factorspec.graph.expr import F, T, as_bool
from factorspec.graph.globals.sequence import DistinctSequence
from tests.graph.test_sequence import _brute, _spec, instances


def _reference_windows(cs, seq: DistinctSequence) -> list[list[int]]:
    """The windows by the plain definition: per (position j, value v), HC4 over every factor
    local to position j (reads x_j, and only x_j and tau_j, tau_{j+1}) with x_j = v, from the
    initial domains, every factor revised every round until nothing changes."""
    p = cs.problem
    D0 = [dom_range(v.lo, v.hi) for v in p.vars]
    nv = len(p.vars[seq.xs[0]].values)
    steps = len(seq.chain) - 1
    out = []
    for j, x in enumerate(seq.xs):
        if j >= steps:
            out.append([-1] * nv)
            continue
        local_vars = {x} | {v for v, _ in seq.chain[j]} | {v for v, _ in seq.chain[j + 1]}
        local = [f.node for f in p.factors if f.node.vars and f.node.vars <= local_vars and x in f.node.vars]
        row = []
        for v in range(nv):
            D = list(D0)
            D[x] = frozenset([v])
            ok = True
            ctx = Narrowing(D)
            for _ in range(20):
                ctx.changed = []
                for nd in local:
                    r = as_bool(nd.fwd(D))
                    if r == F or (r != T and not nd.bwd(ctx, T)):
                        ok = False
                        break
                if not ok or not ctx.changed:
                    break
            if not ok:
                row.append(0)
                continue
            t, t1 = seq._tau(D, j), seq._tau(D, j + 1)
            if t is None or t1 is None:
                row.append(-1)
            elif seq.h[v] is None:
                row.append(0)
            else:
                row.append(t & (t1 >> seq.h[v]))
        out.append(row)
    return out


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_probe_windows_match_reference(inst) -> None:
    cities, n, stays, flights, events, total = inst
    cs = compile_spec(_spec(cities, n, stays, flights, events, total))
    (seq,) = [g for g in cs.problem.globals if isinstance(g, DistinctSequence)]
    if seq.chain is None:
        return
    assert seq._probe(seq) == _reference_windows(cs, seq)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(), st.randoms(use_true_random=False))
def test_walk_matches_brute_force_under_every_backend(inst, rnd) -> None:
    cities, n, stays, flights, events, total = inst
    sols = _brute(cities, n, stays, flights, events, total)
    if not sols:
        return
    target = rnd.choice(sols)
    spec = _spec(cities, n, stays, flights, events, total)
    states = {be: compile_spec(spec, budget=Budget(seconds=60, backend=be)) for be in ("own", "auto", "cpsat")}
    cur = {be: cs.root() for be, cs in states.items()}
    assert cur["own"].witness == cur["auto"].witness
    for i in range(n):
        want = sorted({s[i] for s in sols if s[:i] == target[:i]})
        for be, cs in states.items():
            v = cs.var_of[("itinerary", i, "city")]
            got = sorted(v.values[k] for k in cur[be].feasible_values(v.id))
            assert got == want, (be, i, target)
            cur[be] = cur[be].assign(v.id, v.values.index(target[i]))
            assert cur[be] is not None
        assert cur["own"].witness == cur["auto"].witness
