"""Relation forms as users write them first (issue #13): what the compiler says for each.

    python -m microbench.language_probe [--json OUT.json] [--compare BEFORE.json --md OUT.md]

Each form is one relation over a fixed schema and tables; the status is "ok" (compiles and a
record is solved), "unsat" (compiles; no record, as the form means on this schema) or the
error's message. `--compare` writes a before/after table (results in
microbench/results/language_probe.md; the "before" column is main at the session's start).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path


def _i(lo: int, hi: int) -> dict:
    return {"type": "integer", "minimum": lo, "maximum": hi}


def _s(*v: str) -> dict:
    return {"type": "string", "enum": list(v)}


def _arr(item: dict, lo: int, hi: int) -> dict:
    return {"type": "array", "items": item, "minItems": lo, "maxItems": hi}


def _obj(p: dict, req: list | None = None) -> dict:
    return {"type": "object", "properties": p, "required": list(p) if req is None else req,
            "additionalProperties": False}


PROPS = {"a": _i(0, 5), "b": _i(1, 5), "w": _i(0, 20), "s": _s("x", "y", "z"), "t": _s("x", "y", "z"),
         "flag": {"type": "boolean"}, "xs": _arr(_i(0, 4), 1, 3), "ys": _arr(_i(0, 4), 3, 3),
         "names": _arr(_s("ann", "bob", "cy"), 1, 3), "tables": _arr(_obj({"guests": _arr(_i(0, 5), 1, 2)}), 2, 2),
         "grid": _arr(_arr(_i(0, 2), 3, 3), 3, 3), "g": _arr(_obj({"home": _i(0, 3), "away": _i(0, 3)}), 2, 2),
         "captain": _i(0, 2), "discount": _i(0, 5),
         "m": _arr(_obj({"start": _i(0, 9), "end": _i(0, 9), "room": _s("A", "B")}), 2, 3),
         "lines": _arr(_obj({"qty": _i(0, 3), "price": _i(1, 4)}), 1, 3),
         "roster": _arr(_arr(_s("ann", "bob"), 2, 2), 2, 2)}
TABLES = {"capacity": [3, 2, 5], "people": ["ann", "bob"], "price": {"x": 2, "y": 3, "z": 4},
          "dist": [[0, 1, 2], [1, 0, 3], [2, 3, 0]], "avail": {"ann": [1, 1], "bob": [1, 0]},
          "hours": {"x": {"x": 0, "y": 1, "z": 2}, "y": {"x": 1, "y": 0, "z": 1}, "z": {"x": 2, "y": 1, "z": 0}}}
FORMS = [
    # the list of issue #13
    "all_different(tables[*].guests[*])", "xs[0] <= capacity[a]", "forall k: names[k] < names[k+1]",
    "forall p in people: count(names[i] == p for i) <= 1", "all_different((g[i].home, g[i].away) for i)",
    "count(ys[i] == ys[j] for i, j if i < j) == 0", "forall c: all_different(grid[r][c] for r)",
    "a == (5 if w > 10 else 0)", "a == w / len(xs)", "xs[captain] == 2", "len(set(ys[*])) == 2",
    "a >= 3 implies has(discount)", "present(discount) == (a > 3)", "a >= 3 implies discount != null",
    {"op": "==", "args": [{"path": ["xs", 0]}, {"const": 1}]},
    # further first tries
    "a in xs", "a in xs[*]", "a // b == 1", "a % b == 0", "len(tables[*].guests[*]) == 3", "min(names[*]) == \"ann\"",
    "min(s, t) == \"x\"", "a == hours[s][t]", "forall d in roster: avail[d[0]][0] == 1", "sum(xs) == 3",
    "all_different(ys)", "max(xs) - min(xs) <= 2", "sum(xs) / len(xs) >= 2", "len(xs) == len(set(xs))",
    "sum(l.qty * l.price for l in lines) <= 12", "forall x in m: x.start < x.end",
    "count(x > 2 for x in xs) == 1", "all(x > 0 for x in xs)", "any(x > 3 for x in xs)", "10 <= w <= 20",
    "flag == True", "discount is not None", "a in (1, 2, 3)", "(a, b) in [(1, 2), (2, 3)]",
    "a == len([x for x in xs if x > 0])", "forall i in range(len(m)): m[i].start < m[i].end",
    "forall i in range(2): ys[i] <= ys[i+1]", "'ann' in [n for n in names]",
    # not in the language: the message should say what to write
    "a && b == 1", "!flag", "a = 1", "a ** 2 == 4", "xs.count(1) == 1", "sorted(xs) == xs",
    "forall x in m: forall y in m: x != y implies x.room != y.room", "forall i in 0..len(xs): xs[i] > 0",
]


SUMMARY = """Summary: of the first 15 forms (issue #13's list and the documented JSON short form), main already
compiled 14 at the session's start (the 15th, `discount != null` on a field that is never null,
is refused on purpose, pointing at `has(discount)`). Of the 28 further first tries, main compiled
none; now 27 compile (the 28th, `discount is not None`, is the same deliberate refusal). Of the
last 8 forms, `forall i in 0..len(xs)` on a variable-length array now compiles (the positions
that exist); the other 7 are outside the language and now say what to write instead (`and`,
`not`, `==`, a product, a function over the items, indices to tell items apart).
"""


def status(form: object) -> str:
    from factorspec.errors import Unsatisfiable
    from factorspec.graph import compile_spec
    text = json.dumps(form) if isinstance(form, dict) else str(form)
    doc = {**_obj(PROPS, [k for k in PROPS if k != "discount"]),
           "x-factorspec": {"tables": {k: v for k, v in TABLES.items() if k in text},
                            "relations": [{"name": "r", "expr": form}]}}
    try:
        cs = compile_spec(doc)
    except Exception as e:  # noqa: BLE001 - the message is the result
        return f"{type(e).__name__}: {str(e).split(': ', 2)[-1]}"
    try:
        cs.solve()
    except Unsatisfiable:
        return "unsat"
    return "ok"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=None)
    ap.add_argument("--compare", default=None)
    ap.add_argument("--md", default="microbench/results/language_probe.md")
    args = ap.parse_args()
    now: dict[str, str] = {json.dumps(f) if isinstance(f, dict) else str(f): status(f) for f in FORMS}
    if args.json:
        Path(args.json).write_text(json.dumps(now, indent=1) + "\n", encoding="utf-8")
    for f, st in now.items():
        print(f"{f:60} {st}")
    if args.compare:
        before: dict[str, str] = json.loads(Path(args.compare).read_text(encoding="utf-8"))
        rows = ["| relation | main at the session's start | now |", "|---|---|---|"]
        for f, st in now.items():
            def cell(x: str) -> str:
                return x.replace("|", "\\|")[:220]
            rows.append(f"| `{cell(f)}` | {cell(str(before.get(f, '-')))} | {cell(st)} |")
        Path(args.md).write_text("# Relation forms as users write them (microbench/language_probe.py)\n\n"
                                 "One relation each over a fixed schema (see the script). ok = compiles and a "
                                 "record is solved; unsat = compiles, no record (as the form means there).\n\n"
                                 + "\n".join(rows) + "\n\n" + SUMMARY, encoding="utf-8")


if __name__ == "__main__":
    main()
