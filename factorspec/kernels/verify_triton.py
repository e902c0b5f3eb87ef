"""Triton implementation of kernel 4 (greedy tree verification): one program per request.

Why vectorised over nodes: at each depth the program compares all of the request's nodes at once
(children of the current node whose token equals the target's argmax there) and takes the lowest
index, which is the first match in SGLang's first-child/next-sibling order, so no pointer chasing.
"""
from __future__ import annotations

from typing import Optional

import torch
import triton
import triton.language as tl

from ._backend import interpreter_enabled, next_pow2
from .verify_torch import GreedyVerifyResult


@triton.jit
def verify_tree_greedy_kernel(
    tokens_ptr,
    predict_ptr,
    parents_ptr,
    cu_ptr,
    accept_ptr,
    length_ptr,
    bonus_ptr,
    out_ptr,
    max_nodes,
    BLOCK_N: tl.constexpr,
):
    b = tl.program_id(0)
    start = tl.load(cu_ptr + b).to(tl.int64)
    n = (tl.load(cu_ptr + b + 1) - start).to(tl.int32)
    rows = tl.arange(0, BLOCK_N)
    valid = rows < n
    par = tl.load(parents_ptr + start + rows, mask=valid, other=-2).to(tl.int32)
    tok = tl.load(tokens_ptr + start + rows, mask=valid, other=0).to(tl.int64)

    has_root = n > 0
    cur = tl.full([], 0, tl.int32)
    active = has_root
    length = tl.full([], 0, tl.int32)
    path = tl.where(rows == 0, 0, -1)  # local node index per path step
    for step in range(1, n):
        want = tl.load(predict_ptr + start + cur, mask=active, other=-1).to(tl.int64)
        match = (par == cur) & (tok == want) & active
        nxt = tl.min(tl.where(match, rows, BLOCK_N), axis=0)
        found = nxt < BLOCK_N
        path = tl.where((rows == step) & found, nxt, path)
        cur = tl.where(found, nxt, cur)
        length += found.to(tl.int32)
        active = active & found

    on_path = (path >= 0) & has_root & (rows < max_nodes)
    gidx = start + path.to(tl.int64)
    pred = tl.load(predict_ptr + gidx, mask=on_path, other=-1).to(tl.int64)
    obase = b.to(tl.int64) * max_nodes + rows
    tl.store(accept_ptr + obase, tl.where(on_path, gidx, -1), mask=rows < max_nodes)
    tl.store(out_ptr + obase, tl.where(on_path, pred, -1), mask=rows < max_nodes)
    tl.store(length_ptr + b, length.to(tl.int64))
    bonus = tl.load(predict_ptr + start + cur, mask=has_root, other=-1).to(tl.int64)
    tl.store(bonus_ptr + b, bonus)


def verify_tree_greedy_triton(
    tokens: torch.Tensor,
    target_predict: torch.Tensor,
    parents: torch.Tensor,
    cu_nodes: torch.Tensor,
    max_nodes: Optional[int] = None,
) -> GreedyVerifyResult:
    """Same contract as :func:`verify_tree_greedy_torch`; pass ``max_nodes`` to avoid a sync."""
    dev = tokens.device
    bs = cu_nodes.numel() - 1
    cu_nodes = cu_nodes.to(dev).contiguous()
    if max_nodes is None:
        max_nodes = int((cu_nodes[1:] - cu_nodes[:-1]).max()) if bs else 0
    i64 = dict(dtype=torch.int64, device=dev)
    accept = torch.empty(bs, max_nodes, **i64)
    out = torch.empty(bs, max_nodes, **i64)
    small = torch.empty(2, bs, **i64)
    if bs:
        on_gpu = dev.type == "cuda" and not interpreter_enabled()
        verify_tree_greedy_kernel[(bs,)](
            tokens.contiguous(), target_predict.contiguous(), parents.contiguous(), cu_nodes,
            accept, small[0], small[1], out, max_nodes,
            BLOCK_N=max(next_pow2(max_nodes), 16), num_warps=1 if on_gpu else 1,
        )
    return GreedyVerifyResult(accept, small[0], small[1], out)
