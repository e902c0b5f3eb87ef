"""Solving with soft relations as preferences: a greedy, lexicographic choice (docs/spec.md).

Soft relations never restrict masks or validity. `solve_preferring` returns a valid record that
meets as many of them as a greedy pass can: the heaviest soft relation first (ties in spec
order), each made hard when the spec stays satisfiable with it and the ones kept before, left
out otherwise. That is exact per step (each step is a feasibility question under the spec's
budget) but not an optimum of the total penalty: a heavy relation kept early may exclude two
lighter ones that together weigh more. Why greedy: it reuses the exact feasibility machinery
and costs one compile and root search per soft relation.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass

from factorspec.errors import Unsatisfiable
from factorspec.graph.schema import EXTENSION_KEY
from factorspec.graph.spec import CompiledSpec


@dataclass
class Preferred:
    """A record with the soft relations the greedy pass kept (all their instances hold) and the
    ones it left out (no record meets them with those kept before)."""

    record: dict
    kept: list[str]
    left_out: list[str]


def solve_preferring(cs: CompiledSpec) -> Preferred:
    """A valid record meeting the soft relations greedily by weight (see the module docstring).
    Raises Unsatisfiable when the hard relations admit no record, BudgetExceeded when a question
    runs past the spec's budget."""
    base = cs.solve()  # the hard relations first (Unsatisfiable names them)
    if not cs.soft_relations:
        return Preferred(base, [], [])
    raw = list(cs.doc[EXTENSION_KEY].get("relations", []))
    index = {r.name: int(r.pointer.rsplit("/", 1)[-1]) for r in cs.soft_relations}
    order = sorted(cs.soft_relations, key=lambda r: (-r.weight, index[r.name]))
    kept: list[str] = []
    left: list[str] = []
    record = base
    for rel in order:
        trial = copy.copy(raw)
        k = index[rel.name]
        trial[k] = {key: v for key, v in trial[k].items() if key not in ("soft", "weight")}
        doc = dict(cs.doc)
        doc[EXTENSION_KEY] = {**cs.doc[EXTENSION_KEY], "relations": trial}
        try:
            record = CompiledSpec(doc, cs.budget, cs.style, cs.open_objects).solve()
        except Unsatisfiable:
            left.append(rel.name)
            continue
        kept.append(rel.name)
        raw = trial
    return Preferred(record, kept, left)
