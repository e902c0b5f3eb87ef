"""Test doubles for the engine: scripted constraints and a tiny random-init Llama."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from factorspec.constraint import DraftTree


class ScriptedConstraint:
    """Forces a fixed token script, except at "free" positions (a set of allowed tokens).

    After the script only `stop` is allowed; accepting it terminates. `branch` bounds how many
    alternatives of a free position the draft tree includes (0: stop drafting there, 1: a guess
    chain through the smallest option, >1: a tree). `guess_tokens` optionally overrides the draft
    at some positions with wrong (but allowed or not) tokens, to exercise rejection."""

    def __init__(self, script: Sequence[int | Sequence[int]], stop: int, vocab_size: int,
                 branch: int = 3, guess_tokens: dict[int, int] | None = None) -> None:
        self.script = [frozenset([s]) if isinstance(s, int) else frozenset(s) for s in script]
        self.stop = stop
        self.vocab_size = vocab_size
        self.branch = branch
        self.guess = dict(guess_tokens or {})
        self.history: list[int] = []

    def _allowed(self, pos: int) -> frozenset[int]:
        if pos < len(self.script):
            return self.script[pos]
        if pos == len(self.script):
            return frozenset([self.stop])
        return frozenset()

    def accept_token(self, token: int) -> bool:
        if self.is_terminated() or token not in self._allowed(len(self.history)):
            return False
        self.history.append(int(token))
        return True

    def validate_tokens(self, tokens: Sequence[int]) -> int:
        n = 0
        for t in tokens:
            if self.accept_token(t):
                n += 1
            else:
                break
        self.rollback(n)
        return n

    def rollback(self, num_tokens: int) -> None:
        if num_tokens:
            del self.history[-num_tokens:]

    def is_terminated(self) -> bool:
        return len(self.history) == len(self.script) + 1

    def fill_next_token_bitmask(self, bitmask: np.ndarray, index: int = 0) -> None:
        row = np.zeros(bitmask.shape[1], dtype=np.uint32)
        for t in self._allowed(len(self.history)):
            row[t // 32] |= np.uint32(1) << np.uint32(t % 32)
        bitmask[index] = row.view(np.int32)

    def draft(self, max_tokens: int) -> DraftTree:
        d = DraftTree()
        # frontier: (parent index, position) nodes to expand, depth-first so order is topological
        stack = [(-1, len(self.history))]
        while stack and len(d.tokens) < max_tokens:
            parent, pos = stack.pop()
            allowed = sorted(self._allowed(pos))
            if not allowed:
                continue
            certain = len(allowed) == 1
            if pos in self.guess:
                opts = [self.guess[pos]]
                certain = False
            elif certain:
                opts = allowed
            else:
                opts = allowed[: self.branch]
            children = []
            for t in opts:
                if len(d.tokens) >= max_tokens:
                    break
                d.tokens.append(int(t))
                d.parents.append(parent)
                d.certain.append(certain)
                children.append(len(d.tokens) - 1)
            for k in reversed(children):
                if d.tokens[k] != self.stop:
                    stack.append((k, pos + 1))
        return d


def tiny_llama(vocab_size: int = 300, seed: int = 0, dtype=torch.float32):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=vocab_size, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
        tie_word_embeddings=False,
    )
    cfg._attn_implementation = "sdpa"
    model = LlamaForCausalLM(cfg).to(dtype).eval()
    # larger weights than the init default: sharper, less tie-prone logits
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 2:
                p.mul_(8.0)
    return model


def tiny_model(family: str, vocab_size: int = 300, seed: int = 0, dtype=torch.float32):
    """Tiny random-init causal LMs of the families the engine supports (no downloads)."""
    if family == "llama":
        return tiny_llama(vocab_size, seed, dtype)
    torch.manual_seed(seed)
    common = dict(vocab_size=vocab_size, hidden_size=64, intermediate_size=128,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024)
    if family == "qwen2":
        from transformers import Qwen2Config, Qwen2ForCausalLM

        cfg = Qwen2Config(num_hidden_layers=2, tie_word_embeddings=True, **common)
        cls = Qwen2ForCausalLM
    elif family == "gemma3":
        from transformers import Gemma3ForCausalLM, Gemma3TextConfig

        # a 6-token sliding window on two of three layers: exercises the sliding mask
        cfg = Gemma3TextConfig(num_hidden_layers=3, head_dim=16, sliding_window=6,
                               layer_types=["sliding_attention", "full_attention", "sliding_attention"],
                               final_logit_softcapping=30.0, **common)
        cls = Gemma3ForCausalLM
    else:
        raise ValueError(family)
    cfg._attn_implementation = "sdpa"
    model = cls(cfg).to(dtype).eval()
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 2:
                p.mul_(8.0)
    return model


def naive_greedy(model, prompt: Sequence[int], constraint, max_new_tokens: int, stop_ids=(),
                 vocab_size: int | None = None) -> list[int]:
    """Independent reference: full recomputation (no cache) every token, masked argmax."""
    V = vocab_size or model.get_output_embeddings().weight.shape[0]
    ids = list(prompt)
    out: list[int] = []
    with torch.inference_mode():
        for _ in range(max_new_tokens):
            logits = model(torch.tensor([ids])).logits[0, -1].float()
            if constraint is not None:
                bm = np.zeros((1, (V + 31) // 32), dtype=np.int32)
                constraint.fill_next_token_bitmask(bm, 0)
                bits = np.unpackbits(bm.view(np.uint8), bitorder="little")[:V].astype(bool)
                logits[~torch.from_numpy(bits)] = float("-inf")
            t = int(logits.argmax())
            out.append(t)
            ids.append(t)
            if constraint is not None:
                assert constraint.accept_token(t)
                if constraint.is_terminated():
                    break
            if t in stop_ids:
                break
    return out
