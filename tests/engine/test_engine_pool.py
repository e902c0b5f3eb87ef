"""The engine with a mask worker pool: drafts from the workers' phase 1, mask rows of every draft
node from phase 2 (written while the forward runs). Same tokens as the in-process matcher, failures
stay with their request, and the pool's rows are really what the engine applied."""
from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "workers"))

from engine_doubles import tiny_llama  # noqa: E402
from factorspec.engine import Engine, Request  # noqa: E402
from factorspec.graph import compile_spec  # noqa: E402
from factorspec.draft.width import CertainWidth, CostModel  # noqa: E402
from factorspec.graph.matcher import Matcher  # noqa: E402
from factorspec.workers import MaskWorkerPool  # noqa: E402
from worker_helpers import STOP, VOCAB, VOCAB_SIZE, decode, example_spec, plan_specs  # noqa: E402

MAX_WIDTH = 24


@pytest.fixture(scope="module")
def model():
    return tiny_llama(VOCAB_SIZE, seed=3)


@pytest.fixture(scope="module")
def pool():
    with MaskWorkerPool(2, VOCAB, max_rows=5 * (MAX_WIDTH + 1), vocab_size=VOCAB_SIZE, step_timeout=60.0) as p:
        yield p


def _specs() -> list[dict]:
    return plan_specs(4, seed=5) + [example_spec("meeting_schedule")]


def _prompts(n: int) -> list[list[int]]:
    return [[40 + k, 41, 42 + (k % 3), 10] for k in range(n)]


def _in_process(model, mode: str, batch: int, width) -> list:
    vocab = VOCAB()
    reqs = []
    for k, (spec, prompt) in enumerate(zip(_specs(), _prompts(5))):
        m = Matcher.for_spec(compile_spec(spec), vocab)
        m.set_prompt(prompt)
        reqs.append(Request(prompt, m, max_new_tokens=160, id=k))
    eng = Engine(model, stop_token_ids=[STOP], width=width, max_width=MAX_WIDTH, vocab_size=VOCAB_SIZE)
    return eng.generate(reqs, batch_size=batch, mode=mode)


def _pooled(model, pool, mode: str, batch: int, width, specs=None) -> list:
    specs = specs if specs is not None else _specs()
    reqs = [Request(prompt, None, max_new_tokens=160, id=k, spec=spec)
            for k, (spec, prompt) in enumerate(zip(specs, _prompts(len(specs))))]
    eng = Engine(model, stop_token_ids=[STOP], width=width, max_width=MAX_WIDTH, vocab_size=VOCAB_SIZE, pool=pool)
    return eng.generate(reqs, batch_size=batch, mode=mode)


@pytest.mark.parametrize("mode,batch,width", [
    ("greedy", 1, 1), ("chain", 1, 8), ("spec", 3, 16), ("spec", 5, "certain"), ("chain", 2, MAX_WIDTH),
])
def test_pooled_engine_equals_in_process(model, pool, mode, batch, width):
    if width == "certain":
        width = CertainWidth(CostModel(max_width=MAX_WIDTH))
    ref = _in_process(model, mode, batch, width)
    got = _pooled(model, pool, mode, batch, width)
    for a, b, spec in zip(ref, got, _specs()):
        assert b.tokens == a.tokens
        assert b.finish_reason == a.finish_reason
        assert b.stats.verify_steps == a.stats.verify_steps
        if b.finish_reason == "stop":
            assert compile_spec(spec).check(decode(b.tokens)) == []
    assert not pool.requests()  # finished requests were removed from the workers


def test_pooled_greedy_matches_masked_greedy_and_drafts_save_forwards(model, pool):
    greedy = _pooled(model, pool, "greedy", 2, 1)
    spec = _pooled(model, pool, "spec", 2, CertainWidth(CostModel(max_width=MAX_WIDTH)))
    assert [r.tokens for r in spec] == [r.tokens for r in greedy]
    assert sum(r.stats.verify_steps for r in spec) < sum(r.stats.verify_steps for r in greedy) / 3


def test_bad_spec_fails_only_its_request(model, pool):
    specs = _specs()[:3]
    specs[1] = {"type": "object", "properties": {"a": {"type": "integer"}}, "x-factorspec": ["a >"]}
    res = _pooled(model, pool, "spec", 3, 8, specs=specs)
    assert res[1].finish_reason.startswith("constraint_error")
    assert "SpecError" in res[1].finish_reason or "Relation" in res[1].finish_reason
    assert res[1].tokens == []
    for k in (0, 2):
        assert res[k].finish_reason == "stop"
        assert compile_spec(specs[k]).check(decode(res[k].tokens)) == []


def test_engine_refuses_a_pool_too_small_or_missing(model):
    reqs = [Request([5, 6], None, spec=_specs()[0])]
    with pytest.raises(ValueError, match="pool"):
        Engine(model, stop_token_ids=[STOP], vocab_size=VOCAB_SIZE).generate(reqs)
    with MaskWorkerPool(1, VOCAB, max_rows=4, vocab_size=VOCAB_SIZE) as small:
        eng = Engine(model, stop_token_ids=[STOP], max_width=MAX_WIDTH, vocab_size=VOCAB_SIZE, pool=small)
        with pytest.raises(ValueError, match="rows"):
            eng.generate(reqs, batch_size=1)


def test_engine_timings_account_for_the_phases(model, pool):
    eng = Engine(model, stop_token_ids=[STOP], width=8, max_width=MAX_WIDTH, vocab_size=VOCAB_SIZE, pool=pool)
    res = eng.generate([Request(_prompts(1)[0], None, max_new_tokens=160, spec=_specs()[0])], batch_size=1)
    assert res[0].finish_reason == "stop"
    assert set(eng.timings) == {"prefill", "drafts", "forward", "masks", "verify"}
    assert all(v > 0 for v in eng.timings.values())
    assert res[0].stats.prefill_seconds > 0


@pytest.mark.parametrize("batch", [1, 2])
def test_batch_whose_only_pooled_request_is_malformed_is_not_lost(model, pool, monkeypatch, batch):
    """Issue #14: when the worker's spec error arrived before the first step (during prefill),
    that step had no live tree item and `Engine.generate` raised "collect_drafts needs a step with
    tree items", losing the batch. The timing is forced here: every add waits for its answer."""
    import time

    orig = pool.add_request

    def add_and_settle(rid, spec, *a, **kw):
        orig(rid, spec, *a, **kw)
        deadline = time.monotonic() + 30
        while rid not in pool._added and pool.request_error(rid) is None and time.monotonic() < deadline:
            time.sleep(0.01)

    monkeypatch.setattr(pool, "add_request", add_and_settle)
    bad = {"type": "object", "properties": {"a": {"type": "integer"}}, "x-factorspec": ["a >"]}
    specs = [bad] if batch == 1 else [bad, _specs()[0]]
    res = _pooled(model, pool, "spec", batch, 8, specs=specs)
    assert res[0].finish_reason.startswith("constraint_error") and res[0].tokens == []
    if batch == 2:
        assert res[1].finish_reason == "stop"
        assert compile_spec(specs[1]).check(decode(res[1].tokens)) == []
