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
import os
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


def round_robin_spec(n: int) -> dict:
    """A single round robin of n teams (n even) as a user writes it: n-1 rounds of n/2 games
    (home < away), every team plays once per round, every pair meets once."""
    team = {"type": "integer", "minimum": 0, "maximum": n - 1}
    game = {"type": "object", "properties": {"home": team, "away": team}, "required": ["home", "away"]}
    rnd = {"type": "array", "items": game, "minItems": n // 2, "maxItems": n // 2}
    games = [f"r[{k}][{g}]" for k in range(n - 1) for g in range(n // 2)]
    rels = [
        {"name": "once_per_round", "expr": "forall k: all_different("
         + ", ".join(f"r[k][{g}].home, r[k][{g}].away" for g in range(n // 2)) + ")"},
        {"name": "every_pair_once",
         "expr": "all_different(" + ", ".join(f"{x}.home * {n} + {x}.away" for x in games) + ")"},
        {"name": "ordered", "expr": "forall k, g: r[k][g].home < r[k][g].away"},
    ]
    rounds = {"type": "array", "items": rnd, "minItems": n - 1, "maxItems": n - 1}
    return {"type": "object", "properties": {"r": rounds}, "required": ["r"], "x-factorspec": {"relations": rels}}


def fixtures_spec(n: int) -> dict:
    """The round robin as a list of n(n-1)/2 fixtures (round, home, away: 3 slots each, 45 for 6
    teams), written pairwise the way the issue's user wrote it: distinct pairs, and two fixtures
    in one round share no team."""
    games = n * (n - 1) // 2
    team = {"type": "integer", "minimum": 0, "maximum": n - 1}
    fx = {"type": "object", "properties": {"round": {"type": "integer", "minimum": 0, "maximum": n - 2},
                                           "home": team, "away": team}, "required": ["round", "home", "away"]}
    rels = [
        {"name": "ordered", "expr": "forall i: g[i].home < g[i].away"},
        {"name": "every_pair_once",
         "expr": "forall i, j: i < j implies (g[i].home != g[j].home or g[i].away != g[j].away)"},
        {"name": "once_per_round", "expr": "forall i, j: i < j and g[i].round == g[j].round implies "
         "(g[i].home != g[j].home and g[i].home != g[j].away and g[i].away != g[j].home and g[i].away != g[j].away)"},
    ]
    return {"type": "object", "properties": {"g": {"type": "array", "items": fx, "minItems": games, "maxItems": games}},
            "required": ["g"], "x-factorspec": {"relations": rels}}


def invoice_spec(n: int) -> dict:
    """An invoice of n lines (catalogue prices in cents, quantities 1-9, distinct items), subtotal,
    8% tax rounded half up to the cent, total: the decimals are exact fixed-point."""
    items = [f"item{k}" for k in range(n + 4)]
    price = {it: round(1.05 + 3.37 * k % 40, 2) for k, it in enumerate(items)}
    money = {"type": "number", "minimum": 0, "maximum": 100000, "multipleOf": 0.01}
    qty = {"type": "integer", "minimum": 1, "maximum": 9}
    line = {"type": "object", "properties": {"item": {"enum": items}, "qty": qty, "amount": money},
            "required": ["item", "qty", "amount"]}
    rels = [
        {"name": "line_amount", "expr": "forall i: lines[i].amount == lines[i].qty * price[lines[i].item]"},
        {"name": "one_line_per_item", "expr": "all_different(lines[*].item)"},
        {"name": "subtotal", "expr": "subtotal == sum(lines[*].amount)"},
        {"name": "tax", "expr": "tax == round(subtotal * 0.08, 0.01)"},
        {"name": "total", "expr": "total == subtotal + tax"},
        {"name": "budget", "expr": "total <= 1500"},
    ]
    return {"type": "object", "properties": {"lines": {"type": "array", "items": line, "minItems": n, "maxItems": n},
                                             "subtotal": money, "tax": money, "total": money},
            "required": ["lines", "subtotal", "tax", "total"],
            "x-factorspec": {"tables": {"price": price}, "relations": rels}}


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


BACKENDS = ("own", "cpsat", "auto")


def walk_backends(doc: dict, slots: int, backends: tuple[str, ...] = BACKENDS, bounds: tuple[str, ...] = (),
                  keep_times: bool = False) -> dict:
    """The same decoding walk under each solver backend (`Budget.backend`), side by side: at each
    slot every backend's state answers the same question in turn (so load hits them alike), then
    each takes the smallest feasible value. `bounds`: paths whose `value_bounds` is asked at the
    root first (an invoice total's range). Per backend: p50/p99 ms, budget hits; and whether the
    answers agreed wherever both answered. `keep_times`: also each backend's per-question wall
    seconds (`times`), for a caller that pools several walks into one row."""
    if "own" != backends[0] or len(backends) > 1:  # ortools' import (about 1 s) is no question's cost
        from factorspec.graph.backends import cpsat
        cpsat.available()
    out: dict[str, Any] = {"load": [round(x, 2) for x in os.getloadavg()]}
    cs = {be: compile_spec(doc, budget=Budget(seconds=BUDGET_S, backend=be)) for be in backends}
    times: dict[str, list[float]] = {be: [] for be in backends}
    cpu: dict[str, list[float]] = {be: [] for be in backends}  # this thread's CPU (CP-SAT runs on it)
    hits = dict.fromkeys(backends, 0)
    st: dict[str, Any] = {}
    for be in backends:
        t, c = time.perf_counter(), time.thread_time()
        try:
            st[be] = cs[be].root()
        except BudgetExceeded:
            hits[be] += 1
            st[be] = None
        times[be].append(min(time.perf_counter() - t, BUDGET_S))
        cpu[be].append(time.thread_time() - c)
    agree = True
    for path in bounds:
        got = {}
        for be in backends:
            if st[be] is None:
                continue
            t, c = time.perf_counter(), time.thread_time()
            try:
                got[be] = st[be].value_bounds(cs[be].var_of[path].id)
            except BudgetExceeded:
                hits[be] += 1
            times[be].append(min(time.perf_counter() - t, BUDGET_S))
            cpu[be].append(time.thread_time() - c)
        if len(set(got.values())) > 1:
            agree = False
        out[f"bounds {'/'.join(map(str, path))}"] = {be: list(v) for be, v in got.items()}
    order = {be: sorted(cs[be].var_of.values(), key=lambda v: v.order)[:slots] for be in backends}
    for i in range(slots):
        got = {}
        for be in backends:
            if st[be] is None or i >= len(order[be]):
                continue
            v = order[be][i]
            t, c = time.perf_counter(), time.thread_time()
            try:
                got[be] = st[be].feasible_values(v.id)
            except BudgetExceeded:
                hits[be] += 1
                st[be] = None
            times[be].append(min(time.perf_counter() - t, BUDGET_S))
            cpu[be].append(time.thread_time() - c)
        if len({tuple(x) for x in got.values()}) > 1:
            agree = False
        for be, vals in got.items():
            st[be] = st[be].assign(order[be][i].id, vals[0]) if vals else None

    def pct(xs: list[float], q: float) -> float:
        xs = sorted(xs)
        return round(xs[min(len(xs) - 1, int(q * len(xs)))] * 1000, 2)

    for be in backends:
        out[be] = {"questions": len(times[be]), "p50_ms": pct(times[be], 0.5), "p99_ms": pct(times[be], 0.99),
                   "max_ms": pct(times[be], 1.0), "budget_hits": hits[be],
                   "cpu_p50_ms": pct(cpu[be], 0.5), "cpu_p99_ms": pct(cpu[be], 0.99)}
        if keep_times:
            out[be]["times"], out[be]["cpu_times"] = times[be], cpu[be]
    out["answers_agree"] = agree
    out["load_end"] = [round(x, 2) for x in os.getloadavg()]
    return out


FAMILIES = ("latin", "meetings", "sum")
# (meetings, rooms, people, slots): the busiest person has a few slots to spare
MEETINGS = ((8, 3, 5, 20), (12, 3, 5, 25), (16, 3, 6, 25), (24, 3, 8, 30))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="microbench/results/solver_families.json")
    ap.add_argument("--families", default=",".join(FAMILIES), help="comma-separated subset of " + ", ".join(FAMILIES))
    ap.add_argument("--backends", action="store_true",
                    help="the backend table instead (own vs cpsat vs auto through Budget.backend, side by side): "
                         "microbench/results/solver_backends.{json,md}")
    args = ap.parse_args()
    if args.backends:
        backends_main(args.families.split(",") if args.families != ",".join(FAMILIES) else list(BACKEND_FAMILIES))
        return
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


BACKEND_FAMILIES = ("roundrobin", "meetings", "latin", "invoice", "sum", "natplan")
# NATURAL PLAN rows (microbench/natural_plan_backends.py): city counts, instances per shared count
# (10 cities or fewer), instances per generated count
NATPLAN = ((3, 5, 10, 20, 30, 50), 3, 1)


def backend_rows(fams: list[str], natplan: tuple = NATPLAN) -> dict[str, dict]:
    rows: dict[str, dict] = {}

    def run(key: str, doc: dict, slots: int, bounds: tuple = ()) -> None:
        rows[key] = walk_backends(doc, slots, bounds=bounds)
        print(key, json.dumps(rows[key]), flush=True)

    if "roundrobin" in fams:
        for n in (4, 6):
            run(f"round robin {n} teams (rounds of games)", round_robin_spec(n), n * (n - 1))
        for n in (4, 6):
            games = n * (n - 1) // 2
            run(f"round robin {n} teams ({games} fixtures, pairwise)", fixtures_spec(n), 3 * games)
    if "meetings" in fams:
        for n, rooms, people, horizon in MEETINGS:
            run(f"meetings {n} in {rooms} rooms, {people} people, {horizon} slots",
                meetings_spec(n, rooms, people, horizon), 2 * n)
    if "latin" in fams:
        for n in (5, 6):
            run(f"latin {n}x{n}", latin_spec(n), n * n)
    if "invoice" in fams:
        for n in (3, 10):
            run(f"invoice {n} lines (bounds of total, then walk)", invoice_spec(n), 3 * n + 3, bounds=(("total",),))
    if "sum" in fams:
        for n in (200, 500):
            run(f"sum of {n} items", sum_spec(n), min(n, 60))
    if "natplan" in fams:
        from microbench.natural_plan_backends import solver_rows
        rows.update(solver_rows(*natplan))
    return rows


def backends_main(fams: list[str], natplan: tuple = NATPLAN) -> None:
    out = Path("microbench/results/solver_backends.json")
    rows = backend_rows(fams, natplan)
    if out.exists() and set(fams) != set(BACKEND_FAMILIES):
        rows = {**json.loads(out.read_text()).get("rows", {}), **rows}
    out.write_text(json.dumps({"budget_s": BUDGET_S, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                               "rows": rows}, indent=1) + "\n")
    md = ["# Solver backends side by side: own search vs CP-SAT vs auto (portfolio)", "",
          "`python -m microbench.solver_families --backends` (" + time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
          + f"). Each question under a {BUDGET_S} s budget (`Budget(backend=...)`); a question past it is a budget hit "
          "and enters the percentiles at the budget. Questions: the root search, `value_bounds` where named, then "
          "`feasible_values` of each slot along one decoding walk (smallest feasible value taken), the three "
          "backends asked in turn at each slot. NATURAL PLAN rows (microbench/natural_plan_backends.py, "
          "`python -m microbench.natural_plan_backends solver`) pool the walks of the instances named in "
          "the .json: the shared data's first instances by id up to 10 cities, the seeded generator's "
          "(`benchmarks.natural_plan.generate`, seed 0) beyond; every slot of the trip is asked (3 per "
          "city). Rows come from separate runs (the date above is the last run's). "
          "Wall-clock ms on a shared 2-core machine; load average (1, 5, 15 "
          "min) at the row's start and end beside each row.", "",
          "Cells: wall p50 / p99 ms [CPU p50 / p99 ms of this thread, which CP-SAT's one worker runs on] "
          "(budget hits).", "",
          "| family | questions | own | cpsat | auto | agree | load start / end |",
          "|---|---|---|---|---|---|---|"]
    for k, r in rows.items():
        cells = [f"{r[be]['p50_ms']} / {r[be]['p99_ms']} [{r[be]['cpu_p50_ms']} / {r[be]['cpu_p99_ms']}] "
                 f"({r[be]['budget_hits']})" for be in BACKENDS]
        md.append(f"| {k} | {r['own']['questions']} | " + " | ".join(cells)
                  + f" | {r['answers_agree']} | {r['load'][0]} / {r['load_end'][0]} |")
    out.with_suffix(".md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
