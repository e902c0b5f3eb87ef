"""Microbenchmarks of the four kernels against their torch references (and, for kernel 1,
xgrammar's kernel) at batch 1, 64, 512 and vocab 151936.

Run: ``pytest microbench/test_kernels_bench.py --benchmark-only``. On CUDA the dispatcher runs
the Triton kernels; on CPU it runs the torch references, so "ours" and "torch" time the same code
there (batch 512 uses fewer rounds on CPU). Every benchmark first asserts that the compared
implementations agree exactly.
"""
from __future__ import annotations

import random

import pytest
import torch

from factorspec.kernels import (
    apply_bitmask,
    assemble_drafts,
    build_tree_verify_inputs,
    flatten_parents,
    tree_sizes,
    verify_tree_greedy,
)

DEV = "cuda" if torch.cuda.is_available() else "cpu"
VOCAB = 151936
BATCHES = [1, 64, 512]
WIDTH = 16  # draft tokens per request (17 verify nodes with the root)


def _rounds(batch: int) -> int:
    if DEV == "cuda":
        return 200
    return {1: 30, 64: 8, 512: 3}[batch]


def _timed(benchmark, fn, batch):
    if DEV == "cuda":
        def run():
            fn()
            torch.cuda.synchronize()
    else:
        run = fn
    benchmark.pedantic(run, rounds=_rounds(batch), iterations=1, warmup_rounds=1)


def _bitmask_inputs(batch):
    gen = torch.Generator().manual_seed(batch)
    logits = torch.randn(batch, VOCAB, generator=gen).to(DEV)
    bitmask = torch.randint(-(2**31), 2**31 - 1, (batch, (VOCAB + 31) // 32), dtype=torch.int32, generator=gen).to(DEV)
    return logits, bitmask


def _xgrammar_apply():
    xgr = pytest.importorskip("xgrammar")
    return lambda logits, bitmask: xgr.apply_token_bitmask_inplace(logits, bitmask)


# ---------------------------------------------------------------- kernel 1: bitmask
@pytest.mark.parametrize("impl", ["ours", "torch", "xgrammar"])
@pytest.mark.parametrize("batch", BATCHES)
def test_bitmask(benchmark, batch, impl):
    benchmark.group = f"k1 bitmask b{batch} V{VOCAB}"
    logits, bitmask = _bitmask_inputs(batch)
    ref = logits.clone()
    apply_bitmask(ref, bitmask, backend="torch")
    fns = {
        "ours": lambda: apply_bitmask(logits, bitmask),
        "torch": lambda: apply_bitmask(logits, bitmask, backend="torch"),
    }
    if impl == "xgrammar":
        xa = _xgrammar_apply()
        fns["xgrammar"] = lambda: xa(logits, bitmask)
    fns[impl]()
    assert torch.equal(logits, ref)
    _timed(benchmark, fns[impl], batch)


@pytest.mark.parametrize("impl", ["ours", "torch"])
@pytest.mark.parametrize("batch", BATCHES)
def test_bitmask_argmax(benchmark, batch, impl):
    benchmark.group = f"k1 bitmask+argmax b{batch} V{VOCAB}"
    logits, bitmask = _bitmask_inputs(batch)
    ref = logits.clone()
    ref_arg = apply_bitmask(ref, bitmask, return_argmax=True, backend="torch")
    backend = "auto" if impl == "ours" else "torch"
    fn = lambda: apply_bitmask(logits, bitmask, return_argmax=True, backend=backend)  # noqa: E731
    assert torch.equal(fn(), ref_arg) and torch.equal(logits, ref)
    _timed(benchmark, fn, batch)


# ---------------------------------------------------------------- kernels 2-4: trees
def _trees(batch):
    rng = random.Random(batch)
    trees = []
    for b in range(batch):
        if b % 3 == 0:
            trees.append([-1] + list(range(WIDTH)))  # certain run
        else:
            trees.append([-1] + [rng.randrange(i) for i in range(1, WIDTH + 1)])
    par, cu = flatten_parents(trees, DEV)
    prefix = torch.tensor([rng.randrange(200, 2000) for _ in range(batch)], device=DEV)
    return par, cu, prefix


def _same(a, b):
    return all(torch.equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("impl", ["ours", "torch"])
@pytest.mark.parametrize("batch", BATCHES)
def test_tree_verify_inputs(benchmark, batch, impl):
    benchmark.group = f"k2 tree inputs b{batch} w{WIDTH}"
    par, cu, prefix = _trees(batch)
    backend = "auto" if impl == "ours" else "torch"
    sizes = tree_sizes(cu, prefix)  # known on the host in a real engine: no sync in the timed call
    fn = lambda: build_tree_verify_inputs(par, cu, prefix, sizes=sizes, backend=backend)  # noqa: E731
    assert _same(fn(), build_tree_verify_inputs(par, cu, prefix, backend="torch"))
    _timed(benchmark, fn, batch)


@pytest.mark.parametrize("impl", ["ours", "torch"])
@pytest.mark.parametrize("batch", BATCHES)
def test_assemble_drafts(benchmark, batch, impl):
    benchmark.group = f"k3 assemble b{batch} w{WIDTH}"
    rng = random.Random(batch)
    run_len = [rng.randrange(WIDTH + 1) for _ in range(batch)]
    tree_len = [WIDTH - m for m in run_len]
    roots = torch.randint(0, VOCAB, (batch,), device=DEV)
    runs = torch.randint(0, VOCAB, (sum(run_len),), device=DEV)
    cu_run = torch.tensor([0] + run_len, device=DEV).cumsum(0)
    tt = torch.randint(0, VOCAB, (sum(tree_len),), device=DEV)
    tp = torch.tensor([rng.randrange(-1, i) for t in tree_len for i in range(t)], dtype=torch.int64, device=DEV)
    cu_tree = torch.tensor([0] + tree_len, device=DEV).cumsum(0)
    backend = "auto" if impl == "ours" else "torch"
    fn = lambda: assemble_drafts(roots, runs, cu_run, tt, tp, cu_tree, backend=backend)  # noqa: E731
    assert _same(fn(), assemble_drafts(roots, runs, cu_run, tt, tp, cu_tree, backend="torch"))
    _timed(benchmark, fn, batch)


@pytest.mark.parametrize("impl", ["ours", "torch"])
@pytest.mark.parametrize("batch", BATCHES)
def test_verify_tree_greedy(benchmark, batch, impl):
    benchmark.group = f"k4 greedy verify b{batch} w{WIDTH}"
    par, cu, _ = _trees(batch)
    gen = torch.Generator().manual_seed(batch)
    toks = torch.randint(0, 4, (par.numel(),), generator=gen).to(DEV)
    pred = torch.randint(0, 4, (par.numel(),), generator=gen).to(DEV)
    backend = "auto" if impl == "ours" else "torch"
    fn = lambda: verify_tree_greedy(toks, pred, par, cu, max_nodes=WIDTH + 1, backend=backend)  # noqa: E731
    assert _same(fn(), verify_tree_greedy(toks, pred, par, cu, backend="torch"))
    _timed(benchmark, fn, batch)
