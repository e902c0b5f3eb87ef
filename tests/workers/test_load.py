"""Load: 256 concurrent requests stepped to completion through 4 workers that are SIGKILLed at
random moments. Every request ends complete and valid, or with a clear error naming it; none is
lost and the run is bounded in time."""
from __future__ import annotations

import os
import random
import signal
import time

from factorspec.graph import compile_spec
from factorspec.graph.token_vocab import unpack_mask
from factorspec.workers import MaskWorkerPool, RequestFailed, StepItem
from worker_helpers import VOCAB, VOCAB_SIZE, certain_chain, decode, example_spec, pick, plan_specs

N = 256


def _kill_one(pool: MaskWorkerPool, rng: random.Random, log: list) -> None:
    pids = pool.worker_pids()
    if pids:
        pid = rng.choice(pids)
        try:
            os.kill(pid, signal.SIGKILL)
            log.append(pid)
        except ProcessLookupError:
            pass


def test_256_requests_with_random_worker_kills() -> None:
    """Without replays (max_replays=0): failures stay local and are named."""
    rng = random.Random(2024)
    specs: list = plan_specs(N - 16, seed=42)
    specs += [example_spec("meeting_schedule"), example_spec("seating_plan"),
              example_spec("trip_plan"), example_spec("budget_allocation")] * 2
    # (n required: an optional property whose schema admits no value is left out, errors.EmptySchema)
    specs += [{"type": "object", "properties": {"n": {"type": "integer", "minimum": 5, "maximum": 1}},
               "required": ["n"]},
              {"type": "array", "items": {"type": "strin"}}, "{oops", {"x-factorspec": {"relations": ["n ==="]}}]
    raising = set(range(len(specs), N))  # these roll back past their start at their 3rd step
    specs += plan_specs(len(raising), seed=43)
    assert len(specs) == N
    malformed = set(range(N - 16 + 8, N - 4))

    t_start = time.monotonic()
    with MaskWorkerPool(4, VOCAB, max_rows=N, step_timeout=30.0, max_replays=0) as pool:
        for rid, s in enumerate(specs):
            pool.add_request(rid, s)
        pending = {rid: [] for rid in range(N)}
        emitted: dict[int, list] = {rid: [] for rid in range(N)}
        steps_of = {rid: 0 for rid in range(N)}
        outcome: dict[int, object] = {}
        kills: list = []
        rounds = 0
        step_times = []
        while len(outcome) < N:
            rounds += 1
            assert rounds < 500, "runaway"
            live = [rid for rid in range(N) if rid not in outcome]
            items = [StepItem(rid, pending[rid], rid, 16, 1000 if rid in raising and steps_of[rid] == 2 else 0)
                     for rid in live]
            t0 = time.perf_counter()
            h = pool.submit_step(items)
            mode = rng.random()
            if rounds == 3 or mode < 0.04:  # mid-step, at a random moment of the computation
                time.sleep(rng.random() * 0.02)
                _kill_one(pool, rng, kills)
            res = pool.collect(h, timeout=30)
            step_times.append(time.perf_counter() - t0)
            if rounds == 7 or 0.04 <= mode < 0.06:  # between steps
                _kill_one(pool, rng, kills)
            assert list(res) == live
            for rid in live:
                r = res[rid]
                steps_of[rid] += 1
                if not r.ok:
                    outcome[rid] = r.error
                    pool.remove_request(rid)
                    continue
                if r.terminated:
                    outcome[rid] = "complete"
                    pool.remove_request(rid)
                    continue
                row = pool.bitmask[rid]
                chain = certain_chain(r.draft)
                if chain and rng.random() < 0.8:
                    toks = chain if rng.random() < 0.7 else chain[: rng.randint(1, len(chain))]
                else:
                    toks = [pick(row, rng)]
                assert toks[0] in set(unpack_mask(row, VOCAB_SIZE).tolist())
                pending[rid] = toks
                emitted[rid] += toks
        elapsed = time.monotonic() - t_start
        restarts = pool.restarts

    compiled: dict = {}
    counts: dict[str, int] = {}
    for rid in range(N):
        o = outcome[rid]
        if o == "complete":
            key = repr(specs[rid])
            cs = compiled.get(key) or compiled.setdefault(key, compile_spec(specs[rid]))
            assert cs.check(decode(emitted[rid])) == [], rid
            counts["complete"] = counts.get("complete", 0) + 1
            assert rid not in malformed and rid not in raising
            continue
        assert isinstance(o, RequestFailed), (rid, o)
        assert f"request {rid!r} failed: " in str(o) and o.cause
        counts[o.kind] = counts.get(o.kind, 0) + 1
        if rid in malformed:
            assert o.kind in ("SpecError", "EmptySchema", "RelationError", "WorkerCrashed"), o
        elif rid in raising:
            assert o.kind in ("ValueError", "WorkerCrashed"), o
        else:
            assert o.kind == "WorkerCrashed", o
            assert "SIGKILL" in o.cause
    print(f"\n256 requests in {elapsed:.1f} s, {rounds} rounds, kills {len(kills)}, restarts {restarts}, "
          f"outcomes {counts}, mean step {1e3 * sum(step_times) / len(step_times):.1f} ms")
    assert len(kills) >= 2 and 1 <= restarts <= len(kills)
    assert counts.get("complete", 0) >= N // 5
    assert counts.get("WorkerCrashed", 0) > 0
    assert counts.get("SpecError", 0) + counts.get("RelationError", 0) >= 1
    assert elapsed < 90


def _decode_all(specs: list, kill_rate: float, seed: int) -> tuple[dict, list, list, int]:
    """Step every request to completion; tokens chosen by a per-(request, step) rng, so a run
    with kills must give the same tokens as one without. Returns (emitted, step seconds,
    rounds right after a kill, replays)."""
    rng = random.Random(seed)
    n = len(specs)
    with MaskWorkerPool(4, VOCAB, max_rows=n, step_timeout=30.0) as pool:
        for rid, s in enumerate(specs):
            pool.add_request(rid, s)
        pending: dict[int, list] = {rid: [] for rid in range(n)}
        emitted: dict[int, list] = {rid: [] for rid in range(n)}
        steps_of = {rid: 0 for rid in range(n)}
        done: set = set()
        times: list = []
        after_kill: list = []
        rounds = 0
        while len(done) < n:
            rounds += 1
            assert rounds < 500, "runaway"
            live = [rid for rid in range(n) if rid not in done]
            t0 = time.perf_counter()
            h = pool.submit_step([StepItem(rid, pending[rid], rid, 16) for rid in live])
            killed = kill_rate > 0 and (rounds in (3, 9) or rng.random() < kill_rate)
            if killed:  # mid-step, at a random moment of the computation
                time.sleep(rng.random() * 0.01)
                _kill_one(pool, rng, [])
            res = pool.collect(h, timeout=30)
            times.append(time.perf_counter() - t0)
            if killed:
                after_kill.append(len(times) - 1)
            for rid in live:
                r = res[rid]
                assert r.ok, (rid, str(r.error))
                steps_of[rid] += 1
                if r.terminated:
                    done.add(rid)
                    pool.remove_request(rid)
                    continue
                chain = certain_chain(r.draft)
                toks = chain if chain else [pick(pool.bitmask[rid], random.Random(rid * 1000 + steps_of[rid]))]
                pending[rid] = toks
                emitted[rid] += toks
        replays = pool.replays
    return emitted, times, after_kill, replays


def test_fault_injection_256_requests_identical_to_a_run_without_faults() -> None:
    """Issue #14: 256 requests, workers SIGKILLed at random mid-step: every record completes,
    is valid and token-identical to the run without faults; the latency of the steps with a kill
    is printed (measured, not asserted: benchmarks/pool_faults.py sets it against the median)."""
    specs: list = plan_specs(N - 8, seed=42)
    specs += [example_spec("meeting_schedule"), example_spec("seating_plan"),
              example_spec("trip_plan"), example_spec("budget_allocation")] * 2
    t0 = time.monotonic()
    clean, _, _, r0 = _decode_all(specs, 0.0, 7)
    t1 = time.monotonic()
    faulty, times, after_kill, replays = _decode_all(specs, 0.08, 7)
    t2 = time.monotonic()
    assert r0 == 0 and replays > 0 and len(after_kill) >= 2
    for rid in range(N):
        assert faulty[rid] == clean[rid], rid
    compiled: dict = {}
    for rid in range(N):
        key = repr(specs[rid])
        cs = compiled.get(key) or compiled.setdefault(key, compile_spec(specs[rid]))
        assert cs.check(decode(clean[rid])) == [], rid
    med = sorted(times)[len(times) // 2]
    worst = max(times[i] for i in after_kill)
    print(f"\nclean run {t1 - t0:.1f} s, faulty run {t2 - t1:.1f} s, {len(times)} steps, kills {len(after_kill)}, "
          f"replays {replays}, median step {1e3 * med:.1f} ms, steps with a kill "
          f"{[round(1e3 * times[i], 1) for i in after_kill]} ms (worst {worst / med:.2f}x the median)")
    # no step waits for a process to start (the moved requests go to ready workers), but each
    # moved spec is compiled again there (mirror=False, the default): on a loaded one-core
    # machine that is 0.3-2 s for the ~64 requests of a dead worker; see benchmarks/pool_faults.py
    assert worst < 30
