"""Re-export: the per-request width policy lives in the core (`factorspec.graph.width`)."""
from factorspec.graph.width import CertainWidth, CostModel

__all__ = ["CertainWidth", "CostModel"]
