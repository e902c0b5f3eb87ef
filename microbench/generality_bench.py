"""Solve and first-feasibility per problem kind at a larger size (benchmarks/generality.py, large).

    python -m microbench.generality_bench [--out microbench/results/generality.json] [--kinds a,b]

Per kind: compile (grounding and recognition), root (the first feasibility question: is there a
record at all, with a witness), solve, and a decoding walk in document order that asks at each
slot which of its values extend the prefix (`State.feasible_values`; on a domain of more than
1024 values, `value_bounds` instead) and takes a random feasible one (seeded). Every question has
an explicit budget (BUDGET_S seconds); a question past it is a budget hit, enters the percentiles
at the budget's value, and ends the walk. The walk's record is checked by the kind's plain-Python
oracle. The machine is shared: the load average is written beside the figures.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from pathlib import Path
from typing import Any

from benchmarks.generality import KINDS
from factorspec.errors import BudgetExceeded
from factorspec.graph import compile_spec
from factorspec.graph.solver import Budget

BUDGET_S = 5.0
WALK_CAP_S = 60.0  # one kind's walk stops after this much time in questions (the row says so)


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] * 1000


def run_kind(name: str, seed: int = 0) -> dict:
    kind = KINDS[name](True)
    t0 = time.perf_counter()
    cs = compile_spec(kind.doc, budget=Budget(seconds=BUDGET_S))
    compile_ms = (time.perf_counter() - t0) * 1000
    row: dict[str, Any] = {"kind": name, "vars": len(cs.vars), "factors": len(cs.factors),
                           "compile_ms": round(compile_ms, 1), "load": os.getloadavg()[0]}
    t0 = time.perf_counter()
    try:
        st: Any = cs.root()
    except BudgetExceeded:
        row.update(root_ms=None, note="root search past the budget")
        return row
    row["root_ms"] = round((time.perf_counter() - t0) * 1000, 1)
    t0 = time.perf_counter()  # solve from scratch: compile, root search, record
    rec = compile_spec(kind.doc, budget=Budget(seconds=BUDGET_S)).solve()
    row["solve_ms"] = round((time.perf_counter() - t0) * 1000, 1)
    row["solve_valid"] = bool(kind.valid(json.loads(cs.canonical_text(rec))))
    rng = random.Random(seed)
    order = sorted(cs.vars, key=lambda v: (v.order, v.id))
    times: list[float] = []
    cpu: list[float] = []  # this thread's CPU per question (CP-SAT's one worker runs on it)
    hits = 0
    A = [v.lo for v in cs.vars]
    spent = 0.0
    done = True
    for v in order:
        if spent > WALK_CAP_S:
            done = False
            break
        t, c = time.perf_counter(), time.thread_time()
        try:
            if v.hi - v.lo + 1 > 1024:
                lo, hi = st.value_bounds(v.id)
                vals = [lo] if lo == hi else [lo, hi]
            else:
                vals = st.feasible_values(v.id)
        except BudgetExceeded:
            vals = None
        dt = time.perf_counter() - t
        cpu.append(time.thread_time() - c)
        spent += dt
        if vals is None:
            hits += 1
            times.append(BUDGET_S)
            done = False
            break
        times.append(dt)
        if not vals:
            row["note"] = f"dead end at {v.name}"
            done = False
            break
        k = rng.choice(vals)
        st2 = st.assign(v.id, k)
        if st2 is None:
            row["note"] = f"dead end after {v.name}={k}"
            done = False
            break
        st, A[v.id] = st2, k
    row.update(questions=len(times), p50_ms=round(statistics.median(times) * 1000, 2) if times else None,
               p99_ms=round(_pct(times, 0.99), 2) if times else None,
               max_ms=round(max(times) * 1000, 2) if times else None, budget_hits=hits, walk_complete=done,
               cpu_p50_ms=round(statistics.median(cpu) * 1000, 2) if cpu else None,
               cpu_p99_ms=round(_pct(cpu, 0.99), 2) if cpu else None)
    if done:
        row["walk_valid"] = bool(kind.valid(json.loads(cs.canonical_text(cs.record_from_assignment(A)))))
    row["load_after"] = os.getloadavg()[0]
    return row


def _describe(name: str) -> str:
    k = KINDS[name](True)
    props = k.doc["properties"]
    parts = []
    for key, s in props.items():
        if s.get("type") == "array":
            inner = s["items"]
            n = s["maxItems"]
            if inner.get("type") == "array":
                parts.append(f"{key} {n}x{inner['maxItems']}")
            else:
                parts.append(f"{key} {s['minItems']}..{n}" if s["minItems"] != n else f"{key} {n}")
    return ", ".join(parts)


PREAMBLE = """# Generality kinds at a larger size (microbench/generality_bench.py)

One run on the shared 2-core machine (the load average before and after each row is in the
last column: figures under a load of 9 to 12 are slow and noisy; compare rows of one run only).
compile = grounding and recognition; root = the first feasibility question (a witness record);
solve = compile + root + record from scratch; walk = one seeded random decoding walk in document
order, one feasibility question per slot (`feasible_values`, or `value_bounds` on a domain of more
than 1024 values), each with a budget of {budget} s (a question past it is a budget hit, counted
at the budget, and stops the walk). "walk valid" is the kind's plain-Python oracle on the walk's
record. CPU = this thread's CPU time per question (CP-SAT's one worker runs on it; under load the
wall-clock is a multiple of it). The small instances of the same kinds are checked against brute
force in tests/graph/test_generality.py.

"""


def markdown(rows: list[dict]) -> str:
    head = PREAMBLE.format(budget=BUDGET_S) + (
        "| kind (large) | vars / factors | compile ms | root ms | solve ms | walk questions | p50 / p99 / max ms "
        "| CPU p50 / p99 ms | budget hits | walk valid | load |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
    out = []
    for r in rows:
        walk = "" if r.get("walk_complete") else " (stopped)"
        out.append(f"| {r['kind']} ({_describe(r['kind'])}) | {r['vars']} / {r['factors']} | {r['compile_ms']} | "
                   f"{r.get('root_ms')} | {r.get('solve_ms')} | {r.get('questions')}{walk} | "
                   f"{r.get('p50_ms')} / {r.get('p99_ms')} / {r.get('max_ms')} | "
                   f"{r.get('cpu_p50_ms')} / {r.get('cpu_p99_ms')} | {r.get('budget_hits')} | "
                   f"{r.get('walk_valid', '-')} | {r['load']:.1f}-{r.get('load_after', r['load']):.1f} |")
    return head + "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="microbench/results/generality.json")
    ap.add_argument("--kinds", default=",".join(KINDS))
    args = ap.parse_args()
    rows = []
    for name in args.kinds.split(","):
        row = run_kind(name)
        print(json.dumps(row), flush=True)
        rows.append(row)
    Path(args.out).write_text(json.dumps({"budget_s": BUDGET_S, "rows": rows}, indent=1) + "\n", encoding="utf-8")
    md = Path(args.out).with_suffix(".md")
    md.write_text(markdown(rows), encoding="utf-8")
    print(markdown(rows))


if __name__ == "__main__":
    main()
