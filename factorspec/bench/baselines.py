"""Constraints that FactorSpec is compared against: xgrammar's syntax-only mask, optionally with
a prompt-lookup (n-gram) drafter. They implement the same RequestConstraint interface."""
from __future__ import annotations

import json
from typing import Any, Optional, Sequence

import numpy as np

from factorspec.engine.interface import DraftTree
from factorspec.graph.schema import EXTENSION_KEY


def syntax_schema(spec: dict) -> dict:
    """The spec without its relations: what a syntax-only engine enforces."""
    return {k: v for k, v in spec.items() if k != EXTENSION_KEY}


class XGrammarCompilerCache:
    """One xgrammar compiler per tokenizer; compiled grammars cached by schema text."""

    def __init__(self, tok: Any, vocab_size: int) -> None:
        import xgrammar as xgr

        self.xgr = xgr
        self.info = xgr.TokenizerInfo.from_huggingface(tok, vocab_size=vocab_size)
        self.compiler = xgr.GrammarCompiler(self.info)
        self._cache: dict[str, Any] = {}

    def compile(self, spec: dict) -> Any:
        text = json.dumps(syntax_schema(spec), sort_keys=True)
        g = self._cache.get(text)
        if g is None:
            g = self.compiler.compile_json_schema(text, any_whitespace=False)
            self._cache[text] = g
        return g


class XGrammarConstraint:
    """Syntax-only constraint (xgrammar's JSON-schema grammar)."""

    def __init__(self, compiled: Any, xgr: Any, stop_ids: Sequence[int]) -> None:
        self.m = xgr.GrammarMatcher(compiled, override_stop_tokens=list(stop_ids))
        self.n = 0

    def accept_token(self, token: int) -> bool:
        ok = self.m.accept_token(int(token))
        if ok:
            self.n += 1
        return ok

    def validate_tokens(self, tokens: Sequence[int]) -> int:
        k = 0
        for t in tokens:
            if not self.accept_token(t):
                break
            k += 1
        self.rollback(k)
        return k

    def rollback(self, num_tokens: int) -> None:
        if num_tokens:
            self.m.rollback(num_tokens)
            self.n -= num_tokens

    def is_terminated(self) -> bool:
        return self.m.is_terminated()

    def fill_next_token_bitmask(self, bitmask: Any, index: int = 0) -> None:
        import torch

        t = torch.from_numpy(bitmask) if isinstance(bitmask, np.ndarray) else bitmask
        self.m.fill_next_token_bitmask(t, index)

    def draft(self, max_tokens: int) -> DraftTree:
        return DraftTree()


class NgramXGrammarConstraint(XGrammarConstraint):
    """Syntax-only masks plus prompt-lookup drafting (the n-gram speculator users would tune):
    find the longest recent n-gram (n = max_n..1) earlier in prompt+output and propose what
    followed it, cut at the first token the grammar rejects."""

    def __init__(self, compiled: Any, xgr: Any, stop_ids: Sequence[int], prompt_ids: Sequence[int],
                 max_n: int = 3) -> None:
        super().__init__(compiled, xgr, stop_ids)
        self.ctx = [int(t) for t in prompt_ids]
        self.base = len(self.ctx)
        self.max_n = max_n

    def accept_token(self, token: int) -> bool:
        ok = super().accept_token(token)
        if ok:
            self.ctx.append(int(token))
        return ok

    def rollback(self, num_tokens: int) -> None:
        super().rollback(num_tokens)
        if num_tokens:
            del self.ctx[len(self.ctx) - num_tokens:]

    def _propose(self, k: int) -> list[int]:
        ctx = self.ctx
        for n in range(self.max_n, 0, -1):
            if len(ctx) <= n:
                continue
            tail = ctx[-n:]
            for start in range(len(ctx) - n - 1, -1, -1):
                if ctx[start:start + n] == tail:
                    return ctx[start + n:start + n + k]
        return []

    def draft(self, max_tokens: int) -> DraftTree:
        prop = self._propose(max_tokens)
        n = self.validate_tokens(prop)
        prop = prop[:n]
        return DraftTree(prop, list(range(-1, len(prop) - 1)), [False] * len(prop))
