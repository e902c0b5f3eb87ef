"""Dispatcher for kernel 4 (greedy tree verification): Triton on CUDA, torch elsewhere."""
from __future__ import annotations

from typing import Optional

import torch

from ._backend import Backend, use_triton
from .verify_torch import GreedyVerifyResult, verify_tree_greedy_torch


def verify_tree_greedy(
    tokens: torch.Tensor,
    target_predict: torch.Tensor,
    parents: torch.Tensor,
    cu_nodes: torch.Tensor,
    *,
    max_nodes: Optional[int] = None,
    backend: Backend = "auto",
) -> GreedyVerifyResult:
    """Accept the longest greedy-consistent path of every request's draft tree.

    Args:
        tokens: ``[T]`` verify tokens (root first per request), e.g. ``DraftBatch.tokens``.
        target_predict: ``[T]`` target argmax at every node (``apply_bitmask(...,
            return_argmax=True)`` over the verify rows).
        parents, cu_nodes: tree layout as in :func:`build_tree_verify_inputs`.
        max_nodes: width of the ``[bs, max_nodes]`` outputs (default: widest request).

    Returns :class:`GreedyVerifyResult` (accepted path, accepted length, bonus token).
    """
    if use_triton(tokens, backend):
        from .verify_triton import verify_tree_greedy_triton

        return verify_tree_greedy_triton(tokens, target_predict, parents, cu_nodes, max_nodes)
    return verify_tree_greedy_torch(tokens, target_predict, parents, cu_nodes, max_nodes)
