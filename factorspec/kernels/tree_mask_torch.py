"""Plain torch reference for kernel 2: per-request draft trees -> positions, attention masks and
SGLang's retrieval arrays.

Why: the CPU implementation behind :func:`factorspec.kernels.build_tree_verify_inputs` and the
oracle for the Triton kernel. Vectorised over the whole batch (one pointer-jumping loop of at most
``max_nodes`` steps), so it is usable on CPU serving paths too.

Conventions (shared with SGLang's ``build_tree_kernel_efficient`` and
``reconstruct_indices_from_tree_mask``): request b owns nodes ``cu_nodes[b]:cu_nodes[b+1]``; local
node 0 is the root (the last verified token, not yet in the KV cache), parent -1; every other
node's parent has a smaller local index. The root sits at position ``prefix_lens[b]`` (tokens
already in the KV cache); a node at depth d at ``prefix_lens[b] + d``.
"""
from __future__ import annotations

from typing import NamedTuple, Optional, Tuple

import torch


class TreeVerifyInputs(NamedTuple):
    """Everything an engine's tree-verify forward needs. T = total nodes, bs requests, N = max_nodes.

    positions:            [T] int64, prefix_len + depth.
    tree_mask:            [sum_b n_b * (prefix_b + n_b)] bool, SGLang's FULL_MASK layout: per request
                          row-major n_b x (prefix_b + n_b) (prefix columns all True, then node j
                          True iff j is an ancestor of the row's node or the node itself),
                          concatenated over requests. Empty if ``build_full_mask=False``.
    cu_tree_mask:         [bs + 1] int64 offsets of each request's block in ``tree_mask``.
    tree_mask_qlen:       [sum_b n_b * n_b] bool, the q-length-only (node-by-node) part, concatenated:
                          with equal widths this is NGRAM's ``[bs * N * N]`` tree mask.
    tree_mask_packed:     [T, ceil(N / 32)] int32, the same rows bit-packed (bit j % 32 of word
                          j // 32, LSB first, like xgrammar's bitmasks).
    retrive_index:        [bs, N] int64, global node index (cu_nodes[b] + j), -1 past n_b.
    retrive_next_token:   [bs, N] int64, local index of the first child (smallest index), or -1.
    retrive_next_sibling: [bs, N] int64, local index of the next child of the same parent, or -1.
    """

    positions: torch.Tensor
    tree_mask: torch.Tensor
    cu_tree_mask: torch.Tensor
    tree_mask_qlen: torch.Tensor
    tree_mask_packed: torch.Tensor
    retrive_index: torch.Tensor
    retrive_next_token: torch.Tensor
    retrive_next_sibling: torch.Tensor


def _exclusive_cumsum(x: torch.Tensor) -> torch.Tensor:
    out = torch.zeros(x.numel() + 1, dtype=torch.int64, device=x.device)
    torch.cumsum(x.to(torch.int64), 0, out=out[1:])
    return out


def tree_sizes(cu_nodes: torch.Tensor, prefix_lens: torch.Tensor) -> tuple[int, int, int]:
    """(max_nodes, full-mask numel, q-length mask numel): host-side output sizes (one sync on CUDA)."""
    n = (cu_nodes[1:] - cu_nodes[:-1]).to(torch.int64)
    if n.numel() == 0:
        return 0, 0, 0
    p = prefix_lens.to(device=n.device, dtype=torch.int64)
    mx, full, q = torch.stack([n.max(), (n * (p + n)).sum(), (n * n).sum()]).tolist()
    return int(mx), int(full), int(q)


def build_tree_verify_inputs_torch(
    parents: torch.Tensor,
    cu_nodes: torch.Tensor,
    prefix_lens: torch.Tensor,
    max_nodes: Optional[int] = None,
    build_full_mask: bool = True,
    sizes: Optional[Tuple[int, int, int]] = None,
) -> TreeVerifyInputs:
    """Reference for :func:`factorspec.kernels.build_tree_verify_inputs` (``sizes`` is accepted
    for signature parity and only checked)."""
    if sizes is not None and max_nodes is None:
        max_nodes = sizes[0]
    dev = parents.device
    cu = cu_nodes.to(device=dev, dtype=torch.int64)
    prefix = prefix_lens.to(device=dev, dtype=torch.int64)
    bs = cu.numel() - 1
    n = cu[1:] - cu[:-1]
    total = int(cu[-1]) if bs > 0 else 0
    if max_nodes is None:
        max_nodes = int(n.max()) if bs > 0 else 0
    nwords = (max_nodes + 31) // 32
    idx = torch.arange(total, device=dev)
    req = torch.repeat_interleave(torch.arange(bs, device=dev), n, output_size=total)
    local = idx - cu[:-1][req]
    par = parents.to(device=dev, dtype=torch.int64)[:total]
    gpar = torch.where(par >= 0, par + cu[:-1][req], torch.full_like(par, -1))

    # Ancestor-or-self matrix by walking every node up to the root at once.
    anc = torch.zeros(total, max(max_nodes, 1), dtype=torch.bool, device=dev)
    anc[idx, local] = True
    depth = torch.zeros(total, dtype=torch.int64, device=dev)
    cur = gpar.clone()
    for _ in range(max_nodes):
        ok = cur >= 0
        if not bool(ok.any()):
            break
        anc[idx[ok], local[cur[ok]]] = True
        depth += ok
        cur = torch.where(ok, gpar[cur.clamp(min=0)], cur)
    anc = anc[:, :max_nodes]
    positions = prefix[req] + depth

    col = torch.arange(max_nodes, device=dev)
    in_req = col[None, :] < n[req][:, None]  # [T, N]
    tree_mask_qlen = anc[in_req]  # row-major concatenation of n_b x n_b blocks

    cu_full = _exclusive_cumsum(n * (prefix + n))
    if build_full_mask:
        tree_mask = torch.ones(int(cu_full[-1]), dtype=torch.bool, device=dev)
        row_len = prefix[req] + n[req]
        tree_start = cu_full[:-1][req] + local * row_len + prefix[req]
        tree_mask[(tree_start[:, None] + col[None, :])[in_req]] = anc[in_req]
    else:
        tree_mask = torch.empty(0, dtype=torch.bool, device=dev)

    weights = torch.ones(nwords * 32, dtype=torch.int64, device=dev) << torch.arange(nwords * 32, device=dev).remainder(32)
    padded = torch.zeros(total, nwords * 32, dtype=torch.int64, device=dev)
    padded[:, :max_nodes] = anc.to(torch.int64)
    words = (padded * weights).view(total, nwords, 32).sum(-1)
    tree_mask_packed = (((words + 2**31) % 2**32) - 2**31).to(torch.int32)

    retrive_index = torch.full((bs, max_nodes), -1, dtype=torch.int64, device=dev)
    retrive_next_token = torch.full_like(retrive_index, -1)
    retrive_next_sibling = torch.full_like(retrive_index, -1)
    retrive_index[req, local] = idx
    child = gpar >= 0
    first = torch.full((total,), total, dtype=torch.int64, device=dev)
    first.scatter_reduce_(0, gpar[child], idx[child], reduce="amin")
    retrive_next_token[req, local] = torch.where(first < total, first - cu[:-1][req], torch.full_like(first, -1))
    # Next sibling: children sorted by (parent, index); consecutive entries with the same parent.
    kids = idx[child]
    order = torch.argsort(gpar[child] * (total + 1) + kids)
    kids_sorted, par_sorted = kids[order], gpar[child][order]
    same = par_sorted[:-1] == par_sorted[1:]
    nxt = torch.full((total,), -1, dtype=torch.int64, device=dev)
    nxt[kids_sorted[:-1][same]] = kids_sorted[1:][same] - cu[:-1][req[kids_sorted[1:][same]]]
    retrive_next_sibling[req, local] = nxt

    return TreeVerifyInputs(
        positions, tree_mask, cu_full, tree_mask_qlen, tree_mask_packed,
        retrive_index, retrive_next_token, retrive_next_sibling,
    )
