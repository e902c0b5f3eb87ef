"""Round-trip overhead of the mask worker pool: submit_step + collect per step, against the
workers' own compute time for that step.

    python -m benchmarks.pool_overhead --workers 2 --requests 8 64 --steps 100

Each request advances one token per step (the first draft token, or the first allowed token)
with a small byte-level vocabulary and NATURAL PLAN specs, so the numbers isolate the pool's
cost (pickling, pipes, wake-ups, shared-memory writes) from the tokenizer's size."""
from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np

from factorspec.workers.pool import MaskWorkerPool
from factorspec.workers.protocol import StepItem
from factorspec.workers.vocab_recipes import BytesVocab

_MERGES = [b'"', b'": ', b', ', b'{"', b'"}', b'day', b'city', b'": "', b'", "', b'}, {', b'[{', b'}]']
TOKENS = tuple([bytes([i]) for i in range(256)] + _MERGES + [b""])
VOCAB = BytesVocab(TOKENS, (len(TOKENS) - 1,), 320, "bench-bytes")


def _specs(count: int, n_cities: int, seed: int) -> list[dict]:
    from benchmarks.natural_plan import generate, parse_instance, to_spec

    return [to_spec(parse_instance(f"bench{k}", raw)) for k, raw in enumerate(generate(n_cities, seed, count))]


def _first_allowed(row: np.ndarray) -> int:
    w = int(np.flatnonzero(row)[0])
    word = int(row[w]) & 0xFFFFFFFF
    return w * 32 + ((word & -word).bit_length() - 1)


def measure(pool: MaskWorkerPool, n_requests: int, steps: int, width: int = 8, n_cities: int = 6,
            seed: int = 0) -> dict[str, Any]:
    specs = _specs(n_requests, n_cities, seed)
    rids = [f"b{seed}_{k}" for k in range(n_requests)]
    for rid, s in zip(rids, specs):
        pool.add_request(rid, s, wait=True)
    pending: dict[Any, list] = {rid: [] for rid in rids}
    rtt, submit, worker, serial = [], [], [], []
    to_worker, from_worker, decode = [], [], []
    live = list(rids)
    for _ in range(steps):
        if not live:
            break
        items = [StepItem(rid, pending[rid], k, width) for k, rid in enumerate(live)]
        t0 = time.perf_counter()
        h = pool.submit_step(items)
        t1 = time.perf_counter()
        res = pool.collect(h)
        t2 = time.perf_counter()
        rtt.append(t2 - t1 + (t1 - t0))
        submit.append(t1 - t0)
        worker.append(max(h.worker_s.values()) if h.worker_s else 0.0)
        serial.append(sum(r.compute_s for r in res.values()))
        if h.spans:
            to_worker.append(statistics.mean(b - t1 for b, _e, _r in h.spans.values()))
            from_worker.append(statistics.mean(r_ - e for _b, e, r_ in h.spans.values()))
            decode.append(h.collected - max(r_ for _b, _e, r_ in h.spans.values()))
        nxt = []
        for k, rid in enumerate(live):
            r = res[rid].raise_for_error()
            if r.terminated:
                pool.remove_request(rid)
                continue
            pending[rid] = [r.draft.tokens[0]] if len(r.draft) else [_first_allowed(pool.bitmask[k])]
            nxt.append(rid)
        live = nxt
    for rid in live:
        pool.remove_request(rid)
    ms = lambda xs: 1e3 * statistics.mean(xs)  # noqa: E731
    over = [a - b for a, b in zip(rtt, worker)]
    return {"requests": n_requests, "steps": len(rtt), "rtt_ms": ms(rtt),
            "rtt_p90_ms": 1e3 * sorted(rtt)[int(0.9 * (len(rtt) - 1))], "submit_ms": ms(submit),
            "worker_ms": ms(worker), "overhead_ms": ms(over), "serial_compute_ms": ms(serial),
            "to_worker_ms": ms(to_worker), "from_worker_ms": ms(from_worker), "parent_read_ms": ms(decode)}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--requests", type=int, nargs="+", default=[8, 64])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--width", type=int, default=8)
    ap.add_argument("--cities", type=int, default=6)
    a = ap.parse_args(argv)
    with MaskWorkerPool(a.workers, VOCAB, max_rows=max(a.requests)) as pool:
        measure(pool, min(a.requests), 10, a.width, a.cities, seed=99)  # warm up
        for n in a.requests:
            r = measure(pool, n, a.steps, a.width, a.cities)
            print(f"{a.workers} workers, {n:4d} requests, {r['steps']} steps: round trip {r['rtt_ms']:.3f} ms "
                  f"(p90 {r['rtt_p90_ms']:.3f}), submit {r['submit_ms']:.3f} ms, worker compute "
                  f"{r['worker_ms']:.3f} ms (serial {r['serial_compute_ms']:.3f}), overhead {r['overhead_ms']:.3f} ms "
                  f"[wake-up to worker {r['to_worker_ms']:.3f}, reply to parent {r['from_worker_ms']:.3f}, "
                  f"parent reading {r['parent_read_ms']:.3f}]")


if __name__ == "__main__":
    main()
