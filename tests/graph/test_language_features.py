"""The relation language as users write it (issue #13): each form is compiled and checked against
a brute-force oracle written in plain Python on a small instance: `check` agrees with the oracle on
every record, `count` equals the number of valid records, and the solver's feasible values after
every prefix of every valid record equal brute force's."""
from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from factorspec.errors import RelationError, Unsatisfiable
from factorspec.graph import compile_spec
from factorspec.graph.relations import from_json, parse, to_json, to_text

WILD = object()  # a slot of an absent item: any value


def I(lo: int, hi: int) -> dict:  # noqa: E743 - schema helper
    return {"type": "integer", "minimum": lo, "maximum": hi}


def S(*values: str) -> dict:
    return {"type": "string", "enum": list(values)}


def arr(item: dict, lo: int, hi: int) -> dict:
    return {"type": "array", "items": item, "minItems": lo, "maxItems": hi}


def obj(props: dict, required: list | None = None) -> dict:
    return {"type": "object", "properties": props,
            "required": list(props) if required is None else required, "additionalProperties": False}


def spec(props: dict, relations: list, tables: dict | None = None, required: list | None = None) -> dict:
    d = obj(props, required)
    d["x-factorspec"] = {"tables": tables or {}, "relations": relations}
    return d


def lists(values: Iterable, lo: int, hi: int) -> list[list]:
    vs = list(values)
    return [list(t) for n in range(lo, hi + 1) for t in itertools.product(vs, repeat=n)]


def records(**fields: list) -> list[dict]:
    """Every combination of the given field values (a value MISSING leaves the field out)."""
    keys = list(fields)
    out = []
    for combo in itertools.product(*(fields[k] for k in keys)):
        out.append({k: v for k, v in zip(keys, combo) if v is not MISSING})
    return out


MISSING = object()


def _projection(cs: Any, rec: dict, order: list) -> tuple:
    A, bad = cs.assignment_of(rec)
    assert A is not None, bad
    return tuple(A[v.id] if v.guard is None or v.guard.ev(A) else WILD for v in order)


def exact(doc: dict, recs: list[dict], oracle: Callable[[dict], bool], max_paths: int = 40) -> int:
    """Assert that the compiled spec decides exactly `oracle` over `recs` (all records of the
    instance's constrained part); returns the number of valid records."""
    cs = compile_spec(doc)
    valid = []
    for r in recs:
        got, want = cs.check(r) == [], bool(oracle(r))
        assert got == want, f"check says {'valid' if got else cs.check(r)} but the oracle says {want}: {r}"
        if want:
            valid.append(r)
    if not valid:
        with pytest.raises(Unsatisfiable):
            cs.root()
        return 0
    order = sorted(cs.vars, key=lambda v: (v.order, v.id))
    projs = sorted({_projection(cs, r, order) for r in valid},
                   key=lambda p: tuple((x is WILD, 0 if x is WILD else x) for x in p))
    canon = {tuple(order[i].lo if x is WILD else x for i, x in enumerate(p)) for p in projs}
    assert cs.count() == len(canon)
    solved = json.loads(cs.canonical_text(cs.solve()))
    assert oracle(solved) and cs.check(solved) == []
    root = cs.root()
    step = max(1, len(projs) // max_paths)
    seen: set = set()
    for proj in projs[::step]:
        st, prefix = root, []
        for k, var in enumerate(order):
            key = tuple(prefix)
            if key not in seen:
                seen.add(key)
                want_vals: set = set()
                for p in projs:
                    if all(a is WILD or a == b for a, b in zip(p, prefix)):
                        want_vals |= set(range(var.lo, var.hi + 1)) if p[k] is WILD else {p[k]}
                got_vals = set(st.feasible_values(var.id))
                assert got_vals == want_vals, f"{var.name} after {prefix}: {sorted(got_vals)} != {sorted(want_vals)}"
            value = var.lo if proj[k] is WILD else proj[k]
            st = st.assign(var.id, value)
            assert st is not None
            prefix.append(value)
    return len(valid)


# -- nested stars --------------------------------------------------------------------------------
def test_nested_stars() -> None:
    props = {"tables": arr(obj({"guests": arr(I(0, 2), 1, 2)}), 2, 2)}
    recs = records(tables=[[{"guests": a}, {"guests": b}] for a in lists(range(3), 1, 2)
                           for b in lists(range(3), 1, 2)])

    def guests(r: dict) -> list:
        return [g for t in r["tables"] for g in t["guests"]]

    assert exact(spec(props, ["all_different(tables[*].guests[*])"]), recs,
                 lambda r: len(set(guests(r))) == len(guests(r))) > 0
    assert exact(spec(props, ["sum(tables[*].guests[*]) == 3", "min(tables[*].guests[*]) == 0"]),
                 recs, lambda r: sum(guests(r)) == 3 and min(guests(r)) == 0) > 0


def test_nested_stars_over_optional_fields() -> None:
    item = obj({"tags": arr(I(0, 1), 1, 1), "w": I(0, 1)}, required=["w"])
    props = {"xs": arr(item, 2, 2)}
    opts = [MISSING, [0], [1]]
    recs = []
    for a, b in itertools.product(opts, repeat=2):
        for w in itertools.product(range(2), repeat=2):
            recs.append({"xs": [{**({"tags": a} if a is not MISSING else {}), "w": w[0]},
                                {**({"tags": b} if b is not MISSING else {}), "w": w[1]}]})

    def tags(r: dict) -> list:
        return [t for x in r["xs"] for t in x.get("tags", [])]

    assert exact(spec(props, ["sum(xs[*].tags[*]) == sum(xs[*].w)"]), recs,
                 lambda r: sum(tags(r)) == sum(x["w"] for x in r["xs"])) > 0


# -- positional tables ----------------------------------------------------------------------------
def test_positional_tables() -> None:
    tables = {"capacity": [3, 2, 0], "dist": [[0, 2], [2, 1]]}
    props = {"t": I(0, 2), "n": I(0, 4), "a": I(0, 1), "b": I(0, 1), "d": I(0, 3)}
    recs = records(t=list(range(3)), n=list(range(5)), a=[0, 1], b=[0, 1], d=list(range(4)))
    cap, dist = tables["capacity"], tables["dist"]
    assert exact(spec(props, ["n <= capacity[t]", "d == dist[a][b]", "capacity[-1] == 0",
                              "dist[1][b] >= 1"], tables), recs,
                 lambda r: r["n"] <= cap[r["t"]] and r["d"] == dist[r["a"]][r["b"]] and dist[1][r["b"]] >= 1) > 0


def test_positional_table_drives_range_inference() -> None:
    tables = {"capacity": [2, 1, 0]}
    props = {"load": arr(I(0, 2), 3, 3)}
    recs = records(load=lists(range(3), 3, 3))
    assert exact(spec(props, ["forall t: load[t] <= capacity[t]"], tables), recs,
                 lambda r: all(x <= c for x, c in zip(r["load"], tables["capacity"]))) > 0


def test_positional_index_out_of_the_table_is_false() -> None:
    # a variable position with no entry has no value: the relation instance is false
    props = {"t": I(0, 3)}
    assert exact(spec(props, ["capacity[t] >= 0"], {"capacity": [1, 2]}), records(t=list(range(4))),
                 lambda r: r["t"] < 2) == 2


# -- string order --------------------------------------------------------------------------------
def test_string_order_is_lexicographic_by_code_point() -> None:
    names = ["bo", "al", "Cy", "é", "b"]  # code points: "Cy" < "al" < "b" < "bo" < "é"
    props = {"guests": arr(S(*names), 3, 3)}
    recs = records(guests=lists(names, 3, 3))
    assert exact(spec(props, ["forall k: guests[k] < guests[k+1]"]), recs,
                 lambda r: all(x < y for x, y in zip(r["guests"], r["guests"][1:]))) == 10
    assert exact(spec(props, ["guests[0] >= \"b\"", "guests[1] <= guests[2]"]), recs,
                 lambda r: r["guests"][0] >= "b" and r["guests"][1] <= r["guests"][2]) > 0


# -- forall over a table ---------------------------------------------------------------------------
def test_forall_over_table_values_and_keys() -> None:
    people = ["ann", "bob"]
    quota = {"ann": 2, "cy": 1}
    props = {"seat": arr(S("ann", "bob", "cy"), 3, 3)}
    recs = records(seat=lists(["ann", "bob", "cy"], 3, 3))
    assert exact(spec(props, ["forall p in people: count(seat[i] == p for i) >= 1",
                              "forall p in quota: count(seat[i] == p for i) <= quota[p]"],
                      {"people": people, "quota": quota}), recs,
                 lambda r: all(r["seat"].count(p) >= 1 for p in people)
                 and all(r["seat"].count(p) <= q for p, q in quota.items())) > 0
    # generators range over tables too
    assert exact(spec(props, ["sum(count(seat[i] == p for i) for p in people) == 2"], {"people": people}),
                 recs, lambda r: sum(r["seat"].count(p) for p in people) == 2) > 0


# -- tuples in all_different -------------------------------------------------------------------------
def test_all_different_over_tuples() -> None:
    props = {"g": arr(obj({"home": I(0, 2), "away": I(0, 2)}), 0, 3)}
    pairs = [{"home": h, "away": a} for h in range(3) for a in range(3)]
    recs = records(g=lists(pairs, 0, 3))

    def distinct(r: dict) -> bool:
        ts = [(x["home"], x["away"]) for x in r["g"]]
        return len(set(ts)) == len(ts)

    assert exact(spec(props, ["all_different((g[i].home, g[i].away) for i)"]), recs, distinct) > 0
    # unordered pairs: the nearest form with min/max
    assert exact(spec(props, ["all_different((min(g[i].home, g[i].away), max(g[i].home, g[i].away)) for i)",
                              "forall i: g[i].home != g[i].away"]), recs,
                 lambda r: all(x["home"] != x["away"] for x in r["g"])
                 and len({frozenset((x["home"], x["away"])) for x in r["g"]}) == len(r["g"])) > 0


# -- several generator variables ------------------------------------------------------------------
def test_several_generator_variables() -> None:
    props = {"x": arr(I(0, 2), 3, 3), "m": arr(arr(I(0, 1), 2, 2), 2, 2)}
    recs = records(x=lists(range(3), 3, 3), m=[[a, b] for a in lists(range(2), 2, 2) for b in lists(range(2), 2, 2)])
    assert exact(spec(props, ["count(x[i] == x[j] for i, j if i < j) == 1",
                              "sum(m[i][j] for i, j) == 2"]), recs,
                 lambda r: sum(r["x"][i] == r["x"][j] for i in range(3) for j in range(3) if i < j) == 1
                 and sum(map(sum, r["m"])) == 2) > 0
    assert exact(spec(props, ["count(m[i][j] == 1 for i, j in 0..2 if i != j) == 1"]), recs,
                 lambda r: (r["m"][0][1] == 1) + (r["m"][1][0] == 1) == 1) > 0


# -- range inference through inner variables --------------------------------------------------------
def test_range_inference_through_inner_variables() -> None:
    props = {"grid": arr(arr(I(0, 2), 3, 3), 2, 2)}
    recs = records(grid=[[a, b] for a in lists(range(3), 3, 3) for b in lists(range(3), 3, 3)])
    assert exact(spec(props, ["forall c: all_different(grid[r][c] for r)",
                              "forall r: sum(grid[r][c] for c) == 3"]), recs,
                 lambda r: all(r["grid"][0][c] != r["grid"][1][c] for c in range(3))
                 and all(sum(row) == 3 for row in r["grid"])) > 0


# -- conditional values --------------------------------------------------------------------------------
def test_conditional_values() -> None:
    props = {"w": I(0, 15), "fee": I(0, 5)}
    recs = records(w=list(range(16)), fee=list(range(6)))
    assert exact(spec(props, ["fee == (5 if w > 10 else 0)"]), recs,
                 lambda r: r["fee"] == (5 if r["w"] > 10 else 0)) == 16
    assert exact(spec(props, ["sum((2 if w > k else 0) for k in 0..3) == fee + 1"]), recs,
                 lambda r: sum(2 if r["w"] > k else 0 for k in range(3)) == r["fee"] + 1) > 0


def test_conditional_branch_needs_its_item_only_when_taken() -> None:
    props = {"items": arr(I(0, 3), 0, 2), "x": I(0, 3)}
    recs = records(items=lists(range(4), 0, 2), x=list(range(4)))
    # with one item or none, x must be 0 (the relation is not vacuous because items[1] is absent)
    assert exact(spec(props, ["x == (items[1] if len(items) > 1 else 0)"]), recs,
                 lambda r: r["x"] == (r["items"][1] if len(r["items"]) > 1 else 0)) == 16 + 1 + 4


# -- exact division ---------------------------------------------------------------------------------------
def test_exact_division() -> None:
    props = {"total": I(0, 9), "shares": arr(I(0, 9), 1, 3)}
    recs = records(total=list(range(10)), shares=lists(range(10), 1, 3))
    n = exact(spec(props, ["forall i: shares[i] == total / len(shares)"]), recs,
              lambda r: all(s * len(r["shares"]) == r["total"] for s in r["shares"]))
    assert n == 10 + 5 + 4  # a non-integer share is simply infeasible
    props2 = {"x": I(0, 7), "y": I(0, 3)}
    recs2 = records(x=list(range(8)), y=list(range(4)))
    assert exact(spec(props2, ["y == x / 2", "x / 4 >= 0.5"]), recs2,
                 lambda r: 2 * r["y"] == r["x"] and r["x"] >= 2) == 3
    # dividing by a field: 0 has no quotient (the instance is false)
    assert exact(spec(props2, ["x / y == 2"]), recs2, lambda r: r["y"] != 0 and r["x"] == 2 * r["y"]) == 3
    assert exact(spec(props2, ["(x + 1) / (y + 1) == 2"]), recs2, lambda r: r["x"] + 1 == 2 * (r["y"] + 1)) == 4


# -- variable index (element) ------------------------------------------------------------------------------
def test_variable_index() -> None:
    props = {"players": arr(I(0, 3), 1, 3), "captain": I(0, 3)}
    recs = records(players=lists(range(4), 1, 3), captain=list(range(4)))

    def pick(r: dict) -> Any:
        return r["players"][r["captain"]] if r["captain"] < len(r["players"]) else None

    assert exact(spec(props, ["players[captain] == 3"]), recs, lambda r: pick(r) == 3) == 1 + 8 + 48
    # an index past the end makes the instance false, under `not` too
    assert exact(spec(props, ["not players[captain] == 0"]), recs,
                 lambda r: pick(r) is not None and pick(r) != 0) > 0
    team = {"team": arr(obj({"name": S("a", "b"), "skill": I(0, 2)}), 2, 2), "c": I(0, 1)}
    members = [{"name": n, "skill": s} for n in "ab" for s in range(3)]
    recs2 = records(team=lists(members, 2, 2), c=[0, 1])
    assert exact(spec(team, ["team[c].skill == 2", "team[c].name == \"b\""]), recs2,
                 lambda r: r["team"][r["c"]] == {"name": "b", "skill": 2}) > 0
    assert exact(spec(team, ["[10, 20][c] == 10 * (team[0].skill + 1)"]), recs2,
                 lambda r: [10, 20][r["c"]] == 10 * (r["team"][0]["skill"] + 1)) > 0


# -- distinct count ----------------------------------------------------------------------------------------
def test_distinct_count() -> None:
    props = {"rooms": arr(I(0, 2), 1, 3)}
    recs = records(rooms=lists(range(3), 1, 3))
    assert exact(spec(props, ["len(set(rooms[*])) == 2"]), recs, lambda r: len(set(r["rooms"])) == 2) > 0
    assert exact(spec(props, ["len(set(rooms[i] for i)) == len(rooms)"]), recs,
                 lambda r: len(set(r["rooms"])) == len(r["rooms"])) > 0
    props2 = {"g": arr(obj({"a": I(0, 1), "b": I(0, 1)}), 3, 3)}
    recs2 = records(g=lists([{"a": a, "b": b} for a in range(2) for b in range(2)], 3, 3))
    assert exact(spec(props2, ["len(set((g[i].a, g[i].b) for i)) == 2"]), recs2,
                 lambda r: len({(x["a"], x["b"]) for x in r["g"]}) == 2) > 0


# -- presence ------------------------------------------------------------------------------------------------
def test_has_on_optional_fields() -> None:
    props = {"subtotal": I(0, 6), "discount": I(0, 2)}
    recs = records(subtotal=list(range(7)), discount=[MISSING, 0, 1, 2])
    # subtotal >= 5 requires a discount; a relation on the absent field holds vacuously
    assert exact(spec(props, ["subtotal >= 5 implies has(discount)", "discount >= 1"], required=["subtotal"]),
                 recs, lambda r: (r["subtotal"] < 5 or "discount" in r) and r.get("discount", 1) >= 1) \
        == 5 * 3 + 2 * 2
    assert exact(spec(props, ["present(discount) == (subtotal > 3)"], required=["subtotal"]), recs,
                 lambda r: ("discount" in r) == (r["subtotal"] > 3)) > 0


def test_has_on_items_and_free_text() -> None:
    props = {"items": arr(I(0, 2), 0, 3), "note": {"type": "string", "maxLength": 3}}
    recs = records(items=lists(range(3), 0, 3), note=[MISSING, "ab"])
    assert exact(spec(props, ["has(items[1]) implies items[1] > items[0]", "has(note) == has(items[2])"],
                      required=["items"]), recs,
                 lambda r: (len(r["items"]) < 2 or r["items"][1] > r["items"][0])
                 and ("note" in r) == (len(r["items"]) > 2)) > 0


# -- the documented JSON AST form ------------------------------------------------------------------------------
def test_documented_json_ast_form_compiles_like_the_text() -> None:
    props = {"itinerary": arr(obj({"city": S("Oslo", "Rome"), "day": I(1, 3)}), 2, 2)}
    text = ["forall i: itinerary[i+1].day == itinerary[i].day + 1", "all_different(itinerary[*].city)"]
    ast = [
        {"op": "forall", "vars": ["i"], "range": None, "body": {
            "op": "==", "args": [
                {"path": ["itinerary", {"op": "+", "args": [{"var": "i"}, {"const": 1}]}, "day"]},
                {"op": "+", "args": [{"path": ["itinerary", {"var": "i"}, "day"]}, {"const": 1}]}]}},
        {"op": "call", "func": "all_different", "args": [{"path": ["itinerary", "*", "city"]}]},
    ]
    cities = [{"city": c, "day": d} for c in ("Oslo", "Rome") for d in range(1, 4)]
    recs = records(itinerary=lists(cities, 2, 2))
    ast = [{"name": f"r{k}", "expr": x} for k, x in enumerate(ast)]
    a, b = compile_spec(spec(props, text)), compile_spec(spec(props, ast))
    assert [to_text(parse(t)) for t in text] == [r.text for r in b.relations]
    assert [a.check(r) == [] for r in recs] == [b.check(r) == [] for r in recs]
    assert exact(spec(props, ast), recs, lambda r: r["itinerary"][1]["day"] == r["itinerary"][0]["day"] + 1
                 and r["itinerary"][0]["city"] != r["itinerary"][1]["city"]) == 4


# -- errors that blame the right thing ------------------------------------------------------------------------
BAD = [
    ("a[*] == 1", "[*] applied to a, which is a single value"),
    ("has(xs[*])", "has() needs the path of a field"),
    ("len(set(xs[*])) == 1 and set(xs[*]) == 1", "set(...) may only be counted"),
    ("sum((a, a) for i in 0..2) == 1", "tuples may be items of all_different"),
    ("all_different((a, a), a)", "all be single values or all tuples"),
    ("a / big == 1", "dividing by big is not supported"),
    ("a / 0 == 1", "division by zero"),
    ("a == (1 if a > 0 else \"x\")", "differ in kind"),
    ("forall p in pairs: a == 1", "rows have several columns"),
    ("a != null", "has(a) instead"),
    ("xs[s] == 1", "an array index must be a number"),
    ("forall i in a: a == 1", "must be an array path (its indices), a table"),
    ("pos[s] == 1", "indexed by position (a number)"),
    ("pos[5] == 1", "out of range of table 'pos'"),
    ("s < 1", "compares numbers only, or strings with strings"),
    ("xs[a][*] == 1", "[*] after a variable index is not supported"),
    ("count(xs[*] == 0) == 1", "is a list of items, not one value"),
    ("pos == 1", "is a table, not a value"),
]


@pytest.mark.parametrize("text,fragment", BAD)
def test_unsupported_forms_say_what_is_wrong(text: str, fragment: str) -> None:
    props = {"a": I(0, 3), "big": I(0, 100000), "s": S("x", "y"),
             "xs": arr(I(0, 1), 2, 2)}
    doc = spec(props, ["a >= 0", {"name": "bad", "expr": text}],
               {"pairs": [[1, 2], [3, 4]], "pos": [1, 2]})
    with pytest.raises(RelationError) as ei:
        compile_spec(doc)
    assert ei.value.relation == "bad" and fragment in str(ei.value), str(ei.value)


def test_text_forms_round_trip() -> None:
    for t in ["(5 if w > 10 else 0) + 1 == x", "sum(5 if w[i] > 10 else 0 for i) == 3",
              "count(a[i] == b[j] for i, j in 0..3 if i < j) == 1", "x == total / len(shares)",
              "has(discount) and present(a.b)", "len(set(rooms[*])) == 2", "a implies (b if c else d)",
              "all_different((g[i].home, g[i].away) for i)", "forall p in people: x[p] > 0"]:
        ast = parse(t)
        assert parse(to_text(ast)) == ast and to_text(parse(to_text(ast))) == to_text(ast)
        assert from_json(json.loads(json.dumps(to_json(ast)))) == ast


def test_soft_relations_compile_as_preferences() -> None:
    """Soft relations are reported, never enforced (tests/graph/test_soft_relations.py)."""
    cs = compile_spec(spec({"a": I(0, 3)}, ["a >= 0", {"name": "pref", "expr": "a > 1", "soft": True}]))
    assert cs.count() == 4 and cs.check({"a": 0}) == []
    assert [v.relation for v in cs.soft_violations({"a": 0})] == ["pref"]


def test_fields_of_items_picked_by_a_variable_index_or_last() -> None:
    """players[captain].skill and last(xs).skill on a variable-length array of objects."""
    props = {"players": arr(obj({"skill": I(0, 2), "tag": I(0, 1)}, required=["skill"]), 1, 3), "captain": I(0, 3)}
    items = [{"skill": s} for s in range(3)] + [{"skill": s, "tag": 1} for s in range(3)]
    recs = records(players=lists(items, 1, 3), captain=list(range(4)))

    def pick(r: dict) -> Any:
        return r["players"][r["captain"]] if r["captain"] < len(r["players"]) else None

    assert exact(spec(props, ["players[captain].skill == 2", "last(players).skill >= 1"]), recs,
                 lambda r: pick(r) is not None and pick(r)["skill"] == 2 and r["players"][-1]["skill"] >= 1) > 0
    with pytest.raises(RelationError, match="optional property 'tag' read through a variable index"):
        compile_spec(spec(props, ["players[captain].tag == 1"]))
