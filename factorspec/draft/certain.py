"""Certain runs and small branch trees: drafts that greedy masked decoding cannot reject.

A certain token is the only token the mask allows at its position, so greedy decoding with the
draft yields exactly the tokens of greedy masked decoding without it. Where the run ends at a
choice between a few values, one branch per value follows (each with its own certain run); where
the choice is wide (free text), prompt lookup proposes a continuation instead."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from factorspec.constraint import DraftTree
from factorspec.draft.lookup import PromptLookup

if TYPE_CHECKING:
    from factorspec.graph.matcher import Matcher


def certain_run(m: Matcher, max_tokens: int) -> list[int]:
    """Tokens that are the only allowed choice, one after another, from the matcher's state (not
    applied; the matcher is left where it was).

    Memoised per state in `m.run_memo`: an engine asks once for its width policy and again when
    it drafts, and that second walk must not cost the first one again."""
    if not m.terminated:
        m.forced_tokens()
    c = m.run_memo
    if c is not None and c[0] is m.configs and c[1] == m.plan and c[2] == m.terminated \
            and (max_tokens <= c[3] or len(c[4]) < c[3]):
        return c[4][:max_tokens]
    state = (m.configs, m.plan, m.terminated)
    out: list[int] = []
    while len(out) < max_tokens and not m.terminated:
        plan = m.forced_tokens()
        if plan:
            t = plan[0]
        else:
            ids = m.allowed_tokens()
            if len(ids) != 1:
                break
            t = int(ids[0])
        if not m.accept_token(t):
            break
        out.append(t)
    m.rollback(len(out))
    m.run_memo = (*state, max_tokens, out)
    return list(out)


def rank_by_witness(m: Matcher, ids: list[int]) -> list[int]:
    """Cheap prior for branch order: the token that continues the solver's witness record first."""
    w = m.m.witness_text(m.configs) or b""
    n = len(m.text)

    def score(t: int) -> int:
        b = m.vocab.token_bytes[t]
        return 0 if w[n:n + len(b)] == b else 1
    return sorted(ids, key=score)


@dataclass(frozen=True)
class TreeDrafter:
    """The certain run, then (budget permitting) one branch per value where at most
    `max_branches` values remain, or a prompt-lookup chain where more do."""

    max_branches: int = 4
    lookup: PromptLookup = field(default_factory=PromptLookup)

    def draft(self, m: Matcher, max_tokens: int) -> DraftTree:
        """At most `max_tokens` nodes from the matcher's state (the matcher is left unchanged)."""
        chain = certain_run(m, max_tokens)
        tree = DraftTree(list(chain), list(range(-1, len(chain) - 1)), [True] * len(chain))
        budget = max_tokens - len(chain)
        if budget < 2:
            return tree
        for t in chain:
            m.accept_token(t)
        try:
            if m.terminated or m.plan:
                return tree
            ids = [int(i) for i in m.allowed_tokens() if int(i) not in m.vocab.stop_ids]
            if len(ids) > self.max_branches:
                self.lookup.extend(m, tree, budget)
                return tree
            if len(ids) < 2:
                return tree
            ids = rank_by_witness(m, ids)
            parent = len(chain) - 1
            per = max(1, budget // len(ids))
            for t in ids:
                if budget <= 0:
                    break
                if not m.accept_token(t):
                    continue
                tree.tokens.append(t)
                tree.parents.append(parent)
                tree.certain.append(False)
                node = len(tree.tokens) - 1
                budget -= 1
                sub = certain_run(m, min(per - 1, budget))
                prev = node
                for s in sub:
                    tree.tokens.append(s)
                    tree.parents.append(prev)
                    tree.certain.append(True)
                    prev = len(tree.tokens) - 1
                budget -= len(sub)
                m.rollback(1)
        finally:
            m.rollback(len(chain))
        return tree
