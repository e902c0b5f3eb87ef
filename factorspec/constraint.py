"""The contract between a decoding engine and a per-request constraint (floor 1: numpy only).

Engines (the reference transformers loop, SGLang, vLLM) and the CPU mask workers only talk to
this; the token matcher (`factorspec.graph.matcher.Matcher`) implements it. It sits below every
other package (core, engine, workers, integrations) so that each may import it without pulling in
an engine or torch. Bitmasks use xgrammar's layout: token j is bit
j % 32 of int32 word j // 32, least significant bit first, 1 = allowed.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

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


def fill_tree_bitmask(c: RequestConstraint, draft: DraftTree, bitmask: np.ndarray, row0: int) -> list[bool]:
    """Fill bitmask rows row0.. for the root and every draft node (root first, then node k in row
    row0 + k + 1); returns per row whether the constraint accepts the path to that node. Leaves
    `c` at the root state.

    Engines verify drafts by applying the mask at every node, so each node needs the row of the
    state its path reaches. Kept here (numpy only) so that CPU mask workers run the same walk as
    an in-process engine. A constraint may provide `fill_tree_bitmask(draft, bitmask, row0)`
    doing the same natively; it is used when present."""
    fast = getattr(c, "fill_tree_bitmask", None)
    if fast is not None:
        return list(fast(draft, bitmask, row0))
    n = len(draft.tokens)
    valid = [True] * (n + 1)
    c.fill_next_token_bitmask(bitmask, row0)
    depth_of = [0] * n
    stack: list[int] = []  # draft nodes currently accepted into c (a root->node path)
    for k in range(n):
        p = draft.parents[k]
        if p >= 0 and not valid[p + 1]:
            valid[k + 1] = False
            bitmask[row0 + k + 1] = 0
            continue
        want = depth_of[p] if p >= 0 else 0  # path length to the parent
        if len(stack) > want:
            c.rollback(len(stack) - want)
            del stack[want:]
        if not c.accept_token(int(draft.tokens[k])):
            valid[k + 1] = False
            bitmask[row0 + k + 1] = 0
            continue
        stack.append(k)
        depth_of[k] = len(stack)
        if c.is_terminated():
            bitmask[row0 + k + 1] = 0
        else:
            c.fill_next_token_bitmask(bitmask, row0 + k + 1)
    if stack:
        c.rollback(len(stack))
    return valid


def truncate_draft(d: DraftTree, width: int, chain: bool = False) -> DraftTree:
    """At most `width` nodes (a prefix in topological order keeps the tree closed); with `chain`
    only the first-child chain from the root (what a chain-only verifier can take)."""
    if chain:
        toks: list[int] = []
        pars: list[int] = []
        cert: list[bool] = []
        last = -1
        for k in range(len(d.tokens)):
            if d.parents[k] == last and len(toks) < width:
                toks.append(d.tokens[k])
                pars.append(len(toks) - 2)  # the previous node of the new chain
                cert.append(d.certain[k] if k < len(d.certain) else False)
                last = k
        return DraftTree(toks, pars, cert)
    if len(d.tokens) <= width:
        return d
    return DraftTree(list(d.tokens[:width]), list(d.parents[:width]), list(d.certain[:width]))
