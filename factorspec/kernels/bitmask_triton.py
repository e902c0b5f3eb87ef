"""Triton implementation of kernel 1: bitmask over every verify position, optionally fused argmax.

Why a separate file: ``@triton.jit`` reads ``TRITON_INTERPRET`` when it runs, so this module is
imported lazily by the dispatcher (tests set the variable first).
"""
from __future__ import annotations

from typing import Optional

import torch
import triton
import triton.language as tl

from ._backend import interpreter_enabled, next_pow2
from .bitmask_torch import check_bitmask_args, resolve_vocab_size


@triton.jit
def bitmask_apply_kernel(
    logits_ptr,
    bitmask_ptr,
    row_map_ptr,
    vocab_size,
    logits_stride,
    bitmask_stride,
    HAS_MAP: tl.constexpr,
    BLOCK: tl.constexpr,
):
    """Grid (num_masks, cdiv(vocab, BLOCK)). Write-only: stores -inf where the bit is 0."""
    m = tl.program_id(0)
    blk = tl.program_id(1)
    if HAS_MAP:
        row = tl.load(row_map_ptr + m).to(tl.int64)
    else:
        row = m.to(tl.int64)
    start = blk * BLOCK
    offs = start + tl.arange(0, BLOCK)
    words = start // 32 + tl.arange(0, BLOCK // 32)
    packed = tl.load(
        bitmask_ptr + m.to(tl.int64) * bitmask_stride + words,
        mask=(words * 32 < vocab_size) & (row >= 0),
        other=-1,
    )
    bits = (packed[:, None] >> tl.arange(0, 32)[None, :]) & 1
    blocked = tl.reshape(bits == 0, (BLOCK,))
    tl.store(
        logits_ptr + row * logits_stride + offs,
        float("-inf"),
        mask=blocked & (offs < vocab_size) & (row >= 0),
    )


@triton.jit
def bitmask_argmax_kernel(
    logits_ptr,
    bitmask_ptr,
    inv_map_ptr,
    out_ptr,
    vocab_size,
    num_cols,
    logits_stride,
    bitmask_stride,
    HAS_MAP: tl.constexpr,
    BLOCK: tl.constexpr,
):
    """Grid (num_rows,). Masks row r with bitmask row inv_map[r] (-1: none) and stores its argmax."""
    r = tl.program_id(0).to(tl.int64)
    if HAS_MAP:
        m = tl.load(inv_map_ptr + r).to(tl.int64)
    else:
        m = r
    best_val = tl.full([], float("-inf"), tl.float32)
    best_idx = tl.full([], 0, tl.int32)
    for start in range(0, num_cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        in_row = offs < num_cols
        x = tl.load(logits_ptr + r * logits_stride + offs, mask=in_row, other=float("-inf"))
        words = start // 32 + tl.arange(0, BLOCK // 32)
        packed = tl.load(
            bitmask_ptr + m * bitmask_stride + words,
            mask=(words * 32 < vocab_size) & (m >= 0),
            other=-1,
        )
        bits = (packed[:, None] >> tl.arange(0, 32)[None, :]) & 1
        blocked = tl.reshape(bits == 0, (BLOCK,)) & (offs < vocab_size)
        tl.store(logits_ptr + r * logits_stride + offs, float("-inf"), mask=blocked & in_row)
        xf = tl.where(blocked, float("-inf"), x.to(tl.float32))
        blk_val, blk_idx = tl.max(xf, axis=0, return_indices=True, return_indices_tie_break_left=True)
        better = blk_val > best_val
        best_idx = tl.where(better, start + blk_idx, best_idx)
        best_val = tl.where(better, blk_val, best_val)
    tl.store(out_ptr + r, best_idx.to(tl.int64))


def _block(vocab: int, on_gpu: bool) -> int:
    # GPU: 4096-wide blocks keep many programs in flight. Interpreter: ~1 ms per program, so one
    # block per row (capped to bound host memory).
    if on_gpu and not interpreter_enabled():
        return 4096
    return min(max(next_pow2(vocab), 32), 1 << 18)


def apply_bitmask_triton(
    logits: torch.Tensor,
    bitmask: torch.Tensor,
    row_map: Optional[torch.Tensor] = None,
    vocab_size: Optional[int] = None,
    return_argmax: bool = False,
) -> Optional[torch.Tensor]:
    """Same contract as :func:`apply_bitmask_torch`; one launch."""
    check_bitmask_args(logits, bitmask, row_map)
    if logits.stride(1) != 1:
        raise ValueError("logits rows must be contiguous (stride(1) == 1)")
    if bitmask.stride(1) != 1:
        bitmask = bitmask.contiguous()
    vocab = resolve_vocab_size(logits, bitmask, vocab_size)
    num_rows, num_cols = logits.shape
    num_masks = bitmask.shape[0]
    dev = logits.device
    if row_map is not None:
        row_map = row_map.to(device=dev, dtype=torch.int32)
    if not return_argmax:
        if num_masks == 0 or vocab == 0:
            return None
        block = _block(vocab, logits.is_cuda)
        grid = (num_masks, triton.cdiv(vocab, block))
        bitmask_apply_kernel[grid](
            logits, bitmask, row_map if row_map is not None else bitmask,
            vocab, logits.stride(0), bitmask.stride(0),
            HAS_MAP=row_map is not None, BLOCK=block,
            num_warps=8 if logits.is_cuda else 1,
        )
        return None
    out = torch.empty(num_rows, dtype=torch.int64, device=dev)
    if num_rows == 0:
        return out
    has_map = row_map is not None or num_masks != num_rows
    inv = None
    if has_map:
        # Inverse map (logits row -> bitmask row, -1 for none): a tiny scatter on the device.
        inv = torch.full((num_rows,), -1, dtype=torch.int32, device=dev)
        src = row_map if row_map is not None else torch.arange(num_masks, dtype=torch.int32, device=dev)
        keep = src >= 0
        inv[src[keep].long()] = torch.arange(num_masks, dtype=torch.int32, device=dev)[keep]
    block = _block(max(num_cols, 1), logits.is_cuda)
    if logits.is_cuda and not interpreter_enabled():
        block = 8192
    bitmask_argmax_kernel[(num_rows,)](
        logits, bitmask, inv if inv is not None else bitmask, out,
        vocab, num_cols, logits.stride(0), bitmask.stride(0),
        HAS_MAP=has_map, BLOCK=block,
        num_warps=16 if logits.is_cuda else 1,
    )
    return out
