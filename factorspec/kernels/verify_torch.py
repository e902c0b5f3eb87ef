"""Plain torch reference for kernel 4: greedy tree verification.

Why: given the target model's argmax at every verify node, accept the longest path from the root
whose draft tokens each equal the argmax at their parent, choosing among siblings the lowest index
(SGLang's ``verify_tree_greedy`` walks first-child/next-sibling lists in that order), and emit the
bonus token (argmax at the last accepted node). Vectorised across requests; at most ``max_nodes``
steps.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

import torch


class GreedyVerifyResult(NamedTuple):
    """bs requests, N = max_nodes.

    accept_index:  [bs, N] int64 global node indices of the accepted path, root first, -1 padded
                   (SGLang's accept_index; rows of the verify logits to keep).
    accept_length: [bs] int64 accepted draft tokens (root excluded).
    bonus_token:   [bs] int64 target argmax at the last accepted node (-1 for a 0-node request).
    output_tokens: [bs, N] int64 tokens to commit: the accepted drafts then the bonus token
                   (``output_tokens[b, :accept_length[b] + 1]``), -1 padded.
    """

    accept_index: torch.Tensor
    accept_length: torch.Tensor
    bonus_token: torch.Tensor
    output_tokens: torch.Tensor


def verify_tree_greedy_torch(
    tokens: torch.Tensor,
    target_predict: torch.Tensor,
    parents: torch.Tensor,
    cu_nodes: torch.Tensor,
    max_nodes: Optional[int] = None,
) -> GreedyVerifyResult:
    dev = tokens.device
    i64 = dict(dtype=torch.int64, device=dev)
    cu = cu_nodes.to(**i64)
    bs = cu.numel() - 1
    n = cu[1:] - cu[:-1]
    total = tokens.numel()
    if max_nodes is None:
        max_nodes = int(n.max()) if bs else 0
    tok = tokens.to(**i64)
    tp = target_predict.to(**i64)
    idx = torch.arange(total, **i64)
    req = torch.repeat_interleave(torch.arange(bs, **i64), n, output_size=total)
    par = parents.to(**i64)
    gpar = torch.where(par >= 0, par + cu[:-1][req], torch.full_like(par, -1))

    accept_index = torch.full((bs, max_nodes), -1, **i64)
    active = n > 0
    cur = torch.where(active, cu[:-1], torch.full_like(n, -1))
    if max_nodes:
        accept_index[:, 0] = cur
    length = torch.zeros(bs, **i64)
    for step in range(1, max_nodes):
        if not bool(active.any()):
            break
        want = tp[cur.clamp(min=0)]
        match = (gpar >= 0) & (gpar == cur[req]) & (tok == want[req]) & active[req]
        best = torch.full((bs,), total, **i64)
        best.scatter_reduce_(0, req[match], idx[match], reduce="amin")
        found = best < total
        accept_index[:, step] = torch.where(found, best, torch.full_like(best, -1))
        cur = torch.where(found, best, cur)
        length += found
        active &= found
    bonus = torch.where(n > 0, tp[cur.clamp(min=0)] if total else cur, torch.full_like(n, -1))
    out = torch.where(accept_index >= 0, tp[accept_index.clamp(min=0)] if total else accept_index, torch.full_like(accept_index, -1))
    return GreedyVerifyResult(accept_index, length, bonus, out)
