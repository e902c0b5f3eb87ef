"""Kernel 2: tree verify inputs. Triton (interpreter) vs torch reference vs independent oracles,
plus SGLang's published layout examples."""
import random

import pytest
import torch

from factorspec.kernels import build_tree_verify_inputs, check_trees, flatten_parents
from kernel_cases import SHAPES, brute_ancestors, mixed_trees


def _prefixes(trees, seed):
    rng = random.Random(seed)
    return [rng.choice([0, 1, 7, 300]) for _ in trees]


def _run(trees, prefix, **kw):
    par, cu = flatten_parents(trees)
    a = build_tree_verify_inputs(par, cu, prefix, backend="triton", **kw)
    b = build_tree_verify_inputs(par, cu, prefix, backend="torch", **kw)
    for name, x, y in zip(a._fields, a, b):
        assert x.dtype == y.dtype and torch.equal(x, y), name
    return b


def _oracle_check(trees, prefix, out):
    """Every output against a per-request, one-node-at-a-time oracle."""
    full, qlen = out.tree_mask.tolist(), out.tree_mask_qlen.tolist()
    fo = qo = node = 0
    for b, par in enumerate(trees):
        n, p = len(par), prefix[b]
        anc = brute_ancestors(par)
        for i in range(n):
            assert out.positions[node + i] == p + sum(anc[i]) - 1
            row = full[fo + i * (p + n) : fo + (i + 1) * (p + n)]
            assert row == [True] * p + anc[i]
            assert qlen[qo + i * n : qo + (i + 1) * n] == anc[i]
            words = out.tree_mask_packed[node + i].tolist()
            assert [bool((words[j // 32] >> (j % 32)) & 1) for j in range(n)] == anc[i]
            kids = [j for j in range(n) if par[j] == i]
            assert out.retrive_next_token[b, i] == (kids[0] if kids else -1)
            sibs = [j for j in range(i + 1, n) if par[i] >= 0 and par[j] == par[i]]
            assert out.retrive_next_sibling[b, i] == (sibs[0] if sibs else -1)
            assert out.retrive_index[b, i] == node + i
        assert out.retrive_index[b, n:].eq(-1).all()
        assert out.cu_tree_mask[b] == fo
        fo += n * (p + n)
        qo += n * n
        node += n
    assert fo == len(full) and qo == len(qlen)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_shapes(shape):
    trees = SHAPES[shape]
    prefix = _prefixes(trees, len(shape))
    check_trees(*flatten_parents(trees))
    out = _run(trees, prefix)
    _oracle_check(trees, prefix, out)


@pytest.mark.parametrize("bs", [1, 7, 33])
def test_random_batches(bs):
    rng = random.Random(bs)
    trees = mixed_trees(rng, bs, max_width=64 if bs < 33 else 16)
    prefix = _prefixes(trees, bs)
    out = _run(trees, prefix)
    _oracle_check(trees, prefix, out)


def test_long_prefix_and_options():
    trees = [[-1, 0, 0, 1], [-1]]
    prefix = [5000, 3]
    out = _run(trees, prefix, max_nodes=40)
    assert out.retrive_index.shape == (2, 40) and out.tree_mask_packed.shape == (5, 2)
    _oracle_check(trees, prefix, out)
    out = _run(trees, prefix, build_full_mask=False)
    assert out.tree_mask.numel() == 0


def test_empty_batch():
    out = _run([], [])
    assert out.positions.numel() == 0 and out.retrive_index.shape == (0, 0)


def test_list_input_and_bad_tree():
    out = build_tree_verify_inputs([[-1, 0], [-1]], None, [4, 9])
    assert out.positions.tolist() == [4, 5, 9]
    with pytest.raises(ValueError):
        check_trees(*flatten_parents([[-1, 1]]))


def test_sglang_eagle_example():
    """The expected outputs published in SGLang's build_eagle_tree.py test (seq_lens 5 and 10,
    8 draft tokens): our parent arrays for those two trees must give the same positions and
    retrieval arrays."""
    trees = [[-1, 0, 0, 1, 2, 3, 4, 5], [-1, 0, 1, 1, 1, 1, 3, 6]]
    out = _run(trees, [5, 10])
    assert out.positions.tolist() == [5, 6, 6, 7, 7, 8, 8, 9, 10, 11, 12, 12, 12, 12, 13, 14]
    assert out.retrive_index.tolist() == [list(range(8)), list(range(8, 16))]
    assert out.retrive_next_token.tolist() == [[1, 3, 4, 5, 6, 7, -1, -1], [1, 2, -1, 6, -1, -1, 7, -1]]
    assert out.retrive_next_sibling.tolist() == [[-1, 2, -1, -1, -1, -1, -1, -1], [-1, -1, 3, 4, 5, -1, -1, -1]]
    # FULL_MASK size as SGLang allocates it: seq_lens_sum * N + N * N * bs
    assert out.tree_mask.numel() == 15 * 8 + 8 * 8 * 2


def _reconstruct_from_mask(mask, seq_lens, bs, n):
    """Our re-statement of the semantics of SGLang's NGRAM ``reconstruct_indices_from_tree_mask``
    (mask [bs*n*n], row i = nodes token i attends to): depth = attended earlier nodes, parent = the
    nearest one, next_token = first later node attending i, next_sibling = first later node whose
    nearest attended earlier node is i's parent."""
    m = torch.as_tensor(mask).view(bs, n, n).tolist()
    pos, nxt, sib = [], [], []
    for b in range(bs):
        rn, rs = [], []
        parent = []
        for t in range(n):
            earlier = [i for i in range(t) if m[b][t][i]]
            parent.append(earlier[-1] if earlier else -1)
            pos.append(seq_lens[b] + len(earlier))
        for t in range(n):
            rn.append(next((i for i in range(t + 1, n) if m[b][i][t]), -1))
            rs.append(next((i for i in range(t + 1, n) if parent[t] >= 0 and parent[i] == parent[t]), -1))
        nxt.append(rn)
        sib.append(rs)
    return pos, nxt, sib


@pytest.mark.parametrize("n", [1, 2, 8, 17])
def test_qlen_mask_round_trips_through_ngram_semantics(n):
    rng = random.Random(n)
    bs = 5
    trees = [rng.choice([[-1] + list(range(n - 1)), [-1] + [0] * (n - 1), [-1] + [rng.randrange(i) for i in range(1, n)]]) for _ in range(bs)]
    prefix = [rng.randrange(100) for _ in range(bs)]
    out = _run(trees, prefix)
    assert out.tree_mask_qlen.numel() == bs * n * n  # NGRAM's [bs * N * N]
    pos, nxt, sib = _reconstruct_from_mask(out.tree_mask_qlen, prefix, bs, n)
    assert out.positions.tolist() == pos
    assert out.retrive_next_token.tolist() == nxt
    assert out.retrive_next_sibling.tolist() == sib
