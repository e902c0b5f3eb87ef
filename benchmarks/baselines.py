"""The constraints FactorSpec is compared against, behind the engine's RequestConstraint
interface (the one xgrammar adapter of the project: the benchmark runner and the engine tests
both use it).

- `Unconstrained`: every token of the tokenizer allowed; terminates on a stop token; no drafts.
- `XGrammarConstraint`: xgrammar's mask of the schema without relations (syntax only); with a
  tokenizer, its drafts are xgrammar's jump-forward string re-tokenised (a guess: verification is
  exact since the mask is applied at every verify position, so a wrongly tokenised draft is simply
  rejected).
- `NgramXGrammarConstraint`: the same mask plus prompt-lookup (n-gram) drafts.
"""
from __future__ import annotations

import json
from typing import Any, Optional, Sequence

import numpy as np

from factorspec.constraint import DraftTree
from factorspec.graph.schema import EXTENSION_KEY


class Unconstrained:
    """No mask: every id below `allowed_size` (default: the vocabulary) allowed; ids past it are
    logit padding."""

    def __init__(self, vocab_size: int, stop_token_ids: Sequence[int], allowed_size: int | None = None):
        self.vocab_size = vocab_size
        self.stop = set(int(t) for t in stop_token_ids)
        n = allowed_size if allowed_size is not None else vocab_size  # ids past it: logit padding
        row = np.zeros((vocab_size + 31) // 32, dtype=np.uint32)
        full, rest = divmod(n, 32)
        row[:full] = 0xFFFFFFFF
        if rest:
            row[full] = (1 << rest) - 1
        self._row = row.view(np.int32)
        self.allowed = n
        self.history: list[int] = []
        self._terminated = False

    def accept_token(self, token: int) -> bool:
        if self._terminated or not 0 <= token < self.allowed:
            return False
        self.history.append(int(token))
        self._terminated = token in self.stop
        return True

    def validate_tokens(self, tokens: Sequence[int]) -> int:
        n = 0
        for t in tokens:
            if self._terminated or not 0 <= t < self.allowed:
                break
            n += 1
            if t in self.stop:
                break
        return n

    def rollback(self, num_tokens: int) -> None:
        if num_tokens:
            del self.history[-num_tokens:]
            self._terminated = bool(self.history) and self.history[-1] in self.stop

    def is_terminated(self) -> bool:
        return self._terminated

    def fill_next_token_bitmask(self, bitmask: np.ndarray, index: int = 0) -> None:
        bitmask[index] = self._row

    def draft(self, max_tokens: int) -> DraftTree:
        return DraftTree()


def compile_json_schema(tokenizer: Any, schema: str | dict | None, vocab_size: int | None = None,
                        any_whitespace: bool = False) -> Any:
    """One xgrammar grammar of `schema` as given (None: xgrammar's builtin JSON grammar), with a
    fresh compiler; the benchmark runner uses `XGrammarCompilerCache` instead."""
    import xgrammar as xgr

    info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab_size)
    compiler = xgr.GrammarCompiler(info)
    if schema is None:
        return compiler.compile_builtin_json_grammar()
    if not isinstance(schema, str):
        schema = json.dumps(schema)
    return compiler.compile_json_schema(schema, any_whitespace=any_whitespace)


def syntax_schema(spec: dict) -> dict:
    """The spec without its relations: what a syntax-only engine enforces."""
    return {k: v for k, v in spec.items() if k != EXTENSION_KEY}


class XGrammarCompilerCache:
    """One xgrammar compiler per tokenizer; compiled grammars cached by schema text."""

    def __init__(self, tok: Any, vocab_size: int) -> None:
        import xgrammar as xgr

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
    """Syntax-only constraint (xgrammar's JSON-schema grammar). `stop_ids` overrides the
    grammar's stop tokens (None: the tokenizer info's own); with `jump_forward_tokenizer`, drafts
    are xgrammar's jump-forward string encoded by it, else there are no drafts."""

    def __init__(self, compiled: Any, stop_ids: Optional[Sequence[int]] = None,
                 jump_forward_tokenizer: Any = None) -> None:
        import xgrammar as xgr

        stops = None if stop_ids is None else list(stop_ids)
        self.m = xgr.GrammarMatcher(compiled, override_stop_tokens=stops)
        self.n = 0
        self.tokenizer = jump_forward_tokenizer

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
        return bool(self.m.is_terminated())

    def fill_next_token_bitmask(self, bitmask: Any, index: int = 0) -> None:
        import torch

        t = torch.from_numpy(bitmask) if isinstance(bitmask, np.ndarray) else bitmask
        self.m.fill_next_token_bitmask(t, index)

    def draft(self, max_tokens: int) -> DraftTree:
        if self.tokenizer is None or max_tokens <= 0:
            return DraftTree()
        s = self.m.find_jump_forward_string()
        if not s:
            return DraftTree()
        ids = self.tokenizer.encode(s, add_special_tokens=False)[:max_tokens]
        n = len(ids)
        return DraftTree(list(ids), list(range(-1, n - 1)), [False] * n)


class NgramXGrammarConstraint(XGrammarConstraint):
    """Syntax-only masks plus prompt-lookup drafting (the n-gram speculator users would tune):
    find the longest recent n-gram (n = max_n..1) earlier in prompt+output and propose what
    followed it, cut at the first token the grammar rejects."""

    def __init__(self, compiled: Any, stop_ids: Sequence[int], prompt_ids: Sequence[int],
                 max_n: int = 3) -> None:
        super().__init__(compiled, stop_ids)
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
