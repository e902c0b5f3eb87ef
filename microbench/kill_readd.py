"""The CPU of a kill's re-add path, in process (thread CPU time, so what host load does not
stretch), per kill step: a quarter of the requests of one worker move to a new worker, either
loading their spec images at the re-add (the path before the standby) or onto specs a standby
loaded when idle (`Worker.hold`); both resume the request's latest checkpoint. Set against the
same requests' step on the worker that held them (warm), which is what the dead worker would
have spent.

    python -m microbench kill_readd [--requests 256] [--steps 5,13,16,18]

Requests: benchmarks.pool_faults' natural-plan specs, decoded as there (the draft's certain
chain, else a seeded allowed token); a checkpoint is written after every step (the pool's
latest; in the pool one can lag a step)."""
from __future__ import annotations

import argparse
import gc
import random
import time
from typing import Any

import numpy as np

from benchmarks.pool_faults import TEST_VOCAB, _pick, _specs
from factorspec.workers import StepItem
from factorspec.workers.worker import Worker


def _worker(vocab: Any, rows: int) -> Worker:
    w = Worker(vocab)
    w.bitmask = np.zeros((rows, vocab.words), dtype=np.int32)
    return w


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=256)
    ap.add_argument("--steps", default="5,13,16,18", help="the kill steps (comma separated)")
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args(argv)
    kills = sorted(int(x) for x in a.steps.split(","))
    V = TEST_VOCAB()
    n = a.requests
    specs = _specs(n, a.seed)
    stops, quotes = set(V.stop_ids), {t for t, b in enumerate(V.token_bytes) if b == b'"'}
    T = time.thread_time
    W = _worker(V, n)
    for rid, s in enumerate(specs):
        assert W.add(rid, s) is None
    images = {}
    while W.images_due:
        r = W.image()
        if r is not None:
            images[r[2]] = r[3]
    hist: dict = {rid: [] for rid in range(n)}
    ck: dict = {}
    pending: dict = {rid: [] for rid in range(n)}
    steps = dict.fromkeys(range(n), 0)
    live = list(range(n))
    print(f"{n} requests on one worker; at each kill step the quarter rid % 4 == 0 moves (CPU ms)")
    for s in range(kills[-1] + 1):
        W.step_id = s
        items = {rid: StepItem(rid, tuple(pending[rid]), rid, 8) for rid in live}
        if s in kills:
            mv = [r for r in live if r % 4 == 0]
            line = []
            for mode in ("image", "held"):
                S = _worker(V, n)
                S.step_id = s
                gc.collect()
                c0 = T()
                if mode == "held":
                    S.hold([(r, specs[r], images[r]) for r in mv])
                    while S.hold_due:
                        S.load_held(lambda: False)
                c1 = T()
                parts = [0.0, 0.0, 0.0]
                for r in mv:
                    assert S.add(r, specs[r], None, tuple(hist[r]), False, None if mode == "held" else images[r],
                                 ck.get(r)) is None
                    parts = [p + q for p, q in zip(parts, S.add_parts[:3])]
                c2 = T()
                S.step(s, [items[r] for r in mv])
                c3 = T()
                line.append(f"{mode}: re-adds {1e3 * (c2 - c1):.1f} (spec {1e3 * parts[0]:.1f}, resume "
                            f"{1e3 * parts[1]:.1f}, tokens after the checkpoint {1e3 * parts[2]:.1f}), their step "
                            f"{1e3 * (c3 - c2):.1f}, sum {1e3 * (c3 - c1):.1f}"
                            + (f" [held specs loaded before, when idle: {1e3 * (c1 - c0):.1f}]"
                               if mode == "held" else ""))
            c0 = T()
            out = W.step(s, [items[r] for r in mv])
            c1 = T()
            out += W.step(s, [items[r] for r in live if r % 4])
            c2 = T()
            print(f"step {s}: {len(mv)} moved of {len(live)} live; on the original worker their step "
                  f"{1e3 * (c1 - c0):.1f} (the other {len(live) - len(mv)}: {1e3 * (c2 - c1):.1f})")
            for x in line:
                print("   ", x)
        else:
            out = W.step(s, list(items.values()))
        for rid, it in items.items():
            hist[rid] += list(it.tokens)
        rep = W.checkpoints(lambda: False)
        for rid, _sid, k, blob in (rep[2] if rep else []):
            ck[rid] = (k, blob)
        nxt = []
        for rid, ok, payload in out:
            assert ok, payload
            d, term, _ = payload
            if term:
                continue
            steps[rid] += 1
            chain = []
            for k, (tok, par, cert) in enumerate(zip(d.tokens, d.parents, d.certain)):
                if par != k - 1 or not cert:
                    break
                chain.append(tok)
            pending[rid] = chain or [_pick(W.bitmask[rid], V.vocab_size, stops, quotes,
                                           random.Random(rid * 7919 + steps[rid]))]
            nxt.append(rid)
        live = sorted(nxt)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
