"""Per-request token matcher: exact masks and certain drafts over a spec and a vocabulary.

Mask rule, at each position:
- Text that the constraints determine (syntax and relation-forced values alike) is written in one
  canonical tokenization: the tokenizer's own encoding of the forced text. Every token of that
  run except the last is the only allowed token at its position (the last one may merge with the
  next free choice, so it is left to the boundary).
- At a boundary every token whose bytes keep the text a prefix of some valid record is allowed.
- Once the record is complete, exactly the stop tokens are allowed.
Drafts are the tokens that this rule makes the only choice, so greedy decoding with drafts yields
exactly the tokens of greedy masked decoding without them.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

import numpy as np

from factorspec.constraint import DraftTree
from factorspec.draft.certain import TreeDrafter, certain_run
from factorspec.graph.masks import boundary_mask, mask_key
from factorspec.graph.spec import CompiledSpec
from factorspec.graph.textstate import TextMachine
from factorspec.graph.token_vocab import TokenVocab


class Matcher:
    """Implements `factorspec.constraint.RequestConstraint` for one request: masks, accept and
    rollback. Drafting (`draft`, `certain_run`) is `factorspec.draft`'s, over this state."""

    def __init__(self, machine: TextMachine, vocab: TokenVocab) -> None:
        self.m = machine
        self.vocab = vocab
        self.configs = machine.initial()
        self.plan: Optional[tuple] = None  # remaining forced tokens; None = not computed here
        self.terminated = False
        self.text = bytearray()
        self.tokens: list[int] = []  # accepted tokens (for prompt-lookup drafting)
        self.prompt: list[int] = []
        self._history: list[tuple] = []
        self._base = 0  # tokens accepted before a resumed state (`resume`): not rolled back
        self.run_memo: Optional[tuple] = None  # (configs, plan, terminated, cap, run): draft.certain_run's
        self._mask: Optional[np.ndarray] = None

    @classmethod
    def for_spec(cls, spec: CompiledSpec, vocab: TokenVocab) -> Matcher:
        """A matcher over the spec's shared `TextMachine` (built once per spec by
        `factorspec.graph.compiler`, not per request)."""
        from factorspec.graph.compiler import machine_of

        return cls(machine_of(spec), vocab)

    def clone(self) -> Matcher:
        """An independent matcher at the same state: shares the immutable parts (machine, vocab,
        frozenset configs, plan tuples, cached mask arrays) and copies every mutable container, so
        drafting ahead on the clone (e.g. on another thread) never touches this one."""
        c = Matcher.__new__(Matcher)
        c.m, c.vocab = self.m, self.vocab
        c.configs, c.plan, c.terminated = self.configs, self.plan, self.terminated
        c.text = bytearray(self.text)
        c.tokens = list(self.tokens)
        c.prompt = list(self.prompt)
        c._history = list(self._history)
        c._base = self._base
        c.run_memo = self.run_memo
        c._mask = self._mask
        return c

    # -- state ------------------------------------------------------------------------------------
    def _snapshot(self) -> tuple:
        return (self.configs, self.plan, self.terminated, len(self.text), self._mask)

    def _restore(self, snap: tuple) -> None:
        self.configs, self.plan, self.terminated, n, self._mask = snap
        del self.text[n:]
        self.tokens.pop()

    def checkpoint(self) -> tuple:
        """The state that decides everything from here (configurations, the forced-token plan
        still to follow, termination): immutable values, so holding it costs nothing. With the
        tokens accepted so far it is what `resume` needs to continue exactly as this matcher."""
        return self.configs, self.plan, self.terminated

    @classmethod
    def resume(cls, machine: TextMachine, vocab: TokenVocab, state: tuple, tokens: Sequence[int]) -> Matcher:
        """A matcher at `state` (a `checkpoint` of a matcher of the same machine, or an equal copy
        of one) after `tokens`: the same masks, drafts and accepts from here as that matcher,
        without replaying the tokens. `rollback` reaches only tokens accepted after this point
        (`rollback_room`); going further back needs a matcher replayed from the start."""
        m = cls.__new__(cls)
        m.m, m.vocab = machine, vocab
        m.configs, m.plan, m.terminated = state
        m.prompt, m._history, m.run_memo, m._mask = [], [], None, None
        m.tokens = [int(t) for t in tokens]
        tb = vocab.token_bytes
        m.text = bytearray(b"".join(tb[t] for t in m.tokens if t not in vocab.stop_ids and 0 <= t < len(tb)))
        m._base = len(m.tokens)
        return m

    def rollback_room(self) -> int:
        """How many tokens `rollback` can undo (all accepted ones, but for a resumed matcher)."""
        return len(self._history)

    def set_prompt(self, prompt_ids: Sequence[int]) -> None:
        """Prompt tokens, used to draft free text by prompt lookup (n-gram)."""
        self.prompt = [int(t) for t in prompt_ids]

    def forced_tokens(self) -> tuple:
        """The tokens the constraints force from here (the canonical tokenization of the forced
        text, its last token left to the boundary unless the record ends); memoised in `plan`."""
        if self.plan is not None:
            return self.plan
        forced, _after, complete = self.m.forced_text(self.configs)
        plan: tuple = ()
        if forced:
            toks = self.vocab.encode(forced)
            if toks:
                plan = tuple(toks) if complete else tuple(toks[:-1])
        self.plan = plan
        return plan

    # -- RequestConstraint ------------------------------------------------------------------------
    def is_terminated(self) -> bool:
        return self.terminated

    def accept_token(self, token: int) -> bool:
        if self.terminated:
            return False
        plan = self.forced_tokens()
        snap = self._snapshot()
        if token in self.vocab.stop_ids:
            if plan or not self.m.is_final(self.configs):
                return False
            self._history.append(snap)
            self.tokens.append(token)
            self.terminated = True
            self._mask = None
            return True
        if plan:
            if token != plan[0]:
                return False
            new_plan: Optional[tuple] = plan[1:] or None
        else:
            new_plan = None
        if not 0 <= token < len(self.vocab.token_bytes):
            return False
        data = self.vocab.token_bytes[token]
        if not data:
            return False
        cfg = self.configs
        for b in data:
            cfg = self.m.step(cfg, b)
            if not cfg:
                return False
        self._history.append(snap)
        self.tokens.append(token)
        self.configs = cfg
        self.plan = new_plan
        self.text += data
        self._mask = None
        return True

    def validate_tokens(self, tokens: Sequence[int]) -> int:
        n = 0
        for t in tokens:
            if not self.accept_token(t):
                break
            n += 1
        self.rollback(n)
        return n

    def rollback(self, num_tokens: int) -> None:
        if num_tokens > len(self._history):
            what = "accepted" if not self._base else f"accepted since it was resumed after {self._base}"
            raise ValueError(f"cannot roll back {num_tokens} tokens, only {len(self._history)} {what}")
        for _ in range(num_tokens):
            self._restore(self._history.pop())

    def num_accepted(self) -> int:
        return self._base + len(self._history)

    # -- masks ------------------------------------------------------------------------------------
    def next_token_mask(self) -> np.ndarray:
        """The bitmask row (int32 words, xgrammar layout) of the next position."""
        if self._mask is not None:
            return self._mask
        v = self.vocab
        if self.terminated:
            mask = v.mask_from_ids(v.stop_ids)
        else:
            plan = self.forced_tokens()
            if plan:
                mask = v.mask_from_ids([plan[0]])
            else:
                mask = self._boundary_mask()
        self._mask = mask
        return mask

    def allowed_tokens(self) -> np.ndarray:
        from factorspec.graph.token_vocab import unpack_mask
        return unpack_mask(self.next_token_mask(), self.vocab.vocab_size)

    def fill_next_token_bitmask(self, bitmask: np.ndarray, index: int = 0) -> None:
        """Row `index` of an int32 numpy bitmask (engines holding torch tensors go through
        `factorspec.integrations.bitmask_rows.fill_row`)."""
        row = self.next_token_mask()
        bitmask[index, :] = 0
        bitmask[index, : len(row)] = row[: bitmask.shape[1]]

    def _boundary_mask(self) -> np.ndarray:
        """The mask at a free choice, from the machine's shared cache when another request (or an
        earlier position) met the same configurations (`boundary_masks`)."""
        v, m = self.vocab, self.m
        cfgs = self.configs
        key = (v, mask_key(m, v, cfgs))
        hit = m.mask_cache.get(key)
        if hit is not None:
            return hit
        mask = boundary_mask(m, v, cfgs)
        m.cache_mask(key, mask)
        return mask

    def token_path(self, target: bytes) -> Optional[list[int]]:
        """Allowed tokens (stop token included) that write exactly `target` from here to the end
        of the record, longest tokens first; None if no such path. On success the matcher is left
        at the end of the path (teacher forcing, benchmarks, reachability checks)."""
        from factorspec.graph.token_vocab import TOKEN_END

        start = len(self.tokens)
        # explicit stack of (candidate tokens, next index): no recursion limit on long records
        stack: list[list] = []
        while True:
            rem = target[len(self.text):]
            if not rem:
                for s in self.vocab.stop_ids:
                    if self.accept_token(s):
                        return [int(t) for t in self.tokens[start:]]
                cands: list[int] = []
            else:
                allowed = {int(i) for i in self.allowed_tokens()}
                found: list[tuple[int, int]] = []
                node: Any = self.vocab.trie
                for k, b in enumerate(rem):
                    node = node.get(b)
                    if node is None:
                        break
                    found.extend((k + 1, t) for t in node.get(TOKEN_END, ()) if t in allowed)
                cands = [t for _, t in sorted(found, reverse=True)]
            stack.append([cands, 0])
            while stack and stack[-1][1] >= len(stack[-1][0]):
                stack.pop()
                if not stack:
                    return None
                self.rollback(1)
            frame = stack[-1]
            tok = frame[0][frame[1]]
            frame[1] += 1
            self.accept_token(tok)

    # -- drafts (factorspec.draft) ----------------------------------------------------------------
    def certain_run(self, max_tokens: int) -> list[int]:
        """Tokens that are the only allowed choice, one after another, from here (not applied);
        see `factorspec.draft.certain_run`."""
        return certain_run(self, max_tokens)

    def draft(self, max_tokens: int, max_branches: int = 4) -> DraftTree:
        """The certain run, then (budget permitting) one branch per value where few remain; see
        `factorspec.draft.TreeDrafter`."""
        return TreeDrafter(max_branches).draft(self, max_tokens)
