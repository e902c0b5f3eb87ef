"""The engine's verify-step ops through factorspec.kernels (kernels 2-4) equal the host
references, at awkward sizes: batch 1 and odd batches, empty drafts, chains, wide and deep trees."""
from __future__ import annotations

import random

import pytest
import torch

from factorspec.engine import ops


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
    ref = ops.build_tree_verify_inputs(roots, drafts, prefix, L)
    got = ops.build_tree_verify_inputs_kernels(roots, drafts, prefix, L)
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
    assert ops.verify_batch_kernels(pred_t, got, drafts) == ops.verify_batch_reference(pred_t, ref, drafts)


def test_engine_uses_the_kernel_ops_by_default():
    assert ops.KERNELS.build_tree_verify_inputs is ops.build_tree_verify_inputs_kernels
    assert ops.KERNELS.verify_batch is ops.verify_batch_kernels
    assert ops.KERNELS.masked_argmax is ops.masked_argmax_kernels
