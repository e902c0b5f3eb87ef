"""The factor graph: schema layout, relation language, grounding and exact feasibility."""
from factorspec.graph.solver import Budget, State
from factorspec.graph.spec import CompiledSpec, Violation, compile_spec

__all__ = ["Budget", "CompiledSpec", "State", "Violation", "compile_spec"]
