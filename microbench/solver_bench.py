"""Solver microbenchmark: feasible domain per slot and time to solve, by number of cities.

    python -m microbench solver_bench [--sizes 3,5,10,20,50] [--instances 10] [--file F.json] [--out-dir DIR]

For each NATURAL PLAN instance (the shared data for 3, 5 and 10 cities; instances from
`benchmarks.natural_plan.generate` for 20 and 50), in one process:
  * compile: `compile_spec(to_spec(problem))`;
  * solve: `cs.solve()` on a freshly compiled spec (the first complete search);
  * feasible domain per slot: walking the golden record's decisions in document order (the vars'
    `order`), the time of `State.feasible_values(var)` at each prefix, i.e. exactly the question
    a decoder asks before it writes that slot (the state then takes the golden value).
Every question runs under an explicit Budget; a question that exceeds it is counted as
"over budget" and enters the percentiles at the budget's value (so a p99 at that value means
"at least"). Results: microbench/results/solver_bench.{json,md}.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Optional

from factorspec.data import natural_plan_file
from factorspec.errors import BudgetExceeded
from factorspec.graph import Budget, compile_spec
from benchmarks.natural_plan import generate_file, golden_record, parse_instance, to_spec

RESULTS = Path(__file__).resolve().parent / "results"
SHARED_SIZES = (3, 5, 10)


def machine() -> dict[str, Any]:
    model = ""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = os.cpu_count() or 0
    return {
        "cpu_model": model or platform.processor() or "unknown",
        "cores_online": os.cpu_count(),
        "cores_usable": affinity,
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "process": "single process, single thread",
    }


def _pct(xs: list[float], q: float) -> Optional[float]:
    if not xs:
        return None
    s = sorted(xs)
    k = min(len(s) - 1, max(0, int(round(q / 100 * (len(s) - 1)))))
    return s[k]


def instances(size: int, count: int, seed: int) -> list[tuple[str, Any]]:
    """(source, TripProblem) pairs: shared data for 3/5/10 cities when present, else generated."""
    out: list[tuple[str, Any]] = []
    path = natural_plan_file()
    if size in SHARED_SIZES and path.is_file():
        raw = json.loads(path.read_text(encoding="utf-8"))
        for iid, r in raw.items():
            if r.get("num_cities") == str(size):
                out.append(("shared", parse_instance(iid, r)))
        out.sort(key=lambda sp: sp[1].id)
        return out[:count]
    for iid, r in generate_file(size, seed, count).items():
        out.append(("generated", parse_instance(iid, r)))
    return out


def bench_instance(problem: Any, slot_budget: float, solve_budget: float, cap: float,
                   backend: str = "own") -> dict[str, Any]:
    spec = to_spec(problem)
    res: dict[str, Any] = {"id": problem.id, "cities": problem.n, "days": problem.total_days, "backend": backend}
    t0 = time.perf_counter()
    cs = compile_spec(spec, Budget(nodes=10**9, seconds=solve_budget, backend=backend))
    res["compile_s"] = time.perf_counter() - t0
    t0, c0 = time.perf_counter(), time.thread_time()
    try:
        rec = cs.solve()
        res["solve_s"], res["solve_cpu_s"] = time.perf_counter() - t0, time.thread_time() - c0
        res["solved"] = cs.check(rec) == []
    except BudgetExceeded:
        res["solve_s"], res["solve_cpu_s"] = solve_budget, time.thread_time() - c0
        res["solved"] = None  # over budget
        res["slots"] = []
        res["slots_over_budget"] = 0
        res["slots_not_reached"] = len(cs.vars)
        return res

    # the domain walk, on its own compiled spec (solve's memo must not help it)
    cs = compile_spec(spec, Budget(nodes=10**9, seconds=slot_budget, backend=backend))
    A, bad = cs.assignment_of(golden_record(problem))
    assert A is not None, bad
    order = sorted(cs.vars, key=lambda v: (v.order, v.id))
    slots: list[dict[str, Any]] = []
    over = 0
    start = time.perf_counter()
    t0, c0 = time.perf_counter(), time.thread_time()
    try:
        st = cs.root()  # the first question of a decode: the witness search under the slot budget
    except BudgetExceeded:
        res["root_s"], res["root_cpu_s"] = slot_budget, time.thread_time() - c0
        res["root_over_budget"] = True
        res["slots"] = []
        res["slots_over_budget"] = 0
        res["slots_not_reached"] = len(order)
        return res
    res["root_s"], res["root_cpu_s"] = time.perf_counter() - t0, time.thread_time() - c0
    res["root_over_budget"] = False
    for k, v in enumerate(order):
        if time.perf_counter() - start > cap:
            res["slots_not_reached"] = len(order) - k
            break
        t0, c0 = time.perf_counter(), time.thread_time()
        try:
            vals = st.feasible_values(v.id)
            dt, dc = time.perf_counter() - t0, time.thread_time() - c0
            slots.append({"slot": v.name, "s": dt, "cpu_s": dc, "n_values": len(vals), "over_budget": False})
        except BudgetExceeded:
            over += 1
            slots.append({"slot": v.name, "s": slot_budget, "cpu_s": time.thread_time() - c0, "n_values": None,
                          "over_budget": True})
        try:
            nxt = st.assign(v.id, A[v.id])  # memoised when feasible_values finished
        except BudgetExceeded:  # following the golden value itself ran out of budget
            res["slots_not_reached"] = len(order) - k - 1
            break
        if nxt is None:
            raise AssertionError(f"{problem.id}: golden value of {v.name} is infeasible")
        st = nxt
    else:
        res["slots_not_reached"] = 0
    res["slots"] = slots
    res["slots_over_budget"] = over
    return res


def summarise(size: int, rows: list[dict[str, Any]]) -> dict[str, Any]:
    slot_s = [s["s"] for r in rows for s in r["slots"]]
    slot_cpu = [s["cpu_s"] for r in rows for s in r["slots"]]
    solve_s = [r["solve_s"] for r in rows]
    solve_cpu = [r["solve_cpu_s"] for r in rows]
    ms = lambda x: None if x is None else round(x * 1e3, 3)  # noqa: E731
    return {
        "cities": size,
        "backend": rows[0].get("backend", "own") if rows else "own",
        "instances": len(rows),
        "source": sorted({r["source"] for r in rows}),
        "slots_measured": len(slot_s),
        "slots_over_budget": sum(r["slots_over_budget"] for r in rows),
        "slots_not_reached": sum(r["slots_not_reached"] for r in rows),
        "slot_ms_p50": ms(_pct(slot_s, 50)),
        "slot_ms_p90": ms(_pct(slot_s, 90)),
        "slot_ms_p99": ms(_pct(slot_s, 99)),
        "slot_ms_max": ms(max(slot_s) if slot_s else None),
        "slot_ms_mean": ms(statistics.fmean(slot_s) if slot_s else None),
        "slot_cpu_ms_p50": ms(_pct(slot_cpu, 50)),
        "slot_cpu_ms_p99": ms(_pct(slot_cpu, 99)),
        "slot_cpu_ms_max": ms(max(slot_cpu) if slot_cpu else None),
        "solve_ms_p50": ms(_pct(solve_s, 50)),
        "solve_ms_p99": ms(_pct(solve_s, 99)),
        "solve_ms_max": ms(max(solve_s) if solve_s else None),
        "solve_cpu_ms_p50": ms(_pct(solve_cpu, 50)),
        "solve_cpu_ms_p99": ms(_pct(solve_cpu, 99)),
        "solves_over_budget": sum(1 for r in rows if r["solved"] is None),
        "roots_over_budget": sum(1 for r in rows if r.get("root_over_budget")),
        "compile_ms_p50": ms(_pct([r["compile_s"] for r in rows], 50)),
    }


def write_md(path: Path, doc: dict[str, Any]) -> None:
    m, cfg = doc["machine"], doc["config"]
    lines = [
        "# Solver microbenchmark: feasible domain per slot, and solve",
        "",
        f"`python -m microbench solver_bench` ({doc['date']}). Machine: {m['cpu_model']}, "
        f"{m['cores_usable']} usable cores ({m['cores_online']} online), Python {m['python']} "
        f"({m['implementation']}), {m['process']}. Load average at start/end: "
        f"{doc['loadavg_start']} / {doc['loadavg_end']} (the machine is shared; times are wall clock).",
        "",
        "Per slot: `State.feasible_values(var)` at each prefix of the golden record's decisions in "
        "document order (3 slots per city: city, start_day, end_day). Solve: `cs.solve()` on a fresh "
        "compile (the first complete search). Budgets: "
        f"{cfg['slot_budget_s']} s per slot question, {cfg['solve_budget_s']} s per solve, "
        f"{cfg['instance_cap_s']} s of domain walk per instance (slots past it are 'not reached'). "
        "A question over budget enters the percentiles at the budget's value (a lower bound). "
        "Wall-clock times include waiting for a core on the shared machine; CPU times (this "
        "thread's) do not, and are the better guide to the solver's own cost.",
        "",
        "| cities | backend | source | instances | slots measured | over budget | not reached | slot p50 ms (CPU) | slot p99 ms (CPU) | slot max ms (CPU) | solve p50 ms (CPU) | solve p99 ms (CPU) | solves over budget | walk roots over budget |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in doc["summary"]:
        lines.append(
            f"| {s['cities']} | {s.get('backend', 'own')} | {'+'.join(s['source'])} | {s['instances']} | {s['slots_measured']} | "
            f"{s['slots_over_budget']} | {s['slots_not_reached']} | {s['slot_ms_p50']} ({s['slot_cpu_ms_p50']}) | "
            f"{s['slot_ms_p99']} ({s['slot_cpu_ms_p99']}) | {s['slot_ms_max']} ({s['slot_cpu_ms_max']}) | "
            f"{s['solve_ms_p50']} ({s['solve_cpu_ms_p50']}) | {s['solve_ms_p99']} ({s['solve_cpu_ms_p99']}) | "
            f"{s['solves_over_budget']} | {s.get('roots_over_budget', 0)} |")
    lines += ["", "Slowest slot questions:", ""]
    slow = sorted(((s["s"], r["id"], s["slot"], s["over_budget"]) for r in doc["instances"] for s in r["slots"]),
                  reverse=True)[:8]
    for t, iid, slot, ob in slow:
        lines.append(f"- {t * 1e3:.1f} ms{' (over budget)' if ob else ''}: {iid} `{slot}`")
    lines += ["", doc.get("notes", ""), ""]
    path.write_text("\n".join(lines), encoding="utf-8")


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m microbench solver_bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="3,5,10,20,50")
    ap.add_argument("--instances", type=int, default=10, help="instances per size (at most)")
    ap.add_argument("--generated", type=int, default=3, help="instances per generated size")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--slot-budget", type=float, default=5.0, help="seconds per feasible_values question")
    ap.add_argument("--solve-budget", type=float, default=30.0, help="seconds per solve")
    ap.add_argument("--instance-cap", type=float, default=60.0, help="seconds of domain walk per instance")
    ap.add_argument("--file", action="append", default=[],
                    help="also bench every instance of this NATURAL PLAN-format file (e.g. "
                         "bench/data/generated_30.json), as one more row; repeatable")
    ap.add_argument("--backends", default="own",
                    help="comma-separated solver backends (Budget.backend: own, cpsat, auto), each instance "
                         "benched under each in turn, one summary row per size and backend")
    ap.add_argument("--out-dir", default=str(RESULTS))
    ap.add_argument("--notes", default="", help="a paragraph appended to the .md report")
    args = ap.parse_args(argv)

    sizes = [int(x) for x in args.sizes.split(",") if x.strip()]
    doc: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "machine": machine(),
        "loadavg_start": [round(x, 2) for x in os.getloadavg()],
        "config": {"sizes": sizes, "files": args.file, "instances": args.instances, "generated": args.generated, "seed": args.seed,
                   "slot_budget_s": args.slot_budget, "solve_budget_s": args.solve_budget,
                   "instance_cap_s": args.instance_cap},
        "summary": [], "instances": [],
    }
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    doc["config"]["backends"] = backends
    for size in sizes:
        count = args.instances if size in SHARED_SIZES else args.generated
        by_backend: dict[str, list] = {be: [] for be in backends}
        for source, problem in instances(size, count, args.seed):
            for be in backends:  # side by side: each instance under every backend in turn
                r = bench_instance(problem, args.slot_budget, args.solve_budget, args.instance_cap, be)
                r["source"] = source
                by_backend[be].append(r)
                print(f"{size:3d} cities {problem.id} [{be}]: solve {r['solve_s'] * 1e3:.1f} ms, "
                      f"{len(r['slots'])} slots, {r['slots_over_budget']} over budget, "
                      f"{r['slots_not_reached']} not reached", file=sys.stderr)
        for rows in by_backend.values():
            doc["instances"] += rows
            doc["summary"].append(summarise(size, rows))
    for fpath in args.file:
        raw = json.loads(Path(fpath).read_text(encoding="utf-8"))
        rows = []
        for iid, r in raw.items():
            problem = parse_instance(iid, r)
            row = bench_instance(problem, args.slot_budget, args.solve_budget, args.instance_cap)
            row["source"] = Path(fpath).name
            rows.append(row)
            print(f"{problem.n:3d} cities {problem.id}: solve {row['solve_s'] * 1e3:.1f} ms, "
                  f"{len(row['slots'])} slots, {row['slots_over_budget']} over budget, "
                  f"{row['slots_not_reached']} not reached", file=sys.stderr)
        doc["instances"] += rows
        doc["summary"].append(summarise(max((r["cities"] for r in rows), default=0), rows))
    doc["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    doc["notes"] = args.notes
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if backends != ["own"]:  # a backend comparison is its own report; the own-solver one stays
        name = "solver_bench_backends"
        (out / f"{name}.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        write_md(out / f"{name}.md", doc)
        for s in doc["summary"]:
            print(json.dumps(s))
        return 0
    (out / "solver_bench.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    write_md(out / "solver_bench.md", doc)
    for s in doc["summary"]:
        print(json.dumps(s))
    return 0


if __name__ == "__main__":
    sys.exit(main())
