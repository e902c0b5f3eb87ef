"""Step latency of the mask worker pool when workers die mid-step (issue #14): the same requests
decoded twice, without faults and with workers SIGKILLed at random moments of random steps; the
tokens must be identical, and the latency of the steps hit by a kill is set against the median.

    python -m benchmarks.pool_faults --vocab test --workers 4 --requests 256 [--settle] [--mirror]
    python -m benchmarks.pool_faults --vocab smollm2-135m --workers 3 --requests 48 [--settle] [--mirror]

--mirror makes the spare mirror every request, so that a dead worker's requests are served from its
shadows instead of being re-added (compiled again) on the ready workers; --settle lets the pool
catch up before each kill (outside the timed steps): faults rarer than the time to rebuild the
mirror; without it kills may come faster than that and the requests are re-added.

A request's tokens at a step come from its own seeded rng (the draft's certain chain, else an
allowed token, steering toward the end of the record), so both runs make the same choices.
Figures: p50 of every step of the faulty run; for each kill the step it hit and the one after,
in ms, and as a multiple of the p50 and of the same step of the run without faults."""
from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
import time
from typing import Any

import numpy as np

from factorspec.graph.token_vocab import unpack_mask
from factorspec.workers import BytesVocab, MaskWorkerPool, ModelVocab, StepItem

_MERGES = [b'"', b'": ', b', ', b'{"', b'"}', b'day', b'city', b'": "', b'", "', b'}, {', b'[{', b'}]']
_TOKENS = tuple([bytes([i]) for i in range(256)] + _MERGES + [b""])
TEST_VOCAB = BytesVocab(_TOKENS, (len(_TOKENS) - 1,), 320, "bench-bytes")


def _specs(count: int, seed: int) -> list[dict]:
    from benchmarks.natural_plan import generate, parse_instance, to_spec

    out = []
    for n in (3, 4):
        out += [to_spec(parse_instance(f"f{n}_{k}", raw)) for k, raw in enumerate(generate(n, seed, count // 2 + 1))]
    return out[:count]


def _pick(row: np.ndarray, size: int, stops: set, quotes: set, rng: random.Random) -> int:
    ids = [int(i) for i in unpack_mask(row, size)]
    if not ids:
        raise RuntimeError("an empty mask")
    if stops.intersection(ids):
        return min(stops.intersection(ids))
    q = sorted(quotes.intersection(ids))
    if q and rng.random() < 0.5:
        return q[0]
    return rng.choice(ids)


def _settle(pool: MaskWorkerPool, limit: float = 60.0) -> None:
    """Faults rarer than a rebuild: wait (outside the timed steps) until every worker and the
    mirror have read everything sent to them."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        procs = pool._slots + pool._spares
        if all(p.ready and not p.inflight for p in procs if not p.dead) and (
                not pool.mirror or pool.mirror_caught_up()) and (not pool.standby or pool.standby_caught_up()):
            return
        pool.request_error("-")
        time.sleep(0.005)


def run(factory: Any, specs: list, workers: int, kill_rate: float, seed: int, spares: int, mirror: bool,
        settle: bool, info: dict, forward_s: float = 0.0, standby: bool = True) -> tuple[dict, list, list]:
    """Decode every request to its end; returns (tokens per request, step seconds, indices of the
    steps a kill hit)."""
    rng = random.Random(seed)
    n = len(specs)
    t0 = time.monotonic()
    with MaskWorkerPool(workers, factory, max_rows=n, step_timeout=60.0, start_timeout=600, spares=spares,
                        mirror=mirror, standby=standby) as pool:
        info["start_s"] = time.monotonic() - t0
        vocab = info["vocab"]
        stops, quotes = set(vocab.stop_ids), {t for t, b in enumerate(vocab.token_bytes) if b == b'"'}
        for rid, s in enumerate(specs):
            pool.add_request(rid, s, wait=True, timeout=60)
        pending: dict = {rid: [] for rid in range(n)}
        emitted: dict = {rid: [] for rid in range(n)}
        steps = dict.fromkeys(range(n), 0)
        live = list(range(n))
        times: list = []
        hit: list = []
        work: list = info.setdefault("work", [])  # per step: worker compute ms per slot
        cpu: list = info.setdefault("cpu", [])  # per step: the most CPU seconds one worker spent on it
        readd: list = info.setdefault("readd", [])  # per step: CPU seconds of re-adds that came back during it
        # per step: the most CPU one worker spent on it, its re-adds counted (what a kill adds)
        cpu_all: list = info.setdefault("cpu_all", [])
        by_slot: dict = {}
        dts: list = info.setdefault("dt", [])  # per step: rid -> its compute seconds in its worker
        moved: list = info.setdefault("moved", [])  # per step: the requests whose part was resent
        killed_at: list = info.setdefault("killed_at", [])  # per kill: perf_counter of the SIGKILL
        while live:
            assert len(times) < 2000, "runaway"
            kill = kill_rate > 0 and len(times) >= 2 and rng.random() < kill_rate
            if kill and settle:
                _settle(pool)
            t = time.perf_counter()
            h = pool.submit_step([StepItem(rid, pending[rid], rid, 8) for rid in live])
            if kill:  # mid-step, at a random moment of the workers' computation
                delay = rng.random() * 0.01
                time.sleep(delay)
                os.kill(rng.choice(pool.worker_pids()), signal.SIGKILL)
                killed_at.append(time.perf_counter())
            if forward_s > 0:  # the model's forward: the caller waits on the accelerator, the CPU is free
                time.sleep(max(0.0, forward_s - (delay if kill else 0.0)))
            res = pool.collect(h)
            times.append(time.perf_counter() - t)
            work.append({k: round(1e3 * v, 1) for k, v in sorted(h.worker_s.items())})
            cpu.append(max(h.worker_cpu.values(), default=0.0))
            readd.append(pool.replay_cpu_s - sum(readd))
            now = dict(pool.replay_cpu_by_slot)
            cpu_all.append(max((h.worker_cpu.get(k, 0.0) + now.get(k, 0.0) - by_slot.get(k, 0.0)
                                for k in set(h.worker_cpu) | set(now)), default=0.0))
            by_slot = now
            dts.append({rid: r.compute_s for rid, r in res.items()})
            info.setdefault("parts_at", []).append((dict(pool.replay_parts), pool.replays, pool.held_readds))
            moved.append(set(h.replayed))
            if kill:
                hit.append(len(times) - 1)
            nxt = []
            for rid in live:
                r = res[rid].raise_for_error()
                if r.terminated:
                    pool.remove_request(rid)
                    continue
                steps[rid] += 1
                chain = []
                for k, (tok, par, cert) in enumerate(zip(r.draft.tokens, r.draft.parents, r.draft.certain)):
                    if par != k - 1 or not cert:
                        break
                    chain.append(tok)
                pending[rid] = chain or [_pick(pool.bitmask[rid], vocab.vocab_size, stops, quotes,
                                               random.Random(rid * 7919 + steps[rid]))]
                emitted[rid] += pending[rid]
                nxt.append(rid)
            live = nxt
        info["restarts"], info["replays"], info["promoted"] = pool.restarts, pool.replays, pool.promoted
        info["replay_tokens"] = pool.replay_tokens
        info["resumed"], info["ckpt_cpu"], info["ckpts"] = pool.resumed, pool.checkpoint_cpu_s, pool.checkpoints
        info["deaths"], info["parts"], info["held"] = list(pool.deaths), dict(pool.replay_parts), pool.held_readds
        info["run_s"] = time.monotonic() - t0
    return emitted, times, hit


def _report(a: Any, label: str, ci: dict, fi: dict, clean: dict, faulty: dict, ctimes: list, ftimes: list,
            hit: list) -> bool:
    same = sum(clean[r] == faulty[r] for r in clean)
    p50 = statistics.median(ftimes)
    print(f"== {label}: {a.workers} workers + {a.spares} spare, {a.requests} requests; {len(ftimes)} steps, "
          f"{len(hit)} kills, restarts {fi['restarts']}, served from the mirror {fi['promoted']}, re-added "
          f"{fi['replays']} (replaying {fi['replay_tokens']} tokens; {fi['resumed']} resumed at a checkpoint; "
          f"{fi['held']} onto specs the standby held); token-identical to the run without faults: "
          f"{same}/{len(clean)}")
    print(f"mirror {'on' if a.mirror and a.spares else 'off'}, {'settled' if a.settle else 'unsettled'} kills, "
          f"forward {a.forward_ms:g} ms a step; run without faults {ci['run_s']:.1f} s, with {fi['run_s']:.1f} s; "
          f"p50 step {1e3 * p50:.1f} ms (without faults {1e3 * statistics.median(ctimes):.1f} ms); "
          f"max {1e3 * max(ftimes):.1f} ms")
    cpu50 = statistics.median(fi["cpu"])
    print(f"CPU of the busiest worker a step (what contention does not stretch): p50 {1e3 * cpu50:.1f} ms "
          f"(without faults {1e3 * statistics.median(ci['cpu']):.1f}); sum over workers a step p50 "
          f"{1e3 * statistics.median(sum(d.values()) for d in fi['dt']):.1f} ms; checkpoints, spec images and "
          f"held specs written/loaded when idle: {fi['ckpts']} checkpoints, {fi['ckpt_cpu']:.2f} s of worker CPU "
          f"(run without faults {ci['ckpts']}, {ci['ckpt_cpu']:.2f} s)")
    worst = worst_cpu = worst_all = 0.0
    for kk, i in enumerate(hit):
        prev = fi["parts_at"][i - 1] if i else ({"spec": 0.0, "resume": 0.0, "replay": 0.0}, 0, 0)
        nxt = fi["parts_at"][min(i + 1, len(fi["parts_at"]) - 1)]
        parts = {k: 1e3 * (nxt[0][k] - prev[0][k]) for k in nxt[0]}
        death = [d for d in fi["deaths"] if d[0] >= fi["killed_at"][kk]][:1]
        seen = f"{1e3 * (death[0][0] - fi['killed_at'][kk]):.1f} ms after the kill, {1e3 * death[0][1]:.1f} ms " \
               f"in the parent, {death[0][2]} moved ({death[0][3]} onto held specs)" if death else "not seen"
        print(f"  kill {kk + 1} at step {i}: death seen {seen}; re-adds in steps {i}-{i + 1}: {nxt[1] - prev[1]} "
              f"(CPU ms: spec {parts['spec']:.1f}, resume {parts['resume']:.1f}, tokens after the checkpoint "
              f"{parts['replay']:.1f})")
        for j in (i, i + 1):
            if j >= len(ftimes):
                continue
            base = ctimes[j] if j < len(ctimes) else float("nan")
            worst = max(worst, ftimes[j] / p50)
            worst_cpu = max(worst_cpu, fi["cpu"][j] / cpu50)
            worst_all = max(worst_all, fi["cpu_all"][j] / cpu50)
            mv = fi["moved"][j]
            mv_f = sum(fi["dt"][j].get(r, 0.0) for r in mv)
            mv_c = sum(ci["dt"][j].get(r, 0.0) for r in mv) if j < len(ci["dt"]) else float("nan")
            tot_f, tot_c = sum(fi["dt"][j].values()), sum(ci["dt"][j].values()) if j < len(ci["dt"]) else 0.0
            print(f"    step {j:3d} ({'killed mid-step' if j == i else 'the next one'}): {1e3 * ftimes[j]:7.1f} ms = "
                  f"{ftimes[j] / p50:5.2f}x p50, {ftimes[j] / base:5.2f}x the same step without faults; "
                  f"busiest worker's CPU {1e3 * fi['cpu'][j]:.1f} ms = {fi['cpu'][j] / cpu50:.2f}x its p50 "
                  f"({1e3 * fi['cpu_all'][j]:.1f} ms = {fi['cpu_all'][j] / cpu50:.2f}x with its re-adds, whose CPU "
                  f"is {1e3 * fi['readd'][j]:.0f} ms); all requests' compute {1e3 * tot_f:.1f} ms (without faults "
                  f"{1e3 * tot_c:.1f}), of which the {len(mv)} moved {1e3 * mv_f:.1f} ms (the same requests "
                  f"without faults {1e3 * mv_c:.1f}); worker compute ms {fi['work'][j]}")
    print(f"worst step hit by or right after a kill: {worst:.2f}x p50 (wall); busiest worker's CPU {worst_cpu:.2f}x "
          f"its p50, {worst_all:.2f}x with its re-adds")
    return same == len(clean)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vocab", default="test", help="'test' (a byte-level vocabulary) or a model name")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--requests", type=int, default=256)
    ap.add_argument("--kill-rate", type=float, default=0.08, help="chance that a step gets a kill")
    ap.add_argument("--spares", type=int, default=1)
    ap.add_argument("--mirror", action="store_true", help="the spare mirrors every request (MaskWorkerPool mirror)")
    ap.add_argument("--standby", choices=("on", "off", "both"), default="on",
                    help="mirror off: the spare holds every request's spec (MaskWorkerPool standby); 'both' runs "
                         "the faulty run without it, then with it, and again without and with (same load)")
    ap.add_argument("--settle", action="store_true",
                    help="before each kill, let the pool (the mirror, the standby) catch up: faults rarer than a "
                         "rebuild")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--forward-ms", type=float, default=0.0,
                    help="a simulated forward pass per step: the caller sleeps this long between submit and "
                         "collect (the CPU is free then, as while an accelerator runs the model)")
    a = ap.parse_args(argv)
    if a.vocab == "test":
        factory: Any = TEST_VOCAB
        vocab = TEST_VOCAB()
    else:
        from factorspec.models import load_tokenizer
        from factorspec.models.hf_vocab import vocab_for

        factory = ModelVocab(a.vocab)
        vocab = vocab_for(load_tokenizer(a.vocab))
    specs = _specs(a.requests, a.seed)
    print(f"vocab {a.vocab} ({vocab.vocab_size} tokens); load {os.getloadavg()}")
    ci: dict = {"vocab": vocab}
    clean, ctimes, _ = run(factory, specs, a.workers, 0.0, a.seed, a.spares, a.mirror, False, ci, a.forward_ms / 1e3,
                           a.standby != "off")
    ok = True
    plan = {"on": [True], "off": [False], "both": [False, True, False, True]}[a.standby]
    for k, sb in enumerate(plan):
        fi: dict = {"vocab": vocab}
        faulty, ftimes, hit = run(factory, specs, a.workers, a.kill_rate, a.seed, a.spares, a.mirror, a.settle, fi,
                                  a.forward_ms / 1e3, sb)
        ok = _report(a, f"run {k + 1}, standby {'on' if sb else 'off'} (load {os.getloadavg()})", ci, fi, clean,
                     faulty, ctimes, ftimes, hit) and ok
    if not ok:
        raise SystemExit("tokens differ from the run without faults")


if __name__ == "__main__":
    main()
