"""no_overlap (globals/no_overlap.py, recognised by globals/no_overlap_recognition.py).

Two levels of brute force:
  * the propagator alone: on random small task sets (earliest start, latest end, duration), every
    start that some schedule of disjoint intervals uses survives edge-finding, and an overload is
    reported only when no schedule exists;
  * whole specs: random small calendars written the ways users write them (start + a table
    duration, end slots tied by `end == start + d` or `end > start`, a duration slot, the
    `no_overlap(...)` function, meetings in rooms), with release times and deadlines, some of
    them unsatisfiable. The solver's feasible values per field, at the root and along a walk,
    equal the brute-force sets, and the recogniser posted the node (the tests would not test it
    otherwise)."""
from __future__ import annotations

import itertools
import random
from typing import Any, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from factorspec.errors import Unsatisfiable
from factorspec.graph import compile_spec
from factorspec.graph.globals.no_overlap import NoOverlap, filter_bounds, overloaded


def _schedules(est: list[int], lct: list[int], p: list[int]) -> list[tuple[int, ...]]:
    ranges = [range(e, l - d + 1) for e, l, d in zip(est, lct, p)]
    out = []
    for starts in itertools.product(*ranges):
        ivs = sorted(zip(starts, p))
        if all(a + da <= b for (a, da), (b, _db) in zip(ivs, ivs[1:])):
            out.append(starts)
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6), st.integers(0, 3)), min_size=1, max_size=5))
def test_edge_finding_is_sound(rows: list[tuple[int, int, int]]) -> None:
    est = [a for a, _w, _p in rows]
    p = [d for _a, _w, d in rows]
    lct = [a + d + w for a, w, d in rows]
    sols = _schedules(est, lct, p)
    out = filter_bounds(est, lct, p)
    if out is None:
        assert not sols, "overload reported on a feasible task set"
        return
    assert overloaded(est, lct, p) is False or not sols
    ne, nl = out
    for sol in sols:
        for k, s in enumerate(sol):
            assert ne[k] <= s and s + p[k] <= nl[k], (rows, sol, ne, nl)


def test_stronger_than_pairs() -> None:
    # three tasks of 2 in [0, 5): every pair fits, the three do not
    assert filter_bounds([0, 0, 0], [5, 5, 5], [2, 2, 2]) is None
    # edge-finding: task 2 cannot end before both of the others, so it starts after both (>= 4)
    out = filter_bounds([0, 0, 0], [4, 4, 10], [2, 2, 3])
    assert out is not None and out[0][2] == 4


# -- specs -------------------------------------------------------------------------------------
STYLES = ("table", "end_eq", "end_gt", "dur_slot", "function", "function_end", "rooms")


def _meeting_spec(style: str, n: int, horizon: int, dur: list[int], release: dict[int, int],
                  due: dict[int, int], rooms: int) -> dict:
    item: dict[str, Any] = {"start": {"type": "integer", "minimum": 0, "maximum": horizon}}
    rels: list[str] = []
    tables: dict[str, Any] = {"dur": dur}

    def end(i: str) -> str:
        if style in ("table", "function", "rooms"):
            return f"m[{i}].start + dur[{i}]"
        if style == "dur_slot":
            return f"m[{i}].start + m[{i}].d"
        return f"m[{i}].end"

    if style in ("end_eq", "end_gt", "function_end"):
        item["end"] = {"type": "integer", "minimum": 0, "maximum": horizon}
        rels.append("forall i: m[i].end == m[i].start + dur[i]" if style != "end_gt"
                    else "forall i: m[i].end > m[i].start and m[i].end <= m[i].start + dur[i]")
    if style == "dur_slot":
        item["d"] = {"type": "integer", "minimum": 1, "maximum": max(dur)}
        rels.append("forall i: m[i].d >= dur[i]")
    if style == "rooms":
        item["room"] = {"enum": [f"r{k}" for k in range(rooms)]}
        rels.append(f"forall i, j: i < j implies (m[i].room != m[j].room or {end('i')} <= m[j].start "
                    f"or {end('j')} <= m[i].start)")
    elif style in ("function", "function_end"):
        rels.append(f"no_overlap((m[i].start, {end('i')}) for i)")
    else:
        rels.append(f"forall i, j: i < j implies ({end('i')} <= m[j].start or {end('j')} <= m[i].start)")
    rels.append(f"forall i: {end('i')} <= {horizon}")
    for k, t in release.items():
        rels.append(f"m[{k}].start >= {t}")
    for k, t in due.items():
        rels.append(f"{end(str(k))} <= {t}")
    return {"type": "object", "properties": {"m": {"type": "array", "minItems": n, "maxItems": n, "items": {
        "type": "object", "properties": item, "required": list(item), "additionalProperties": False}}},
        "required": ["m"], "additionalProperties": False,
        "x-factorspec": {"tables": tables, "relations": rels}}


def _item_ok(style: str, it: dict, k: int, dur: list[int], horizon: int, release: dict, due: dict) -> bool:
    """The relations of one meeting alone (a prefilter: `check` on whole records decides)."""
    s = it["start"]
    e = {"end_eq": it.get("end"), "end_gt": it.get("end"), "function_end": it.get("end"),
         "dur_slot": s + it.get("d", 0)}.get(style, s + dur[k])
    if style in ("end_eq", "function_end") and e != s + dur[k]:
        return False
    if style == "end_gt" and not s < e <= s + dur[k]:
        return False
    if style == "dur_slot" and it["d"] < dur[k]:
        return False
    return e <= horizon and s >= release.get(k, 0) and e <= due.get(k, horizon)


def _records(doc: dict, style: str, dur: list[int], horizon: int, release: dict, due: dict) -> list[dict]:
    """Every record of the spec, by brute force through `check` (the independent evaluator)
    over every combination of meetings that each satisfy their own relations."""
    cs = compile_spec(doc)
    props = doc["properties"]["m"]["items"]["properties"]
    n = doc["properties"]["m"]["minItems"]
    fields = list(props)
    doms = [list(range(s["minimum"], s["maximum"] + 1)) if "enum" not in s else s["enum"] for s in props.values()]
    per_item = [[it for vals in itertools.product(*doms)
                 if _item_ok(style, it := dict(zip(fields, vals)), k, dur, horizon, release, due)]
                for k in range(n)]
    out = []
    for combo in itertools.product(*per_item):
        rec = {"m": [dict(it) for it in combo]}
        if not cs.check(rec):
            out.append(rec)
    return out


def _instance(seed: int, style: Optional[str] = None) -> tuple[str, dict, list]:
    rnd = random.Random(seed)
    style = style or STYLES[seed % len(STYLES)]
    n = 3 if style in ("dur_slot", "end_gt") else rnd.choice([3, 4])
    dur = [rnd.randint(1, 3) for _ in range(n)]
    horizon = max(3, min(8, sum(dur) // 2 + rnd.randint(0, 3) if style == "rooms" else sum(dur) + rnd.randint(-1, 2)))
    release = {k: rnd.randint(0, 3) for k in range(n) if rnd.random() < 0.3}
    due = {k: rnd.randint(2, horizon) for k in range(n) if rnd.random() < 0.3}
    return style, _meeting_spec(style, n, horizon, dur, release, due, rooms=2), [dur, horizon, release, due]


def _field_values(recs: list[dict], k: int, f: str, fixed: dict) -> list:
    return sorted({r["m"][k][f] for r in recs if all(r["m"][a][b] == v for (a, b), v in fixed.items())},
                  key=repr)


@pytest.mark.parametrize("seed", range(28))
def test_calendar_matches_brute_force(seed: int) -> None:
    _check_calendar(seed, *_instance(seed))


@pytest.mark.parametrize("seed", range(100, 112))
def test_rooms_calendar_matches_brute_force(seed: int) -> None:
    # meetings in two rooms: the node's rules per room value and its room pruning decide here
    _check_calendar(seed, *_instance(seed, "rooms"))


def _check_calendar(seed: int, style: str, doc: dict, params: list) -> None:
    recs = _records(doc, style, *params)
    cs = compile_spec(doc)
    assert any(isinstance(g, NoOverlap) for g in cs.problem.globals), f"{style}: no NoOverlap posted"
    if style not in ("function", "function_end"):  # the pairs propagate through the node only
        assert cs.problem.silent
    if not recs:
        with pytest.raises(Unsatisfiable):
            cs.root()
        return
    st_: Optional[Any] = cs.root()
    assert cs.count() == len(recs)
    rnd = random.Random(seed)
    fields = list(doc["properties"]["m"]["items"]["properties"])
    slots = [(k, f) for k in range(doc["properties"]["m"]["minItems"]) for f in fields]
    fixed: dict = {}
    for k, f in slots:  # a walk: at each slot the feasible values equal brute force, then pick one
        var = cs.var_of[("m", k, f)]
        assert st_ is not None
        got = sorted((var.value(x) for x in st_.feasible_values(var.id)), key=repr)
        assert got == _field_values(recs, k, f, fixed), (style, k, f, fixed)
        val = rnd.choice(got)
        fixed[(k, f)] = val
        st_ = st_.assign(var.id, next(x for x in st_.feasible_values(var.id) if var.value(x) == val))


def test_unsat_calendar_found_by_propagation() -> None:
    # three meetings of 2 in 5 slots: infeasible, and the root's propagation alone says so
    doc = _meeting_spec("table", 3, 5, [2, 2, 2], {}, {}, 2)
    cs = compile_spec(doc)
    with pytest.raises(Unsatisfiable):
        cs.root()
    assert cs.problem.stats.nodes <= 2


def test_rooms_run_out() -> None:
    # four meetings of 3 slots in 2 rooms within 4 slots: each pair fits (in two rooms), but at
    # slots 1-2 every meeting runs, and two rooms cannot hold four; found without search
    doc = _meeting_spec("rooms", 4, 4, [3, 3, 3, 3], {}, {}, 2)
    cs = compile_spec(doc)
    with pytest.raises(Unsatisfiable):
        cs.root()
    assert cs.problem.stats.nodes <= 2


def test_rooms_pairs_recognised_with_resources() -> None:
    doc = _meeting_spec("rooms", 4, 8, [2, 2, 2, 2], {}, {}, 2)
    cs = compile_spec(doc)
    g = [x for x in cs.problem.globals if isinstance(x, NoOverlap)]
    assert len(g) == 1 and g[0].resources is not None and len(g[0].tasks) == 4


def test_no_overlap_function_errors() -> None:
    doc = _meeting_spec("function", 3, 6, [1, 1, 1], {}, {}, 2)
    doc["x-factorspec"]["relations"] = ["no_overlap(m[i].start for i)"]
    with pytest.raises(Exception, match=r"\(start, end\) pairs"):
        compile_spec(doc)


def test_negative_durations_not_recognised() -> None:
    # end may precede start: no interval semantics, so no NoOverlap (the factors still decide)
    doc = _meeting_spec("end_eq", 3, 6, [1, 1, 1], {}, {}, 2)
    doc["x-factorspec"]["relations"][0] = "forall i: m[i].end >= m[i].start - 2"
    cs = compile_spec(doc)
    assert not any(isinstance(g, NoOverlap) for g in cs.problem.globals)


@pytest.mark.parametrize("step", [1, 15])
@pytest.mark.parametrize("seed", range(6))
def test_lookup_durations_match_brute_force(seed: int, step: int) -> None:
    # the duration is a table lookup by the meeting's title (`end - start == dur[title]`): the
    # least duration the node may assume is the table's least value; with step 15 the times are
    # minutes in multiples of 15 (the node reasons on values, narrows internal units exactly)
    rnd = random.Random(seed)
    horizon = rnd.randint(5, 8)
    dur = {t: rnd.randint(1, 3) for t in ("a", "b", "c")}
    t_ = {"type": "integer", "minimum": 0, "maximum": horizon * step} | ({"multipleOf": step} if step > 1 else {})
    item = {"type": "object", "properties": {"title": {"enum": ["a", "b", "c"]}, "start": t_, "end": t_},
            "required": ["title", "start", "end"]}
    doc = {"type": "object", "properties": {"m": {"type": "array", "minItems": 3, "maxItems": 3, "items": item}},
           "required": ["m"], "x-factorspec": {"tables": {"dur": {t: d * step for t, d in dur.items()}}, "relations": [
               "forall i: m[i].end - m[i].start == dur[m[i].title]",
               "forall i, j: i < j implies (m[i].end <= m[j].start or m[j].end <= m[i].start)",
               f"m[{rnd.randint(0, 2)}].start >= {rnd.randint(0, 3) * step}"]}}
    cs = compile_spec(doc)
    assert any(isinstance(g, NoOverlap) for g in cs.problem.globals)
    per_item = [{"title": t, "start": s * step, "end": (s + d) * step} for t, d in dur.items()
                for s in range(horizon + 1 - d)]
    recs = [r for combo in itertools.product(per_item, repeat=3) if not cs.check(r := {"m": list(combo)})]
    if not recs:
        with pytest.raises(Unsatisfiable):
            cs.root()
        return
    st_: Any = cs.root()
    assert cs.count() == len(recs)
    fixed: dict = {}
    for k in range(3):
        for f in ("title", "start", "end"):
            var = cs.var_of[("m", k, f)]
            got = sorted((var.value(x) for x in st_.feasible_values(var.id)), key=repr)
            assert got == _field_values(recs, k, f, fixed), (k, f, fixed)
            val = rnd.choice(got)
            fixed[(k, f)] = val
            st_ = st_.assign(var.id, next(x for x in st_.feasible_values(var.id) if var.value(x) == val))
