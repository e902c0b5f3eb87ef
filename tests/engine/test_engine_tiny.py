import random

import pytest
import torch

from engine_doubles import ScriptedConstraint, naive_greedy, tiny_llama
from factorspec.engine import Engine, Request
from factorspec.constraint import fill_tree_bitmask

V = 300
STOP = 2


@pytest.fixture(scope="module")
def model():
    return tiny_llama(V)


def make_script(seed: int, length: int = 30, n_free: int = 6, n_opts: int = 4):
    rng = random.Random(seed)
    script = [rng.randrange(3, V) for _ in range(length)]
    for pos in rng.sample(range(length), n_free):
        script[pos] = sorted(rng.sample(range(3, V), n_opts))
    return script


def make_requests(n, branch=3, max_new=40, guess=None, seed0=0):
    reqs = []
    for i in range(n):
        rng = random.Random(100 + i + seed0)
        prompt = [rng.randrange(3, V) for _ in range(rng.randrange(1, 12))]
        c = ScriptedConstraint(make_script(i + seed0, length=rng.randrange(10, 35)), STOP, V, branch=branch,
                               guess_tokens=guess)
        reqs.append(Request(prompt, c, max_new_tokens=max_new, id=i))
    return reqs


def run(model, reqs, mode, batch_size, width=16):
    eng = Engine(model, stop_token_ids=[STOP], width=width)
    return eng.generate(reqs, batch_size=batch_size, mode=mode)


def test_greedy_mode_matches_naive_reference(model):
    reqs = make_requests(3)
    res = run(model, reqs, "greedy", batch_size=1)
    for r, req in zip(res, make_requests(3)):
        ref = naive_greedy(model, req.prompt_ids, req.constraint, req.max_new_tokens, [STOP])
        assert r.tokens == ref
        assert r.stats.verify_steps == len(ref)


def test_unconstrained_greedy_matches_naive(model):
    reqs = [Request([5, 6, 7, 8], None, max_new_tokens=12), Request([9], None, max_new_tokens=7)]
    res = run(model, reqs, "greedy", batch_size=2)
    for r, req in zip(res, reqs):
        assert r.tokens == naive_greedy(model, req.prompt_ids, None, req.max_new_tokens)
        assert r.finish_reason == "length"


@pytest.mark.parametrize("mode", ["chain", "spec"])
@pytest.mark.parametrize("batch_size", [1, 3])
@pytest.mark.parametrize("branch", [0, 1, 3])
def test_drafts_are_exact(model, mode, batch_size, branch):
    n = 5
    ref = run(model, make_requests(n, branch=branch), "greedy", batch_size=1)
    res = run(model, make_requests(n, branch=branch), mode, batch_size=batch_size, width=12)
    for a, b in zip(ref, res):
        assert a.tokens == b.tokens
        assert a.finish_reason == b.finish_reason
    steps_ref = sum(r.stats.verify_steps for r in ref)
    steps = sum(r.stats.verify_steps for r in res)
    assert steps < steps_ref  # drafts must save forwards (certain runs are always accepted)
    assert all(r.stats.tokens == len(r.tokens) for r in res)


def test_full_trees_accept_everything(model):
    # every free position has 4 options and branch=4: every alternative is drafted (as far
    # as the width allows), so the accepted path always follows the model
    reqs = make_requests(2, branch=4, max_new=100)
    res = run(model, reqs, "spec", batch_size=2, width=64)
    ref = run(model, make_requests(2, branch=4, max_new=100), "greedy", batch_size=2)
    for a, b in zip(ref, res):
        assert a.tokens == b.tokens
        assert b.finish_reason == "stop"
    # the draft covers every alternative near the root, so each forward commits many tokens
    for r in res:
        assert r.stats.verify_steps * 3 <= len(r.tokens), (r.stats, len(r.tokens))


def test_wrong_guesses_are_rejected(model):
    # deliberately wrong draft tokens at some positions (allowed or not by the constraint)
    guess = {3: 7, 8: 250, 12: 11}
    ref = run(model, make_requests(4), "greedy", batch_size=1)
    res = run(model, make_requests(4, guess=guess), "spec", batch_size=2, width=20)
    for a, b in zip(ref, res):
        assert a.tokens == b.tokens


def test_continuous_batching_more_requests_than_slots(model):
    n = 7
    ref = run(model, make_requests(n, max_new=15, seed0=50), "greedy", batch_size=1)
    res = run(model, make_requests(n, max_new=15, seed0=50), "spec", batch_size=3, width=6)
    for a, b in zip(ref, res):
        assert a.tokens == b.tokens
        assert len(b.tokens) <= 15


def test_width_policy_callable_and_per_request(model):
    seen = []

    def policy(state, batch):
        seen.append(batch)
        return 1 + len(state.tokens) % 5

    reqs = make_requests(3)
    reqs[0].width = 0
    eng = Engine(model, stop_token_ids=[STOP], width=policy)
    res = eng.generate(reqs, batch_size=3, mode="spec")
    ref = run(model, make_requests(3), "greedy", batch_size=1)
    assert [r.tokens for r in res] == [r.tokens for r in ref]
    assert res[0].stats.drafted_tokens == 0
    assert seen and max(seen) == 3


def test_bf16_model_runs(model):
    m16 = tiny_llama(V, dtype=torch.bfloat16)
    res = run(m16, make_requests(2), "spec", batch_size=2)
    assert all(r.finish_reason in ("stop", "length") for r in res)


def test_reference_and_kernels_masked_argmax_agree(model, monkeypatch):
    import host_reference as ops
    from factorspec.engine import engine as eng

    b = run(model, make_requests(3), "spec", batch_size=3)
    monkeypatch.setattr(eng, "masked_argmax", ops.masked_argmax_reference)
    a = run(model, make_requests(3), "spec", batch_size=3)
    assert [r.tokens for r in a] == [r.tokens for r in b]


def test_ops_mask_and_verify():
    import numpy as np
    import host_reference as ops

    logits = torch.randn(3, 70)
    bm = np.zeros((3, 3), dtype=np.int32)
    bm[0, 0] = 1 << 5
    bm[1, 2] = 1 << 3  # token 67
    bm[2] = -1
    pred = ops.masked_argmax_reference(logits.clone(), torch.from_numpy(bm), None)
    assert pred.tolist()[:2] == [5, 67] and pred[2] == logits[2].argmax()
    # tree: root -> a(0) -> b(1); root -> c(2); predictions pick c then nothing
    path, bonus = ops.verify_tree_greedy([9, 1, 2, 4], [8, 7, 9], [-1, 0, -1])
    assert path == [2] and bonus == 4
    path, bonus = ops.verify_tree_greedy([8, 7, 3, 4], [8, 7, 9], [-1, 0, -1])
    assert path == [0, 1] and bonus == 3
    tb = ops.build_tree_verify_inputs([1, 2], [([5, 6, 7], [-1, 0, -1]), ([], [])], [3, 1], 4)
    assert tb.position_ids.tolist() == [[3, 4, 5, 4], [1, 1, 1, 1]]
    m = tb.attn[0, 0]
    assert m[:, :3].all() and not m[:, 3].any()  # prefix 3 of cache length 4
    assert m[2, 4:].tolist() == [True, True, True, False]
    assert m[3, 4:].tolist() == [True, False, False, True]
    m1 = tb.attn[1, 0]
    assert m1[0, :5].tolist() == [True, False, False, False, True]
    assert m1[1:, :4].sum() == 0  # padding rows see only themselves


@pytest.mark.parametrize("family", ["qwen2", "gemma3"])
def test_other_families_exact(family):
    from engine_doubles import tiny_model

    m = tiny_model(family, V)
    reqs = make_requests(3, max_new=25)
    ref = [naive_greedy(m, r.prompt_ids, r.constraint, r.max_new_tokens, [STOP]) for r in reqs]
    for mode, bs in [("greedy", 1), ("spec", 3)]:
        res = run(m, make_requests(3, max_new=25), mode, batch_size=bs, width=10)
        assert [r.tokens for r in res] == ref, (family, mode)


def test_unconstrained_constraint_matches_none(model):
    from benchmarks.baselines import Unconstrained

    a = run(model, [Request([5, 6, 7], None, max_new_tokens=10)], "greedy", 1)
    b = run(model, [Request([5, 6, 7], Unconstrained(V, [STOP]), max_new_tokens=10)], "spec", 1)
    assert a[0].tokens == b[0].tokens
    u = Unconstrained(V, [STOP], allowed_size=290)
    assert u.validate_tokens([1, 295]) == 1 and not u.accept_token(295)
    assert u.accept_token(STOP) and u.is_terminated()
    u.rollback(1)
    assert not u.is_terminated()


def test_adaptive_width_policy_exact(model):
    from factorspec.engine import adaptive_width

    eng = Engine(model, stop_token_ids=[STOP], width=adaptive_width(32, 2))
    res = eng.generate(make_requests(3, branch=1), batch_size=2, mode="spec")
    ref = run(model, make_requests(3, branch=1), "greedy", batch_size=1)
    assert [r.tokens for r in res] == [r.tokens for r in ref]


def test_fill_tree_bitmask_hook_is_used(model):
    calls = []

    class Fast(ScriptedConstraint):
        def fill_tree_bitmask(self, draft, bitmask, row0):
            calls.append(len(draft))
            self.__class__ = ScriptedConstraint  # run the generic walk once, then restore
            try:
                return fill_tree_bitmask(self, draft, bitmask, row0)
            finally:
                self.__class__ = Fast

    reqs = make_requests(2)
    for r in reqs:
        r.constraint.__class__ = Fast
    res = run(model, reqs, "spec", batch_size=2)
    ref = run(model, make_requests(2), "greedy", batch_size=1)
    assert [r.tokens for r in res] == [r.tokens for r in ref]
    assert calls
