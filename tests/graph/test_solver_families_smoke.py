"""The meetings family of microbench/solver_families.py: the calendar as written there posts the
no_overlap structure it is meant to measure (one room clique over every meeting, one clique per
busy person), and its smallest instance solves to a record that `check` accepts. (Its timings are
the benchmark's business, not a test's: CI machines run many times slower.)"""
from __future__ import annotations

from factorspec.graph import compile_spec
from factorspec.graph.globals.no_overlap import NoOverlap
from microbench import solver_families as sf


def test_meetings_family_posts_no_overlap() -> None:
    n, rooms, people, horizon = sf.MEETINGS[0]
    cs = compile_spec(sf.meetings_spec(n, rooms, people, horizon))
    g = [x for x in cs.problem.globals if isinstance(x, NoOverlap)]
    by_room = [x for x in g if x.resources is not None]
    assert len(by_room) == 1 and len(by_room[0].tasks) == n
    dur, who = sf.meetings(n, rooms, people, horizon)
    busy = [p for p in range(people) if sum(p in w for w in who) >= 3]
    assert len(g) - 1 >= 1 and busy
    # every pairwise factor the cliques cover propagates through them only
    assert cs.problem.silent
    rec = cs.solve()
    assert not cs.check(rec)



def test_natural_plan_rows_pool_every_question() -> None:
    """The NATURAL PLAN rows of the backend table (microbench/natural_plan_backends.py): one row
    per city count, every slot of each trip asked under each backend (the root, then 3 per
    city), the backends agreeing."""
    from microbench.natural_plan_backends import solver_rows

    rows = solver_rows((3,), 2, 1)
    (key, row), = rows.items()
    assert key.startswith("NATURAL PLAN 3 cities") and len(row["instances"]) == 2
    for be in sf.BACKENDS:
        assert row[be]["questions"] == 2 * (1 + 3 * 3) and row[be]["budget_hits"] == 0, be
    assert row["answers_agree"]
