"""Host reference versions of the engine's verify-step ops (what the engine computed before it
called factorspec.kernels directly): numpy/list code, used only as test oracles for
`factorspec.engine.engine.tree_batch`, `verify_batch` and `masked_argmax`.

Bitmask layout (xgrammar's): token j is bit j % 32 of int32 word j // 32, 1 = allowed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

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
