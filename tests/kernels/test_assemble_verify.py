"""Kernels 3 and 4: draft assembly and greedy tree verification. Triton (interpreter) vs torch
reference vs independent oracles (vLLM's documented metadata example, a first-child/next-sibling
walk over kernel 2's retrieval arrays), plus the whole verify pipeline."""
import random

import pytest
import torch

from factorspec.kernels import (
    apply_bitmask,
    assemble_drafts,
    assemble_drafts_from_lists,
    build_tree_verify_inputs,
    check_trees,
    flatten_parents,
    verify_tree_greedy,
)
from kernel_cases import SHAPES, mixed_trees


def _assemble_both(roots, runs, trees=None):
    a = assemble_drafts_from_lists(roots, runs, trees, backend="triton")
    b = assemble_drafts_from_lists(roots, runs, trees, backend="torch")
    for name, x, y in zip(a._fields, a, b):
        assert torch.equal(x, y), name
    return b


def test_vllm_spec_decode_metadata_example():
    # vLLM's documented example: num_draft_tokens [3, 0, 2, 0, 1].
    runs = [[11, 12, 13], [], [21, 22], [], [31]]
    d = _assemble_both([1, 2, 3, 4, 5], runs)
    assert d.cu_num_draft_tokens.tolist() == [3, 3, 5, 5, 6]
    assert d.target_logits_indices.tolist() == [0, 1, 2, 5, 6, 9]
    assert d.bonus_logits_indices.tolist() == [3, 4, 7, 8, 10]
    assert d.draft_token_ids.tolist() == [11, 12, 13, 21, 22, 31]
    assert d.tokens.tolist() == [1, 11, 12, 13, 2, 3, 21, 22, 4, 5, 31]
    assert d.num_draft_tokens.tolist() == [3, 0, 2, 0, 1]


def test_run_then_tree_layout():
    # run [7, 8] then a tree: t0, t1 hang below the run's end, t2 below t0.
    d = _assemble_both([1], [[7, 8]], [([50, 51, 52], [-1, -1, 0])])
    assert d.tokens.tolist() == [1, 7, 8, 50, 51, 52]
    assert d.parents.tolist() == [-1, 0, 1, 2, 2, 3]
    assert d.cu_nodes.tolist() == [0, 6]
    assert d.target_logits_indices.tolist() == [0, 1, 2, 2, 3]
    # tree directly below the root when the run is empty
    d = _assemble_both([1, 2], [[], [9]], [([5, 6], [-1, -1]), ([], [])])
    assert d.parents.tolist() == [-1, 0, 0, -1, 0]


@pytest.mark.parametrize("bs", [1, 7, 64])
def test_assemble_random(bs):
    rng = random.Random(bs)
    runs, trees = [], []
    for _ in range(bs):
        runs.append([rng.randrange(1000) for _ in range(rng.choice([0, 1, 5, 64]))])
        t = rng.choice([0, 0, 1, 8, 40])
        trees.append(([rng.randrange(1000) for _ in range(t)], [rng.randrange(-1, i) for i in range(t)]))
    roots = [rng.randrange(1000) for _ in range(bs)]
    d = _assemble_both(roots, runs, trees)
    check_trees(d.parents, d.cu_nodes)
    assert d.tokens.numel() == bs + sum(len(r) for r in runs) + sum(len(t[0]) for t in trees)


def test_assemble_empty():
    d = _assemble_both([], [])
    assert d.tokens.numel() == 0 and d.cu_nodes.tolist() == [0]
    d = _assemble_both([4, 5], [[], []])
    assert d.tokens.tolist() == [4, 5] and d.num_draft_tokens.tolist() == [0, 0]


def _sglang_style_walk(tokens, predict, retr, cu):
    """Independent oracle: SGLang's greedy walk over first-child/next-sibling lists."""
    res = []
    for b in range(len(cu) - 1):
        if cu[b + 1] == cu[b]:
            res.append(([], 0, -1))
            continue
        path, cur = [cu[b]], 0
        while True:
            want, child, hit = predict[cu[b] + cur], retr.retrive_next_token[b, cur].item(), -1
            while child != -1:
                if tokens[cu[b] + child] == want:
                    hit = child
                    break
                child = retr.retrive_next_sibling[b, child].item()
            if hit < 0:
                break
            cur = hit
            path.append(cu[b] + cur)
        res.append((path, len(path) - 1, predict[path[-1]]))
    return res


def _tokens_and_predictions(trees, rng, p_follow=0.7):
    """Tokens with duplicated siblings (first-match order matters) and predictions that follow a
    random branch with probability p_follow."""
    par, cu = flatten_parents(trees)
    toks = torch.tensor([rng.randrange(4) for _ in range(par.numel())])
    pred = torch.tensor([rng.randrange(4) for _ in range(par.numel())])
    for b in range(len(trees)):
        for i in range(1, len(trees[b])):
            if rng.random() < p_follow:
                pred[cu[b] + trees[b][i]] = toks[cu[b] + i]
    return par, cu, toks, pred


def _check_verify(trees, seed):
    rng = random.Random(seed)
    par, cu, toks, pred = _tokens_and_predictions(trees, rng)
    a = verify_tree_greedy(toks, pred, par, cu, backend="triton")
    b = verify_tree_greedy(toks, pred, par, cu, backend="torch")
    for name, x, y in zip(a._fields, a, b):
        assert torch.equal(x, y), name
    retr = build_tree_verify_inputs(par, cu, [0] * len(trees), build_full_mask=False)
    oracle = _sglang_style_walk(toks.tolist(), pred.tolist(), retr, cu.tolist())
    for bi, (path, length, bonus) in enumerate(oracle):
        assert b.accept_length[bi] == length and b.bonus_token[bi] == bonus
        got = [x for x in b.accept_index[bi].tolist() if x >= 0]
        assert got == path
        assert b.output_tokens[bi, : length + 1].tolist() == ([pred[p].item() for p in path] if path else [-1])
        assert b.output_tokens[bi, len(path) :].eq(-1).all()
    return b


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_verify_shapes(shape):
    _check_verify(SHAPES[shape], len(shape))


@pytest.mark.parametrize("bs", [1, 7, 64])
def test_verify_random(bs):
    _check_verify(mixed_trees(random.Random(bs), bs, max_width=64 if bs < 64 else 16), bs)


def test_verify_full_chain_accept_and_reject():
    trees = [[-1, 0, 1, 2], [-1, 0, 1, 2], [-1]]
    par, cu = flatten_parents(trees)
    toks = torch.tensor([9, 1, 2, 3, 9, 1, 2, 3, 9])
    pred = torch.tensor([1, 2, 3, 4, 1, 5, 3, 4, 7])  # request 1 rejects the 2nd draft
    for backend in ("triton", "torch"):
        r = verify_tree_greedy(toks, pred, par, cu, backend=backend)
        assert r.accept_length.tolist() == [3, 1, 0]
        assert r.bonus_token.tolist() == [4, 5, 7]
        assert r.output_tokens.tolist() == [[1, 2, 3, 4], [1, 5, -1, -1], [7, -1, -1, -1]]
        assert r.accept_index.tolist() == [[0, 1, 2, 3], [4, 5, -1, -1], [8, -1, -1, -1]]


@pytest.mark.parametrize("backend", ["triton", "torch"])
def test_pipeline_assemble_mask_argmax_verify(backend):
    """Certain run + tree -> verify inputs -> masked logits + fused argmax -> greedy verify."""
    vocab = 1000
    roots = [5, 6, 7]
    runs = [[10, 11, 12], [], [20]]
    trees = [([30, 31], [-1, -1]), ([40], [-1]), ([], [])]
    d = assemble_drafts_from_lists(roots, runs, trees, backend=backend)
    inp = build_tree_verify_inputs(d.parents, d.cu_nodes, torch.tensor([100, 50, 7]), backend=backend)
    logits = torch.randn(d.tokens.numel(), vocab, generator=torch.Generator().manual_seed(0))
    # The "model" prefers the drafted continuations, except after 11 where it prefers 99 (a
    # token the grammar mask forbids) and, second, 31.
    nxt = {5: 10, 10: 11, 11: 99, 6: 40, 40: 41, 7: 20, 20: 21}
    for i, t in enumerate(d.tokens.tolist()):
        if t in nxt:
            logits[i, nxt[t]] = 50.0
    logits[2, 31] = 40.0  # node 2 holds token 11
    bitmask = torch.full((d.tokens.numel(), (vocab + 31) // 32), -1, dtype=torch.int32)
    bitmask[2, 99 // 32] &= ~(1 << (99 % 32))
    pred = apply_bitmask(logits, bitmask, return_argmax=True, backend=backend)
    r = verify_tree_greedy(d.tokens, pred, d.parents, d.cu_nodes, backend=backend)
    # request 0: 10, 11 accepted; the run's 12 is rejected; the bonus is 31, not the masked 99
    assert r.accept_length.tolist() == [2, 1, 1]
    assert r.output_tokens[0, :3].tolist() == [10, 11, 31]
    assert r.output_tokens[1, :2].tolist() == [40, 41]
    assert r.output_tokens[2, :2].tolist() == [20, 21]
    assert inp.positions[:6].tolist() == [100, 101, 102, 103, 104, 104]
