"""Feasibility questions along a decoding walk: the project's solver vs OR-tools CP-SAT.

    python -m microbench.solver_families [--out microbench/results/solver_families.json]

Families (issue #13/#14): an n x n Latin square (all_different per row and column, written as
explicit all_different relations over a flat array), a meetings calendar (n meetings with a start
slot and a room each, fixed durations and attendees drawn by seed; meetings in one room or sharing
a person do not overlap, written as pairwise disjunctions; CP-SAT gets optional intervals and
AddNoOverlap per room and per person) and `total == sum(a[*])` over n fixed items with a pinned
total. `--families latin,meetings` runs a subset and keeps the other rows of the results file.
The walk decides the slots in document order, taking at each slot
the smallest feasible value; the question timed at each slot is "which values of this slot
extend the prefix to a valid record" (`State.feasible_values` for the project's solver; one
CP-SAT solve per candidate value, with the prefix fixed, for CP-SAT, over a model written by
hand for the family). Both answer exactly; the table says whether their answers agreed.
Each question runs under an explicit budget (seconds); a question past it counts as a budget
hit and enters the percentiles at the budget's value.
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from factorspec.errors import BudgetExceeded
from factorspec.graph import compile_spec
from factorspec.graph.solver import Budget

BUDGET_S = 5.0
try:  # optional: `pip install factorspec[solver]` (the comparison column is empty without it)
    import ortools  # noqa: F401
    HAVE_CPSAT = True
except ImportError:
    HAVE_CPSAT = False


def latin_spec(n: int) -> dict:
    cell = {"type": "integer", "minimum": 0, "maximum": n - 1}
    rels = []
    for r in range(n):
        rels.append("all_different(" + ", ".join(f"g[{r * n + c}]" for c in range(n)) + ")")
    for c in range(n):
        rels.append("all_different(" + ", ".join(f"g[{r * n + c}]" for r in range(n)) + ")")
    return {"type": "object", "properties": {"g": {"type": "array", "items": cell, "minItems": n * n,
                                                   "maxItems": n * n}},
            "required": ["g"], "x-factorspec": {"relations": rels}}


def sum_spec(n: int) -> dict:
    return {"type": "object", "properties": {
        "a": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 10}, "minItems": n, "maxItems": n},
        "total": {"type": "integer", "minimum": 0, "maximum": 100000}}, "required": ["a", "total"],
        "x-factorspec": {"relations": ["total == sum(a[*])", f"total == {7 * n // 2}"]}}


def meetings(n: int, rooms: int, people: int, horizon: int, seed: int = 0) -> tuple[list[int], list[list[int]]]:
    """n meetings: durations (1-4 slots) and attendees (1-3 of `people`), drawn by seed."""
    rnd = random.Random(seed)
    dur = [rnd.randint(1, 4) for _ in range(n)]
    who = [sorted(rnd.sample(range(people), rnd.randint(1, 3))) for _ in range(n)]
    return dur, who


def meetings_spec(n: int, rooms: int, people: int, horizon: int, seed: int = 0) -> dict:
    """A calendar as a user writes it: a start slot and a room per meeting; meetings in one room,
    or sharing a person, do not overlap; every meeting ends within the day."""
    dur, who = meetings(n, rooms, people, horizon, seed)
    share = [[int(bool(set(a) & set(b))) for b in who] for a in who]
    apart = "m[i].start + dur[i] <= m[j].start or m[j].start + dur[j] <= m[i].start"
    rels = [
        {"name": "one_room_at_a_time", "expr": f"forall i, j: i < j implies (m[i].room != m[j].room or {apart})"},
        {"name": "one_meeting_per_person", "expr": f"forall i, j: i < j and share[i][j] == 1 implies ({apart})"},
        {"name": "within_the_day", "expr": f"forall i: m[i].start + dur[i] <= {horizon}"},
    ]
    item = {"type": "object", "properties": {
        "start": {"type": "integer", "minimum": 0, "maximum": horizon - 1},
        "room": {"enum": [f"room{k}" for k in range(rooms)]}}, "required": ["start", "room"]}
    return {"type": "object", "properties": {"m": {"type": "array", "items": item, "minItems": n, "maxItems": n}},
            "required": ["m"], "x-factorspec": {"tables": {"dur": dur, "share": share}, "relations": rels}}


def cpsat_meetings(n: int, rooms: int, people: int, horizon: int, seed: int = 0) -> tuple[Any, list]:
    """The same calendar in CP-SAT's own terms: optional intervals per room, no-overlap per room
    and per person."""
    from ortools.sat.python import cp_model
    dur, who = meetings(n, rooms, people, horizon, seed)
    m = cp_model.CpModel()
    xs: list = []
    per_room: list[list] = [[] for _ in range(rooms)]
    per_person: list[list] = [[] for _ in range(people)]
    for i in range(n):
        s = m.NewIntVar(0, horizon - dur[i], f"s{i}")
        r = m.NewIntVar(0, rooms - 1, f"r{i}")
        xs += [s, r]
        for k in range(rooms):
            lit = m.NewBoolVar(f"in{i}_{k}")
            m.Add(r == k).OnlyEnforceIf(lit)
            m.Add(r != k).OnlyEnforceIf(lit.Not())
            per_room[k].append(m.NewOptionalFixedSizeIntervalVar(s, dur[i], lit, f"iv{i}_{k}"))
        iv = m.NewFixedSizeIntervalVar(s, dur[i], f"iv{i}")
        for p in who[i]:
            per_person[p].append(iv)
    for ivs in per_room + per_person:
        m.AddNoOverlap(ivs)
    return m, xs


def cpsat_latin(n: int) -> tuple[Any, list]:
    from ortools.sat.python import cp_model
    m = cp_model.CpModel()
    xs = [m.NewIntVar(0, n - 1, f"g{i}") for i in range(n * n)]
    for r in range(n):
        m.AddAllDifferent(xs[r * n:(r + 1) * n])
    for c in range(n):
        m.AddAllDifferent(xs[c::n])
    return m, xs


def cpsat_sum(n: int) -> tuple[Any, list]:
    from ortools.sat.python import cp_model
    m = cp_model.CpModel()
    xs = [m.NewIntVar(0, 10, f"a{i}") for i in range(n)]
    total = m.NewIntVar(0, 100000, "total")
    m.Add(total == sum(xs))
    m.Add(total == 7 * n // 2)
    return m, xs + [total]


def cpsat_values(model: Any, xs: list, prefix: dict[int, int], slot: int, cands: range) -> list[int]:
    """The candidates of `slot` that extend `prefix`, by one CP-SAT solve each (exact: FEASIBLE
    or INFEASIBLE; anything else is a budget hit)."""
    from ortools.sat.python import cp_model
    out = []
    for v in cands:
        m = model.Clone()
        vs = [m.GetIntVarFromProtoIndex(x.Index()) for x in xs]
        for i, k in prefix.items():
            m.Add(vs[i] == k)
        m.Add(vs[slot] == v)
        s = cp_model.CpSolver()
        s.parameters.max_time_in_seconds = BUDGET_S
        s.parameters.num_workers = 1
        st = s.Solve(m)
        if st in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            out.append(v)
        elif st != cp_model.INFEASIBLE:
            raise BudgetExceeded("seconds", BUDGET_S, BUDGET_S)
    return out


def walk(doc: dict, model_fn: Callable[[], tuple[Any, list]], slots: int, cands: Callable[[int], range]) -> dict:
    """Decode `slots` slots in document order; time each slot's question both ways. Values are
    compared as internal ints (an integer's value, an enum's index: the CP-SAT models use the same)."""
    cs = compile_spec(doc, budget=Budget(seconds=BUDGET_S))
    arr_vars = sorted((v for p, v in cs.var_of.items()), key=lambda v: v.order)[:slots]
    t0 = time.perf_counter()
    try:
        st: Any = cs.root()
    except BudgetExceeded:  # no first question to ask: the row says so
        return {"questions": 0, "root_ms": round((time.perf_counter() - t0) * 1000, 1), "ours_p50_ms": None,
                "ours_p99_ms": None, "cpsat_p50_ms": None, "cpsat_p99_ms": None, "ours_budget_hits": 1,
                "cpsat_budget_hits": 0, "answers_agree": None, "note": "our root search ran past the budget"}
    root_s = time.perf_counter() - t0
    model, xs = model_fn() if HAVE_CPSAT else (None, [])
    ours: list[float] = []
    theirs: list[float] = []
    hits = [0, 0]
    agree = True
    prefix: dict[int, int] = {}
    for i, v in enumerate(arr_vars):
        t = time.perf_counter()
        try:
            vals = st.feasible_values(v.id)
        except BudgetExceeded:
            hits[0] += 1
            vals = None
        ours.append(min(time.perf_counter() - t, BUDGET_S))
        if HAVE_CPSAT:
            t = time.perf_counter()
            try:
                cvals = cpsat_values(model, xs, prefix, i, cands(i))
            except BudgetExceeded:
                hits[1] += 1
                cvals = None
            theirs.append(min(time.perf_counter() - t, BUDGET_S))
            if vals is not None and cvals is not None and vals != cvals:
                agree = False
        if vals is None or not vals:  # past our budget (or a dead end): the walk stops here
            break
        prefix[i] = vals[0]
        st = st.assign(v.id, vals[0])
        if st is None:
            break

    def pct(xs: list[float], q: float) -> float:
        xs = sorted(xs)
        return xs[min(len(xs) - 1, int(q * len(xs)))] * 1000

    theirs = theirs or [float("nan")]
    return {"questions": len(ours), "root_ms": round(root_s * 1000, 1),
            "ours_p50_ms": round(statistics.median(ours) * 1000, 2), "ours_p99_ms": round(pct(ours, 0.99), 2),
            "cpsat_p50_ms": round(statistics.median(theirs) * 1000, 2), "cpsat_p99_ms": round(pct(theirs, 0.99), 2),
            "ours_budget_hits": hits[0], "cpsat_budget_hits": hits[1], "answers_agree": agree}


FAMILIES = ("latin", "meetings", "sum")
# (meetings, rooms, people, slots): the busiest person has a few slots to spare
MEETINGS = ((8, 3, 5, 20), (12, 3, 5, 25), (16, 3, 6, 25), (24, 3, 8, 30))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="microbench/results/solver_families.json")
    ap.add_argument("--families", default=",".join(FAMILIES), help="comma-separated subset of " + ", ".join(FAMILIES))
    args = ap.parse_args()
    fams = args.families.split(",")
    rows = {}
    if "latin" in fams:
        for n in (4, 5, 6):
            rows[f"latin {n}x{n}"] = walk(latin_spec(n), lambda n=n: cpsat_latin(n), n * n, lambda i, n=n: range(n))
            print(f"latin {n}", rows[f"latin {n}x{n}"], flush=True)
    if "meetings" in fams:
        for n, rooms, people, horizon in MEETINGS:
            key = f"meetings {n} in {rooms} rooms, {people} people, {horizon} slots"
            rows[key] = walk(meetings_spec(n, rooms, people, horizon),
                             lambda a=(n, rooms, people, horizon): cpsat_meetings(*a), 2 * n,
                             lambda i, r=rooms, h=horizon: range(h) if i % 2 == 0 else range(r))
            print(key, rows[key], flush=True)
    if "sum" in fams:
        for n in (50, 200, 500):
            rows[f"sum of {n} items"] = walk(sum_spec(n), lambda n=n: cpsat_sum(n), n, lambda i: range(11))
            print(f"sum {n}", rows[f"sum of {n} items"], flush=True)
    out = Path(args.out)
    if out.exists() and set(fams) != set(FAMILIES):  # a subset run updates its rows, keeps the others
        old = json.loads(out.read_text()).get("rows", {})
        rows = {**old, **rows}
    out.write_text(json.dumps({"budget_s": BUDGET_S, "rows": rows}, indent=1) + "\n")
    md = ["| family | questions | root ms | ours p50 / p99 ms | CP-SAT p50 / p99 ms | budget hits ours / CP-SAT "
          "| agree |",
          "|---|---|---|---|---|---|---|"]
    for k, r in rows.items():
        md.append(f"| {k} | {r['questions']} | {r['root_ms']} | {r['ours_p50_ms']} / {r['ours_p99_ms']} | "
                  f"{r['cpsat_p50_ms']} / {r['cpsat_p99_ms']} | {r['ours_budget_hits']} / {r['cpsat_budget_hits']} | "
                  f"{r['answers_agree']} |")
    Path(args.out).with_suffix(".md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
