"""DistinctSequence on a shape that is not a trip: jobs on one machine, back to back.

Each job starts when the previous one ends (start[i+1] == start[i] + dur[job[i]], no shared day
as in a trip), only some job pairs may follow each other (set-up compatibility), and some jobs
have deadlines. The recogniser must post the global node, and the solver's count and feasible
values along a random solution must equal brute-force enumeration of every ordering."""
from __future__ import annotations

import itertools
import random

import pytest

from factorspec.errors import Unsatisfiable
from factorspec.graph import compile_spec
from factorspec.graph.globals.sequence import DistinctSequence


def _spec(jobs: list[str], n: int, dur: dict, follows: list, deadlines: dict, horizon: int) -> dict:
    rels = [
        {"name": "once", "expr": "all_different(plan[*].job)"},
        {"name": "begin", "expr": "plan[0].start == 0"},
        {"name": "back_to_back", "expr": "forall i: plan[i+1].start == plan[i].start + dur[plan[i].job]"},
        {"name": "setup", "expr": "forall i: (plan[i].job, plan[i+1].job) in follows"},
        {"name": "fits", "expr": f"last(plan).start + dur[last(plan).job] <= {horizon}"},
    ]
    for k, (j, d) in enumerate(sorted(deadlines.items())):
        due = f'forall i: plan[i].job == "{j}" implies plan[i].start + dur["{j}"] <= {d}'
        rels.append({"name": f"due{k}", "expr": due})
    return {
        "type": "object",
        "properties": {"plan": {"type": "array", "minItems": n, "maxItems": n, "items": {
            "type": "object",
            "properties": {"job": {"enum": jobs}, "start": {"type": "integer", "minimum": 0, "maximum": horizon}},
            "required": ["job", "start"], "additionalProperties": False}}},
        "required": ["plan"], "additionalProperties": False,
        "x-factorspec": {"tables": {"dur": dur, "follows": follows}, "relations": rels},
    }


def _brute(jobs: list[str], n: int, dur: dict, follows: list, deadlines: dict, horizon: int) -> list[tuple]:
    ok_pairs = {tuple(p) for p in follows}
    out = []
    for perm in itertools.permutations(jobs, n):
        if any((a, b) not in ok_pairs for a, b in zip(perm, perm[1:])):
            continue
        t, good = 0, True
        for j in perm:
            end = t + dur[j]
            if (j in deadlines and end > deadlines[j]) or t > horizon:
                good = False
                break
            t = end
        if good and t <= horizon:
            out.append(perm)
    return out


def _instance(seed: int):
    rnd = random.Random(seed)
    nj = rnd.randint(3, 6)
    jobs = [f"J{i}" for i in range(nj)]
    n = rnd.randint(max(3, nj - 1), nj)
    dur = {j: rnd.randint(1, 5) for j in jobs}
    follows = [[a, b] for a in jobs for b in jobs if a != b and rnd.random() < 0.7]
    deadlines = {j: rnd.randint(dur[j], 4 * nj) for j in jobs if rnd.random() < 0.3}
    shortest = sum(sorted(dur.values())[:n])
    horizon = rnd.randint(shortest - 1, sum(dur.values()) + 2)  # sometimes too short for any plan
    return jobs, n, dur, follows, deadlines, horizon


@pytest.mark.parametrize("seed", range(30))
def test_jobs_match_brute_force(seed: int) -> None:
    inst = _instance(seed)
    jobs, n = inst[0], inst[1]
    sols = _brute(*inst)
    cs = compile_spec(_spec(*inst))
    assert any(isinstance(g, DistinctSequence) and g.chain is not None for g in cs.problem.globals)
    if not sols:
        with pytest.raises(Unsatisfiable):
            cs.root()
        return
    assert cs.count() == len(sols)
    # feasible jobs at each position along one solution, against the orderings with that prefix
    rnd = random.Random(seed)
    target = rnd.choice(sols)
    st = cs.root()
    for i in range(n):
        var = cs.var_of[("plan", i, "job")]
        prefix_ok = [s for s in sols if s[:i] == target[:i]]
        want = sorted({jobs.index(s[i]) for s in prefix_ok})
        assert st.feasible_values(var.id) == want, (seed, i)
        st = st.assign(var.id, jobs.index(target[i]))
        assert st is not None
