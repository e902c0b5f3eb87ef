"""Ten problem kinds beyond trips, written as a user writes them first (issue #13): each a spec
builder, an oracle in plain Python (written from the problem statement, independently of
FactorSpec's evaluator) and, for the small instances, an enumerator of every record over the
instance's domains (so a brute force gives the exact set of valid records).

`tests/graph/test_generality.py` checks FactorSpec against the brute force on the small instances;
`microbench/generality_bench.py` times solve and the feasibility questions of a decoding walk on
the large ones. `KINDS[name](large)` builds one instance.
"""
from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Optional

Record = dict[str, Any]


@dataclass
class Kind:
    """One instance of a problem kind: its spec, its oracle, and (small instances) every record."""

    name: str
    doc: dict
    valid: Callable[[Record], bool]
    records: Optional[Callable[[], Iterable[Record]]]  # None for instances too large to enumerate
    # the same problem written other ways a user might (item generators, Python spellings, other
    # aggregates): each list of relations replaces the spec's and must decide the same records
    variants: list[list] = field(default_factory=list)

    def variant_doc(self, k: int) -> dict:
        d = dict(self.doc)
        d["x-factorspec"] = {**self.doc["x-factorspec"], "relations": self.variants[k]}
        return d


# -- schema helpers -------------------------------------------------------------------------------
def _int(lo: int, hi: int) -> dict:
    return {"type": "integer", "minimum": lo, "maximum": hi}


def _enum(values: Iterable[Any]) -> dict:
    return {"enum": list(values)}


def _dec(step: str, lo: str, hi: str) -> dict:
    """A fixed-point number (multipleOf `step`), bounds as decimal strings (exact)."""
    return {"type": "number", "multipleOf": float(step), "minimum": float(lo), "maximum": float(hi)}


def _arr(item: dict, lo: int, hi: int) -> dict:
    return {"type": "array", "items": item, "minItems": lo, "maxItems": hi}


def _obj(props: dict, required: Optional[list] = None) -> dict:
    return {"type": "object", "properties": props, "required": list(props) if required is None else required,
            "additionalProperties": False}


def _spec(props: dict, relations: list, tables: Optional[dict] = None) -> dict:
    d = _obj(props)
    d["x-factorspec"] = {"tables": tables or {}, "relations": relations}
    return d


def _rel(name: str, expr: str) -> dict:
    return {"name": name, "expr": expr}


def _num(x: Any) -> Fraction:
    """A JSON number exactly (floats by their shortest repr, as JSON texts write them)."""
    return Fraction(repr(x)) if isinstance(x, float) else Fraction(x)


def _steps(step: str, lo: str, hi: str) -> list[Any]:
    """Every value of a fixed-point field, as JSON would carry it (int or shortest float)."""
    s, a, b = Fraction(step), Fraction(lo), Fraction(hi)
    out = []
    k = math.ceil(a / s)
    while k * s <= b:
        v = k * s
        out.append(int(v) if v.denominator == 1 else float(str(v.numerator / v.denominator)))
        k += 1
    return out


def _lists(values: list, lo: int, hi: int) -> list[list]:
    return [list(t) for n in range(lo, hi + 1) for t in itertools.product(values, repeat=n)]


def _round_half_up(x: Fraction, q: Fraction) -> Fraction:
    return math.floor(x / q + Fraction(1, 2)) * q


def _product(**fields: list) -> Callable[[], Iterator[Record]]:
    def gen() -> Iterator[Record]:
        keys = list(fields)
        for combo in itertools.product(*(fields[k] for k in keys)):
            yield dict(zip(keys, combo))
    return gen


# -- 1. meeting calendar: no two meetings in one room or sharing a person overlap ------------------
def meetings(large: bool = False) -> Kind:
    if large:
        n, rooms, horizon, people = 8, ["A", "B", "C"], 10, 5
    else:
        n, rooms, horizon, people = 3, ["A", "B"], 4, 0
    dur = [[2, 1, 2, 1, 3, 2, 1, 2, 3, 1][i % 10] for i in range(n)]
    if large:
        rng = random.Random(7)
        attend = [set(rng.sample(range(people), 2)) for _ in range(n)]
        share = [[i, j] for i in range(n) for j in range(i + 1, n) if attend[i] & attend[j]]
    else:
        share = [[0, 2]]
    item = _obj({"start": _int(0, horizon - 1), "room": _enum(rooms)})
    doc = _spec({"meetings": _arr(item, n, n)}, [
        _rel("within_day", f"forall i: meetings[i].start + dur[i] <= {horizon}"),
        _rel("no_overlap", "forall i, j: i < j and (meetings[i].room == meetings[j].room or (i, j) in share) "
                           "implies (meetings[i].start + dur[i] <= meetings[j].start "
                           "or meetings[j].start + dur[j] <= meetings[i].start)"),
    ], {"dur": dur, "share": share})
    pairs = {(a, b) for a, b in share}

    def valid(r: Record) -> bool:
        m = r["meetings"]
        if any(x["start"] + dur[i] > horizon for i, x in enumerate(m)):
            return False
        for i in range(n):
            for j in range(i + 1, n):
                if m[i]["room"] == m[j]["room"] or (i, j) in pairs:
                    a, b = m[i]["start"], m[j]["start"]
                    if not (a + dur[i] <= b or b + dur[j] <= a):
                        return False
        return True

    slots = [{"start": s, "room": ro} for s in range(horizon) for ro in rooms]
    variants = [[
        f"all(meetings[i].start + dur[i] <= {horizon} for i in range(len(meetings)))",
        "forall i, j: i != j and (meetings[i].room == meetings[j].room or (min(i, j), max(i, j)) in share) "
        "implies not (meetings[i].start < meetings[j].start + dur[j] "
        "and meetings[j].start < meetings[i].start + dur[i])",
    ]]
    return Kind("meetings", doc, valid, None if large else _product(meetings=_lists(slots, n, n)), variants)


# -- 2. invoice with VAT rounding ----------------------------------------------------------------------
def invoice(large: bool = False) -> Kind:
    if large:
        n, qty, prices, rate, q = 10, 5, [0.99, 2.49, 5, 12.5], "0.2", "0.01"
        sub, vat, tot = ("0.01", "0", "625"), ("0.01", "0", "125"), ("0.01", "0", "750")
    else:
        n, qty, prices, rate, q = 2, 1, [0.5, 1.5], "0.25", "0.1"
        sub, vat, tot = ("0.5", "0", "3"), ("0.1", "0", "0.8"), ("0.1", "0", "3.8")
    line = _obj({"qty": _int(0, qty), "price": {"type": "number", "enum": prices}})
    doc = _spec({"lines": _arr(line, n, n), "subtotal": _dec(*sub), "vat": _dec(*vat), "total": _dec(*tot)}, [
        _rel("subtotal", "subtotal == sum(lines[i].qty * lines[i].price for i)"),
        _rel("vat", f"vat == round(subtotal * {rate}, {q})"),
        _rel("total", "total == subtotal + vat"),
    ])

    def valid(r: Record) -> bool:
        s = sum(x["qty"] * _num(x["price"]) for x in r["lines"])
        v = _round_half_up(s * Fraction(rate), Fraction(q))
        return _num(r["subtotal"]) == s and _num(r["vat"]) == v and _num(r["total"]) == s + v

    lines = [{"qty": k, "price": p} for k in range(qty + 1) for p in prices]
    inv = 1 / Fraction(rate)
    variants = [[
        "subtotal == sum(l.qty * l.price for l in lines)",
        f"vat == round(subtotal / {inv}, {q})" if inv.denominator == 1 else f"vat == round({rate} * subtotal, {q})",
        "total - vat == subtotal",
    ]]
    return Kind("invoice", doc, valid, None if large else _product(
        lines=_lists(lines, n, n), subtotal=_steps(*sub), vat=_steps(*vat), total=_steps(*tot)), variants)


# -- 3. seating chart: tables of guests ----------------------------------------------------------------
def seating(large: bool = False) -> Kind:
    if large:
        guests = [f"g{k:02d}" for k in range(16)]
        capacity, seats = [4, 4, 3, 3, 2, 2], 4
        feuds = [["g00", "g01"], ["g02", "g03"], ["g04", "g05"]]
    else:
        # code-point order, as Python's: "Bob" < "Dee" < "ann" < "cy"
        guests, capacity, seats = ["ann", "Bob", "cy", "Dee"], [2, 2, 1], 2
        feuds = [["ann", "Bob"]]
    t = len(capacity)
    table = _obj({"guests": _arr(_enum(guests), 1, seats)})
    doc = _spec({"tables": _arr(table, t, t)}, [
        _rel("seated_once", "all_different(tables[*].guests[*])"),
        _rel("everyone", f"len(tables[*].guests[*]) == {len(guests)}"),
        _rel("capacity", "forall t: len(tables[t].guests) <= capacity[t]"),
        _rel("name_order", "forall t: forall k: tables[t].guests[k] < tables[t].guests[k+1]"),
        _rel("feuds", "forall t, f: not (feuds[f][0] in tables[t].guests and feuds[f][1] in tables[t].guests)"),
    ], {"capacity": capacity, "feuds": feuds})

    def valid(r: Record) -> bool:
        seated = [g for x in r["tables"] for g in x["guests"]]
        if len(seated) != len(set(seated)) or len(seated) != len(guests):
            return False
        for k, x in enumerate(r["tables"]):
            gs = x["guests"]
            if len(gs) > capacity[k] or gs != sorted(gs) or len(set(gs)) != len(gs):
                return False
            if any(a in gs and b in gs for a, b in feuds):
                return False
        return True

    per_table = [{"guests": g} for g in _lists(guests, 1, seats)]
    variants = [[
        "len(set(g for g in tables[*].guests[*])) == len(tables[*].guests[*])",
        f"sum(len(x.guests) for x in tables) == {len(guests)}",
        "forall k in range(len(tables)): len(tables[k].guests) <= capacity[k]",
        "forall x in tables: forall k: x.guests[k] < x.guests[k+1]",
    ] + [f"not any({a!r} in x.guests and {b!r} in x.guests for x in tables)" for a, b in feuds]]
    return Kind("seating", doc, valid, None if large else _product(tables=_lists(per_table, t, t)), variants)


# -- 4. exam timetable: clashing exams apart, one exam per room and slot --------------------------------
def exams(large: bool = False) -> Kind:
    if large:
        n, slots, rooms = 12, 5, ["R1", "R2", "R3"]
        rng = random.Random(3)
        clash = sorted({tuple(sorted(rng.sample(range(n), 2))) for _ in range(18)})
    else:
        n, slots, rooms = 4, 3, ["R1", "R2"]
        clash = [(0, 1), (1, 2), (0, 3)]
    item = _obj({"slot": _int(0, slots - 1), "room": _enum(rooms)})
    doc = _spec({"exams": _arr(item, n, n)}, [
        _rel("no_clash", "forall i, j: (i, j) in clash implies exams[i].slot != exams[j].slot"),
        _rel("one_per_room", "all_different((exams[i].slot, exams[i].room) for i)"),
        _rel("big_room", "exams[0].room == \"R1\""),
    ], {"clash": [list(c) for c in clash]})

    def valid(r: Record) -> bool:
        e = r["exams"]
        if any(e[i]["slot"] == e[j]["slot"] for i, j in clash):
            return False
        used = [(x["slot"], x["room"]) for x in e]
        return len(set(used)) == len(used) and e[0]["room"] == "R1"

    cells = [{"slot": s, "room": ro} for s in range(slots) for ro in rooms]
    variants = [[
        "forall i, j: i < j and (i, j) in clash implies exams[i].slot != exams[j].slot",
        "len(set((e.slot, e.room) for e in exams)) == len(exams)",
        "exams[0].room == 'R1'",
    ]]
    return Kind("exams", doc, valid, None if large else _product(exams=_lists(cells, n, n)), variants)


# -- 5. round-robin fixture: rounds of games, every pair once ----------------------------------------
def round_robin(large: bool = False) -> Kind:
    teams = ["Ajax", "Benfica", "Celtic", "Dynamo", "Espanyol", "Fulham"] if large else ["Ajax", "Benfica", "Celtic"]
    t = len(teams)
    rounds = t - 1 if t % 2 == 0 else t
    games = t // 2
    hosts = math.ceil(rounds * games / t)
    game = _obj({"home": _enum(teams), "away": _enum(teams)})
    doc = _spec({"rounds": _arr(_arr(game, games, games), rounds, rounds)}, [
        _rel("two_teams", "forall r, k: rounds[r][k].home != rounds[r][k].away"),
        _rel("once_a_round", "forall r: forall p in teams: "
                             "count(rounds[r][k].home == p or rounds[r][k].away == p for k) <= 1"),
        _rel("pairs_once", "all_different((min(rounds[r][k].home, rounds[r][k].away), "
                           "max(rounds[r][k].home, rounds[r][k].away)) for r, k)"),
        _rel("home_games", f"forall p in teams: count(rounds[r][k].home == p for r, k) <= {hosts}"),
    ], {"teams": teams})

    def valid(rec: Record) -> bool:
        seen = set()
        homes = dict.fromkeys(teams, 0)
        for rnd in rec["rounds"]:
            playing: list[str] = []
            for g in rnd:
                h, a = g["home"], g["away"]
                if h == a:
                    return False
                playing += [h, a]
                seen_pair = frozenset((h, a))
                if seen_pair in seen:
                    return False
                seen.add(seen_pair)
                homes[h] += 1
            if len(playing) != len(set(playing)):
                return False
        return all(c <= hosts for c in homes.values())

    gs = [{"home": h, "away": a} for h in teams for a in teams]
    variants = [[
        "forall rnd in rounds: forall g in rnd: g.home != g.away",
        "forall r: forall p in teams: count(p in [g.home, g.away] for g in rounds[r]) <= 1",
        "len(set((min(rounds[r][k].home, rounds[r][k].away), max(rounds[r][k].home, rounds[r][k].away)) "
        f"for r, k)) == {rounds * games}",
        f"forall p in teams: sum(1 for r, k if rounds[r][k].home == p) <= {hosts}",
    ]]
    return Kind("round_robin", doc, valid,
                None if large else _product(rounds=[[list(r) for r in rs] for rs in
                                                    itertools.product(_lists(gs, games, games), repeat=rounds)]),
                variants)


# -- 6. expense split: exact shares ---------------------------------------------------------------------
def expense_split(large: bool = False) -> Kind:
    if large:
        names = [f"p{k}" for k in range(8)]
        total, owes, most = _int(0, 200), ("0.01", "0", "200"), 8
    else:
        names = ["ann", "bob", "cy"]
        total, owes, most = _int(0, 4), ("0.5", "0", "2"), 2
    person = _obj({"name": _enum(names), "owes": _dec(*owes)})
    doc = _spec({"total": total, "payer": _enum(names), "people": _arr(person, 1, most)}, [
        _rel("distinct", "all_different(people[*].name)"),
        _rel("payer_shares", "payer in people[*].name"),
        _rel("split", "forall i: people[i].owes == (0 if people[i].name == payer else total / len(people))"),
    ])

    def valid(r: Record) -> bool:
        ps = r["people"]
        if len({p["name"] for p in ps}) != len(ps) or r["payer"] not in [p["name"] for p in ps]:
            return False
        share = Fraction(r["total"], len(ps))
        return all(_num(p["owes"]) == (0 if p["name"] == r["payer"] else share) for p in ps)

    people = [{"name": nm, "owes": o} for nm in names for o in _steps(*owes)]
    variants = [[
        "len(set(people[*].name)) == len(people)",
        "any(p.name == payer for p in people)",
        "forall p in people: p.owes == (0 if p.name == payer else total / len(people))",
    ]]
    return Kind("expense_split", doc, valid, None if large else _product(
        total=list(range(total["minimum"], total["maximum"] + 1)), payer=names, people=_lists(people, 1, most)),
        variants)


# -- 7. shift roster: availability, fairness -------------------------------------------------------------
def shift_roster(large: bool = False) -> Kind:
    if large:
        staff = ["ann", "bob", "cy", "dee", "eve", "fay"]
        days, per_day, most = 7, 3, 4
        rng = random.Random(5)
        avail = {p: [0 if rng.random() < 0.2 else 1 for _ in range(days)] for p in staff}
    else:
        staff, days, per_day, most = ["ann", "bob", "cy", "dee"], 3, 2, 2
        avail = {"ann": [1, 1, 0], "bob": [1, 0, 1], "cy": [1, 1, 1], "dee": [0, 1, 1]}
    doc = _spec({"roster": _arr(_arr(_enum(staff), per_day, per_day), days, days)}, [
        _rel("distinct_in_order", "forall d, s: roster[d][s] < roster[d][s+1]"),
        _rel("available", "forall d, s: avail[roster[d][s]][d] == 1"),
        _rel("fair", f"forall p in staff: count(roster[d][s] == p for d, s) <= {most}"),
    ], {"staff": staff, "avail": avail})

    def valid(r: Record) -> bool:
        ro = r["roster"]
        if any(day != sorted(set(day)) for day in ro):
            return False
        if any(avail[p][d] != 1 for d, day in enumerate(ro) for p in day):
            return False
        return all(sum(day.count(p) for day in ro) <= most for p in staff)

    variants = [[
        "forall day in roster: forall s: day[s] < day[s+1]",
        "forall d: all(avail[p][d] == 1 for p in roster[d])",
        f"forall p in staff: count(p in roster[d] for d) <= {most}",
    ]]
    return Kind("shift_roster", doc, valid,
                None if large else _product(roster=[list(x) for x in itertools.product(
                    _lists(staff, per_day, per_day), repeat=days)]), variants)


# -- 8. nutrition label: energy rounded as labels round it --------------------------------------------------
def nutrition(large: bool = False) -> Kind:
    kcal100 = {"oats": 389, "milk": 64, "apple": 52, "nuts": 607, "rice": 130}
    fat100 = {"oats": 6.9, "milk": 3.6, "apple": 0.2, "nuts": 54, "rice": 0.3}
    if large:
        foods, grams, most, hi = list(kcal100), [25, 50, 100, 150], 6, 6000
    else:
        foods, grams, most, hi = ["oats", "milk", "apple"], [50, 100], 2, 780
    item = _obj({"food": _enum(foods), "grams": _enum(grams)})
    energy = "sum(items[i].grams * kcal100[items[i].food] / 100 for i)"
    doc = _spec({"items": _arr(item, 1, most), "kcal": {"type": "integer", "multipleOf": 5, "minimum": 0,
                                                        "maximum": hi}, "low_fat": {"type": "boolean"}}, [
        # labels round energy to 5 kcal below 50 kcal, to 10 kcal above
        _rel("kcal_label", f"kcal == (round({energy}, 5) if {energy} < 50 else round({energy}, 10))"),
        _rel("low_fat", "low_fat == (sum(items[i].grams * fat100[items[i].food] / 100 for i) <= 3)"),
    ], {"kcal100": {f: kcal100[f] for f in foods}, "fat100": {f: fat100[f] for f in foods}})

    def valid(r: Record) -> bool:
        e = sum((Fraction(x["grams"]) * kcal100[x["food"]] / 100 for x in r["items"]), Fraction(0))
        label = _round_half_up(e, Fraction(5 if e < 50 else 10))
        fat = sum(Fraction(x["grams"]) * _num(fat100[x["food"]]) / 100 for x in r["items"])
        return r["kcal"] == label and r["low_fat"] == (fat <= 3)

    items = [{"food": f, "grams": g} for f in foods for g in grams]
    e2 = "sum(it.grams * kcal100[it.food] for it in items) / 100"
    variants = [[
        f"({e2} < 50) implies kcal == round({e2}, 5)",
        f"({e2} >= 50) implies kcal == round({e2}, 10)",
        "low_fat != (sum(it.grams * fat100[it.food] for it in items) > 300)",
    ]]
    return Kind("nutrition", doc, valid, None if large else _product(
        items=_lists(items, 1, most), kcal=list(range(0, hi + 1, 5)), low_fat=[False, True]), variants)


# -- 9. packing list: bags with capacity -------------------------------------------------------------------
def packing(large: bool = False) -> Kind:
    if large:
        weight = {f"i{k:02d}": 1 + (k * 7) % 5 for k in range(12)}
        weight["passport"] = 0
        capacity, most = [8, 6, 5], 10
    else:
        weight = {"tent": 3, "stove": 2, "book": 1, "passport": 0}
        capacity, most = [3, 2], 3
    bags = len(capacity)
    item = _obj({"item": _enum(list(weight)), "bag": _int(0, bags - 1)})
    doc = _spec({"packed": _arr(item, 1, most)}, [
        _rel("distinct", "all_different(packed[*].item)"),
        _rel("passport", "\"passport\" in packed[*].item"),
        _rel("capacity", "forall b: sum((weight[packed[i].item] if packed[i].bag == b else 0) for i) <= capacity[b]"),
    ], {"weight": weight, "capacity": capacity})

    def valid(r: Record) -> bool:
        names = [x["item"] for x in r["packed"]]
        if len(set(names)) != len(names) or "passport" not in names:
            return False
        load = [0] * bags
        for x in r["packed"]:
            load[x["bag"]] += weight[x["item"]]
        return all(w <= c for w, c in zip(load, capacity))

    items = [{"item": it, "bag": b} for it in weight for b in range(bags)]
    variants = [[
        "len(set(packed[*].item)) == len(packed)",
        "'passport' in [p.item for p in packed]",
        f"forall b in range({bags}): sum(weight[p.item] for p in packed if p.bag == b) <= capacity[b]",
    ]]
    return Kind("packing", doc, valid, None if large else _product(packed=_lists(items, 1, most)), variants)


# -- 10. Latin square (a sudoku without boxes) with a given cell --------------------------------------------
def latin(large: bool = False) -> Kind:
    n = 6 if large else 3
    doc = _spec({"grid": _arr(_arr(_int(1, n), n, n), n, n)}, [
        _rel("rows", "forall r: all_different(grid[r])"),
        _rel("columns", "forall c: all_different(grid[r][c] for r)"),
        _rel("given", "grid[0][0] == 1"),
    ])

    def valid(r: Record) -> bool:
        g = r["grid"]
        ok_rows = all(sorted(row) == list(range(1, n + 1)) for row in g)
        ok_cols = all(sorted(g[i][c] for i in range(n)) == list(range(1, n + 1)) for c in range(n))
        return ok_rows and ok_cols and g[0][0] == 1

    def gen() -> Iterator[Record]:
        for cells in itertools.product(range(1, n + 1), repeat=n * n):
            yield {"grid": [list(cells[r * n:(r + 1) * n]) for r in range(n)]}

    variants = [[
        f"forall r: len(set(grid[r])) == {n}",
        f"forall c: all_different([grid[r][c] for r in range({n})])",
        "grid[0][0] == 1",
    ]]
    return Kind("latin", doc, valid, None if large else gen, variants)


KINDS: dict[str, Callable[[bool], Kind]] = {
    "meetings": meetings, "invoice": invoice, "seating": seating, "exams": exams, "round_robin": round_robin,
    "expense_split": expense_split, "shift_roster": shift_roster, "nutrition": nutrition, "packing": packing,
    "latin": latin,
}
