"""The engine's verify-step ops (factorspec.kernels 2-4, called directly by the engine) equal the
host references, at awkward sizes: batch 1 and odd batches, empty drafts, chains, wide and deep
trees."""
from __future__ import annotations

import random

import pytest
import torch

import host_reference as ref_ops
from factorspec.engine import engine as eng


def _random_tree(rng: random.Random, n: int, shape: str) -> tuple[list[int], list[int]]:
    toks = [rng.randrange(0, 151936) for _ in range(n)]
    if shape == "chain":
        pars = list(range(-1, n - 1))
    elif shape == "wide":
        pars = [-1] * n
    else:
        pars = [rng.randrange(-1, k) for k in range(n)]
    return toks, pars


CASES = [(1, (0,)), (1, (1,)), (3, (0, 5, 64)), (5, (17, 0, 1, 33, 2)), (8, (64,) * 8), (7, (3, 0, 0, 9, 1, 40, 0))]


@pytest.mark.parametrize("batch,widths", CASES)
@pytest.mark.parametrize("shape", ["chain", "wide", "random"])
def test_tree_inputs_and_verify_equal_host_reference(batch, widths, shape):
    rng = random.Random(hash((batch, widths, shape)) & 0xFFFF)
    drafts = [_random_tree(rng, w, shape) for w in widths]
    roots = [rng.randrange(0, 151936) for _ in range(batch)]
    prefix = [rng.randrange(0, 40) for _ in range(batch)]
    L = max(prefix) + rng.randrange(0, 3)
    ref = ref_ops.build_tree_verify_inputs(roots, drafts, prefix, L)
    got = eng.tree_batch(roots, drafts, prefix, L)
    for f in ("input_ids", "position_ids", "attn", "depth"):
        assert torch.equal(getattr(ref, f), getattr(got, f)), f
    assert ref.n_nodes == got.n_nodes
    # predictions that follow the draft for a while, then diverge
    pred = []
    for root, (toks, pars) in zip(roots, drafts):
        children = {}
        for k, p in enumerate(pars):
            children.setdefault(p, []).append(k)
        row = [0] * (len(toks) + 1)
        for node in range(-1, len(toks)):
            kids = children.get(node, [])
            row[node + 1] = toks[rng.choice(kids)] if kids and rng.random() < 0.8 else rng.randrange(0, 151936)
        pred += row
    pred_t = torch.tensor(pred)
    assert eng.verify_batch(pred_t, got) == ref_ops.verify_batch_reference(pred_t, ref, drafts)


def test_masked_argmax_equals_host_reference():
    import numpy as np

    g = torch.Generator().manual_seed(5)
    for n, V in ((1, 70), (4, 1000), (9, 4097)):
        logits = torch.randn(n, V, generator=g)
        words = (V + 31) // 32
        bm = torch.randint(-2**31, 2**31 - 1, (n, words), dtype=torch.int64, generator=g).to(torch.int32)
        bm[0] = 0
        bm[0, 0] = 1 << 3
        a = eng.masked_argmax(logits.clone(), bm.clone(), None)
        b = ref_ops.masked_argmax_reference(logits.clone(), bm.clone(), None)
        assert torch.equal(a, b)
        rows = torch.tensor(np.arange(0, n, 2))
        a = eng.masked_argmax(logits.clone(), bm[rows].clone(), rows)
        b = ref_ops.masked_argmax_reference(logits.clone(), bm[rows].clone(), rows)
        assert torch.equal(a, b)
