"""Dispatcher for kernel 2 (tree verify inputs): Triton on CUDA, torch elsewhere."""
from __future__ import annotations

from typing import Optional, Sequence, Tuple, Union

import torch

from ._backend import Backend, use_triton
from .tree_mask_torch import TreeVerifyInputs, build_tree_verify_inputs_torch, tree_sizes  # noqa: F401

ParentsLike = Union[torch.Tensor, Sequence[int]]


def flatten_parents(
    parents_list: Sequence[ParentsLike], device: Union[str, torch.device, None] = None
) -> Tuple[torch.Tensor, torch.Tensor]:
    """Per-request parent arrays -> (flat parents [T] int64, cu_nodes [bs + 1] int64).

    Each request's array covers its nodes including the root (local 0, parent -1); an empty
    array is a request with no node at all.
    """
    parts = [torch.as_tensor(p, dtype=torch.int64).reshape(-1).cpu() for p in parents_list]
    sizes = torch.tensor([p.numel() for p in parts], dtype=torch.int64)
    cu = torch.zeros(len(parts) + 1, dtype=torch.int64)
    torch.cumsum(sizes, 0, out=cu[1:])
    flat = torch.cat(parts) if parts else torch.empty(0, dtype=torch.int64)
    return flat.to(device), cu.to(device)


def check_trees(parents: torch.Tensor, cu_nodes: torch.Tensor) -> None:
    """Raise if some request's parents are not a rooted tree in topological order (debug aid)."""
    cu = cu_nodes.cpu().tolist()
    par = parents.cpu().tolist()
    for b in range(len(cu) - 1):
        for j, p in enumerate(par[cu[b] : cu[b + 1]]):
            if (j == 0 and p != -1) or (j > 0 and not 0 <= p < j):
                raise ValueError(f"request {b}: node {j} has parent {p}; need -1 for node 0, else 0 <= parent < node")


def build_tree_verify_inputs(
    parents: Union[torch.Tensor, Sequence[ParentsLike]],
    cu_nodes: Optional[torch.Tensor],
    prefix_lens: Union[torch.Tensor, Sequence[int]],
    *,
    max_nodes: Optional[int] = None,
    build_full_mask: bool = True,
    sizes: Optional[Tuple[int, int, int]] = None,
    backend: Backend = "auto",
) -> TreeVerifyInputs:
    """Build positions, attention masks and SGLang retrieval arrays for ragged draft trees.

    Args:
        parents: flat ``[T]`` local parent indices (root -1, else parent < node) with ``cu_nodes``
            ``[bs + 1]``; or a list of per-request parent arrays with ``cu_nodes=None``.
            ``n_b = cu_nodes[b+1] - cu_nodes[b]`` nodes: 1 + the request's draft width (width 0 is a
            root-only request; 0 nodes is allowed too). A plain chain is ``[-1, 0, 1, ...]``.
        prefix_lens: ``[bs]`` tokens already in the KV cache before the root (SGLang's seq_lens).
        max_nodes: width of the ``[bs, max_nodes]`` retrieval arrays (default: widest request).
        build_full_mask: skip the (large) prefix-inclusive mask when the attention backend only
            needs the q-length-only one.
        sizes: ``(max_nodes, full_mask_numel, qlen_mask_numel)`` from :func:`tree_sizes` when the
            host already knows them (e.g. from CPU-side widths): saves the one device sync, so the
            CUDA path is a single launch.

    Returns :class:`TreeVerifyInputs` (see its docstring for shapes).
    """
    if cu_nodes is None:
        dev = prefix_lens.device if isinstance(prefix_lens, torch.Tensor) else None
        parents, cu_nodes = flatten_parents(parents, dev)  # type: ignore[arg-type]
    assert isinstance(parents, torch.Tensor)
    if not isinstance(prefix_lens, torch.Tensor):
        prefix_lens = torch.tensor(list(prefix_lens), dtype=torch.int64, device=parents.device)
    if prefix_lens.numel() != cu_nodes.numel() - 1:
        raise ValueError("prefix_lens needs one entry per request (len(cu_nodes) - 1)")
    if use_triton(parents, backend):
        from .tree_mask_triton import build_tree_verify_inputs_triton

        return build_tree_verify_inputs_triton(parents, cu_nodes, prefix_lens, max_nodes, build_full_mask, sizes)
    return build_tree_verify_inputs_torch(parents, cu_nodes, prefix_lens, max_nodes, build_full_mask, sizes)
