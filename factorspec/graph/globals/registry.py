"""The registry of global-constraint recognisers that the solver walks once per problem.

A recogniser reads the grounded variables and factors and returns the implied global nodes it
posts (each propagates after the factors and never decides: its `ev` is true, the factors still
decide exactly). Recognition is kept apart from propagation: a constraint's propagator lives in
its own module (`globals/<name>.py`), its recogniser in `globals/<name>_recognition.py`, and
this list says which recognisers run, in order (the order fixes the posted nodes' order, and so
the propagation order). Constraints that relations post explicitly, such as `all_different`,
are factors already and need no recogniser.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from factorspec.graph.expr import Node, Var
from factorspec.graph.globals import (
    case_bounds_recognition,
    monotone_chain_recognition,
    no_overlap_recognition,
    sequence_recognition,
    sum_reach_recognition,
)

if TYPE_CHECKING:
    from factorspec.graph.ground import Factor

Recogniser = Callable[[list[Var], list["Factor"]], list[Node]]

RECOGNISERS: tuple[tuple[str, Recogniser], ...] = (
    ("sequence", sequence_recognition.recognise),
    ("case_bounds", case_bounds_recognition.recognise),
    ("no_overlap", no_overlap_recognition.recognise),
    ("sum_reach", sum_reach_recognition.recognise),
    ("monotone_chain", monotone_chain_recognition.recognise),
)


def post_globals(vars: list[Var], factors: list[Factor],
                 recognisers: tuple[tuple[str, Recogniser], ...] = RECOGNISERS) -> list[Node]:
    """The implied global nodes every recogniser posts for these factors, in registry order."""
    out: list[Node] = []
    for _name, recognise in recognisers:
        out += recognise(vars, factors)
    return out
