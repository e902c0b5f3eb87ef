"""CPU time (time.process_time) of every top-level solver question along a teacher decode (one
instance per city count), with the decode's digests, so that two trees can be compared on the
same machine whatever its load.

    python -m microbench.natural_plan_qtimes OUT.json 10,20,30,50   ($BE: own|auto|cpsat, default own)
"""
from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from benchmarks.natural_plan import golden_record, to_spec
from factorspec.graph import Budget, compile_spec
from factorspec.graph import solver as S
from factorspec.graph.matcher import Matcher
from microbench import natural_plan_backends as NB

LOG: list[tuple[str, float]] = []
_DEPTH = [0]


def _timed(name: str) -> None:
    """Wrap State.<name> so that each outermost call logs its CPU time."""
    orig = getattr(S.State, name)

    def w(self: Any, *a: Any, **k: Any) -> Any:
        if _DEPTH[0]:
            return orig(self, *a, **k)
        _DEPTH[0] += 1
        t = time.process_time()
        try:
            return orig(self, *a, **k)
        finally:
            _DEPTH[0] -= 1
            LOG.append((name, time.process_time() - t))
    setattr(S.State, name, w)


def _timed_root() -> None:
    orig = S.State.root.__func__  # type: ignore[attr-defined]

    def root(cls: Any, *a: Any, **k: Any) -> Any:
        t = time.process_time()
        r = orig(cls, *a, **k)
        LOG.append(("root", time.process_time() - t))
        return r
    S.State.root = classmethod(root)  # type: ignore[method-assign]


def measure(n: int, vocab: Any, backend: str) -> dict[str, Any]:
    _, p = NB.instances(n, 1)[0]
    cs = compile_spec(to_spec(p), budget=Budget(seconds=600, backend=backend))
    path = Matcher.for_spec(cs, vocab).token_path(cs.canonical_text(golden_record(p)).encode())
    cs = compile_spec(to_spec(p), budget=Budget(seconds=600, backend=backend))  # fresh memos
    LOG.clear()
    load = os.getloadavg()[0]
    c0 = time.process_time()
    r = NB.decode(Matcher.for_spec(cs, vocab), NB.teacher(path))
    total = time.process_time() - c0
    qs = sorted(t for nm, t in LOG if nm != "root")
    first = next((t for nm, t in LOG if nm != "root" and t > 0), 0.0)
    return {"id": p.id, "load": round(load, 1), "decode_cpu_s": round(total, 3),
            "root_s": round(sum(t for nm, t in LOG if nm == "root"), 3), "questions": len(qs),
            "first_nontrivial_s": round(first, 3), "max_s": round(qs[-1], 3),
            "p50_ms": round(qs[len(qs) // 2] * 1000, 2),
            "p99_ms": round(qs[min(len(qs) - 1, int(.99 * len(qs)))] * 1000, 2),
            "sum_s": round(sum(qs), 3), "over_5s": sum(t > 5 for t in qs),
            "tps": r["tokens_per_verify_step"],
            "text_sha": r["text_sha"], "mask": r["mask_trace"], "draft": r["draft_trace"],
            "stats": str(cs.problem.stats)}


def main() -> None:
    for name in ("feasible_values", "narrow", "value_bounds", "count"):
        _timed(name)
    _timed_root()
    vocab = NB._vocab()
    res = {}
    for n in (int(x) for x in sys.argv[2].split(",")):
        res[n] = measure(n, vocab, os.environ.get("BE", "own"))
        print(n, json.dumps(res[n]), flush=True)
        with open(sys.argv[1], "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
