"""Prompt-lookup (n-gram) proposals for free choices such as free text."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from factorspec.constraint import DraftTree

if TYPE_CHECKING:
    from factorspec.graph.matcher import Matcher


@dataclass(frozen=True)
class PromptLookup:
    """Propose what followed the latest n-gram (n = max_n down to 1) earlier in the prompt or
    output; the proposal is cut at the first token the mask rejects, so it never changes output."""

    max_n: int = 3

    def propose(self, ctx: Sequence[int], budget: int) -> list[int]:
        """The continuation of the most recent earlier occurrence of the longest matching tail."""
        ctx = list(ctx)
        for n in range(self.max_n, 0, -1):
            if len(ctx) <= n:
                continue
            tail = ctx[-n:]
            for start in range(len(ctx) - n - 1, -1, -1):
                if ctx[start:start + n] == tail:
                    prop = ctx[start + n:start + n + budget]
                    if prop:
                        return prop
                    break
        return []

    def extend(self, m: Matcher, tree: DraftTree, budget: int) -> None:
        """Hang the proposal as a chain below the last node of `tree` (matcher left unchanged)."""
        prop = self.propose(m.prompt + m.tokens, budget)
        parent, done = len(tree.tokens) - 1, 0
        for t in prop:
            if not m.accept_token(t):
                break
            tree.tokens.append(t)
            tree.parents.append(parent)
            tree.certain.append(False)
            parent = len(tree.tokens) - 1
            done += 1
        m.rollback(done)
