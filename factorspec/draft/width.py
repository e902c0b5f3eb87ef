"""Per-request verify width from a cost model: how many draft tokens to send to verification.

The marginal cost of one more verified token (relative to a one-token decode step) is measured
per engine/hardware (CPU bf16 here: a forward of W+1 tokens costs about 0.9 + 0.0375 W steps,
from shared/notes/environment.md). Certain tokens are accepted with probability 1, a tree
branch with 1/branches; the width maximises expected tokens per unit of cost.

The policies are frozen dataclasses: a mask worker receives the engine's policy object itself
(pickled in its `StepItem`) and applies it to the matcher it holds."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class CostModel:
    base: float = 0.9  # cost of a forward, in one-token-step units, before extra tokens
    per_token: float = 0.0375  # marginal cost of one more token in the forward
    max_width: int = 64

    def cost(self, tokens: int) -> float:
        """Cost of a forward carrying `tokens` draft tokens, in one-token-step units."""
        return self.base + self.per_token * tokens


@dataclass(frozen=True)
class CertainWidth:
    """Width policy for the engine: (RequestState, batch size) -> width.

    A batch step costs base + per_token * (tokens in the batch), so one more draft token of any
    request raises the step cost by `per_token` and pays off iff its acceptance probability
    exceeds per_token * (tokens per cost unit the step already yields). Certain tokens (p = 1)
    always pay off below the cap; tree branches (p ~ 1/branches) only while the rate is low.

    It reads the request's constraint, so for a request whose matcher lives in a mask worker it
    runs there (`for_worker`, `worker_width`)."""

    cost: CostModel = field(default_factory=CostModel)
    tree_allowance: int = 4

    def __call__(self, state: Any, batch: int) -> int:
        return self.choose(state.request.constraint, batch)

    def choose(self, c: Any, batch: int = 1) -> int:
        """The width for a request whose constraint is `c` (in-process, or in a mask worker)."""
        cap = self.cost.max_width
        run = len(c.certain_run(cap)) if c is not None and hasattr(c, "certain_run") else 0
        width = run
        rate = (run + 1) / self.cost.cost(run)
        if run < cap and 0.5 > self.cost.per_token * rate:
            width = min(cap, run + self.tree_allowance)
        return width

    def for_worker(self, cap: int) -> tuple[int, CertainWidth]:
        """(the most draft nodes, the policy the worker applies) for a pooled request whose
        engine-side cap is `cap`: the worker holds the constraint this policy reads."""
        return min(self.cost.max_width, cap), self

    def worker_width(self, c: Any, cap: int) -> int:
        """In the worker: the width for constraint `c`, with the cost model capped at `cap`."""
        capped = dataclasses.replace(self, cost=dataclasses.replace(self.cost, max_width=int(cap)))
        return min(cap, capped.choose(c))
