"""Decoding engines. `interface` is the engine/constraint contract; `engine.Engine` is the
reference transformers loop (greedy, tree-verified drafts, continuous batching)."""
from factorspec.engine.engine import Engine, Request, RequestState, RequestStats, Result, fixed_width
from factorspec.engine.interface import DraftTree, RequestConstraint

__all__ = ["Engine", "Request", "RequestState", "RequestStats", "Result", "fixed_width",
           "DraftTree", "RequestConstraint"]
