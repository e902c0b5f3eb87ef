"""Worker, in process: a mirror's deferred shadows (compiled and following tokens only when idle,
caught up on promotion or at their next step) end in exactly the state of a matcher that
accepted every token as it came: the same rows and drafts."""
from __future__ import annotations

import random

import numpy as np
import pytest
from worker_helpers import VOCAB, certain_chain, pick, plan_specs

from factorspec.graph import compile_spec
from factorspec.graph.matcher import Matcher
from factorspec.workers import StepItem
from factorspec.workers.worker import Worker

ROWS = 4


def _worker() -> Worker:
    w = Worker(VOCAB())
    w.bitmask = np.zeros((ROWS, w.vocab.words), dtype=np.int32)
    return w


def _moves(spec: dict, seed: int, steps: int) -> tuple[list, Matcher]:
    """(tokens, rollback) per step, as a pool sends them, and the reference matcher after them:
    the draft's certain chain or an allowed token, now and then undoing the last step."""
    rng = random.Random(seed)
    ref = Matcher.for_spec(compile_spec(spec), VOCAB())
    moves: list = []
    last = 0
    for _ in range(steps):
        if ref.is_terminated():
            break
        rollback = last if last and rng.random() < 0.2 else 0
        if rollback:
            ref.rollback(rollback)
        toks = certain_chain(ref.draft(4)) or [pick(ref.next_token_mask(), rng)]
        for t in toks:
            assert ref.accept_token(t)
        moves.append((tuple(toks), rollback))
        last = len(toks)
    return moves, ref


def _row_and_draft(w: Worker, rid: str) -> tuple:
    rid_, ok, payload = w.step_one(StepItem(rid, (), 0, 4))
    assert ok, payload
    return w.bitmask[0].copy(), payload[0]


@pytest.mark.parametrize("seed", range(6))
def test_deferred_shadow_promoted_equals_token_by_token(seed: int) -> None:
    spec = plan_specs(1, seed=seed)[0]
    moves, ref = _moves(spec, seed, 25)
    w = _worker()
    rng = random.Random(100 + seed)
    w.seq = 7
    w.add("r", spec, None, moves[0][0], True)  # the first tokens as replay, the rest as advances
    assert w.has_idle_work() and "r" not in w.shadows  # nothing compiled before the pipe is empty
    replies = []
    for tokens, rollback in moves[1:]:
        w.advance([("r", tokens, rollback)])
        while w.has_idle_work() and rng.random() < 0.5:  # idle now and then, as when the pipe is empty
            reply = w.idle_work()
            if reply is not None:
                replies.append(reply)
    assert all(r[:4] == ("added", 7, "r", None) for r in replies) and len(replies) <= 1
    w.promote(["r"])
    assert not w.shadows and not w.has_idle_work()
    row, draft = _row_and_draft(w, "r")
    want = np.zeros_like(row)
    ref.fill_next_token_bitmask(want[None, :], 0)
    assert np.array_equal(row, want)
    assert draft == ref.draft(4)


def test_shadow_that_rejects_a_token_fails_its_request_when_promoted() -> None:
    spec = plan_specs(1, seed=3)[0]
    w = _worker()
    w.add("r", spec, None, (), True)
    w.advance([("r", (ord("x"),), 0)])  # a record starts with "{": rejected
    while w.has_idle_work():
        w.idle_work()
    w.promote(["r"])
    rid, ok, err = w.step_one(StepItem("r", (), 0, 4))
    assert not ok and err[0] == "TokenRejected"
    assert not w.bitmask[0].any()


def test_removed_shadow_leaves_no_work() -> None:
    spec = plan_specs(1, seed=4)[0]
    w = _worker()
    w.add("r", spec, None, (), True)
    w.advance([("r", (ord("{"),), 0)])
    w.remove("r")
    assert w.idle_work() is None and not w.shadows and not w.has_idle_work()


def test_no_cyclic_collection_while_a_step_is_computed() -> None:
    """`paused_gc` (around every step in the worker's loop) keeps the collector off inside and
    restores its state after, also after an exception; collections due run after the step."""
    import gc

    from factorspec.workers.checkpoint import paused_gc

    was = gc.isenabled()
    try:
        gc.enable()
        with paused_gc():
            assert not gc.isenabled()
            w = _worker()  # a step's work allocates as usual
            w.add("r", plan_specs(1, seed=2)[0])
            assert w.step_one(StepItem("r", (), 0, 4))[1]
        assert gc.isenabled()
        with pytest.raises(RuntimeError), paused_gc():
            raise RuntimeError("a failing step")
        assert gc.isenabled()
        gc.disable()
        with paused_gc():
            pass
        assert not gc.isenabled()  # a collector that was off stays off
    finally:
        (gc.enable if was else gc.disable)()
