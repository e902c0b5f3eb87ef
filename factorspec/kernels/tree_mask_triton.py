"""Triton implementation of kernel 2: one program per request builds positions, the full and
q-length-only tree masks, the bit-packed mask and SGLang's retrieval arrays in one launch.

Why one program per request: a request's tree (at most a few dozen nodes) fits in registers as an
N x N ancestor matrix, and each program finds its output offsets itself (a prefix sum over the
earlier requests), so no host-side cumsum launches are needed.
"""
from __future__ import annotations

from typing import Optional, Tuple

import torch
import triton
import triton.language as tl

from ._backend import interpreter_enabled, next_pow2
from .tree_mask_torch import TreeVerifyInputs, tree_sizes


@triton.jit
def tree_verify_inputs_kernel(
    parents_ptr,
    cu_ptr,
    prefix_ptr,
    pos_ptr,
    cu_full_ptr,
    full_ptr,
    qlen_ptr,
    packed_ptr,
    ridx_ptr,
    rnext_ptr,
    rsib_ptr,
    max_nodes,
    nwords,
    BUILD_FULL: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_P: tl.constexpr,
    BLOCK_B: tl.constexpr,
    NWORDS_MAX: tl.constexpr,
):
    b = tl.program_id(0)
    start = tl.load(cu_ptr + b).to(tl.int64)
    n = (tl.load(cu_ptr + b + 1) - start).to(tl.int32)
    prefix = tl.load(prefix_ptr + b).to(tl.int64)

    # Offsets of this request's blocks in the concatenated masks.
    off_q = tl.full([], 0, tl.int64)
    off_f = tl.full([], 0, tl.int64)
    for s in range(0, b, BLOCK_B):
        bb = s + tl.arange(0, BLOCK_B)
        mk = bb < b
        c0 = tl.load(cu_ptr + bb, mask=mk, other=0).to(tl.int64)
        c1 = tl.load(cu_ptr + bb + 1, mask=mk, other=0).to(tl.int64)
        pp = tl.load(prefix_ptr + bb, mask=mk, other=0).to(tl.int64)
        nn = c1 - c0
        off_q += tl.sum(nn * nn, axis=0)
        off_f += tl.sum(nn * (pp + nn), axis=0)

    # Each program writes its own start and end (the next one's start: same value, no conflict).
    tl.store(cu_full_ptr + b, off_f)
    tl.store(cu_full_ptr + b + 1, off_f + n.to(tl.int64) * (prefix + n.to(tl.int64)))

    rows = tl.arange(0, BLOCK_N)
    cols = tl.arange(0, BLOCK_N)
    rvalid = rows < n
    par = tl.load(parents_ptr + start + rows, mask=rvalid, other=-1).to(tl.int32)

    # Ancestor-or-self matrix: walk every node up to the root in lock step.
    anc = (rows[:, None] == cols[None, :]) & rvalid[:, None]
    depth = tl.zeros([BLOCK_N], dtype=tl.int32)
    cur = par
    for _ in range(n):
        ok = cur >= 0
        anc = anc | (cur[:, None] == cols[None, :])
        depth += ok.to(tl.int32)
        cur = tl.load(parents_ptr + start + cur, mask=ok, other=-1).to(tl.int32)

    tl.store(pos_ptr + start + rows, prefix + depth.to(tl.int64), mask=rvalid)

    in_req = rvalid[:, None] & (cols[None, :] < n)
    n64 = n.to(tl.int64)
    tl.store(qlen_ptr + off_q + rows[:, None] * n64 + cols[None, :], anc, mask=in_req)

    if BUILD_FULL:
        row_len = prefix + n64
        row_base = off_f + rows.to(tl.int64) * row_len
        tl.store(full_ptr + row_base[:, None] + prefix + cols[None, :], anc, mask=in_req)
        ones = tl.full([BLOCK_N, BLOCK_P], 1, tl.int1)
        for p0 in range(0, prefix, BLOCK_P):
            pc = p0 + tl.arange(0, BLOCK_P)
            tl.store(full_ptr + row_base[:, None] + pc[None, :], ones, mask=rvalid[:, None] & (pc < prefix)[None, :])

    # Bits within a word are distinct, so a sum is their OR (the interpreter runs a built-in sum
    # far faster than a custom combine). Two 16-bit halves keep every int32 sum overflow-free.
    bitval = tl.full([BLOCK_N], 1, tl.int32) << (cols % 16)
    for w in tl.static_range(NWORDS_MAX):
        lo = anc & ((cols // 16) == 2 * w)[None, :]
        hi = anc & ((cols // 16) == 2 * w + 1)[None, :]
        word_lo = tl.sum(tl.where(lo, bitval[None, :], 0), axis=1)
        word_hi = tl.sum(tl.where(hi, bitval[None, :], 0), axis=1)
        word = word_lo | (word_hi << 16)
        tl.store(packed_ptr + (start + rows) * nwords + w, word, mask=rvalid & (w < nwords))

    # Retrieval arrays (local indices); children of a node are the nodes whose parent it is.
    big = BLOCK_N
    is_child = par[None, :] == rows[:, None]
    first_child = tl.min(tl.where(is_child, cols[None, :], big), axis=1)
    is_sib = (par[None, :] == par[:, None]) & (cols[None, :] > rows[:, None]) & (par[:, None] >= 0)
    next_sib = tl.min(tl.where(is_sib, cols[None, :], big), axis=1)
    out_mask = rows < max_nodes
    rbase = b.to(tl.int64) * max_nodes + rows
    tl.store(ridx_ptr + rbase, tl.where(rvalid, start + rows, -1), mask=out_mask)
    tl.store(rnext_ptr + rbase, tl.where(rvalid & (first_child < big), first_child, -1).to(tl.int64), mask=out_mask)
    tl.store(rsib_ptr + rbase, tl.where(rvalid & (next_sib < big), next_sib, -1).to(tl.int64), mask=out_mask)


def tree_kernel_warps(block_n: int) -> int:
    """Warps per program: N x N register tiles need more threads once N reaches 64 (also what the
    sm_90 compile test uses)."""
    return 8 if block_n >= 64 else 4


def build_tree_verify_inputs_triton(
    parents: torch.Tensor,
    cu_nodes: torch.Tensor,
    prefix_lens: torch.Tensor,
    max_nodes: Optional[int] = None,
    build_full_mask: bool = True,
    sizes: Optional[Tuple[int, int, int]] = None,
) -> TreeVerifyInputs:
    """Same contract as the torch reference. Output sizes need one small device-to-host copy
    unless ``sizes`` (see :func:`tree_sizes`) is given; then it is a single launch."""
    dev = parents.device
    bs = cu_nodes.numel() - 1
    cu_nodes = cu_nodes.to(device=dev).contiguous()
    prefix_lens = prefix_lens.to(device=dev).contiguous()
    parents = parents.contiguous()
    mx, full_numel, qlen_numel = sizes if sizes is not None else tree_sizes(cu_nodes, prefix_lens)
    if max_nodes is None:
        max_nodes = mx
    elif max_nodes < mx:
        raise ValueError(f"max_nodes={max_nodes} < widest request ({mx} nodes)")
    total = parents.numel()
    nwords = (max_nodes + 31) // 32
    positions = torch.empty(total, dtype=torch.int64, device=dev)
    tree_mask = torch.empty(full_numel if build_full_mask else 0, dtype=torch.bool, device=dev)
    tree_mask_qlen = torch.empty(qlen_numel, dtype=torch.bool, device=dev)
    packed = torch.empty(total, nwords, dtype=torch.int32, device=dev)
    retr = torch.empty(3, bs, max_nodes, dtype=torch.int64, device=dev)
    cu_full = torch.zeros(bs + 1, dtype=torch.int64, device=dev)
    if bs == 0:
        return TreeVerifyInputs(positions, tree_mask, cu_full, tree_mask_qlen, packed, retr[0], retr[1], retr[2])
    block_n = max(next_pow2(max_nodes), 16)
    on_gpu = dev.type == "cuda" and not interpreter_enabled()
    block_p = max(2048 // block_n, 16) if on_gpu else 1024
    tree_verify_inputs_kernel[(bs,)](
        parents, cu_nodes, prefix_lens, positions, cu_full, tree_mask, tree_mask_qlen, packed,
        retr[0], retr[1], retr[2], max_nodes, nwords,
        BUILD_FULL=build_full_mask, BLOCK_N=block_n, BLOCK_P=block_p, BLOCK_B=128,
        NWORDS_MAX=triton.cdiv(block_n, 32),
        num_warps=tree_kernel_warps(block_n) if on_gpu else 1,
    )
    return TreeVerifyInputs(positions, tree_mask, cu_full, tree_mask_qlen, packed, retr[0], retr[1], retr[2])

