"""Property tests (hypothesis): random ragged batches of trees through kernels 2 and 4, Triton
(interpreter) against the torch references. Few examples: each costs interpreter launches."""
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from factorspec.kernels import build_tree_verify_inputs, flatten_parents, verify_tree_greedy


@st.composite
def batches(draw):
    bs = draw(st.integers(1, 6))
    trees = []
    for _ in range(bs):
        n = draw(st.integers(0, 40))
        trees.append([-1][:n] + [draw(st.integers(0, i - 1)) for i in range(1, n)])
    total = sum(len(t) for t in trees)
    toks = draw(st.lists(st.integers(0, 2), min_size=total, max_size=total))
    pred = draw(st.lists(st.integers(0, 2), min_size=total, max_size=total))
    prefix = draw(st.lists(st.integers(0, 70), min_size=bs, max_size=bs))
    return trees, toks, pred, prefix


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches())
def test_tree_inputs_and_verify_agree(batch):
    trees, toks, pred, prefix = batch
    par, cu = flatten_parents(trees)
    a = build_tree_verify_inputs(par, cu, prefix, backend="triton")
    b = build_tree_verify_inputs(par, cu, prefix, backend="torch")
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    toks_t, pred_t = torch.tensor(toks, dtype=torch.int64), torch.tensor(pred, dtype=torch.int64)
    va = verify_tree_greedy(toks_t, pred_t, par, cu, backend="triton")
    vb = verify_tree_greedy(toks_t, pred_t, par, cu, backend="torch")
    assert all(torch.equal(x, y) for x, y in zip(va, vb))
    # accepted drafts really are greedy: each accepted node's token is the argmax at its parent
    for r in range(len(trees)):
        path = [i for i in vb.accept_index[r].tolist() if i >= 0]
        for prev, node in zip(path, path[1:]):
            assert toks[node] == pred[prev]
