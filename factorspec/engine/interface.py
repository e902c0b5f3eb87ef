"""The narrow interface between a decoding engine and a per-request constraint.

Engines (the reference transformers loop, SGLang, vLLM) only talk to this; the token engine
(`factorspec.graph.matcher`) implements it. Bitmasks use xgrammar's layout: token j is bit
j % 32 of int32 word j // 32, least significant bit first, 1 = allowed.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence

import numpy as np


@dataclass
class DraftTree:
    """Draft tokens of one request as a tree in topological order.

    `parents[k]` is the index of node k's parent, or -1 when its parent is the last committed
    token (the root). A plain chain has parents [-1, 0, 1, ...]. `certain[k]` is True when the
    constraints force token k given its parent (it will be accepted under greedy masked decoding
    whenever its parent is)."""

    tokens: list[int] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)
    certain: list[bool] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.tokens)


class RequestConstraint(Protocol):
    """Per-request constraint state, advanced token by token."""

    def accept_token(self, token: int) -> bool:
        """Advance by one token; False (state unchanged) if the token is not allowed."""

    def validate_tokens(self, tokens: Sequence[int]) -> int:
        """How many leading tokens of `tokens` would be accepted, without advancing."""

    def rollback(self, num_tokens: int) -> None:
        """Undo the last `num_tokens` accepted tokens."""

    def is_terminated(self) -> bool:
        """True once a stop token has been accepted."""

    def fill_next_token_bitmask(self, bitmask: np.ndarray, index: int = 0) -> None:
        """Write the allowed-token mask for the next position into row `index`."""

    def draft(self, max_tokens: int) -> DraftTree:
        """Certain run (and, where few values are feasible, a tree) from the current state."""
