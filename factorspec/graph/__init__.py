"""The factor graph: schema layout, relation language, grounding and exact feasibility.

  schema.py     JSON Schema -> the record layout (`LayoutNode` tree), canonical text, validation
  relations.py  the relation language: parser, AST, JSON form
  ground.py     relations over the layout -> factors (expression nodes over solver variables)
  domain.py     `Domain` (a variable's values: set or interval) and its narrowing
  expr.py       expression nodes with interval/set propagation (fwd, bwd, ev)
  globals/      global constraints, one module each, and the registry of recognisers
  solver.py     propagation plus complete search with budgets (`State`, `Budget`)
  spec.py       `CompiledSpec`: compile, check, solve, count
  textstate.py  the canonical text as a byte automaton driven by the solver
"""
from factorspec.graph.solver import Budget, State
from factorspec.graph.spec import CompiledSpec, Violation, compile_spec

__all__ = ["Budget", "CompiledSpec", "State", "Violation", "compile_spec"]
