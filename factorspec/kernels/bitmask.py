"""Dispatcher for kernel 1 (bitmask over verify positions): Triton on CUDA, torch elsewhere."""
from __future__ import annotations

from typing import Optional, Sequence, Union

import torch

from ._backend import Backend, use_triton
from .bitmask_torch import apply_bitmask_torch


def apply_bitmask(
    logits: torch.Tensor,
    bitmask: torch.Tensor,
    row_map: Optional[Union[torch.Tensor, Sequence[int]]] = None,
    *,
    vocab_size: Optional[int] = None,
    return_argmax: bool = False,
    backend: Backend = "auto",
) -> Optional[torch.Tensor]:
    """Mask the logits of every verify position of a batch in one launch (in place).

    Args:
        logits: ``[num_rows, C]`` fp32/fp16/bf16; rows may be strided (``stride(0) != C``).
        bitmask: ``[num_masks, W]`` int32 in xgrammar's layout: token j is bit ``j % 32`` of word
            ``j // 32`` (LSB first), 1 = allowed. ``W * 32`` may exceed the vocabulary.
        row_map: ``[num_masks]`` logits row for each bitmask row (unique; negative = skip). Default:
            bitmask row m applies to logits row m. Logits rows with no mask are left untouched.
        vocab_size: columns to mask; default ``min(C, W * 32)``; columns past it stay untouched.
        return_argmax: also return the int64 ``[num_rows]`` argmax of every row after masking
            (ties -> lowest index; rows holding NaN are unspecified), fused into the same pass:
            what greedy verification needs.
    """
    if row_map is not None and not isinstance(row_map, torch.Tensor):
        row_map = torch.tensor(list(row_map), dtype=torch.int32, device=logits.device)
    if use_triton(logits, backend):
        from .bitmask_triton import apply_bitmask_triton

        return apply_bitmask_triton(logits, bitmask, row_map, vocab_size, return_argmax)
    return apply_bitmask_torch(logits, bitmask, row_map, vocab_size, return_argmax)
