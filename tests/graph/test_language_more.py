"""More relation forms as users write them (issue #13, second round): membership in an array of
the record, `//` and `%` by fields, len of nested stars, min/max of strings, tables of tables,
bare arrays in aggregates (`sum(xs)`), Python's all/any and chained comparisons. Each is checked
against a brute-force oracle in plain Python by `exact` (check, count and feasible values after
every prefix)."""
from __future__ import annotations

import json

import pytest

from factorspec.errors import RelationError
from factorspec.graph import compile_spec
from factorspec.graph.relations import from_json, parse, to_json, to_text

from .test_language_features import MISSING, I, S, arr, exact, lists, obj, records, spec


def test_membership_in_an_array_of_the_record() -> None:
    props = {"a": I(0, 3), "xs": arr(I(0, 3), 0, 2)}
    recs = records(a=list(range(4)), xs=lists(range(4), 0, 2))
    for text in ("a in xs", "a in xs[*]"):
        assert exact(spec(props, [text]), recs, lambda r: r["a"] in r["xs"]) == 4 + 4 * 7
    assert exact(spec(props, ["a not in xs"]), recs, lambda r: r["a"] not in r["xs"]) > 0
    # through nested stars and an optional array
    props2 = {"a": I(0, 2), "t": arr(obj({"g": arr(I(0, 2), 1, 1)}), 2, 2), "o": arr(I(0, 2), 1, 1)}
    recs2 = records(a=list(range(3)), t=[[{"g": [x]}, {"g": [y]}] for x in range(3) for y in range(3)],
                    o=[MISSING, [0], [1], [2]])
    assert exact(spec(props2, ["a in t[*].g[*]", "a in o"], required=["a", "t"]), recs2,
                 lambda r: r["a"] in [t["g"][0] for t in r["t"]] and ("o" not in r or r["a"] in r["o"])) > 0


def test_floor_division_and_modulo_by_fields() -> None:
    props = {"a": I(-4, 4), "b": I(-2, 2), "q": I(-4, 4)}
    recs = records(a=list(range(-4, 5)), b=list(range(-2, 3)), q=list(range(-4, 5)))
    # Python's floor semantics; a divisor of 0 has no value (the instance is false)
    assert exact(spec(props, ["q == a // b"]), recs, lambda r: r["b"] != 0 and r["q"] == r["a"] // r["b"]) > 0
    assert exact(spec(props, ["q == a % b"]), recs, lambda r: r["b"] != 0 and r["q"] == r["a"] % r["b"]) > 0
    assert exact(spec(props, ["(a + 4) % (b + 3) == 1"]), recs, lambda r: (r["a"] + 4) % (r["b"] + 3) == 1) > 0


def test_len_of_nested_stars() -> None:
    props = {"t": arr(obj({"g": arr(I(0, 1), 0, 2)}), 1, 2), "n": I(0, 4)}
    tabs = [[{"g": g} for g in gs] for k in (1, 2) for gs in
            ([[a] for a in lists(range(2), 0, 2)] if k == 1 else
             [[a, b] for a in lists(range(2), 0, 2) for b in lists(range(2), 0, 2)])]
    recs = records(t=tabs, n=list(range(5)))
    assert exact(spec(props, ["n == len(t[*].g[*])"]), recs,
                 lambda r: r["n"] == sum(len(x["g"]) for x in r["t"])) == len(tabs)


def test_min_and_max_of_strings() -> None:
    names = ["bo", "al", "Cy", "b"]
    props = {"g": arr(S(*names), 1, 3), "lo": S(*names), "hi": S(*names)}
    recs = records(g=lists(names, 1, 3), lo=names, hi=names)
    assert exact(spec(props, ["lo == min(g[*])", "hi == max(g)"]), recs,
                 lambda r: r["lo"] == min(r["g"]) and r["hi"] == max(r["g"])) == len(lists(names, 1, 3))
    assert exact(spec(props, ["min(lo, hi) == \"al\""]), recs, lambda r: min(r["lo"], r["hi"]) == "al") > 0


def test_tables_of_tables() -> None:
    hours = {"ann": {"mon": 8, "tue": 0}, "bob": {"mon": 4, "tue": 6}}
    slots = {"ann": [1, 2], "bob": [3]}
    menu = [{"kcal": 100, "name": "tea"}, {"kcal": 250, "name": "bun"}]
    props = {"p": S("ann", "bob", "cy"), "d": S("mon", "tue"), "h": I(0, 8), "k": I(0, 1), "c": I(0, 300),
             "s": I(0, 4)}
    recs = records(p=["ann", "bob", "cy"], d=["mon", "tue"], h=list(range(9)), k=[0, 1], c=[100, 250, 300],
                   s=list(range(5)))
    tables = {"hours": hours, "slots": slots, "menu": menu}

    def oracle(r: dict) -> bool:
        if r["p"] not in hours:  # a key missing from a table has no value: false
            return False
        return r["h"] == hours[r["p"]][r["d"]] and r["c"] == menu[r["k"]]["kcal"] and r["s"] == slots[r["p"]][0]

    assert exact(spec(props, ["h == hours[p][d]", "c == menu[k].kcal",
                              "s == slots[p][0]"], tables), recs, oracle) == 2 * 2 * 2
    assert exact(spec(props, ["c == menu[k][\"kcal\"]"], tables), recs, lambda r: r["c"] == menu[r["k"]]["kcal"]) > 0
    assert exact(spec(props, ["hours[\"bob\"][d] > 5"], tables), recs, lambda r: hours["bob"][r["d"]] > 5) > 0


def test_bare_arrays_in_aggregates() -> None:
    props = {"xs": arr(I(0, 2), 1, 3), "n": I(0, 6)}
    recs = records(xs=lists(range(3), 1, 3), n=list(range(7)))
    assert exact(spec(props, ["sum(xs) == n", "max(xs) - min(xs) <= 1"]), recs,
                 lambda r: sum(r["xs"]) == r["n"] and max(r["xs"]) - min(r["xs"]) <= 1) > 0
    assert exact(spec(props, ["all_different(xs)", "len(set(xs)) == n"]), recs,
                 lambda r: len(set(r["xs"])) == len(r["xs"]) == r["n"]) > 0
    assert exact(spec(props, ["sum(xs) / len(xs) >= 1.5"]), recs, lambda r: 2 * sum(r["xs"]) >= 3 * len(r["xs"])) > 0


def test_all_any_and_chained_comparisons() -> None:
    props = {"xs": arr(I(0, 3), 0, 2), "w": I(0, 6)}
    recs = records(xs=lists(range(4), 0, 2), w=list(range(7)))
    assert exact(spec(props, ["all(xs[i] > 0 for i)", "any(xs[k] >= 2 for k in xs) or w == 0"]), recs,
                 lambda r: all(x > 0 for x in r["xs"]) and (any(x >= 2 for x in r["xs"]) or r["w"] == 0)) > 0
    assert exact(spec(props, ["1 <= w < 4", "0 < w != 2"]), recs, lambda r: 1 <= r["w"] < 4 and 0 < r["w"] != 2) \
        == 2 * len(lists(range(4), 0, 2))


def test_new_forms_round_trip() -> None:
    assert parse("forall i in range(3): x[i] > 0") == parse("forall i in 0..3: x[i] > 0")
    assert parse("forall i in range(1, n): x[i] > 0") == parse("forall i in 1..n: x[i] > 0")
    assert parse("forall i in range(len(xs)): x[i] > 0") == parse("forall i in 0..len(xs): x[i] > 0")
    for t in ["a in xs[*]", "a not in t[0].ys", "q == a // b", "1 <= w < 4", "all(xs[k] > 0 for k in xs)",
              "len(t[*].g[*]) == 2", "h == hours[p][d]"]:
        ast = parse(t)
        assert parse(to_text(ast)) == ast
        assert from_json(json.loads(json.dumps(to_json(ast)))) == ast


BAD = [
    ("a // s == 1", "is not a number"),
    ("a % 0 == 1", "division by zero"),
    ("a // big == 1", "'//' by big is not supported"),
    ("a in 3", "'in' needs a table, an array path or a [list]"),
    ("a in s", "needs a table, an array of the record or a [list] on its right, not s"),
    ("a in nested", "holds tables, so nothing is a member"),
    ("forall p in nested: a == 1", "its entries are tables"),
    ("min(s, a) == 1", "needs numbers, or strings only"),
    ("all(xs[i] for i)", "takes conditions"),
    ("forall i in 0..len(vs) + 1: vs[i] > 0", "depends on the length of a variable-length array"),
    ("a == nested", "is a table, not a value"),
    # mistakes that would compile to an always-false relation, or a misleading message
    ("s == \"X\"", "s can never be \"X\" (its values: \"x\", \"y\"), so 's == \"X\"' is always false"),
    ("s != 1", "is always true"),
    ("a == \"x\"", "a is a number, so 'a == \"x\"' compares it with a string"),
    ("words[a] == 1", "table 'words' is an object (its keys are strings)"),
    ("words[xs[0]] == 1", "is a number and table 'words'"),
    ("vs.x == 1", "'.x' applied to vs, which is an array, not an object: take an item (vs[i].x)"),
    ("a.x == 1", "'.x' applied to a, which is a single value, not an object"),
    ("xs[i] == 1", "an index variable is bound by 'forall i: ...'"),
    ("round(a) == 1", "round(x, 1) for a whole number"),
    ("len(s) <= 1", "len() of the string s is not supported"),
]


@pytest.mark.parametrize("text,fragment", BAD)
def test_unsupported_forms_say_what_is_wrong(text: str, fragment: str) -> None:
    props = {"a": I(0, 3), "big": I(0, 100000), "s": S("x", "y"), "xs": arr(I(0, 1), 2, 2),
             "vs": arr(I(0, 1), 1, 2)}
    doc = spec(props, ["a >= 0", {"name": "bad", "expr": text}], {"nested": [{"a": 1}, {"a": 2}],
                                                                 "words": {"x": 1, "y": 2}})
    with pytest.raises(RelationError) as ei:
        compile_spec(doc)
    assert ei.value.relation == "bad" and fragment in str(ei.value), str(ei.value)


def test_mixed_tables_are_refused_with_their_pointer() -> None:
    from factorspec.errors import SpecError
    with pytest.raises(SpecError) as ei:
        compile_spec(spec({"a": I(0, 3)}, ["a >= 0"], {"t": {"x": 1, "y": {"z": 2}}}))
    assert ei.value.pointer == "/x-factorspec/tables/t" and "values or tables, not both" in str(ei.value)


def test_generators_over_items_as_python_writes_them() -> None:
    """`for l in lines` binds l to each item when l is never used as an index (Python's reading);
    `for i in xs` with xs[i] keeps binding indices."""
    item = obj({"qty": I(0, 2), "price": I(1, 2)})
    props = {"lines": arr(item, 0, 2), "total": I(0, 8), "xs": arr(I(0, 2), 1, 2), "n": I(0, 2)}
    lines = [{"qty": q, "price": p} for q in range(3) for p in (1, 2)]
    recs = records(lines=lists(lines, 0, 2), total=list(range(9)), xs=lists(range(3), 1, 2), n=list(range(3)))

    def oracle(r: dict) -> bool:
        return (r["total"] == sum(x["qty"] * x["price"] for x in r["lines"])
                and all(x["qty"] >= 1 for x in r["lines"]) and r["n"] == sum(1 for x in r["xs"] if x > 0))

    assert exact(spec(props, ["total == sum(l.qty * l.price for l in lines)", "forall l in lines: l.qty >= 1",
                              "n == count(x > 0 for x in xs)"]), recs, oracle, max_paths=20) > 0
    # an item that is not used at all still counts only where it exists; indices are kept
    assert exact(spec(props, ["n == count(true for x in xs)", "count(xs[i] == 0 for i in xs) == 0"]), recs,
                 lambda r: r["n"] == len(r["xs"]) and 0 not in r["xs"], max_paths=20) > 0
    props2 = {"t": arr(obj({"g": arr(I(0, 2), 1, 2)}), 2, 2), "m": I(0, 4)}
    recs2 = records(t=[[{"g": a}, {"g": b}] for a in lists(range(3), 1, 2) for b in lists(range(3), 1, 2)],
                    m=list(range(5)))
    def flat(r: dict) -> list:
        return [x for tt in r["t"] for x in tt["g"]]

    assert exact(spec(props2, ["m == sum(x for x in t[*].g[*])", "exists x in t[*].g[*]: x == 0",
                               "forall i in range(2): len(t[i].g) >= 1"]), recs2,
                 lambda r: r["m"] == sum(flat(r)) and 0 in flat(r)) > 0


def test_violations_name_the_item_a_variable_is_bound_to() -> None:
    cs = compile_spec(spec({"lines": arr(obj({"qty": I(0, 2)}), 2, 2)}, ["forall l in lines: l.qty >= 1"]))
    (v,) = cs.check({"lines": [{"qty": 1}, {"qty": 0}]})
    assert v.bindings == {"l": "lines[1]"} and "l=lines[1]" in str(v)


def test_python_spellings() -> None:
    """True/False/None, `is None`, list comprehensions, tuples of values after `in`,
    range(len(xs)), as Python writes them."""
    props = {"a": I(0, 3), "b": I(0, 3), "f": {"type": "boolean"}, "xs": arr(I(0, 2), 1, 3),
             "z": {"enum": [None, 1, 2]}}
    recs = records(a=list(range(4)), b=list(range(4)), f=[False, True], xs=lists(range(3), 1, 3), z=[None, 1, 2])

    def oracle(r: dict) -> bool:
        return ((r["f"] == True) == (r["a"] > 1)  # noqa: E712 - the relation's spelling
                and (r["z"] is None) == (r["b"] == 0)
                and r["a"] == len([x for x in r["xs"] if x > 0])
                and (r["a"], r["b"]) in [(1, 2), (2, 3), (0, 0), (3, 1)] and r["b"] in (0, 2, 3)
                and all(r["xs"][i] <= 1 or i == 0 for i in range(len(r["xs"]))))

    assert exact(spec(props, ["(f == True) == (a > 1)", "(z is None) == (b == 0)",
                              "a == len([x for x in xs if x > 0])", "(a, b) in [(1, 2), (2, 3), (0, 0), (3, 1)]",
                              "b in (0, 2, 3)", "forall i in range(len(xs)): xs[i] <= 1 or i == 0"]),
                 recs, oracle, max_paths=20) > 0
    assert parse("z is not None") == parse("z != null") and parse("x == False") == parse("x == false")
    assert parse("sum([x for x in xs])") == parse("sum(x for x in xs)")


HINTS = [("a && b", "write 'and'"), ("a || b", "write 'or'"), ("!a", "write 'not'"), ("a = 1", "write '=='"),
         ("a ** 2 == 4", "there is no power"), ("a in {1, 2}", "write a list [a, b, c]"),
         ("xs.count(1) == 1", "method calls such as .count(...)"), ("a is 1", "'is' compares with None only")]


@pytest.mark.parametrize("text,fragment", HINTS)
def test_other_languages_spellings_get_a_hint(text: str, fragment: str) -> None:
    with pytest.raises(RelationError) as ei:
        parse(text, "r")
    assert fragment in str(ei.value), str(ei.value)


def test_misused_objects_and_unions_are_named_for_what_they_are() -> None:
    props = {"m": arr(obj({"room": S("A", "B")}), 2, 2), "note": {"type": ["integer", "null"], "minimum": 0,
                                                                  "maximum": 3}}
    with pytest.raises(RelationError, match=r"m\[0\] is an object, not a value: compare its fields \(x.room\)"):
        compile_spec(spec(props, ["forall x in m: forall y in m: x != y implies x.room != y.room"], required=["m"]))
    with pytest.raises(RelationError, match=r"is a union of several types \(integer, null\)"):
        compile_spec(spec(props, ["note is None"], required=["m"]))


def test_a_variable_indexes_the_array_it_ranges_over_or_is_its_item() -> None:
    """`for i in xs` gives indices only when i indexes xs itself; `ys[x] for x in xs` reads items,
    as Python does."""
    props = {"xs": arr(I(0, 2), 1, 2), "ys": arr(I(0, 3), 3, 3), "n": I(0, 6)}
    recs = records(xs=lists(range(3), 1, 2), ys=lists(range(4), 3, 3), n=list(range(7)))
    assert exact(spec(props, ["forall x in xs: ys[x] > 0", "n == sum(ys[x] for x in xs)",
                              "count(xs[i] == i for i in xs) >= 1"]), recs,
                 lambda r: all(r["ys"][x] > 0 for x in r["xs"]) and r["n"] == sum(r["ys"][x] for x in r["xs"])
                 and sum(x == i for i, x in enumerate(r["xs"])) >= 1, max_paths=15) > 0


def test_ranges_up_to_a_variable_length() -> None:
    """range(len(xs)) / 0..len(xs) on a variable-length array: the positions that exist (an
    instance that does not index xs still applies only there); len(TABLE) is its size."""
    props = {"xs": arr(I(0, 2), 1, 3), "n": I(0, 3), "c": arr(I(0, 5), 3, 3)}
    recs = records(xs=lists(range(3), 1, 3), n=list(range(4)), c=lists(range(6), 3, 3))
    assert exact(spec(props, ["n == count(true for i in range(len(xs)))",
                              "forall i in 0..len(xs): xs[i] <= i",
                              "forall k in range(len(cap)): c[k] == cap[k]"], {"cap": [5, 0, 2]}), recs,
                 lambda r: r["n"] == len(r["xs"]) and all(x <= i for i, x in enumerate(r["xs"]))
                 and r["c"] == [5, 0, 2], max_paths=15) == 1 + 2 + 2 * 3
