"""Simple RequestConstraint implementations for the engine (baselines and tests).

- `Unconstrained`: every token of the tokenizer allowed; terminates on a stop token; no drafts.
- `SyntaxOnly`: an xgrammar grammar (JSON schema, builtin JSON or EBNF) as a constraint; its
  drafts are xgrammar's jump-forward string re-tokenised (a guess: verification is exact since the
  mask is applied at every verify position, so a wrongly tokenised draft is simply rejected).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from factorspec.engine.interface import DraftTree


class Unconstrained:
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


class SyntaxOnly:
    """xgrammar matcher as a RequestConstraint.

    Build with `SyntaxOnly.from_json_schema(tokenizer, schema, vocab_size=...)` (or
    `from_compiled(compiled, tokenizer)`)."""

    def __init__(self, compiled_grammar: Any, tokenizer: Any = None, draft: bool = True):
        import xgrammar as xgr

        self.matcher = xgr.GrammarMatcher(compiled_grammar, max_rollback_tokens=-1)
        self.tokenizer = tokenizer
        self.drafting = draft and tokenizer is not None
        self._torch_view: dict[int, Any] = {}

    @classmethod
    def compile_json_schema(cls, tokenizer: Any, schema: str | dict | None, vocab_size: int | None = None,
                            any_whitespace: bool = False):
        import json

        import xgrammar as xgr

        info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab_size)
        compiler = xgr.GrammarCompiler(info)
        if schema is None:
            return compiler.compile_builtin_json_grammar()
        if not isinstance(schema, str):
            schema = json.dumps(schema)
        return compiler.compile_json_schema(schema, any_whitespace=any_whitespace)

    @classmethod
    def from_json_schema(cls, tokenizer: Any, schema: str | dict | None, vocab_size: int | None = None,
                         **kw) -> "SyntaxOnly":
        return cls(cls.compile_json_schema(tokenizer, schema, vocab_size), tokenizer, **kw)

    def accept_token(self, token: int) -> bool:
        return bool(self.matcher.accept_token(int(token)))

    def validate_tokens(self, tokens: Sequence[int]) -> int:
        n = 0
        for t in tokens:
            if not self.matcher.accept_token(int(t)):
                break
            n += 1
        if n:
            self.matcher.rollback(n)
        return n

    def rollback(self, num_tokens: int) -> None:
        if num_tokens:
            self.matcher.rollback(num_tokens)

    def is_terminated(self) -> bool:
        return bool(self.matcher.is_terminated())

    def fill_next_token_bitmask(self, bitmask: np.ndarray, index: int = 0) -> None:
        import torch

        view = torch.from_numpy(bitmask)
        self.matcher.fill_next_token_bitmask(view, index)

    def draft(self, max_tokens: int) -> DraftTree:
        if not self.drafting or max_tokens <= 0:
            return DraftTree()
        s = self.matcher.find_jump_forward_string()
        if not s:
            return DraftTree()
        ids = self.tokenizer.encode(s, add_special_tokens=False)[:max_tokens]
        n = len(ids)
        return DraftTree(list(ids), list(range(-1, n - 1)), [False] * n)
