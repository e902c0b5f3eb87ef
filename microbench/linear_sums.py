"""Linear relations over long fixed-length arrays (issue #14): sum, count and weighted sums.

    python -m microbench linear_sums [--sizes 200,1000,2000,5000] [--backends own,cpsat,auto]
                                     [--walk-bytes 60] [--out microbench/results/linear_sums]

For each family and size N (an array `a` of exactly N integers 0..10 and a `total`), each backend
gets a fresh compiled spec and these questions, timed one by one under one budget each
(`BUDGET_S`; a question past it is reported as a budget hit, never silently):
  solve           one valid record (checked with `check`, which is timed too)
  fv a[0], a[N-1] `feasible_values` of the first and last item (11 values each)
  exists total    `State.exists(total, (lo, hi))` for a window that holds the witness's total
                  and one past the greatest reachable total (refuted by propagation)
  walk            the first `--walk-bytes` bytes of the solved record's text through the token
                  matcher (byte vocabulary), every byte in the mask: ms per byte
Results go to <out>.json and <out>.md with the load average (`os.getloadavg`) of each row.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

from factorspec.errors import BudgetExceeded
from factorspec.graph import compile_spec
from factorspec.graph.matcher import Matcher
from factorspec.graph.solver import Budget
from factorspec.graph.token_vocab import TokenVocab, unpack_mask

BUDGET_S = 60.0
STOP = 256
VOCAB = TokenVocab([bytes([i]) for i in range(256)] + [b""], [STOP], 264, name="bytes")


def spec(family: str, n: int) -> dict:
    rels = {
        "sum": ["total == sum(a[*])", "total >= 25"],
        "pinned sum": ["total == sum(a[*])", f"total == {7 * n // 2}"],
        "count": ["total == count(x >= 5 for x in a[*])", f"total >= {n // 3}"],
        "weighted": ["total == sum(3 * x - 1 for x in a[*])", f"total >= {n}"],
    }[family]
    return {"type": "object", "properties": {
        "a": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 10},
              "minItems": n, "maxItems": n},
        "total": {"type": "integer", "minimum": -10**6, "maximum": 10**6}}, "required": ["a", "total"],
        "x-factorspec": {"relations": rels}}


def timed(fn: Callable[[], Any]) -> tuple[Optional[float], Any]:
    t = time.perf_counter()
    try:
        out = fn()
    except BudgetExceeded as e:
        return None, f"BudgetExceeded: {e}"
    return round((time.perf_counter() - t) * 1000, 2), out


def walk(cs: Any, text: str, nbytes: int) -> tuple[float, int]:
    """ms per byte over the first nbytes of text through the matcher (every byte must be allowed)."""
    m = Matcher.for_spec(cs, VOCAB)
    data = text.encode()[:nbytes]
    t = time.perf_counter()
    for b in data:
        allowed = {int(i) for i in unpack_mask(m.next_token_mask(), VOCAB.vocab_size)}
        assert b in allowed, (bytes(data), b)
        assert m.accept_token(b)
    return round((time.perf_counter() - t) * 1000 / max(1, len(data)), 3), len(data)


def row(family: str, n: int, backend: str, walk_bytes: int) -> dict:
    out: dict[str, Any] = {"family": family, "n": n, "backend": backend, "load": round(os.getloadavg()[0], 1)}
    t = time.perf_counter()
    cs = compile_spec(spec(family, n), Budget(backend=backend, seconds=BUDGET_S))
    out["compile_ms"] = round((time.perf_counter() - t) * 1000, 1)
    ms, rec = timed(cs.solve)
    out["solve_ms"] = ms
    if ms is None:
        out["error"] = rec
        return out
    ms, bad = timed(lambda: cs.check(rec))
    out["check_ms"], out["check_ok"] = ms, bad == []
    st = cs.root()
    for label, path in (("fv_first_ms", ("a", 0)), ("fv_last_ms", ("a", n - 1))):
        ms, vals = timed(lambda path=path: st.feasible_values(cs.var_of[path].id))
        out[label] = ms
        out[label.replace("_ms", "_values")] = vals if isinstance(vals, str) else len(vals)
    tv = cs.var_of[("total",)]
    tot = rec["total"]
    ms, yes = timed(lambda: st.exists(tv.id, (tot - 5, tot + 5)))
    out["exists_ms"], out["exists_ok"] = ms, yes is True
    big = 10 * n * 3 + 1  # past every family's greatest total
    ms, no = timed(lambda: st.exists(tv.id, (big, 10**6)))
    out["refute_ms"], out["refute_ok"] = ms, no is False
    if walk_bytes:
        ms_b, nb = walk(cs, cs.canonical_text(rec), walk_bytes)
        out["walk_ms_per_byte"], out["walk_bytes"] = ms_b, nb
    out["stats"] = vars(cs.problem.stats)
    return out


COLS = ("family", "n", "backend", "load", "compile_ms", "solve_ms", "check_ms", "fv_first_ms", "fv_last_ms",
        "exists_ms", "refute_ms", "walk_ms_per_byte")


def markdown(rows: list[dict]) -> str:
    lines = ["| " + " | ".join(COLS) + " | answers right |", "|" + "---|" * (len(COLS) + 1)]
    for r in rows:
        ok = all(r.get(k, True) is True for k in ("check_ok", "exists_ok", "refute_ok")) and "error" not in r
        cells = [str(r.get(c, "-")) if r.get(c) is not None else "budget" for c in COLS]
        lines.append("| " + " | ".join(cells) + f" | {ok if 'error' not in r else r['error']} |")
    return "\n".join(lines) + "\n"


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m microbench linear_sums")
    ap.add_argument("--sizes", default="200,1000,2000,5000")
    ap.add_argument("--backends", default="own,cpsat,auto")
    ap.add_argument("--families", default="sum,pinned sum,count,weighted")
    ap.add_argument("--walk-bytes", type=int, default=60)
    ap.add_argument("--out", default="")
    a = ap.parse_args(argv)
    rows = []
    for family in a.families.split(","):
        for n in map(int, a.sizes.split(",")):
            for backend in a.backends.split(","):
                r = row(family, n, backend, a.walk_bytes)
                rows.append(r)
                print(json.dumps({k: v for k, v in r.items() if k != "stats"}), flush=True)
    print(markdown(rows))
    if a.out:
        Path(a.out + ".json").write_text(json.dumps(rows, indent=1))
        Path(a.out + ".md").write_text(
            "# Linear relations over N fixed items (`python -m microbench linear_sums`)\n\n"
            "Times in ms (one question each, budget "
            f"{BUDGET_S} s); load = 1-minute load average when the row started (shared 2-core host).\n\n"
            + markdown(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
