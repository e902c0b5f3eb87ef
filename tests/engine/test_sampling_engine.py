"""Sampling through the engine is lossless: records sampled with certain drafts and draft trees
follow the same distribution as masked sampling one token per forward, every sampled record is
valid, and a seeded request samples the same tokens with and without drafts."""
from __future__ import annotations

import math
import os
import sys
from collections import Counter

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "workers"))

from engine_doubles import tiny_llama  # noqa: E402
from factorspec.engine import Engine, Request  # noqa: E402
from factorspec.engine.sampling import SamplingParams  # noqa: E402
from factorspec.graph.compiler import SpecCompiler  # noqa: E402
from worker_helpers import STOP, VOCAB, VOCAB_SIZE, decode  # noqa: E402

COLORS = {
    "type": "object",
    "properties": {
        "color": {"type": "string", "enum": ["red", "green", "blue"]},
        "size": {"type": "integer", "minimum": 1, "maximum": 3},
    },
    "required": ["color", "size"], "additionalProperties": False,
    "x-factorspec": {"relations": [{"name": "red_is_small", "expr": "color == \"red\" implies size == 1"}]},
}
SPLIT = {
    "type": "object",
    "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 4},
                   "b": {"type": "integer", "minimum": 0, "maximum": 4}},
    "required": ["a", "b"], "additionalProperties": False,
    "x-factorspec": {"relations": [{"name": "sum", "expr": "a + b == 4"}]},
}
SPECS = {"colors": (COLORS, 7), "split": (SPLIT, 5)}
PROMPT = [40, 41, 42, 10]
MAX_WIDTH = 16


@pytest.fixture(scope="module")
def model():
    return tiny_llama(VOCAB_SIZE, seed=11)


@pytest.fixture(scope="module")
def compiler():
    return SpecCompiler()


def _sample(model, compiler, doc, n: int, mode: str, seed0: int, params: SamplingParams) -> list:
    cc = compiler.compile(doc)
    vocab = VOCAB()
    reqs = []
    for k in range(n):
        m = cc.matcher(vocab)
        m.set_prompt(PROMPT)
        sp = SamplingParams(params.temperature, params.top_p, params.top_k, seed0 + k)
        reqs.append(Request(PROMPT, m, max_new_tokens=60, id=k, sampling=sp))
    eng = Engine(model, stop_token_ids=[STOP], width=MAX_WIDTH, max_width=MAX_WIDTH, vocab_size=VOCAB_SIZE)
    return eng.generate(reqs, batch_size=64, mode=mode)


def _records(cc, results) -> list[str]:
    import json

    out = []
    for r in results:
        assert r.finish_reason == "stop", r.finish_reason
        rec = decode(r.tokens)  # the record's JSON value
        assert cc.spec.check(rec) == [], rec
        out.append(json.dumps(rec, sort_keys=True))
    return out


def _chi2_critical(df: int, z: float = 3.09) -> float:
    """Upper 0.1% point of chi-square with df degrees of freedom (Wilson-Hilferty)."""
    h = 2.0 / (9.0 * df)
    return df * (1.0 - h + z * math.sqrt(h)) ** 3


@pytest.mark.slow
@pytest.mark.parametrize("name,params", [("colors", SamplingParams(1.5)),
                                         ("split", SamplingParams(2.0, top_p=0.9, top_k=20))],
                         ids=["colors-t1.5", "split-t2-p0.9-k20"])
def test_drafted_sampling_has_the_distribution_of_one_token_sampling(model, compiler, name, params):
    doc, n_records = SPECS[name]
    cc = compiler.compile(doc)
    n = 3000
    plain = _records(cc, _sample(model, compiler, doc, n, "greedy", 10_000, params))
    drafted_results = _sample(model, compiler, doc, n, "spec", 90_000, params)  # other seeds: independent
    drafted = _records(cc, drafted_results)
    a, b = Counter(plain), Counter(drafted)
    assert len(set(a) | set(b)) <= n_records
    cats = [k for k in set(a) | set(b)]
    assert len(cats) >= 2, "the sampler should reach several records at this temperature"
    stat = sum((a[k] - b[k]) ** 2 / (a[k] + b[k]) for k in cats)
    tv = sum(abs(a[k] - b[k]) for k in cats) / (2 * n)
    print(f"{name} {params}: {len(cats)} records, chi2 {stat:.2f} (df {len(cats) - 1}), TV {tv:.4f}")
    assert stat <= _chi2_critical(len(cats) - 1), (stat, a, b)
    # the drafted run really drafted (and took fewer forwards)
    steps_d = sum(r.stats.verify_steps for r in drafted_results)
    assert sum(r.stats.accepted_draft_tokens for r in drafted_results) > 0
    assert steps_d < sum(len(r.tokens) for r in drafted_results)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_seeded_requests_sample_the_same_tokens_with_and_without_drafts(model, compiler, name):
    doc, _ = SPECS[name]
    params = SamplingParams(1.5, top_p=0.95)
    plain = _sample(model, compiler, doc, 120, "greedy", 500, params)
    chain = _sample(model, compiler, doc, 120, "chain", 500, params)
    tree = _sample(model, compiler, doc, 120, "spec", 500, params)
    again = _sample(model, compiler, doc, 120, "spec", 500, params)
    cc = compiler.compile(doc)
    _records(cc, tree)
    assert [r.tokens for r in plain] == [r.tokens for r in chain] == [r.tokens for r in tree]
    assert [r.tokens for r in tree] == [r.tokens for r in again]  # reproducible
    assert len({tuple(r.tokens) for r in tree}) >= 2  # and really random across seeds
    assert all(r.seed == 500 + k for k, r in enumerate(tree))
    assert sum(r.stats.verify_steps for r in tree) < sum(r.stats.verify_steps for r in plain)


def test_unseeded_requests_get_a_seed_and_greedy_stays_greedy(model, compiler):
    doc = SPECS["colors"][0]
    cc = compiler.compile(doc)
    vocab = VOCAB()
    reqs = [Request(PROMPT, cc.matcher(vocab), max_new_tokens=60, sampling=SamplingParams(1.0)),
            Request(PROMPT, cc.matcher(vocab), max_new_tokens=60)]
    eng = Engine(model, stop_token_ids=[STOP], width=MAX_WIDTH, max_width=MAX_WIDTH, vocab_size=VOCAB_SIZE)
    res = eng.generate(reqs, batch_size=2, mode="spec")
    assert isinstance(res[0].seed, int) and res[1].seed is None
    greedy = eng.generate([Request(PROMPT, cc.matcher(vocab), max_new_tokens=60)], batch_size=1, mode="greedy")
    assert greedy[0].tokens == res[1].tokens
