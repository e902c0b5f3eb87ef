"""MaskWorkerPool: masks and drafts equal the in-process matcher's; errors stay with their request;
crashed and hung workers fail only their requests and are replaced."""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from factorspec.graph import compile_spec
from factorspec.workers import (BytesVocab, MaskWorkerPool, PoolError, RequestFailed, StepItem, StepTimeout,
                                WorkerCrashed)
from factorspec.graph.matcher import Matcher
from worker_helpers import (STOP, VOCAB, VOCAB_SIZE, all_fresh, certain_chain, decode, example_spec, pick,
                            plan_specs, wait_caught_up)



@pytest.fixture(scope="module")
def pool():
    with MaskWorkerPool(2, VOCAB, max_rows=16, step_timeout=20.0) as p:
        yield p


class _BadVocab:
    """A picklable vocabulary recipe that always fails (module level, so workers can load it)."""

    def __call__(self) -> None:
        raise RuntimeError("no vocabulary here")


def _local(spec: dict) -> Matcher:
    return Matcher.for_spec(compile_spec(spec), VOCAB())


def test_masks_and_drafts_equal_in_process_matcher(pool: MaskWorkerPool) -> None:
    specs = plan_specs(4, seed=3) + [example_spec("meeting_schedule"), example_spec("seating_plan")]
    rng = random.Random(7)
    rids = [f"eq{k}" for k in range(len(specs))]
    local = {rid: _local(s) for rid, s in zip(rids, specs)}
    for rid, s in zip(rids, specs):
        pool.add_request(rid, s, wait=True)
    pending = {rid: [] for rid in rids}  # tokens to send at the next step
    emitted = {rid: [] for rid in rids}
    live = list(rids)
    steps = 0
    while live:
        steps += 1
        assert steps < 400
        width = rng.choice([0, 1, 4, 16])
        items = []
        for k, rid in enumerate(live):
            toks, rb = pending[rid], 0
            if emitted[rid][: -len(toks) or None] and rng.random() < 0.2:
                # undo the last token of the previous step and send it again: same stream
                rb = 1
                toks = [emitted[rid][-len(toks) - 1]] + toks
            items.append(StepItem(rid, toks, row=k, draft_width=width, rollback=rb))
        res = pool.step(items, timeout=20)
        for k, rid in enumerate(live):
            r = res[rid].raise_for_error()
            m = local[rid]
            for t in pending[rid]:
                assert m.accept_token(t)
            want = m.next_token_mask()
            got = pool.bitmask[k]
            assert np.array_equal(got[: len(want)], want), f"{rid} step {steps}"
            assert not got[len(want):].any()
            assert r.terminated == m.is_terminated()
            if width and not m.is_terminated():
                d = m.draft(width)
                assert (r.draft.tokens, r.draft.parents, r.draft.certain) == (d.tokens, d.parents, d.certain)
            else:
                assert len(r.draft) == 0
        nxt = []
        for k, rid in enumerate(live):
            if res[rid].terminated:
                rec = decode(emitted[rid])
                assert compile_spec(specs[rids.index(rid)]).check(rec) == []
                pool.remove_request(rid)
                continue
            chain = certain_chain(res[rid].draft) if width else []
            if chain and rng.random() < 0.7:
                toks = chain[: rng.randint(1, len(chain))]
            else:
                toks = [pick(pool.bitmask[k], rng)]
            pending[rid] = toks
            emitted[rid] += toks
            nxt.append(rid)
        live = nxt
    assert steps > 10


def test_spec_errors_name_the_pointer(pool: MaskWorkerPool) -> None:
    bad = {"type": "object", "properties": {"x": {"type": "strin"}}}
    with pytest.raises(RequestFailed) as ei:
        pool.add_request("bad-wait", bad, wait=True)
    assert ei.value.kind == "SpecError" and ei.value.pointer == "/properties/x/type"
    assert "'bad-wait'" in str(ei.value) and "/properties/x/type" in str(ei.value)
    pool.add_request("bad-json", "{not json")
    pool.add_request("good", plan_specs(1)[0])
    res = pool.step([("bad-json", [], 0, 4), ("good", [], 1, 4), ("bad-wait", [], 2, 4)])
    assert not res["bad-json"].ok and "not valid JSON" in str(res["bad-json"].error)
    assert res["bad-wait"].error.kind == "SpecError"
    assert res["good"].ok and len(res["good"].draft) == 4
    assert not pool.bitmask[0].any() and pool.bitmask[1].any()
    for rid in ("bad-json", "good", "bad-wait"):
        pool.remove_request(rid)
    assert "good" not in pool.requests()


def test_raising_matcher_and_rejected_token_fail_only_that_request(pool: MaskWorkerPool) -> None:
    specs = plan_specs(3, seed=5)
    for k, s in enumerate(specs):
        pool.add_request(f"m{k}", s)
    # m0: rollback past the start makes the matcher raise; m1: a token outside the mask
    res = pool.step([StepItem("m0", [], 0, 4, rollback=1000), ("m1", [ord("x")], 1, 4), ("m2", [], 2, 4)])
    e0, e1 = res["m0"].error, res["m1"].error
    assert isinstance(e0, RequestFailed) and e0.kind == "ValueError" and "cannot roll back" in e0.cause
    assert isinstance(e1, RequestFailed) and e1.kind == "TokenRejected" and "b'x'" in e1.cause
    assert res["m2"].ok
    # the failed requests stay failed (same error), the other one goes on
    res = pool.step([("m0", [], 0, 0), ("m2", certain_chain(res["m2"].draft), 2, 4)])
    assert res["m0"].error is not None and "cannot roll back" in str(res["m0"].error)
    assert res["m2"].ok
    for k in range(3):
        pool.remove_request(f"m{k}")


def test_bad_calls_raise_at_once(pool: MaskWorkerPool) -> None:
    pool.add_request("dup", plan_specs(1)[0])
    with pytest.raises(ValueError):
        pool.add_request("dup", plan_specs(1)[0])
    with pytest.raises(ValueError):
        pool.submit_step([("dup", [], 99, 0)])
    with pytest.raises(ValueError):
        pool.submit_step([("dup", [], 0, 0), ("other", [], 0, 0)])
    res = pool.step([("never-added", [], 3, 0), ("dup", [], 4, 0)])
    assert "unknown request" in str(res["never-added"].error)
    assert res["dup"].ok
    pool.remove_request("dup")


def test_killed_worker_fails_only_its_requests_and_is_replaced() -> None:
    """Without replays (max_replays=0) a request whose worker dies fails, and only it."""
    specs = plan_specs(6, seed=11)
    with MaskWorkerPool(2, VOCAB, max_rows=8, step_timeout=20.0, max_replays=0) as pool:
        for k, s in enumerate(specs):
            pool.add_request(k, s, wait=True)
        where = pool.requests()
        assert sorted(where.values()) == [0, 0, 0, 1, 1, 1]  # least loaded
        res = pool.step([(k, [], k, 4) for k in range(6)])
        assert all(r.ok for r in res.values())
        victim = pool.worker_pids()[0]
        os.kill(victim, signal.SIGKILL)
        t0 = time.monotonic()
        res = pool.step([(k, certain_chain(res[k].draft), k, 4) for k in range(6)])
        assert time.monotonic() - t0 < 10
        for k in range(6):
            if where[k] == 0:
                e = res[k].error
                assert isinstance(e, WorkerCrashed) and "SIGKILL" in str(e) and f"request {k!r}" in str(e)
                assert str(victim) in e.cause
                assert not pool.bitmask[k].any()
            else:
                assert res[k].ok
        assert pool.restarts == 1 and victim not in pool.worker_pids() and len(pool.worker_pids()) == 2
        # the replacement serves new requests (once it reads its pipe: new requests go to the
        # workers that are not behind, and on a busy host the replacement may still be reading
        # the messages of its promotion)
        wait_caught_up(pool, what=lambda: all_fresh(pool))
        pool.add_request("new", specs[0], wait=True)
        assert pool.requests()["new"] == 0
        assert pool.step([("new", [], 7, 4)])["new"].ok


@pytest.mark.parametrize("mirror", [True, False])
def test_killed_worker_requests_are_replayed_with_identical_masks(mirror: bool) -> None:
    """A request whose worker dies mid-life continues: served from the mirror's shadow (mirror)
    or re-added with its accepted tokens on a ready worker; its step comes back ok, with the
    rows and drafts of a run without the kill."""
    specs = plan_specs(6, seed=11)

    def run(kill: bool) -> list:
        out = []
        with MaskWorkerPool(2, VOCAB, max_rows=8, step_timeout=20.0, mirror=mirror) as pool:
            for k, s in enumerate(specs):
                pool.add_request(k, s, wait=True)
            if mirror:
                wait_caught_up(pool)
            res = pool.step([(k, [], k, 4) for k in range(6)])
            for step in range(3):
                if kill and step == 1:
                    os.kill(pool.worker_pids()[0], signal.SIGKILL)
                res = pool.step([(k, certain_chain(res[k].draft) or [pick(pool.bitmask[k], random.Random(10 * k + step))], k, 4) for k in range(6)])
                assert all(r.ok for r in res.values()), [str(r.error) for r in res.values() if not r.ok]
                out.append(([res[k].draft for k in range(6)], pool.bitmask[:6].copy()))
            moved = 3 if kill else 0
            assert pool.restarts == int(kill)
            assert (pool.promoted, pool.replays) == ((moved, 0) if mirror else (0, moved))
        return out

    clean, faulty = run(False), run(True)
    for (d1, m1), (d2, m2) in zip(clean, faulty):
        assert d1 == d2 and np.array_equal(m1, m2)


def test_request_that_keeps_killing_workers_fails_saying_so() -> None:
    specs = plan_specs(1, seed=3)
    with MaskWorkerPool(1, VOCAB, max_rows=2, step_timeout=20.0, max_replays=2) as pool:
        pool.add_request("x", specs[0], wait=True)
        for n in range(3):
            os.kill(pool.worker_pids()[0], signal.SIGKILL)
            deadline = time.monotonic() + 20
            while pool.restarts < n + 1 and time.monotonic() < deadline:
                pool.request_error("x")  # reads the pipes: notices the death
                time.sleep(0.02)
            assert pool.restarts == n + 1
            assert (pool.request_error("x") is None) == (n < 2)
        e = pool.request_error("x")
        assert isinstance(e, WorkerCrashed) and "3 times in a row" in str(e), e


def test_pool_whose_workers_all_fail_to_start_raises() -> None:
    with pytest.raises(PoolError, match="no mask worker could start"):
        MaskWorkerPool(2, _BadVocab(), max_rows=2, vocab_size=VOCAB_SIZE, start_timeout=60)


def test_hung_worker_times_out_is_killed_and_its_requests_continue() -> None:
    """A worker stopped between messages (busy with no request) misses the step budget: it is
    killed and replaced, and its request is replayed on the other worker within the step, with
    the row of the in-process matcher."""
    specs = plan_specs(2, seed=13)
    with MaskWorkerPool(2, VOCAB, max_rows=4, step_timeout=20.0) as pool:
        pool.add_request("a", specs[0], wait=True)
        pool.add_request("b", specs[1], wait=True)
        slot_a = pool.requests()["a"]
        pid = pool.worker_pids()[slot_a]
        os.kill(pid, signal.SIGSTOP)
        try:
            t0 = time.monotonic()
            res = pool.step([("a", [], 0, 4), ("b", [], 1, 4)], timeout=0.5)
            assert time.monotonic() - t0 < 3.0
        finally:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        assert res["a"].ok and res["b"].ok, (str(res["a"].error), str(res["b"].error))
        want = _local(specs[0]).next_token_mask()
        assert np.array_equal(pool.bitmask[0][: len(want)], want)
        assert pid not in pool.worker_pids() and pool.restarts == 1 and pool.replays + pool.promoted == 1
        pool.add_request("c", specs[0], wait=True)
        assert pool.step([("c", [], 2, 4)])["c"].ok


def test_vocabulary_that_cannot_build_is_a_pool_error() -> None:
    with pytest.raises(PoolError, match="needs at least one stop token"):
        MaskWorkerPool(1, BytesVocab((b"a", b"b"), ()), max_rows=2, start_timeout=30)


def test_pool_bitmask_is_a_shared_block_and_close_is_clean() -> None:
    pool = MaskWorkerPool(1, VOCAB, max_rows=3)
    assert pool.bitmask.shape == (3, (VOCAB_SIZE + 31) // 32) and pool.bitmask.dtype == np.int32
    name = pool._shm.name
    pids = pool.worker_pids()
    pool.close()
    assert not os.path.exists(f"/dev/shm/{name}")
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    with pytest.raises(PoolError):
        pool.add_request("x", {})


def test_workers_do_not_import_torch() -> None:
    code = ("import sys, factorspec.workers, factorspec.workers.worker; "
            "assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_queued_sends_keep_their_order(pool: MaskWorkerPool) -> None:
    """When a worker's pipe is (as if) full, a sender thread writes; order is kept throughout."""
    slots = list(pool._slots)
    saved = [s.capacity for s in slots]
    specs = plan_specs(4, seed=17)
    local = [_local(s) for s in specs]
    try:
        for s in slots:
            s.capacity = 1  # every message goes through the sender thread
        for k, s in enumerate(specs):
            pool.add_request(f"q{k}", s)
        toks = {k: [] for k in range(4)}
        for _ in range(6):
            res = pool.step([(f"q{k}", toks[k], k, 4) for k in range(4)])
            for k in range(4):
                r = res[f"q{k}"].raise_for_error()
                for t in toks[k]:
                    assert local[k].accept_token(t)
                assert np.array_equal(pool.bitmask[k][: len(local[k].next_token_mask())], local[k].next_token_mask())
                toks[k] = certain_chain(r.draft)[:2] or [pick(pool.bitmask[k], random.Random(k))]
        assert any(s.sender is not None for s in slots)
    finally:
        for s, c in zip(slots, saved):
            s.capacity = c
        for k in range(4):
            pool.remove_request(f"q{k}")


def test_timeout_without_kill_fails_only_the_late_requests() -> None:
    specs = plan_specs(3, seed=19)
    with MaskWorkerPool(1, VOCAB, max_rows=4, kill_on_timeout=False, assign="hash") as pool:
        for k, s in enumerate(specs):
            pool.add_request(k, s, wait=True)
        pid = pool.worker_pids()[0]
        os.kill(pid, signal.SIGSTOP)
        try:
            res = pool.step([(0, [], 0, 4), (1, [], 1, 4)], timeout=0.3)
        finally:
            os.kill(pid, signal.SIGCONT)
        assert all(isinstance(r.error, StepTimeout) for r in res.values())
        assert pool.worker_pids() == [pid] and pool.restarts == 0
        pool.bitmask[0:2] = 12345  # the caller reuses the rows at once
        res = pool.step([(0, [], 3, 4), (2, [], 2, 4)])  # the late reply of the old step is dropped
        assert isinstance(res[0].error, StepTimeout) and res[2].ok
        assert (pool.bitmask[0:2] == 12345).all()  # the late worker did not write the cancelled rows


@pytest.mark.skipif(not os.environ.get("FACTORSPEC_WORKERS_MODEL_TEST"),
                    reason="loads a real tokenizer in a worker (~30 s); set FACTORSPEC_WORKERS_MODEL_TEST=1")
def test_model_vocabulary_by_name() -> None:
    from factorspec.models import DEFAULT_MODEL, load_tokenizer
    from factorspec.models.hf_vocab import vocab_for

    spec = plan_specs(1)[0]
    with MaskWorkerPool(1, DEFAULT_MODEL, max_rows=2, start_timeout=300) as pool:
        pool.add_request("m", spec, wait=True, timeout=60)
        v = vocab_for(load_tokenizer(DEFAULT_MODEL))
        m = Matcher.for_spec(compile_spec(spec), v)
        toks: list = []
        for _ in range(4):
            r = pool.step([("m", toks, 1, 8)], timeout=60)["m"].raise_for_error()
            for t in toks:
                assert m.accept_token(t)
            assert np.array_equal(pool.bitmask[1], m.next_token_mask())
            d = m.draft(8)
            assert r.draft.tokens == d.tokens
            toks = certain_chain(r.draft) or [int(np.flatnonzero(np.unpackbits(
                pool.bitmask[1].view(np.uint8), bitorder="little"))[0])]


def test_tree_step_with_given_chain_fills_every_position(pool: MaskWorkerPool) -> None:
    """`given` tokens (drafts made elsewhere) are verified as a chain: one step writes the row of
    the root and of every given position, and flags the first rejected one."""
    from factorspec.constraint import DraftTree, fill_tree_bitmask

    spec = plan_specs(1, seed=11)[0]
    local = _local(spec)
    pool.add_request("given", spec, wait=True)
    chain = local.certain_run(12)
    assert len(chain) >= 4
    bad = chain[:3] + [STOP] + chain[3:5]  # a stop token mid-record is rejected
    h = pool.submit_step([StepItem("given", (), row=0, tree=True, given=tuple(bad))])
    first = pool.collect_drafts(h)["given"]
    assert first.ok and list(first.draft.tokens) == bad
    res = pool.collect(h)["given"].raise_for_error()
    want = np.zeros((len(bad) + 1, pool.bitmask.shape[1]), dtype=np.int32)
    valid = fill_tree_bitmask(local, DraftTree(bad, list(range(-1, len(bad) - 1)), [False] * len(bad)), want, 0)
    assert res.valid == valid == [True, True, True, True, False, False, False]
    assert np.array_equal(pool.bitmask[: len(bad) + 1], want)
    pool.remove_request("given")
