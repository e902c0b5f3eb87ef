"""Per-request verify width from a cost model: how many draft tokens to send to verification.

The marginal cost of one more verified token (relative to a one-token decode step) is measured
per engine/hardware (CPU bf16 here: a forward of W+1 tokens costs about 0.9 + 0.0375 W steps,
from shared/notes/environment.md). Certain tokens are accepted with probability 1, a tree
branch with 1/branches; the width maximises expected tokens per unit of cost."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class CostModel:
    base: float = 0.9  # cost of a forward, in one-token-step units, before extra tokens
    per_token: float = 0.0375  # marginal cost of one more token in the forward
    max_width: int = 64

    def cost(self, width: int, batch: int = 1) -> float:
        return self.base + self.per_token * width * max(1, batch)


class CertainWidth:
    """Width policy for the engine: (RequestState, batch size) -> width."""

    def __init__(self, cost: CostModel = CostModel(), tree_allowance: int = 4) -> None:
        self.cost = cost
        self.tree_allowance = tree_allowance

    def __call__(self, state: Any, batch: int) -> int:
        c = state.request.constraint
        cap = self.cost.max_width
        run = len(c.certain_run(cap)) if c is not None and hasattr(c, "certain_run") else 0
        best_w, best_rate = 0, 1.0 / self.cost.cost(0, batch)
        for w in range(1, cap + 1):
            accepted = min(w, run) + 0.5 * max(0, min(w - run, self.tree_allowance))
            rate = (accepted + 1) / self.cost.cost(w, batch)
            if rate > best_rate + 1e-12:
                best_w, best_rate = w, rate
        return best_w
