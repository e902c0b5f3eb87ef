"""Dispatcher for kernel 3 (forced-token draft assembly): Triton on CUDA, torch elsewhere."""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

import torch

from ._backend import Backend, use_triton
from .assemble_torch import DraftBatch, assemble_drafts_torch


def _ragged(parts: Sequence[Sequence[int]], device) -> Tuple[torch.Tensor, torch.Tensor]:
    sizes = torch.tensor([len(p) for p in parts], dtype=torch.int64)
    cu = torch.zeros(len(parts) + 1, dtype=torch.int64)
    torch.cumsum(sizes, 0, out=cu[1:])
    flat = torch.tensor([x for p in parts for x in p], dtype=torch.int64)
    return flat.to(device), cu.to(device)


def assemble_drafts(
    root_tokens: torch.Tensor,
    run_tokens: torch.Tensor,
    cu_run: torch.Tensor,
    tree_tokens: Optional[torch.Tensor] = None,
    tree_parents: Optional[torch.Tensor] = None,
    cu_tree: Optional[torch.Tensor] = None,
    *,
    backend: Backend = "auto",
) -> DraftBatch:
    """Flatten ragged per-request drafts (certain run, then optional tree) into the verify layout.

    Args:
        root_tokens: ``[bs]`` each request's last verified token (verify node 0).
        run_tokens, cu_run: flat ``[R]`` certain-run tokens and ``[bs + 1]`` offsets (a chain hung
            below the root).
        tree_tokens, tree_parents, cu_tree: flat ``[Tt]`` tree tokens, their parents *within the
            request's tree* (-1 = hangs below the last run token, or the root when the run is
            empty; else an earlier tree index) and ``[bs + 1]`` offsets. Omit for chains only.

    Returns :class:`DraftBatch`; its ``parents``/``cu_nodes`` feed
    :func:`build_tree_verify_inputs` and :func:`verify_tree_greedy`.
    """
    dev = root_tokens.device
    if tree_tokens is None:
        bs = root_tokens.numel()
        tree_tokens = torch.empty(0, dtype=torch.int64, device=dev)
        tree_parents = torch.empty(0, dtype=torch.int64, device=dev)
        cu_tree = torch.zeros(bs + 1, dtype=torch.int64, device=dev)
    assert tree_parents is not None and cu_tree is not None
    if use_triton(root_tokens, backend):
        from .assemble_triton import assemble_drafts_triton

        return assemble_drafts_triton(root_tokens, run_tokens, cu_run, tree_tokens, tree_parents, cu_tree)
    return assemble_drafts_torch(root_tokens, run_tokens, cu_run, tree_tokens, tree_parents, cu_tree)


def assemble_drafts_from_lists(
    root_tokens: Sequence[int],
    runs: Sequence[Sequence[int]],
    trees: Optional[Sequence[Tuple[Sequence[int], Sequence[int]]]] = None,
    *,
    device: str | torch.device = "cpu",
    backend: Backend = "auto",
) -> DraftBatch:
    """Convenience front for Python lists: ``runs[b]`` tokens, ``trees[b] = (tokens, parents)``."""
    roots = torch.tensor(list(root_tokens), dtype=torch.int64, device=device)
    run_flat, cu_run = _ragged(runs, device)
    if trees is None:
        return assemble_drafts(roots, run_flat, cu_run, backend=backend)
    tt, cu_tree = _ragged([tr[0] for tr in trees], device)
    tp, _ = _ragged([tr[1] for tr in trees], device)
    return assemble_drafts(roots, run_flat, cu_run, tt, tp, cu_tree, backend=backend)
