"""Sampling of one verify row: the distribution it draws from (mask, temperature, top-k, top-p),
that the draws follow it, and that a seeded position always draws the same token."""
from __future__ import annotations

import math

import pytest
import torch

from factorspec.engine.sampling import SamplingParams, filtered_logprobs, position_seed, sample_row


def _logits(v: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(v, generator=g, dtype=torch.float32) * 2


def _reference(logits: torch.Tensor, p: SamplingParams) -> list[float]:
    """Plain-Python statement of the rule: softmax(logits / T), keep the top-k logits, then the
    smallest prefix (by probability, stable) whose mass reaches top_p, renormalise."""
    xs = [float(x) / p.temperature for x in logits.tolist()]
    v = len(xs)
    keep = [x != float("-inf") for x in xs]
    if p.top_k and p.top_k < v:
        kth = sorted((x for x in xs), reverse=True)[p.top_k - 1]
        keep = [k and x >= kth for k, x in zip(keep, xs)]
    m = max(x for x, k in zip(xs, keep) if k)
    w = [math.exp(x - m) if k else 0.0 for x, k in zip(xs, keep)]
    s = sum(w)
    probs = [x / s for x in w]
    if p.top_p < 1:
        order = sorted(range(v), key=lambda i: -probs[i])
        mass, kept = 0.0, set()
        for i in order:
            if mass >= p.top_p and kept:
                break
            kept.add(i)
            mass += probs[i]
        probs = [pr if i in kept else 0.0 for i, pr in enumerate(probs)]
        s = sum(probs)
        probs = [pr / s for pr in probs]
    return probs


@pytest.mark.parametrize("v", [1, 2, 33, 257])
@pytest.mark.parametrize("params", [SamplingParams(0.7), SamplingParams(1.3, top_k=5), SamplingParams(1.0, top_p=0.8),
                                    SamplingParams(0.5, top_k=3, top_p=0.6), SamplingParams(2.0, top_k=1)])
def test_filtered_distribution_matches_reference(v, params):
    x = _logits(v, seed=v)
    if v > 2:
        x[::3] = float("-inf")  # a constraint mask
    got = filtered_logprobs(x, params).exp().tolist()
    want = _reference(x, params)
    assert max(abs(a - b) for a, b in zip(got, want)) < 1e-9


@pytest.mark.parametrize("params", [SamplingParams(0.7), SamplingParams(1.0, top_k=4, top_p=0.9)])
def test_draws_follow_the_distribution(params):
    v, n = 11, 12000
    x = _logits(v, seed=3)
    x[2] = float("-inf")
    probs = filtered_logprobs(x, params).exp().tolist()
    counts = [0] * v
    for pos in range(n):
        counts[sample_row(x, params, seed=1234, position=pos)] += 1
    assert counts[2] == 0  # a masked token is never drawn
    for tok in range(v):
        mean = n * probs[tok]
        sd = math.sqrt(max(n * probs[tok] * (1 - probs[tok]), 1e-12))
        assert abs(counts[tok] - mean) <= 5 * sd + 1e-9, (tok, counts[tok], mean)


def test_one_allowed_token_is_always_drawn():
    x = torch.full((40,), float("-inf"))
    x[17] = 0.3
    for pos in range(50):
        assert sample_row(x, SamplingParams(1.5, top_p=0.3), seed=pos, position=pos) == 17


def test_seeded_positions_are_reproducible_and_independent_of_shape():
    x = _logits(1000, seed=9)
    p = SamplingParams(1.0)
    a = [sample_row(x, p, seed=42, position=t) for t in range(30)]
    b = [sample_row(x, p, seed=42, position=t) for t in range(30)]
    c = [sample_row(x, p, seed=43, position=t) for t in range(30)]
    assert a == b
    assert a != c
    assert len({position_seed(42, t) for t in range(1000)}) == 1000


@pytest.mark.parametrize("bad", [dict(temperature=-1), dict(top_p=0), dict(top_p=1.5), dict(top_k=-2),
                                 dict(top_k=1.5), dict(seed="x")])
def test_bad_params_are_clear_errors(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        SamplingParams(**{"temperature": 1.0, **bad})
