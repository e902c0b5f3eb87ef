"""Triton implementation of kernel 3 (draft assembly): one program per request, one launch.

Why: every offset is a sum of the two input offset arrays plus the request index, so each program
can write its slice of every output without a host-side cumsum.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._backend import interpreter_enabled, next_pow2
from .assemble_torch import DraftBatch


@triton.jit
def assemble_drafts_kernel(
    root_ptr,
    run_ptr,
    cu_run_ptr,
    tree_tok_ptr,
    tree_par_ptr,
    cu_tree_ptr,
    tokens_ptr,
    parents_ptr,
    cu_nodes_ptr,
    ndraft_ptr,
    cu_ndraft_ptr,
    draft_ids_ptr,
    target_idx_ptr,
    bonus_idx_ptr,
    BLOCK: tl.constexpr,
):
    b = tl.program_id(0)
    r0 = tl.load(cu_run_ptr + b).to(tl.int64)
    m = tl.load(cu_run_ptr + b + 1).to(tl.int64) - r0
    t0 = tl.load(cu_tree_ptr + b).to(tl.int64)
    t = tl.load(cu_tree_ptr + b + 1).to(tl.int64) - t0
    d0 = r0 + t0  # first draft slot of this request
    node0 = d0 + b  # root node of this request
    width = m + t

    tl.store(tokens_ptr + node0, tl.load(root_ptr + b).to(tl.int64))
    tl.store(parents_ptr + node0, tl.full([], -1, tl.int64))
    tl.store(ndraft_ptr + b, width)
    tl.store(cu_ndraft_ptr + b, d0 + width)
    tl.store(cu_nodes_ptr + b + 1, node0 + 1 + width)
    tl.store(cu_nodes_ptr + b, node0)  # also writes the leading 0 (program 0)
    tl.store(bonus_idx_ptr + b, node0 + width)

    for k0 in range(0, m, BLOCK):
        k = k0 + tl.arange(0, BLOCK).to(tl.int64)
        ok = k < m
        tok = tl.load(run_ptr + r0 + k, mask=ok, other=0).to(tl.int64)
        tl.store(tokens_ptr + node0 + 1 + k, tok, mask=ok)
        tl.store(parents_ptr + node0 + 1 + k, k, mask=ok)
        tl.store(draft_ids_ptr + d0 + k, tok, mask=ok)
        tl.store(target_idx_ptr + d0 + k, node0 + k, mask=ok)
    for k0 in range(0, t, BLOCK):
        k = k0 + tl.arange(0, BLOCK).to(tl.int64)
        ok = k < t
        tok = tl.load(tree_tok_ptr + t0 + k, mask=ok, other=0).to(tl.int64)
        tp = tl.load(tree_par_ptr + t0 + k, mask=ok, other=0).to(tl.int64)
        par = tl.where(tp < 0, m, m + 1 + tp)
        tl.store(tokens_ptr + node0 + 1 + m + k, tok, mask=ok)
        tl.store(parents_ptr + node0 + 1 + m + k, par, mask=ok)
        tl.store(draft_ids_ptr + d0 + m + k, tok, mask=ok)
        tl.store(target_idx_ptr + d0 + m + k, node0 + par, mask=ok)


def assemble_drafts_triton(
    root_tokens: torch.Tensor,
    run_tokens: torch.Tensor,
    cu_run: torch.Tensor,
    tree_tokens: torch.Tensor,
    tree_parents: torch.Tensor,
    cu_tree: torch.Tensor,
) -> DraftBatch:
    """Same contract as :func:`assemble_drafts_torch`; sizes come from tensor shapes (no sync)."""
    dev = root_tokens.device
    bs = root_tokens.numel()
    R, Tt = run_tokens.numel(), tree_tokens.numel()
    total = bs + R + Tt
    i64 = dict(dtype=torch.int64, device=dev)
    tokens = torch.empty(total, **i64)
    parents = torch.empty(total, **i64)
    cu_nodes = torch.zeros(bs + 1, **i64)
    small = torch.empty(3, bs, **i64)  # num_draft, cu_num_draft, bonus idx
    draft = torch.empty(2, R + Tt, **i64)  # draft ids, target idx
    if bs:
        on_gpu = dev.type == "cuda" and not interpreter_enabled()
        # Interpreter: one block per request (long runs would loop); GPU: modest blocks.
        block = 64 if on_gpu else min(max(next_pow2(max(R, Tt)), 16), 4096)
        assemble_drafts_kernel[(bs,)](
            root_tokens.contiguous(), run_tokens.contiguous(), cu_run.to(dev).contiguous(),
            tree_tokens.contiguous(), tree_parents.contiguous(), cu_tree.to(dev).contiguous(),
            tokens, parents, cu_nodes, small[0], small[1], draft[0], draft[1], small[2],
            BLOCK=block, num_warps=2 if on_gpu else 1,
        )
    return DraftBatch(tokens, parents, cu_nodes, small[0], small[1], draft[0], draft[1], small[2])
