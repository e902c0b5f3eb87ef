"""Plain torch reference for applying xgrammar-layout token bitmasks (kernel 1).

Why: it is the CPU implementation behind :func:`factorspec.kernels.apply_bitmask` and the oracle
every other backend (Triton, xgrammar) is checked against.
"""
from __future__ import annotations

import sys
from typing import Optional

import torch

_SHIFTS8 = torch.arange(8, dtype=torch.uint8)


def unpack_bitmask(bitmask: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """[M, W] int32 words -> [M, vocab_size] bool, True = allowed (bit j%32 of word j//32)."""
    if sys.byteorder == "little":
        # One byte per 8 tokens in order: cheaper than shifting int32 words by 0..31.
        by = bitmask.contiguous().view(torch.uint8)
        bits = (by.unsqueeze(-1) >> _SHIFTS8.to(by.device)) & 1
    else:  # pragma: no cover - big-endian hosts
        bits = (bitmask.unsqueeze(-1) >> torch.arange(32, device=bitmask.device, dtype=torch.int32)) & 1
    return bits.reshape(bitmask.shape[0], -1)[:, :vocab_size].bool()


def resolve_vocab_size(logits: torch.Tensor, bitmask: torch.Tensor, vocab_size: Optional[int]) -> int:
    """Default: what both tensors cover (xgrammar's rule); an explicit size may only shrink it."""
    detected = min(logits.shape[-1], bitmask.shape[-1] * 32)
    if vocab_size is None:
        return detected
    if not 0 <= vocab_size <= detected:
        raise ValueError(f"vocab_size {vocab_size} exceeds what logits/bitmask cover ({detected})")
    return int(vocab_size)


def check_bitmask_args(logits: torch.Tensor, bitmask: torch.Tensor, row_map: Optional[torch.Tensor]) -> None:
    if logits.dim() != 2:
        raise ValueError(f"logits must be [num_rows, vocab], got shape {tuple(logits.shape)}")
    if bitmask.dim() != 2 or bitmask.dtype != torch.int32:
        raise ValueError(f"bitmask must be int32 [num_masks, words], got {bitmask.dtype} {tuple(bitmask.shape)}")
    if logits.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        raise ValueError(f"unsupported logits dtype {logits.dtype}")
    if row_map is None:
        if bitmask.shape[0] > logits.shape[0]:
            raise ValueError("more bitmask rows than logits rows and no row_map")
    elif row_map.dim() != 1 or row_map.shape[0] != bitmask.shape[0]:
        raise ValueError("row_map must be 1-D with one entry per bitmask row")


def apply_bitmask_torch(
    logits: torch.Tensor,
    bitmask: torch.Tensor,
    row_map: Optional[torch.Tensor] = None,
    vocab_size: Optional[int] = None,
    return_argmax: bool = False,
) -> Optional[torch.Tensor]:
    """In place: ``logits[row_map[m], j] = -inf`` where bit j of ``bitmask[m]`` is 0, j < vocab_size.

    Returns the int64 argmax of every logits row (after masking) when ``return_argmax``.
    """
    check_bitmask_args(logits, bitmask, row_map)
    vocab = resolve_vocab_size(logits, bitmask, vocab_size)
    num_masks = bitmask.shape[0]
    if num_masks and vocab:
        disallowed = ~unpack_bitmask(bitmask, vocab).to(logits.device)
        if row_map is None and num_masks == logits.shape[0]:
            logits[:, :vocab].masked_fill_(disallowed, float("-inf"))
        else:
            rows = (
                torch.arange(num_masks, device=logits.device)
                if row_map is None
                else row_map.to(device=logits.device, dtype=torch.int64)
            )
            keep = rows >= 0
            rows, disallowed = rows[keep], disallowed[keep]
            if rows.numel():
                sub = logits[rows, :vocab]
                sub.masked_fill_(disallowed, float("-inf"))
                logits[rows, :vocab] = sub
    if return_argmax:
        if logits.shape[1] == 0:
            return torch.zeros(logits.shape[0], dtype=torch.int64, device=logits.device)
        return logits.argmax(dim=-1)
    return None
