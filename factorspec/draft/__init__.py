"""Drafting: which tokens to propose for verification, and how many.

Everything that decides a draft lives here, apart from the masks it reads: certain runs (tokens
the constraint makes the only choice), branches where few values remain, prompt lookup for free
text (`certain`, `lookup`), and the per-request verify width from a cost model (`width`). The
drafters and policies are small picklable dataclasses, so a mask worker receives the very object
the engine holds. Core layer: imports the contract (`factorspec.constraint`) and nothing above it.
"""
from factorspec.draft.certain import TreeDrafter, certain_run, rank_by_witness
from factorspec.draft.lookup import PromptLookup
from factorspec.draft.width import CertainWidth, CostModel

__all__ = ["CertainWidth", "CostModel", "PromptLookup", "TreeDrafter", "certain_run", "rank_by_witness"]
