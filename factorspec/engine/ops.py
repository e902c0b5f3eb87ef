"""Torch reference implementations of the engine's hot spots.

These are the swap points for the Triton kernels in `factorspec.kernels` (apply_bitmask,
build_tree_verify_inputs, verify_tree_greedy, assemble_drafts). Each function here is exact and
device-agnostic; the engine calls them only through `factorspec.engine.ops.KERNELS`, which a
kernels module can override with `use_kernels(...)`.

Bitmask layout (xgrammar's): token j is bit j % 32 of int32 word j // 32, 1 = allowed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import torch

_SHIFTS = torch.arange(32, dtype=torch.int32)


def bitmask_words(vocab_size: int) -> int:
    return (vocab_size + 31) // 32


def bitmask_to_bool(bitmask: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """[n, words] int32 -> [n, vocab_size] bool (True = allowed)."""
    bits = (bitmask.unsqueeze(-1) >> _SHIFTS.to(bitmask.device)) & 1
    return bits.reshape(bitmask.shape[0], -1)[:, :vocab_size].bool()


def apply_bitmask_torch(logits: torch.Tensor, bitmask: torch.Tensor) -> None:
    """In place: logits[i, j] = -inf where bit j of row i is 0 (rows with all bits set are skipped
    cheaply by the caller passing only constrained rows)."""
    allowed = bitmask_to_bool(bitmask, logits.shape[-1])
    logits.masked_fill_(~allowed, float("-inf"))


def apply_bitmask(logits: torch.Tensor, bitmask: torch.Tensor) -> None:
    """In-place masking of float logits [n, V] with an int32 bitmask [n, ceil(V/32)]."""
    if logits.device.type == "cpu" and logits.dtype == torch.float32:
        try:
            import xgrammar as xgr

            xgr.apply_token_bitmask_inplace(logits, bitmask, vocab_size=logits.shape[-1], backend="cpu")
            return
        except Exception:  # pragma: no cover - xgrammar missing or unsupported
            pass
    apply_bitmask_torch(logits, bitmask)


@dataclass
class TreeBatch:
    """Inputs of one verify forward over B requests (each: root + its draft nodes)."""

    input_ids: torch.Tensor  # [B, N] long (padding: 0)
    position_ids: torch.Tensor  # [B, N] long
    attn: torch.Tensor  # [B, 1, N, L + N] bool, True = may attend
    depth: torch.Tensor  # [B, N] long (padding: -1)
    n_nodes: list[int]  # real nodes per row (root included)
    # the flat verify layout (kernels 2-4): per request root then draft nodes, local parents
    flat_tokens: torch.Tensor | None = None  # [T]
    flat_parents: torch.Tensor | None = None  # [T]
    cu_nodes: torch.Tensor | None = None  # [B + 1]


def build_tree_verify_inputs(
    roots: Sequence[int],
    drafts: Sequence[tuple[Sequence[int], Sequence[int]]],
    prefix_lens: Sequence[int],
    cache_len: int,
    device: torch.device | str = "cpu",
) -> TreeBatch:
    """Tree-attention inputs for a batch.

    Row b has node 0 = root (its last committed token, not yet in the KV cache) and nodes 1..n
    = draft tokens `drafts[b][0]` with parents `drafts[b][1]` (-1 = root, otherwise an index into
    the draft, topological). Row b's committed KV occupies cache slots [0, prefix_lens[b]) of a
    cache of length `cache_len`; the new tokens are written at slots [cache_len, cache_len + N).
    Node i attends to its row's prefix and to its ancestors (and itself) among the new slots;
    padding nodes attend to themselves only. Position ids are prefix_len + depth."""
    B = len(roots)
    n_nodes = [1 + len(d[0]) for d in drafts]
    N = max(n_nodes)
    ids = np.zeros((B, N), dtype=np.int64)
    depth = np.full((B, N), -1, dtype=np.int64)
    anc = np.zeros((B, N, N), dtype=bool)
    for b in range(B):
        toks, pars = drafts[b]
        n = n_nodes[b]
        ids[b, 0] = roots[b]
        depth[b, 0] = 0
        anc[b, 0, 0] = True
        for k in range(n - 1):
            i = k + 1
            p = int(pars[k]) + 1  # node index of the parent (root = 0)
            if not 0 <= p < i:
                raise ValueError(f"draft parents must be topological: node {k} has parent {pars[k]}")
            ids[b, i] = int(toks[k])
            depth[b, i] = depth[b, p] + 1
            anc[b, i] = anc[b, p]
            anc[b, i, i] = True
        for i in range(n, N):
            anc[b, i, i] = True
    prefix = torch.arange(cache_len).unsqueeze(0) < torch.tensor(prefix_lens).unsqueeze(1)  # [B, L]
    attn = torch.cat(
        [prefix.unsqueeze(1).expand(B, N, cache_len), torch.from_numpy(anc)], dim=2
    ).unsqueeze(1)
    pad = torch.from_numpy(depth < 0)
    attn[:, 0, :, :cache_len] &= ~pad.unsqueeze(-1)
    depth_t = torch.from_numpy(depth)
    pos = torch.tensor(prefix_lens).unsqueeze(1) + depth_t.clamp(min=0)
    return TreeBatch(
        input_ids=torch.from_numpy(ids).to(device),
        position_ids=pos.to(device),
        attn=attn.to(device),
        depth=depth_t.to(device),
        n_nodes=n_nodes,
    )


def verify_tree_greedy(
    pred: Sequence[int], tokens: Sequence[int], parents: Sequence[int]
) -> tuple[list[int], int]:
    """Greedy tree verification of one request.

    `pred[0]` is the (masked) argmax at the root, `pred[k + 1]` the argmax at draft node k.
    Returns (accepted draft node indices along the path, bonus token): the longest path from the
    root where each node's token equals its parent's prediction, and the prediction at its end."""
    children: dict[int, list[int]] = {}
    for k, p in enumerate(parents):
        children.setdefault(int(p), []).append(k)
    path: list[int] = []
    cur = -1
    while True:
        want = int(pred[cur + 1])
        nxt = None
        for c in children.get(cur, ()):
            if int(tokens[c]) == want:
                nxt = c
                break
        if nxt is None:
            return path, want
        path.append(nxt)
        cur = nxt


def build_tree_verify_inputs_kernels(
    roots: Sequence[int],
    drafts: Sequence[tuple[Sequence[int], Sequence[int]]],
    prefix_lens: Sequence[int],
    cache_len: int,
    device: torch.device | str = "cpu",
) -> TreeBatch:
    """`build_tree_verify_inputs` through factorspec.kernels: kernel 3 flattens the ragged drafts
    (verify tokens, local parents, offsets), kernel 2 gives positions and the q-length-only tree
    mask (one launch each on CUDA); the rows are then laid out in the engine's padded [B, N] form
    (transformers takes a dense 4D mask). The flat layout is kept for kernel 4."""
    from factorspec.kernels import assemble_drafts_from_lists, build_tree_verify_inputs as k_tree

    B = len(roots)
    n_nodes = [1 + len(d[0]) for d in drafts]
    N = max(n_nodes)
    db = assemble_drafts_from_lists(roots, [[] for _ in range(B)], [(list(d[0]), list(d[1])) for d in drafts],
                                    device=device)
    prefix_t = torch.tensor(list(prefix_lens), dtype=torch.int64, device=device)
    sq = sum(n * n for n in n_nodes)
    tv = k_tree(db.parents, db.cu_nodes, prefix_t, build_full_mask=False, sizes=(N, 0, sq))
    # padded [B, N] views of the flat layout
    node_b = torch.repeat_interleave(torch.arange(B, device=device), torch.tensor(n_nodes, device=device))
    node_j = torch.arange(int(sum(n_nodes)), device=device) - db.cu_nodes[:-1].repeat_interleave(
        torch.tensor(n_nodes, device=device))
    ids = torch.zeros(B, N, dtype=torch.long, device=device)
    ids[node_b, node_j] = db.tokens
    pos = prefix_t.unsqueeze(1).expand(B, N).clone()
    pos[node_b, node_j] = tv.positions
    depth = torch.full((B, N), -1, dtype=torch.long, device=device)
    depth[node_b, node_j] = tv.positions - prefix_t[node_b]
    anc = torch.eye(N, dtype=torch.bool, device=device).repeat(B, 1, 1)  # padding: itself only
    off = 0
    for b, n in enumerate(n_nodes):
        anc[b, :n, :n] = tv.tree_mask_qlen[off : off + n * n].view(n, n)
        off += n * n
    prefix = torch.arange(cache_len, device=device).unsqueeze(0) < prefix_t.unsqueeze(1)  # [B, L]
    real = depth >= 0
    attn = torch.cat([(prefix.unsqueeze(1) & real.unsqueeze(-1)), anc], dim=2).unsqueeze(1)
    return TreeBatch(input_ids=ids, position_ids=pos, attn=attn, depth=depth, n_nodes=n_nodes,
                     flat_tokens=db.tokens, flat_parents=db.parents, cu_nodes=db.cu_nodes)


def verify_batch_reference(pred: torch.Tensor, tb: TreeBatch,
                           drafts: Sequence[tuple[Sequence[int], Sequence[int]]]) -> list[tuple[list[int], int]]:
    """Greedy verification of every request: (accepted draft node indices, bonus token) each;
    `pred` is the masked argmax of every verify row in the flat order (request by request)."""
    flat = pred.tolist()
    out, o = [], 0
    for (toks, pars), n in zip(drafts, tb.n_nodes):
        out.append(verify_tree_greedy(flat[o : o + n], toks, pars))
        o += n
    return out


def verify_batch_kernels(pred: torch.Tensor, tb: TreeBatch,
                         drafts: Sequence[tuple[Sequence[int], Sequence[int]]]) -> list[tuple[list[int], int]]:
    """The same through kernel 4 (one launch for the batch on CUDA)."""
    from factorspec.kernels import verify_tree_greedy as k_verify

    if tb.flat_tokens is None or tb.flat_parents is None or tb.cu_nodes is None:
        return verify_batch_reference(pred, tb, drafts)
    r = k_verify(tb.flat_tokens, pred.to(device=tb.flat_tokens.device, dtype=tb.flat_tokens.dtype), tb.flat_parents, tb.cu_nodes,
                 max_nodes=max(tb.n_nodes))
    acc_idx, acc_len, bonus = r.accept_index.tolist(), r.accept_length.tolist(), r.bonus_token.tolist()
    cu = tb.cu_nodes.tolist()
    out = []
    for b in range(len(tb.n_nodes)):
        path = [acc_idx[b][i] - cu[b] - 1 for i in range(1, acc_len[b] + 1)]
        out.append((path, int(bonus[b])))
    return out


def masked_argmax_reference(
    logits: torch.Tensor, bitmask: torch.Tensor, row_map: torch.Tensor | None
) -> torch.Tensor:
    """Mask rows `row_map` (all rows if None) of `logits` in place with `bitmask`; return the
    argmax of every row (ties -> lowest index)."""
    if bitmask.shape[0]:
        if row_map is None:
            apply_bitmask(logits, bitmask)
        else:
            sub = logits.index_select(0, row_map)
            apply_bitmask(sub, bitmask)
            logits.index_copy_(0, row_map, sub)
    return logits.argmax(dim=-1)


def masked_argmax_kernels(
    logits: torch.Tensor, bitmask: torch.Tensor, row_map: torch.Tensor | None
) -> torch.Tensor:
    """Same through factorspec.kernels.apply_bitmask (fused mask + argmax; Triton on CUDA)."""
    from factorspec.kernels import apply_bitmask as k_apply

    if not bitmask.shape[0]:
        return logits.argmax(dim=-1)
    return k_apply(logits, bitmask, row_map, return_argmax=True)


def _kernels_or(kernel: Callable, reference: Callable) -> Callable:
    try:
        import factorspec.kernels  # noqa: F401

        return kernel
    except Exception:  # pragma: no cover - kernels package absent or broken
        return reference


class _Kernels:
    """The functions the engine calls: factorspec.kernels (Triton on CUDA, their torch references
    on CPU) when importable, else the host references above; `use_kernels` may replace any."""

    apply_bitmask: Callable = staticmethod(apply_bitmask)
    masked_argmax: Callable = staticmethod(_kernels_or(masked_argmax_kernels, masked_argmax_reference))
    build_tree_verify_inputs: Callable = staticmethod(
        _kernels_or(build_tree_verify_inputs_kernels, build_tree_verify_inputs))
    verify_batch: Callable = staticmethod(_kernels_or(verify_batch_kernels, verify_batch_reference))


KERNELS = _Kernels()


def use_kernels(**fns: Callable) -> None:
    """Swap in alternative implementations, e.g. use_kernels(apply_bitmask=triton_fn)."""
    for name, fn in fns.items():
        if not hasattr(_Kernels, name):
            raise AttributeError(f"unknown kernel {name!r}")
        setattr(KERNELS, name, fn)
