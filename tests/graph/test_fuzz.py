"""Fuzz: seeded random mutations of valid specs (deleted/replaced keys, wrong types, garbage
relations, unknown names, huge numbers, deep nesting) must end in a FactorSpecError or in a
correct answer (a solved record that passes check) within the budget, never in another exception
type or a hang."""
from __future__ import annotations

import copy
import json
import math
import os
import random
import re
import signal
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from factorspec.errors import BudgetExceeded, FactorSpecError, Unsatisfiable
from factorspec.graph import Budget, compile_spec
from factorspec.graph.relations import to_json
from benchmarks.natural_plan import generate_file, golden_record, parse_instance, to_spec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
N_CASES = int(os.environ.get("FACTORSPEC_FUZZ_CASES", "3200"))
CASE_TIMEOUT_S = 10
BUDGET = dict(nodes=20_000, seconds=2.0)

SMALL = {
    "type": "object",
    "$defs": {"level": {"type": "integer", "minimum": 0, "maximum": 3}},
    "properties": {
        "a": {"$ref": "#/$defs/level"},
        "b": {"type": "boolean"},
        "c": {"type": "string", "enum": ["x", "y", "z"]},
        "price": {"type": "number", "minimum": 0, "maximum": 2, "multipleOf": 0.25},
        "note": {"type": "string", "maxLength": 5},
        "opt": {"type": "integer", "minimum": -2, "maximum": 2},
        "xs": {"type": "array", "minItems": 0, "maxItems": 3,
               "items": {"type": "object",
                         "properties": {"v": {"type": "integer", "minimum": 0, "maximum": 2},
                                        "k": {"enum": ["p", "q"]}},
                         "required": ["v", "k"], "additionalProperties": False}},
    },
    "required": ["a", "b", "c", "price", "note", "xs"],
    "additionalProperties": False,
    "x-factorspec": {
        "tables": {"w": {"x": 1, "y": 2, "z": 0}, "ok": [["x", 0], ["y", 1], ["z", 2]], "small": [0, 1]},
        "relations": [
            "a + w[c] >= 1",
            {"name": "guarded", "expr": "b implies sum(xs[*].v) <= a"},
            {"name": "opt_rel", "expr": "opt != 1"},
            {"name": "tuple", "expr": "(c, a) in ok or len(xs) == 2"},
            {"name": "each", "expr": "forall i: xs[i].k == \"p\" implies xs[i].v in small"},
            {"name": "agg", "expr": "count(xs[i].v > 0 for i) <= 2 and max(xs[*].v) >= 0 or len(xs) == 0"},
            {"name": "money", "expr": "round(price * 3, 0.5) == price * 2 + 0 or price >= 1"},
            {"name": "last", "expr": "len(xs) == 0 or last(xs).v != first(xs).v or len(xs) == 1"},
            {"name": "distinct", "expr": "all_different(xs[*].v)"},
            {"name": "exists", "expr": "exists i in 0..2: xs[i].v == 1 or a == 0 or len(xs) < 3"},
        ],
    },
}
SMALL_RECORD = {"a": 1, "b": False, "c": "x", "price": 1, "note": "", "xs": []}

JUNK: list[Any] = [None, True, False, 0, -1, 1, 2.5, -0.0, 10**18, -10**18, 10**400, 1e308, 1e-300,
                   float("nan"), float("inf"), "", "garbage", "integer", "#/$defs/nope", [], {}, [1, 2],
                   [[]], {"type": "integer"}, {"type": "array"}, {"enum": []}, {"const": {"a": 1}},
                   {"$ref": "#"}, {"op": "==", "args": [{"const": 1}]}, "x" * 5000]
KEYWORDS = ["pattern", "format", "oneOf", "anyOf", "allOf", "not", "if", "then", "else",
            "patternProperties", "prefixItems", "uniqueItems", "contains", "minProperties",
            "dependentRequired", "propertyNames", "unevaluatedProperties", "$dynamicRef", "x-other",
            "type", "enum", "const", "items", "minItems", "maxItems", "minimum", "maximum",
            "multipleOf", "required", "properties", "additionalProperties", "$ref", "$defs",
            "tables", "relations", "name", "expr", "message", "op", "args", "const", "vars", "body"]
TOKENS = ["forall", "exists", "i", "j", "in", ":", "..", "(", ")", "[", "]", "[*]", ".", ",", "==",
          "!=", "<", "<=", ">", ">=", "+", "-", "*", "//", "%", "and", "or", "not", "implies", "=>",
          "sum(", "count(", "min(", "max(", "all_different(", "len(", "first(", "last(", "abs(",
          "round(", "for", "if", "0", "1", "-1", "0.01", "99999999999999999999", '"x"', "'p'",
          "true", "false", "null", "xs", "a", "c", "w", "ok", "itinerary", "meetings", "lines",
          "city", "v", "nope", "f(", "@", "#", "\\", "\u00e9"]


def _bases() -> list[tuple[dict, Any]]:
    out: list[tuple[dict, Any]] = [(SMALL, SMALL_RECORD)]
    for p in sorted(EXAMPLES.glob("*.spec.json")):
        rec = json.loads(p.with_name(p.name.replace(".spec.", ".record.")).read_text(encoding="utf-8"))
        out.append((json.loads(p.read_text(encoding="utf-8")), rec))
    for iid, raw in generate_file(4, 11, 2).items():
        prob = parse_instance(iid, raw)
        out.append((to_spec(prob), golden_record(prob)))
    return out


def _locations(x: Any, depth: int = 0) -> Iterator[tuple[Any, Any]]:
    """(container, key) for every value inside x."""
    if depth > 40:
        return
    if isinstance(x, dict):
        for k in list(x):
            yield x, k
            yield from _locations(x[k], depth + 1)
    elif isinstance(x, list):
        for i in range(len(x)):
            yield x, i
            yield from _locations(x[i], depth + 1)


def _mutate_relation(rng: random.Random, s: str) -> Any:
    op = rng.randrange(9)
    if op == 0 and s:
        return s[: rng.randrange(len(s))]
    if op == 1:
        k = rng.randrange(len(s) + 1)
        return s[:k] + " " + rng.choice(TOKENS) + " " + s[k:]
    if op == 2:
        names = re.findall(r"[A-Za-z_]\w*", s)
        if names:
            return s.replace(rng.choice(names), rng.choice(["nope", "i", "j", "sum", "forall", "x_y", "w"]), 1)
        return s + " + nope"
    if op == 3:
        return " ".join(rng.choice(TOKENS) for _ in range(rng.randrange(1, 12)))
    if op == 4:
        n = rng.choice([50, 200, 2000])
        return "(" * n + s + ")" * n
    if op == 5:
        return re.sub(r"\d+", lambda m: rng.choice(["99999999999999999999", "0", "-1", "1000000", "0.000001"]), s, count=1)
    if op == 6:
        return "".join(rng.choice("()[]{}.,:;+-*/%<>=!&|^~'\"\\ aZ09_$") for _ in range(rng.randrange(1, 30)))
    if op == 7:
        from factorspec.graph.relations import parse
        try:
            ast = to_json(parse(s))
        except FactorSpecError:
            return s
        locs = list(_locations(ast))
        if locs:
            c, k = rng.choice(locs)
            r = rng.randrange(3)
            if r == 0 and isinstance(c, dict):
                del c[k]
            elif r == 1:
                c[k] = copy.deepcopy(rng.choice(JUNK))
            else:
                c[k] = {"op": rng.choice(["==", "forall", "call", "index", "gen", "attr", "bogus", "in", "tuple"]),
                        "args": []}
        return ast
    deep = s
    for _ in range(rng.choice([30, 300])):
        deep = f"not ({deep})"
    return deep


def _deep_schema(rng: random.Random, node: Any) -> Any:
    for _ in range(rng.choice([5, 70, 500])):
        node = {"type": "array", "maxItems": 2, "items": node}
    return node


def mutate(rng: random.Random, doc: dict) -> dict:
    doc = copy.deepcopy(doc)
    for _ in range(rng.randrange(1, 4)):
        locs = list(_locations(doc))
        if not locs:
            return doc
        c, k = rng.choice(locs)
        v = c[k]
        op = rng.randrange(10)
        if op == 0:
            del c[k]
        elif op == 1:
            c[k] = copy.deepcopy(rng.choice(JUNK))
        elif op == 2 and isinstance(c, dict):
            c[rng.choice(KEYWORDS)] = c.pop(k)
        elif op == 3 and isinstance(c, dict):
            c[rng.choice(KEYWORDS)] = copy.deepcopy(rng.choice(JUNK + [v]))
        elif op in (4, 5):
            rels = doc.get("x-factorspec", {}).get("relations") if isinstance(doc.get("x-factorspec"), dict) else None
            if isinstance(rels, list) and rels:
                i = rng.randrange(len(rels))
                r = rels[i]
                if isinstance(r, dict) and isinstance(r.get("expr"), str):
                    r["expr"] = _mutate_relation(rng, r["expr"])
                elif isinstance(r, str):
                    rels[i] = _mutate_relation(rng, r)
        elif op == 6:
            for c2, k2 in locs:
                if k2 in ("maxItems", "maximum", "minimum", "minItems", "multipleOf", "exclusiveMaximum"):
                    if rng.random() < 0.5:
                        c2[k2] = rng.choice([10**6, 10**9, 10**18, 10**30, -(10**9), 1e-9, 1e300, 3])
        elif op == 7:
            c[k] = _deep_schema(rng, v)
        elif op == 8 and isinstance(v, (int, float)) and not isinstance(v, bool):
            c[k] = v * rng.choice([-1, 0, 7, 10**6]) + rng.choice([0, 0.5, 0.001])
        elif op == 9:
            tables = doc.get("x-factorspec", {}).get("tables") if isinstance(doc.get("x-factorspec"), dict) else None
            if isinstance(tables, dict) and tables:
                t = rng.choice(list(tables))
                tables[t] = copy.deepcopy(rng.choice(JUNK + [{"x": "y"}, [["a"], ["b", "c"]], [1, [2]], {"k": [1]}]))
    return doc


class _Hang(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _Hang()


def run_case(doc: dict, record: Any) -> str:
    """'error' | 'solved' | 'unsat' | 'budget'; raises AssertionError on a wrong answer."""
    try:
        cs = compile_spec(doc, Budget(**BUDGET))
    except FactorSpecError:
        return "error"
    viol = cs.check(record)
    assert isinstance(viol, list)
    for v in viol:
        str(v)
    try:
        rec = cs.solve()
    except Unsatisfiable as e:
        assert str(e)
        return "unsat"
    except BudgetExceeded:
        return "budget"
    except FactorSpecError:
        return "error"
    text = cs.canonical_text(rec)
    again = cs.check(json.loads(text))
    assert again == [], (text, [str(v) for v in again])
    return "solved"


def test_fuzz_malformed_specs() -> None:
    bases = _bases()
    outcomes: dict[str, int] = {}
    slow: list[tuple[float, int]] = []
    old = signal.signal(signal.SIGALRM, _alarm)
    t_start = time.monotonic()
    try:
        for case in range(N_CASES):
            rng = random.Random(f"fuzz:{case}")
            base, record = bases[case % len(bases)]
            doc = mutate(rng, base)
            signal.alarm(CASE_TIMEOUT_S)
            t0 = time.monotonic()
            try:
                out = run_case(doc, record)
            except _Hang:
                pytest.fail(f"case {case}: no answer within {CASE_TIMEOUT_S} s")
            except AssertionError as e:
                pytest.fail(f"case {case}: wrong answer: {e}")
            except Exception as e:  # noqa: BLE001 - the point of the test
                pytest.fail(f"case {case}: {type(e).__name__}: {str(e)[:300]}")
            finally:
                signal.alarm(0)
            slow.append((time.monotonic() - t0, case))
            outcomes[out] = outcomes.get(out, 0) + 1
    finally:
        signal.signal(signal.SIGALRM, old)
    total = time.monotonic() - t_start
    slow.sort(reverse=True)
    print(f"fuzz: {N_CASES} cases in {total:.1f} s: {outcomes}; slowest {slow[:3]}")
    assert sum(outcomes.values()) == N_CASES >= 3000 or "FACTORSPEC_FUZZ_CASES" in os.environ
    assert outcomes.get("solved", 0) > N_CASES // 20  # the mutations leave many specs valid
    assert outcomes.get("error", 0) > N_CASES // 5
