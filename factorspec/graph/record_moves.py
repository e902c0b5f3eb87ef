"""Records one value away from a known record: supports for `feasible_values` without a search.

Why: `State.feasible_values` needs one record per feasible value. Along a walk most of a slot's
feasible values are a single change away from a record already known (a meeting moved to a free
slot of its room): the record with only that slot changed is a record as soon as the factors
that read the slot hold on it, since every other factor reads only values of a record it holds
on. Checking those few factors costs far less than a complete backend's call (a CP-SAT solve
costs milliseconds of model loading before it searches). Exact: a moved record counts only after
each factor reading the slot is evaluated on it exactly (`ev`, as `check` decides), so no value is
claimed that no record has; a value no move reaches still goes to the backend.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from factorspec.graph.ground import nodes_hold

if TYPE_CHECKING:
    from factorspec.graph.solver import Problem

_READING = "_reading"  # Problem attribute: per variable, the factors whose node reads it


def reading(p: Problem, vid: int) -> list[int]:
    """The factors (indices) that read var `vid` (built once per problem)."""
    per = p.__dict__.get(_READING)
    if per is None:
        per = [[] for _ in p.vars]
        for fi, f in enumerate(p.factors):
            for v in f.node.vars:
                per[v].append(fi)
        setattr(p, _READING, per)
    return per[vid]


def moved(p: Problem, record: Sequence[Any], vid: int, values: Iterable[int], first: bool = False) -> list[list]:
    """The records `record` with var `vid` set to each of `values` that every factor holds on
    (`record` must be a valid record; the values must lie in the asking state's domain of vid);
    with `first`, only the first such record."""
    factors = [p.factors[fi].node for fi in reading(p, vid)]
    out = []
    for k in values:
        if k == record[vid]:
            continue
        r = list(record)
        r[vid] = k
        if nodes_hold(factors, r):
            out.append(r)
            if first:
                break
    return out
