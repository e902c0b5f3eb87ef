"""Property test: the solver's answers are exact, checked against brute-force enumeration.

Hypothesis draws small random specs (2 to 4 slots: small integer ranges, fixed-point numbers,
numeric and string enums, booleans, optional fields, a fixed array, a variable-length array of
0..3 items) and 1 to 3 random relations from a typed grammar (comparisons, arithmetic, table
lookups and membership, all_different, implies, sum/count/min/max, forall/exists). Brute force
enumerates every record (itertools.product over the slot domains) and keeps those `cs.check`
accepts. Then, along decisions in the vars' `order` (document order), at every prefix the
solver's `State.feasible_values(var)` must equal the set of values some valid record consistent
with the prefix has, and `count()` must equal the number of distinct valid assignments. With at
most 30 valid assignments every feasible prefix is visited; with more, the prefixes of 8 of them.

A slot that a record does not have (an item past the array's length, an absent optional field)
matches any value: the solver keeps such a var's whole domain, and brute force does the same.
"""
from __future__ import annotations

import itertools
import json
from typing import Any, Optional

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from factorspec.errors import RelationError, Unsatisfiable
from factorspec.graph import compile_spec
from factorspec.graph.relations import from_json, parse, to_json, to_text

MISSING = object()  # an absent optional field
WILD = "*"  # a var whose slot the record does not have
MAX_RECORDS = 1500
ALL_PATHS = 30  # follow every valid record's decisions when there are at most this many
SYMS = ["a", "b", "c"]


class Slot:
    def __init__(self, name: str, kind: str, schema: dict, values: list, required: bool = True,
                 item_kind: str = "", max_items: int = 0, min_items: int = 0) -> None:
        self.name, self.kind, self.schema, self.values = name, kind, schema, values
        self.required, self.item_kind = required, item_kind
        self.max_items, self.min_items = max_items, min_items


def _int_schema(lo: int, hi: int) -> dict:
    return {"type": "integer", "minimum": lo, "maximum": hi}


@st.composite
def slot_strategy(draw: Any, name: str, budget: int) -> Slot:
    """One top-level slot whose number of JSON values fits in `budget`."""
    kinds = ["int", "fixed", "nenum", "sym", "bool", "arr", "varr", "varr_obj"]
    sizes = {"int": 2, "fixed": 4, "nenum": 2, "sym": 2, "bool": 2, "arr": 9, "varr": 13, "varr_obj": 7}
    kind = draw(st.sampled_from([k for k in kinds if sizes[k] <= budget]))
    if kind == "int":
        lo = draw(st.integers(-2, 1))
        hi = lo + draw(st.integers(1, min(3, budget - 1)))
        slot = Slot(name, "num", _int_schema(lo, hi), list(range(lo, hi + 1)))
    elif kind == "fixed":
        slot = Slot(name, "num", {"type": "number", "minimum": 0, "maximum": 1.5, "multipleOf": 0.5},
                    [0, 0.5, 1, 1.5])
    elif kind == "nenum":
        vals = draw(st.lists(st.sampled_from([-1, 0, 2, 5]), min_size=2, max_size=min(3, budget), unique=True))
        slot = Slot(name, "num", {"enum": vals}, vals)
    elif kind == "sym":
        vals = draw(st.lists(st.sampled_from(SYMS), min_size=2, max_size=min(3, budget), unique=True))
        slot = Slot(name, "sym", {"type": "string", "enum": vals}, vals)
    elif kind == "bool":
        slot = Slot(name, "bool", {"type": "boolean"}, [False, True])
    elif kind == "arr":
        slot = Slot(name, "arr", {"type": "array", "minItems": 2, "maxItems": 2, "items": _int_schema(0, 2)},
                    [list(p) for p in itertools.product(range(3), repeat=2)], item_kind="int",
                    min_items=2, max_items=2)
    elif kind == "varr":
        lo = draw(st.integers(0, 1))
        hi = 3 if budget >= 40 else 2
        items = [list(p) for n in range(lo, hi + 1) for p in itertools.product(range(3), repeat=n)]
        slot = Slot(name, "arr", {"type": "array", "minItems": lo, "maxItems": hi, "items": _int_schema(0, 2)},
                    items, item_kind="int", min_items=lo, max_items=hi)
    else:
        lo = draw(st.integers(0, 1))
        item = {"type": "object", "properties": {"v": _int_schema(0, 1), "k": {"enum": ["p", "q"]}},
                "required": ["v", "k"], "additionalProperties": False}
        objs = [{"v": v, "k": k} for v in range(2) for k in ("p", "q")]
        items = [list(p) for n in range(lo, 3) for p in itertools.product(objs, repeat=n)]
        slot = Slot(name, "arr", {"type": "array", "minItems": lo, "maxItems": 2, "items": item},
                    items, item_kind="obj", min_items=lo, max_items=2)
    if slot.kind != "arr" and len(slot.values) + 1 <= budget and draw(st.integers(0, 4)) == 0:
        slot.required = False
        slot.values = slot.values + [MISSING]
    return slot


class RelGen:
    """Typed random relation text over the slots (every sub-expression parenthesised)."""

    def __init__(self, draw: Any, slots: list[Slot]) -> None:
        self.draw, self.slots = draw, slots
        self.nums = [s for s in slots if s.kind == "num"]
        self.syms = [s for s in slots if s.kind == "sym"]
        self.bools = [s for s in slots if s.kind == "bool"]
        self.arrs = [s for s in slots if s.kind == "arr"]
        self.n_vars = 0

    def fresh(self) -> str:
        """A new index variable name (nested quantifiers and generators may not shadow)."""
        self.n_vars += 1
        return "ijkmnpqrtuvw"[self.n_vars % 12] + ("" if self.n_vars < 12 else str(self.n_vars))

    def pick(self, options: list) -> Any:
        return self.draw(st.sampled_from(options))

    def item(self, a: Slot, idx: str) -> str:
        return f"{a.name}[{idx}]" + (".v" if a.item_kind == "obj" else "")

    def num(self, depth: int) -> str:
        opts = ["const"]
        if self.nums:
            opts += ["slot", "slot"]
        if self.arrs:
            opts += ["elem", "len", "sum", "count", "sumif", "minmax", "lastfirst", "itemsum"]
        if self.syms:
            opts += ["lookup"]
        if depth > 0:
            opts += ["arith", "arith", "abs", "divmod", "round"]
        if depth > 0 and self.nums:
            opts += ["divfield"]
        k = self.pick(opts)
        if k == "const":
            return str(self.draw(st.integers(-2, 3)))
        if k == "slot":
            return self.pick(self.nums).name
        if k == "lookup":
            s = self.pick(self.syms)
            return f"tval[{s.name}]"
        if k == "arith":
            op = self.pick(["+", "-", "*"])
            return f"({self.num(depth - 1)} {op} {self.num(depth - 1)})"
        if k == "abs":
            return f"abs({self.num(depth - 1)})"
        if k == "divmod":
            return f"({self.num(depth - 1)} {self.pick(['//', '%'])} {self.pick(['2', '3', '-2'])})"
        if k == "divfield":  # // and % by a field (a divisor of 0 has no value)
            return f"({self.num(depth - 1)} {self.pick(['//', '%'])} {self.pick(self.nums).name})"
        if k == "round":
            return f"round({self.num(depth - 1)}, {self.pick(['1', '2', '0.5'])})"
        a = self.pick(self.arrs)
        if k == "elem":
            return self.item(a, str(self.draw(st.integers(0, a.max_items - 1))))
        if k == "len":
            return f"len({a.name})"
        if k == "sum":
            return f"sum({a.name}[*]{'.v' if a.item_kind == 'obj' else ''})"
        if k == "count":
            i = self.fresh()
            cond = f"{a.name}[{i}].k == \"p\"" if a.item_kind == "obj" else f"{a.name}[{i}] > {self.draw(st.integers(0, 1))}"
            return f"count({cond} for {i})"
        if k == "sumif":
            i = self.fresh()
            return f"sum({self.item(a, i)} for {i} if {self.item(a, i)} != {self.draw(st.integers(0, 2))})"
        if k == "itemsum":  # Python's reading: x is each item
            x = self.fresh()
            return f"sum({x}{'.v' if a.item_kind == 'obj' else ''} for {x} in {a.name})"
        if k == "minmax":
            return f"{self.pick(['min', 'max'])}({a.name}[*]{'.v' if a.item_kind == 'obj' else ''})"
        return f"{self.pick(['first', 'last'])}({a.name})" + (".v" if a.item_kind == "obj" else "")

    def cond(self, depth: int) -> str:
        opts = ["cmp", "cmp"]
        if self.syms:
            opts += ["symeq", "symin", "pair"]
        if self.bools:
            opts += ["bool"]
        if self.arrs:
            opts += ["alldiff", "quant", "member", "allany"]
        if self.nums:
            opts += ["chain"]
        if len(self.nums) >= 2:
            opts += ["alldiff_args"]
        if depth > 0:
            opts += ["and", "or", "not", "implies"]
        k = self.pick(opts)
        if k == "cmp":
            return f"{self.num(depth)} {self.pick(['==', '!=', '<', '<=', '>', '>='])} {self.num(depth)}"
        if k == "symeq":
            s = self.pick(self.syms)
            other = self.pick([f'"{v}"' for v in SYMS] + [t.name for t in self.syms])
            return f"{s.name} {self.pick(['==', '!='])} {other}"
        if k == "symin":
            s = self.pick(self.syms)
            if self.draw(st.booleans()):
                return f"{s.name} {self.pick(['in', 'not in'])} tset"
            return f"{s.name} in [\"{self.pick(SYMS)}\", \"{self.pick(SYMS)}\"]"
        if k == "pair":
            s = self.pick(self.syms)
            return f"({s.name}, {self.num(0)}) {self.pick(['in', 'not in'])} tpairs"
        if k == "bool":
            b = self.pick(self.bools).name
            return self.pick([b, f"not {b}", f"{b} == true", f"{b} != false"])
        if k == "member":
            a = self.pick(self.arrs)
            return f"{self.num(0)} {self.pick(['in', 'not in'])} {a.name}[*]{'.v' if a.item_kind == 'obj' else ''}"
        if k == "allany":
            a = self.pick(self.arrs)
            x = self.fresh()
            return (f"{self.pick(['all', 'any'])}({x}{'.v' if a.item_kind == 'obj' else ''} "
                    f"{self.pick(['>', '<=', '!='])} {self.draw(st.integers(0, 2))} for {x} in {a.name})")
        if k == "chain":
            return f"{self.draw(st.integers(-2, 1))} <= {self.pick(self.nums).name} < {self.draw(st.integers(0, 3))}"
        if k == "alldiff":
            a = self.pick(self.arrs)
            return f"all_different({a.name}[*]{'.v' if a.item_kind == 'obj' else ''})"
        if k == "alldiff_args":
            xs = self.draw(st.lists(st.sampled_from(self.nums), min_size=2, max_size=3, unique_by=lambda s: s.name))
            return f"all_different({', '.join(x.name for x in xs)})"
        if k == "quant":
            a = self.pick(self.arrs)
            q = self.pick(["forall", "exists"])
            form = self.pick(["pair", "one", "range"])
            i = self.fresh()
            if form == "pair":
                return f"{q} {i}: {self.item(a, i)} {self.pick(['<=', '!=', '<'])} {self.item(a, i + '+1')}"
            if form == "range":
                return f"{q} {i} in 0..{a.max_items}: {self.item(a, i)} >= {self.draw(st.integers(0, 1))}"
            body = f"{self.item(a, i)} {self.pick(['==', '>', '<='])} {self.num(0)}"
            if a.item_kind == "obj":
                body = f"{a.name}[{i}].k == \"q\" implies ({body})"
            return f"{q} {i}: {body}"
        if k == "and" or k == "or":
            return f"({self.cond(depth - 1)}) {k} ({self.cond(depth - 1)})"
        if k == "not":
            return f"not ({self.cond(depth - 1)})"
        return f"({self.cond(depth - 1)}) implies ({self.cond(depth - 1)})"


@st.composite
def spec_strategy(draw: Any) -> tuple[dict, list[Slot]]:
    n = draw(st.integers(2, 4))
    slots: list[Slot] = []
    size = 1
    for k in range(n):
        budget = MAX_RECORDS // size
        if budget < 2:
            break
        s = draw(slot_strategy(f"s{k}", budget))
        slots.append(s)
        size *= len(s.values)
    tval = {v: draw(st.integers(-1, 2)) for v in SYMS if draw(st.integers(0, 5)) > 0}  # may miss a key
    tables = {
        "tval": tval,
        "tset": draw(st.lists(st.sampled_from(SYMS), min_size=0, max_size=3, unique=True)),
        "tpairs": [[draw(st.sampled_from(SYMS)), draw(st.integers(-1, 2))] for _ in range(draw(st.integers(1, 4)))],
    }
    gen = RelGen(draw, slots)
    rels: list[Any] = []
    for j in range(draw(st.integers(1, 3))):
        text = gen.cond(draw(st.integers(0, 2)))
        form = draw(st.integers(0, 3))
        if form == 0:
            rels.append(text)
        elif form == 1:  # the JSON AST form
            rels.append({"name": f"r{j}", "expr": json.loads(json.dumps(to_json(parse(text))))})
        else:
            rels.append({"name": f"r{j}", "expr": text})
    doc = {
        "type": "object",
        "properties": {s.name: s.schema for s in slots},
        "required": [s.name for s in slots if s.required],
        "additionalProperties": False,
        "x-factorspec": {"tables": tables, "relations": rels},
    }
    return doc, slots


def _records(slots: list[Slot]):
    for combo in itertools.product(*(s.values for s in slots)):
        yield {s.name: v for s, v in zip(slots, combo) if v is not MISSING}


def _projection(cs: Any, record: dict, order: list) -> tuple:
    A, bad = cs.assignment_of(record)
    assert A is not None, bad
    out = []
    for v in order:
        present = v.guard is None or bool(v.guard.ev(A))
        out.append(A[v.id] if present else WILD)
    return tuple(out)


def _consistent(proj: tuple, prefix: tuple) -> bool:
    return all(p == WILD or p == q for p, q in zip(proj, prefix))


def _brute_values(valid: list[tuple], prefix: tuple, k: int, var: Any) -> set:
    out: set = set()
    for proj in valid:
        if _consistent(proj, prefix):
            if proj[k] == WILD:
                out |= set(range(var.lo, var.hi + 1))
            else:
                out.add(proj[k])
    return out


def check_exact(doc: dict, slots: list[Slot], max_paths: int = 8) -> Optional[str]:
    try:
        cs = compile_spec(doc)
    except RelationError as e:
        return f"relation error: {e}"  # the grammar can produce a few ill-typed relations
    order = sorted(cs.vars, key=lambda v: (v.order, v.id))
    projs = set()
    n_valid_records = 0
    for rec in _records(slots):
        if cs.check(rec) == []:
            n_valid_records += 1
            projs.add(_projection(cs, rec, order))
    valid = sorted(projs, key=lambda p: tuple((x == WILD, x if x != WILD else 0) for x in p))

    try:
        root = cs.root()
    except Unsatisfiable as e:
        assert not valid, f"solver says unsatisfiable ({e}) but brute force found {len(valid)}"
        assert e.relations
        return "unsat"
    assert valid, "solver found a record but brute force finds none"
    # a solved record passes check and count is exact
    assert cs.check(json.loads(cs.canonical_text(cs.solve()))) == []
    canon = {tuple(x if x != WILD else order[i].lo for i, x in enumerate(p)) for p in valid}
    assert cs.count() == len(canon)

    # Every feasible prefix is a prefix of some valid record's path; follow all of them when there
    # are few (states are memoised, so a shared prefix is asked once), else a spread of them.
    step = max(1, len(valid) // max_paths)
    paths = valid if len(valid) <= ALL_PATHS else valid[::step][:max_paths]
    seen: set = set()
    for proj in paths:
        st_ = root
        prefix: list = []
        for k, var in enumerate(order):
            key = tuple(prefix)
            if key not in seen:
                seen.add(key)
                want = _brute_values(valid, key, k, var)
                got = set(st_.feasible_values(var.id))
                assert got == want, (f"{var.name} after {dict(zip([v.name for v in order], prefix))}: "
                                     f"solver {sorted(got)} != brute force {sorted(want)}")
            value = proj[k] if proj[k] != WILD else var.lo
            nxt = st_.assign(var.id, value)
            assert nxt is not None
            st_ = nxt
            prefix.append(value)
    return "ok"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.data_too_large])
@given(spec_strategy())
def test_feasible_values_match_brute_force(case: tuple[dict, list[Slot]]) -> None:
    doc, slots = case
    check_exact(doc, slots)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec_strategy())
def test_relation_text_and_json_round_trip(case: tuple[dict, list[Slot]]) -> None:
    """Every relation the grammar writes: parse(to_text(ast)) == ast and the JSON form round-trips."""
    doc, _ = case
    for r in doc["x-factorspec"]["relations"]:
        expr = r["expr"] if isinstance(r, dict) else r
        ast = from_json(expr) if isinstance(expr, dict) else parse(expr)
        assert parse(to_text(ast)) == ast
        assert from_json(json.loads(json.dumps(to_json(ast)))) == ast


# Hand-picked cases that exercise the spots where exactness is delicate.
EXPLICIT = [
    # min/max of an empty variable-length array is undefined: a negated comparison holds
    ({"xs": {"type": "array", "minItems": 0, "maxItems": 2, "items": _int_schema(0, 2)}},
     ["not (max(xs[*]) > 1)"]),
    # an optional field: relations apply only when it is present
    ({"a": _int_schema(0, 2), "o": _int_schema(0, 2)}, ["o != a", "o + a >= 1"]),
    # a lookup whose table misses a key
    ({"s": {"type": "string", "enum": ["a", "b", "c"]}, "x": _int_schema(0, 3)}, ["not (tval[s] > x)"]),
]


@pytest.mark.parametrize("props,rels", EXPLICIT)
def test_explicit_cases(props: dict, rels: list) -> None:
    slots = []
    for name, schema in props.items():
        if schema.get("type") == "array":
            items = [list(p) for n in range(schema["minItems"], schema["maxItems"] + 1)
                     for p in itertools.product(range(schema["items"]["minimum"], schema["items"]["maximum"] + 1), repeat=n)]
            slots.append(Slot(name, "arr", schema, items))
        elif "enum" in schema:
            slots.append(Slot(name, "sym", schema, list(schema["enum"])))
        else:
            vals = list(range(schema["minimum"], schema["maximum"] + 1))
            slots.append(Slot(name, "num", schema, vals + ([MISSING] if name == "o" else []), required=name != "o"))
    doc = {"type": "object", "properties": props, "required": [s.name for s in slots if s.required],
           "additionalProperties": False,
           "x-factorspec": {"tables": {"tval": {"a": 1, "b": 3}}, "relations": rels}}
    assert check_exact(doc, slots) == "ok"
