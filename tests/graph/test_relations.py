"""The relation language: parse/to_text and to_json/from_json round trips, and errors that name
the relation (and its JSON Pointer)."""
from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from factorspec.errors import RelationError, SpecError
from factorspec.graph import compile_spec
from factorspec.graph.relations import format_decimal, from_json, parse, to_json, to_text

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

TEXTS = [
    "itinerary[0].start_day == 1",
    "forall i: itinerary[i+1].start_day == itinerary[i].end_day",
    "forall i: itinerary[i].end_day - itinerary[i].start_day + 1 == stay[itinerary[i].city]",
    "forall i: (itinerary[i].city, itinerary[i+1].city) in flights",
    "all_different(itinerary[*].city)",
    "last(itinerary).end_day == 9",
    "forall i in 0..3: x[i] < 2",
    "forall i, j: i < j implies (m[i].end <= m[j].start or m[j].end <= m[i].start)",
    "exists i in xs: xs[i] == 1",
    "a implies b implies c",
    "a => b",
    "(a implies b) implies c",
    "x not in [1, 2]",
    "not x in t",
    "not (a and b) or c",
    "not not a",
    "a and b and c or d and e",
    "sum(x[i] for i in xs if x[i] > 0) <= 10",
    "count(x[i] > 0 for i) == len(x)",
    "sum(items[i].amount for i if items[i].category == \"food\") >= minimum[\"food\"]",
    "min(x[*]) >= -2 and max(x[*].v) <= 3",
    "-x - -3 == 0",
    "x - (y - z) == x - y - z",
    "x // 2 % 3 == 1",
    "x * (y + 2) != -(x)",
    "(a, b) in t",
    "tax == round(subtotal * 0.08, 0.01)",
    "total == subtotal + tax",
    "'single' == s",
    "x.y[0].z[*] == x",
    "a == -5",
    "abs(-x) >= 0",
    "--x == x",
    "x[-1] == x[len(x) - 1]",
    "s in [\"a\", \"b\", null, true, false]",
    "f == 0.5 or f == 1.25",
    "first(xs).v != last(xs).v",
    "all_different(a, b, c)",
    "s == \"quote \\\" and \\u00e9\"",
    "fee == (5 if w > 10 else 0)",
    "sum((x[i] if x[i] > 0 else 0) for i) == x[0] / 2",
    "count(x[i] == x[j] for i, j if i < j) == 1",
    "all_different((g[i].home, g[i].away) for i)",
    "len(set(rooms[*])) == 2 and has(discount) and not present(a.b)",
    "forall p in people: count(seat[i] == p for i) == 1",
    "players[captain].skill >= dist[a][b]",
    "all_different(tables[*].guests[*])",
    "a / (b + 1) * 3 == c // 2",
]


@pytest.mark.parametrize("text", TEXTS)
def test_text_round_trip(text: str) -> None:
    ast = parse(text)
    again = to_text(ast)
    assert parse(again) == ast
    assert to_text(parse(again)) == again  # the canonical text is a fixpoint


@pytest.mark.parametrize("text", TEXTS)
def test_json_round_trip(text: str) -> None:
    ast = parse(text)
    j = to_json(ast)
    wire = json.loads(json.dumps(j))  # plain JSON: decimals travel as {"decimal": "0.01"}
    assert from_json(wire) == ast
    assert to_json(from_json(wire)) == j


def test_every_example_relation_round_trips() -> None:
    n = 0
    for p in sorted(EXAMPLES.glob("*.spec.json")):
        for r in json.loads(p.read_text(encoding="utf-8"))["x-factorspec"]["relations"]:
            ast = parse(r["expr"] if isinstance(r, dict) else r)
            assert parse(to_text(ast)) == ast
            assert from_json(json.loads(json.dumps(to_json(ast)))) == ast
            n += 1
    assert n >= 25


def test_decimals_are_exact() -> None:
    ast = parse("x == 0.1 + 0.2")
    consts = [a["const"] for a in ast["args"][1]["args"]]
    assert consts == [Fraction(1, 10), Fraction(2, 10)]
    assert to_json(ast)["args"][1]["args"][0] == {"const": {"decimal": "0.1"}}
    assert format_decimal(Fraction(-1, 40)) == "-0.025"
    assert from_json({"const": 0.25}) == {"const": Fraction(1, 4)}
    with pytest.raises(ValueError):
        format_decimal(Fraction(1, 3))


def test_quantifier_json_has_no_args() -> None:
    """The parser gives forall/exists no 'args'; from_json must not add one (round trip)."""
    ast = parse("exists i, j: i != j")
    assert "args" not in ast and from_json(to_json(ast)) == ast


def _doc(relations: list, props: dict | None = None, tables: dict | None = None) -> dict:
    props = props or {"a": {"type": "integer", "minimum": 0, "maximum": 3},
                      "s": {"type": "string", "enum": ["x", "y"]},
                      "t": {"type": "string", "maxLength": 4},
                      "u": {"type": "integer"},
                      "xs": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 1}},
                      "ys": {"type": "array", "maxItems": 2, "items": {"type": "integer", "minimum": 0, "maximum": 1}}}
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False,
            "x-factorspec": {"tables": tables or {"tb": {"x": 1}}, "relations": relations}}


BAD_RELATIONS = [
    ("a >", "cannot parse"),
    ("a == == 1", "cannot parse"),
    ("foo(a) > 1", "unknown function 'foo'"),
    ("a > 1 1", "after a complete expression"),
    ("a @ 1", "unexpected character"),
    ("b > 1", "unknown name 'b'"),
    ("t == \"abc\"", "free-text string"),
    ("u > 1", "finite domain"),
    ("len(xs) > 1", "needs maxItems"),
    ("s < 1", "compares numbers only"),
    ("a + s > 1", "is not a number"),
    ("a", "is not a condition"),
    ("forall i: ys[i] == 1 and (forall i: ys[i] == 0)", "shadows"),
    ("forall k: a == 1", "cannot infer the range of 'k'"),
    ("ys[5] == 1", "out of range"),
    ("tb[\"z\"] == 1", "not in table 'tb'"),
    ("a // s == 1", "is not a number"),
    ("a % 0 == 0", "division by zero"),
    ("round(a, a) == 1", "positive constant"),
    ("count(a for i in 0..2) == 1", "counts conditions"),
    ("(a, s) in tb", "columns"),
    ("a in b", "unknown name"),
    ("a.x == 1", "not an object"),
    ("ys.x == 1", "not an object"),
    ("a[0] == 1", "not an array"),
    ("sum(a for i) == 1", "cannot infer the range"),
    ("forall i in 0..100000000: a == 1", "too large"),
]


@pytest.mark.parametrize("text,fragment", BAD_RELATIONS)
def test_errors_name_the_relation(text: str, fragment: str) -> None:
    doc = _doc(["a >= 0", {"name": "the_bad_one", "expr": text}])
    with pytest.raises(RelationError) as ei:
        compile_spec(doc)
    e = ei.value
    assert e.relation == "the_bad_one"
    assert "the_bad_one" in str(e) and fragment in str(e), str(e)
    assert e.pointer == "/x-factorspec/relations/1"


def test_unnamed_relation_is_named_by_index() -> None:
    with pytest.raises(RelationError) as ei:
        compile_spec(_doc(["a >= 0", "a >= 0", "zz > 1"]))
    assert ei.value.relation == "relation[2]" and ei.value.pointer == "/x-factorspec/relations/2"


BAD_JSON_ASTS = [
    ({"op": "==", "args": [{"name": "a"}]}, "takes 2 argument"),
    ({"op": "bogus", "args": []}, "unknown operator"),
    ({"op": "call", "func": "nope", "args": []}, "unknown function"),
    ({"op": "forall", "vars": "i", "body": {"const": True}}, "needs 'vars'"),
    ({"op": "forall", "vars": ["i"]}, "needs a 'body'"),
    ({"op": "attr", "args": [{"name": "a"}]}, "needs 'attr'"),
    ({"const": {"x": 1}}, "unsupported constant"),
    ({"const": {"decimal": "abc"}}, "bad decimal"),
    ({"name": 5}, "name must be a string"),
    ({"op": "==", "args": [{"name": "a"}, {"const": 1}], "extra": 1}, "unknown AST keys"),
    ([1, 2], "must be a string or an AST object"),
    ({"op": "==", "args": {"a": 1}}, "must be a list"),
    ({"op": "==", "args": [{"path": []}, {"const": 1}]}, "'path' must be a list starting with a property name"),
    ({"op": "==", "args": [{"path": ["xs", 1.5]}, {"const": 1}]}, "is not a property name"),
    ({"op": "==", "args": [{"var": 5}, {"const": 1}]}, "a variable node is"),
    ({"op": "==", "args": [{"path": ["a"], "attr": "x"}, {"const": 1}]}, "only the key 'path'"),
    ({"op": "gen", "args": [{"const": 1}]}, "needs 'var'"),
]


def test_documented_short_forms_read_as_the_parser_form() -> None:
    assert from_json({"path": ["itinerary", {"var": "i"}, "city"]}) == parse("itinerary[i].city")
    assert from_json({"path": ["t", "*", "g", -1, "*"]}) == parse("t[*].g[-1][*]")
    assert from_json({"op": "+", "args": [{"var": "i"}, {"path": ["xs", {"op": "-", "args": [
        {"var": "i"}, {"const": 1}]}]}]}) == parse("i + xs[i - 1]")


@pytest.mark.parametrize("expr,fragment", BAD_JSON_ASTS)
def test_json_ast_errors_name_the_relation(expr: object, fragment: str) -> None:
    with pytest.raises(SpecError) as ei:
        compile_spec(_doc([{"name": "j", "expr": expr}]))
    assert fragment in str(ei.value), str(ei.value)
    assert ei.value.pointer.startswith("/x-factorspec/relations/0")
    if isinstance(ei.value, RelationError):
        assert ei.value.relation == "j"


BAD_EXTENSION = [
    ({"relations": "a > 1"}, "/x-factorspec/relations"),
    ({"relations": [5]}, "/x-factorspec/relations/0"),
    ({"relations": [{"name": "", "expr": "a > 1"}]}, "/x-factorspec/relations/0/name"),
    ({"relations": [{"name": "n", "expr": "a > 1"}, {"name": "n", "expr": "a > 1"}]}, "/x-factorspec/relations/1/name"),
    ({"relations": [{"name": "n", "expr": "a > 1", "why": 1}]}, "/x-factorspec/relations/0/why"),
    ({"relations": [{"name": "n", "expr": "a > 1", "message": 3}]}, "/x-factorspec/relations/0/message"),
    ({"tables": []}, "/x-factorspec/tables"),
    ({"tables": {"t": 5}}, "/x-factorspec/tables/t"),
    ({"tables": {"t": [[1, 2], [3]]}}, "/x-factorspec/tables/t/1"),
    ({"tables": {"t": {"k": [[1, 2], [3]]}}}, "/x-factorspec/tables/t/k/1"),
    ({"tables": {"t": {"k": [{"x": {"y": float("nan")}}]}}}, "/x-factorspec/tables/t/k/0/x/y"),
    ({"tables": {"a": [1]}}, "/x-factorspec/tables/a"),
    ({"other": 1}, "/x-factorspec/other"),
]


@pytest.mark.parametrize("ext,pointer", BAD_EXTENSION)
def test_extension_errors_point_at_the_key(ext: dict, pointer: str) -> None:
    doc = _doc([])
    doc["x-factorspec"] = ext
    with pytest.raises(SpecError) as ei:
        compile_spec(doc)
    assert ei.value.pointer == pointer, str(ei.value)
