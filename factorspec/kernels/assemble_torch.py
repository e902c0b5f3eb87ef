"""Plain torch reference for kernel 3: forced-token draft assembly.

Why: FactorSpec drafts per request are a *certain run* (a chain of forced tokens) optionally
followed by a *tree* of alternatives; an engine's verify step wants one flat token tensor with
offsets. This turns the ragged pieces into that layout, for SGLang (tokens incl. the root, parent
arrays for :func:`build_tree_verify_inputs`) and vLLM (``draft_token_ids``,
``cu_num_draft_tokens``, ``target_logits_indices``, ``bonus_logits_indices``).
"""
from __future__ import annotations

from typing import NamedTuple

import torch


class DraftBatch(NamedTuple):
    """Flat verify layout. bs requests; request b has m_b run tokens and t_b tree tokens;
    n_b = 1 + m_b + t_b nodes (root first); T = sum n_b; D = T - bs draft tokens.

    tokens:                [T] int64, per request: root, run tokens, tree tokens.
    parents:               [T] int64, local parent index (root -1; run token k -> k; tree token
                           with tree-parent p -> m_b if p < 0 else m_b + 1 + p).
    cu_nodes:              [bs + 1] int64, node offsets (exclusive cumsum of n_b).
    num_draft_tokens:      [bs] int64, draft width m_b + t_b.
    cu_num_draft_tokens:   [bs] int64, inclusive cumsum of widths (vLLM's layout).
    draft_token_ids:       [D] int64, the drafts without the roots (vLLM's layout).
    target_logits_indices: [D] int64, verify row (node) whose logits judge each draft: its parent.
    bonus_logits_indices:  [bs] int64, row of each request's last node (the bonus row when a
                           chain is fully accepted).
    """

    tokens: torch.Tensor
    parents: torch.Tensor
    cu_nodes: torch.Tensor
    num_draft_tokens: torch.Tensor
    cu_num_draft_tokens: torch.Tensor
    draft_token_ids: torch.Tensor
    target_logits_indices: torch.Tensor
    bonus_logits_indices: torch.Tensor


def assemble_drafts_torch(
    root_tokens: torch.Tensor,
    run_tokens: torch.Tensor,
    cu_run: torch.Tensor,
    tree_tokens: torch.Tensor,
    tree_parents: torch.Tensor,
    cu_tree: torch.Tensor,
) -> DraftBatch:
    dev = root_tokens.device
    i64 = dict(dtype=torch.int64, device=dev)
    bs = root_tokens.numel()
    cu_run = cu_run.to(**i64)
    cu_tree = cu_tree.to(**i64)
    m = cu_run[1:] - cu_run[:-1]
    t = cu_tree[1:] - cu_tree[:-1]
    num_draft = m + t
    cu_nodes = cu_run + cu_tree + torch.arange(bs + 1, **i64)
    R, Tt = run_tokens.numel(), tree_tokens.numel()
    total = bs + R + Tt
    tokens = torch.empty(total, **i64)
    parents = torch.empty(total, **i64)
    tokens[cu_nodes[:-1]] = root_tokens.to(**i64)
    parents[cu_nodes[:-1]] = -1

    rb = torch.repeat_interleave(torch.arange(bs, **i64), m, output_size=R)
    rk = torch.arange(R, **i64) - cu_run[:-1][rb]
    run_node = cu_nodes[:-1][rb] + 1 + rk
    tokens[run_node] = run_tokens.to(**i64)
    parents[run_node] = rk

    tb = torch.repeat_interleave(torch.arange(bs, **i64), t, output_size=Tt)
    tk = torch.arange(Tt, **i64) - cu_tree[:-1][tb]
    tree_node = cu_nodes[:-1][tb] + 1 + m[tb] + tk
    tp = tree_parents.to(**i64)
    tokens[tree_node] = tree_tokens.to(**i64)
    parents[tree_node] = torch.where(tp < 0, m[tb], m[tb] + 1 + tp)

    is_draft = parents >= 0
    node_req = torch.repeat_interleave(torch.arange(bs, **i64), num_draft + 1, output_size=total)
    draft_token_ids = tokens[is_draft]
    target_logits_indices = (cu_nodes[:-1][node_req] + parents)[is_draft]
    return DraftBatch(
        tokens, parents, cu_nodes, num_draft, torch.cumsum(num_draft, 0),
        draft_token_ids, target_logits_indices, cu_nodes[1:] - 1,
    )
