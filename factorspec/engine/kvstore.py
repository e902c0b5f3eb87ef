"""A batched KV cache with ragged rows, compacted after every verify step.

Row b's committed KV entries occupy slots [0, lens[b]) of every layer's [B, H, L, D] tensors;
slots past lens[b] are stale (masked out). A verify forward appends N slots at [L, L + N) to
every row (through a transformers DynamicCache built on these tensors); afterwards `commit`
moves each row's accepted slots down to [lens[b], lens[b] + k_b) and trims the tensors to the
new longest row. Only the accepted path's KV entries are kept: exact, no re-run needed.
"""
from __future__ import annotations

from typing import Sequence

import torch
from transformers.cache_utils import DynamicCache, DynamicLayer


class KVStore:
    def __init__(self, num_layers: int, num_kv_heads: int, head_dim: int, dtype, device) -> None:
        self.num_layers = num_layers
        self.shape = (num_kv_heads, head_dim)
        self.dtype, self.device = dtype, device
        self.k: list[torch.Tensor] = []
        self.v: list[torch.Tensor] = []
        self.lens: list[int] = []

    @classmethod
    def for_model(cls, model) -> "KVStore":
        cfg = model.config.get_text_config(decoder=True) if hasattr(model.config, "get_text_config") else model.config
        heads = cfg.num_attention_heads
        kv = getattr(cfg, "num_key_value_heads", None) or heads
        hd = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
        p = next(model.parameters())
        return cls(cfg.num_hidden_layers, kv, hd, p.dtype, p.device)

    @property
    def batch(self) -> int:
        return len(self.lens)

    @property
    def length(self) -> int:
        return self.k[0].shape[2] if self.k else 0

    def _empty(self, b: int, L: int) -> torch.Tensor:
        return torch.zeros((b, *self.shape[:1], L, self.shape[1]), dtype=self.dtype, device=self.device)

    def add_row(self, cache: DynamicCache | None, length: int) -> None:
        """Append a row from a batch-1 prefill cache holding `length` tokens (None if 0)."""
        new_k, new_v = [], []
        for i in range(self.num_layers):
            if cache is None or length == 0:
                k = v = self._empty(1, 0)
            else:
                layer = cache.layers[i]
                k, v = layer.keys[:, :, :length], layer.values[:, :, :length]
            new_k.append(k)
            new_v.append(v)
        if not self.k:
            self.k = [k.contiguous() for k in new_k]
            self.v = [v.contiguous() for v in new_v]
            self.lens = [length]
            return
        L = max(self.length, length)
        for i in range(self.num_layers):
            self.k[i] = torch.cat([_pad_to(self.k[i], L), _pad_to(new_k[i], L)], dim=0)
            self.v[i] = torch.cat([_pad_to(self.v[i], L), _pad_to(new_v[i], L)], dim=0)
        self.lens.append(length)

    def keep_rows(self, rows: Sequence[int]) -> None:
        rows = list(rows)
        if len(rows) == self.batch:
            return
        self.lens = [self.lens[r] for r in rows]
        if not rows:
            self.k, self.v = [], []
            return
        idx = torch.tensor(rows, device=self.device)
        L = max(self.lens)
        for i in range(self.num_layers):
            self.k[i] = self.k[i].index_select(0, idx)[:, :, :L]
            self.v[i] = self.v[i].index_select(0, idx)[:, :, :L]

    def as_cache(self) -> DynamicCache:
        """A DynamicCache over the current tensors (the forward appends to it)."""
        cache = DynamicCache()
        for k, v in zip(self.k, self.v):
            layer = DynamicLayer()
            layer.lazy_initialization(k, v)
            layer.keys, layer.values = k, v
            cache.layers.append(layer)
        return cache

    def commit(self, cache: DynamicCache, old_len: int, keep: Sequence[Sequence[int]]) -> None:
        """After a forward that appended N slots at [old_len, old_len + N): keep, for row b, the
        new slots old_len + keep[b][t] (increasing) at lens[b] + t."""
        b_idx, dst, src = [], [], []
        for b, ks in enumerate(keep):
            for t, s in enumerate(ks):
                b_idx.append(b)
                dst.append(self.lens[b] + t)
                src.append(old_len + int(s))
        new_lens = [self.lens[b] + len(keep[b]) for b in range(self.batch)]
        L = max(new_lens) if new_lens else 0
        bi = torch.tensor(b_idx, dtype=torch.long, device=self.device)
        di = torch.tensor(dst, dtype=torch.long, device=self.device)
        si = torch.tensor(src, dtype=torch.long, device=self.device)
        for i, layer in enumerate(cache.layers):
            for name, store in (("keys", self.k), ("values", self.v)):
                t = getattr(layer, name)
                moved = t[bi, :, si]  # [T, H, D] (a copy)
                t[bi, :, di] = moved
                store[i] = t[:, :, :L]
        self.lens = new_lens


def _pad_to(t: torch.Tensor, L: int) -> torch.Tensor:
    if t.shape[2] == L:
        return t
    pad = torch.zeros((t.shape[0], t.shape[1], L - t.shape[2], t.shape[3]), dtype=t.dtype, device=t.device)
    return torch.cat([t, pad], dim=2)
