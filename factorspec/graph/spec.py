"""A compiled spec: the record layout, the factor graph, and the questions asked of it."""
from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, Optional

from factorspec.errors import BudgetExceeded, InputLimitError, SpecError, Unsatisfiable
from factorspec.graph.ground import Grounder, Relation, load_relations
from factorspec.graph.limits import MAX_DEPTH, MAX_VIOLATIONS, depth_of, elide, load_json
from factorspec.graph.objects import fresh_keys, minimal_members
from factorspec.graph.recursion import Heights, has_refs
from factorspec.graph.relations import from_json
from factorspec.graph.schema import (
    EXTENSION_KEY,
    Arr,
    LayoutNode,
    Obj,
    Scalar,
    TextStyle,
    canonical_text,
    compile_schema_report,
    path_text,
    schema_violations,
)
from factorspec.graph.solver import Budget, Problem, State


@dataclass
class Violation:
    """One way a record breaks its spec."""

    relation: str  # relation name, or "schema"
    text: str  # the relation as written (or the schema message)
    bindings: dict
    values: dict  # path text -> value in the record

    def __str__(self) -> str:
        """One line of bounded length: long relation texts and values are elided (a violation of
        a 10^6-item array names the array, not its 7 MB of items)."""
        b = ", ".join(f"{k}={v}" for k, v in self.bindings.items())
        vals = ", ".join(f"{k}={_show(v)}" for k, v in list(self.values.items())[:8])
        if len(self.values) > 8:
            vals += f", ... ({len(self.values) - 8} more)"
        head = f"{self.relation}" + (f" [{b}]" if b else "")
        return f"{elide(head)}: {elide(self.text, 400)}" + (f"  ({elide(vals, 800)})" if vals else "")


def _capped(out: list[Violation]) -> list[Violation]:
    """`out`, and when it reached MAX_VIOLATIONS a last entry saying the list stops there (a
    record of 10^6 bad items is answered in about a second with bounded output)."""
    if len(out) >= MAX_VIOLATIONS:
        out.append(Violation("limit", f"the first {MAX_VIOLATIONS} violations are listed, further ones "
                                      f"were not looked for (limit MAX_VIOLATIONS = {MAX_VIOLATIONS})", {}, {}))
    return out


def _show(v: Any) -> str:
    """A value as JSON, elided; a big list or object is not serialised whole to be cut."""
    try:
        return _show_json(v)
    except (RecursionError, ValueError):  # nested near the interpreter's limit (or circular)
        return f"(a {type(v).__name__} nested too deeply to show)"


def _show_json(v: Any) -> str:
    if isinstance(v, list) and len(v) > 20:
        return elide(json.dumps([_jsonable(x) for x in v[:20]], ensure_ascii=False, default=str)[:-1]
                     + f", ... ({len(v) - 20} more items)]")
    if isinstance(v, dict) and len(v) > 20:
        return elide("{" + ", ".join(f"{json.dumps(k)}: ..." for k in list(v)[:20]) + f", ... ({len(v)} keys)}}")
    return elide(json.dumps(_jsonable(v), ensure_ascii=False, default=str))


def _jsonable(v: Any) -> Any:
    if isinstance(v, Fraction):
        return float(v)
    return v


class CompiledSpec:
    """Schema template + grounded factor graph of one spec document."""

    def __init__(self, doc: dict, budget: Optional[Budget] = None, style: TextStyle = TextStyle(),
                 open_objects: bool = True) -> None:
        if not isinstance(doc, dict):
            raise SpecError("", "a spec must be a JSON object")
        if depth_of(doc) > MAX_DEPTH:
            raise SpecError("", f"the spec nests arrays/objects too deeply (limit MAX_DEPTH = {MAX_DEPTH})")
        self.doc = doc
        self.style = style
        self.budget = budget or Budget()
        # open_objects=False closes objects with additionalProperties true/a schema (docs/spec.md)
        self.open_objects = open_objects
        # large `$ref` targets compiled once and shared (schema.py `_referenced`) unless relations
        # may name fields inside them (the grounder does not descend into a reference node)
        ext = doc.get(EXTENSION_KEY)
        share = not (isinstance(ext, dict) and ext.get("relations"))
        # the report: every ignored keyword and narrowing, (JSON Pointer, keyword, note)
        self.template: LayoutNode
        self.template, self.schema_report = compile_schema_report(doc, open_objects, share_targets=share)
        self.tables, self.relations = load_relations(doc.get(EXTENSION_KEY))
        text_paths: list = []
        self.relations += unique_relations(self.template, text_paths)
        if self.relations and not isinstance(self.template, Obj):
            raise SpecError("/x-factorspec", "relations need an object at the root of the schema")
        # soft relations (preferences) are grounded apart: they never reach the solver or masks
        self.soft_relations = [r for r in self.relations if r.soft]
        self.relations = [r for r in self.relations if not r.soft]
        g = Grounder(self.template, self.tables, self.relations)
        self._soft: Optional[Grounder] = Grounder(self.template, self.tables, self.soft_relations) \
            if self.soft_relations else None
        try:
            g.ground_all()
            if self._soft is not None:
                self._soft.ground_all()
        except RecursionError:
            raise SpecError("/x-factorspec/relations", "a relation nests too deeply to ground") from None
        self.grounder = g
        self.vars = g.vars
        self.factors = g.factors
        self.var_of, self.len_var_of, self.present_var_of = g.var_of, g.len_var_of, g.present_var_of
        text_unique_relation_check(self, text_paths)
        self.problem = Problem(self.vars, self.factors)
        self._root: Optional[State] = None
        self._heights: Optional[Heights] = None  # a recursive layout's smallest instances (recursion.py)
        self._root_done = False
        self._t0 = 0.0

    # -- feasibility ------------------------------------------------------------------------------
    def root(self) -> State:
        """The state before any decision; raises Unsatisfiable (naming relations) if none exists.

        One wall-clock budget (`budget.seconds`) covers the root search and the search for the
        conflicting relations together: when it ends during the latter, the set named is a
        conflicting one, not necessarily minimal, and the message says so."""
        if not self._root_done:
            self._t0 = time.monotonic()
            self._root = State.root(self.problem, self.budget)
            self._root_done = True
        if self._root is None:
            core, minimal = self.unsat_core_within(self._t0 + self.budget.seconds)
            msg = "no record satisfies the spec; conflicting relations: " + ", ".join(core)
            if not minimal:
                msg += (f" (not minimal: the time budget of {self.budget.seconds} s ended before the "
                        "smallest conflicting set was found)")
            raise Unsatisfiable(msg, core, minimal=minimal)
        return self._root

    def unsat_core(self) -> list[str]:
        """A minimal set of relation names that together admit no record (deletion filter),
        within one `budget.seconds` from now (see `unsat_core_within`)."""
        return self.unsat_core_within(time.monotonic() + self.budget.seconds)[0]

    def unsat_core_within(self, deadline: float) -> tuple[list[str], bool]:
        """(relation names that together admit no record, whether that set is minimal).

        Deletion filter: the candidate is always a set known to conflict, so when the deadline
        passes (or one trial exceeds the node budget, and so proves nothing) the candidate so far
        is returned, marked not minimal."""
        names = [r.name for r in self.relations]
        by_rel: dict[str, list[int]] = {}
        for i, f in enumerate(self.factors):
            by_rel.setdefault(f.relation.name, []).append(i)

        def sat(keep: list[str]) -> bool:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BudgetExceeded("seconds", self.budget.seconds, round(self.budget.seconds - left, 3))
            idx = sorted(i for n in keep for i in by_rel.get(n, []))
            p = Problem(self.vars, [self.factors[i] for i in idx])
            return State.root(p, replace(self.budget, seconds=left)) is not None

        core = list(names)
        minimal = True
        try:
            if not sat([]):
                return ["(the schema's own bounds)"], True
        except BudgetExceeded:
            return core, False
        for n in list(names):
            trial = [m for m in core if m != n]
            try:
                if not sat(trial):
                    core = trial
            except BudgetExceeded as e:
                minimal = False
                if e.what == "seconds":
                    break
        return core, minimal

    def solve(self) -> dict:
        """One valid record (its constrained part; free text is filled minimally)."""
        st = self.root()
        return self.record_from_assignment(st.witness)

    def count(self, limit: int = 10**9) -> int:
        """Number of valid assignments of the constrained slots (free text not counted)."""
        return self.root().count(limit)

    # -- records ----------------------------------------------------------------------------------
    def record_from_assignment(self, A: list) -> dict:
        """Build a record from an assignment; unconstrained slots get their smallest values."""
        lens = {p: A[v.id] for p, v in self.len_var_of.items()}
        present = {p: A[v.id] for p, v in self.present_var_of.items()}
        if self._heights is None and has_refs(self.template):
            self._heights = Heights(self.template)
        return self._build(self.template, (), A, lens, present)

    def _build(self, node: LayoutNode, path: tuple, A: list, lens: dict, present: dict) -> Any:
        if isinstance(node, Obj):
            if node.rules is not None:  # no presence variables there (ground refuses them): a smallest object
                return _minimal(node, lambda f, p: self._build(f.node, p, A, lens, present), path, self._heights)
            out = {}
            for f in node.fields:
                p = path + (f.key,)
                if not f.required and not present.get(p, 0):
                    continue
                out[f.key] = self._build(f.node, p, A, lens, present)
            return out
        if isinstance(node, Arr):
            n = lens.get(path, node.min_items)
            return [self._build(node.item_alt(k), path + (k,), A, lens, present) for k in range(n)]
        v = self.var_of.get(path)
        if v is not None:
            return node.decode(A[v.id])
        return _minimal(node, None, path, self._heights)

    def assignment_of(self, record: Any) -> tuple[Optional[list], list[Violation]]:
        """Internal assignment of a record (schema-valid), or the schema violations."""
        return self._assignment(self.grounder, record)

    def _assignment(self, g: Grounder, record: Any) -> tuple[Optional[list], list[Violation]]:
        sv = schema_violations(self.template, record)
        if sv:
            return None, _capped([Violation("schema", msg, {}, {path_text(p): _get(record, p)})
                                  for p, msg in sv[:MAX_VIOLATIONS]])
        A = [v.lo for v in g.vars]
        for path, v in g.len_var_of.items():
            x = _get(record, path)
            A[v.id] = len(x) if isinstance(x, list) else 0
        for path, v in g.present_var_of.items():
            A[v.id] = int(_has(record, path))
        for path, v in g.var_of.items():
            if _has(record, path):
                k = v.scalar.encode(_get(record, path)) if v.scalar is not None else None
                if k is None:
                    return None, [Violation("schema", "value outside the schema", {},
                                            {path_text(path): _get(record, path)})]
                if v.kind == "bool":
                    k = int(_get(record, path))
                A[v.id] = k
        return A, []

    def check(self, record: Any) -> list[Violation]:
        """Every violated relation instance (with the paths and values it involves); soft
        relations are not among them (see `soft_violations`). A record nested too deeply for the
        recursive walk raises InputLimitError naming MAX_DEPTH (its depth is not measured first:
        that would cost a pass over every item of every record)."""
        try:
            A, bad = self.assignment_of(record)
        except RecursionError:
            raise InputLimitError("MAX_DEPTH", MAX_DEPTH, "the record nests arrays/objects too deeply") from None
        if A is None:
            return bad
        return self._violations(self.factors, record, A)

    def soft_violations(self, record: Any) -> list[Violation]:
        """Every instance of a soft relation that the record breaks (a preference not met; the
        record stays valid). None for a record outside the schema: `check` reports that."""
        if self._soft is None:
            return []
        A, _bad = self._assignment(self._soft, record)
        return [] if A is None else self._violations(self._soft.factors, record, A)

    def soft_penalty(self, record: Any) -> int:
        """The total weight of the soft relation instances the record breaks (0: all met)."""
        weight = {r.name: r.weight for r in self.soft_relations}
        return sum(weight[v.relation] for v in self.soft_violations(record))

    def _violations(self, factors: list, record: Any, A: list) -> list[Violation]:
        out = []
        for f in factors:
            try:
                ok = f.node.ev(A)
            except (TypeError, ZeroDivisionError):
                ok = False
            if not ok:
                vals = {v.name: _get(record, v.path) for v in f.slots if _has(record, v.path)}
                out.append(Violation(f.relation.name, f.relation.text, f.bindings, vals))
                if len(out) >= MAX_VIOLATIONS:
                    break
        return _capped(out)

    def canonical_text(self, record: Any) -> str:
        return canonical_text(self.template, record, self.style)


def _minimal(node: LayoutNode, build: Optional[Any] = None, path: tuple = (), hs: Optional[Heights] = None) -> Any:
    """A smallest value of the node (`hs`: the heights of a recursive layout, whose smallest
    instances pick the alternatives and members that end the recursion soonest)."""
    if isinstance(node, Obj):
        if node.rules is None:
            return {f.key: _minimal(f.node, None, (), hs) for f in node.fields if f.required}
        rules = node.rules if hs is None else hs.rules_within(node, hs.of(node) - 1)
        mask, n_extra = minimal_members(rules)
        out = {f.key: (build(f, path + (f.key,)) if build else _minimal(f.node, None, (), hs))
               for j, f in enumerate(node.fields) if mask >> j & 1}
        assert node.extra is not None or not n_extra
        if node.keys is not None:  # keys of the patterns' language (infinite: rules are refused otherwise)
            fresh = node.keys.lang.examples(n_extra, avoid=node.keys.declared)
            assert len(fresh) == n_extra, "no fresh keys of the pattern language"
        else:
            fresh = fresh_keys({f.key for f in node.fields}, n_extra)
        for k in fresh:
            out[k] = _minimal(node.extra_node(k), None, (), hs)  # type: ignore[arg-type]
        return out
    if isinstance(node, Arr):
        return [_minimal(node.item_alt(i), None, (), hs) for i in range(node.min_items)]
    s: Scalar = node
    if s.kind == "ref":
        return _minimal(s.alts[0], None, (), hs)
    if s.kind == "union":
        return _minimal(s.alts[0] if hs is None else hs.alternative(s), None, (), hs)
    if s.kind == "enum":
        return s.values[0]
    if s.kind == "string":
        if s.lang is not None:
            ex = s.lang.example()
            assert ex is not None  # an empty language is refused when compiled
            return ex
        return "a" * s.min_len
    if s.kind == "number":
        return _free_number_value(s)
    lo = s.lo if s.lo is not None else (min(0, s.hi) if s.hi is not None else 0)
    return s.decode(lo)


def _has(record: Any, path: tuple) -> bool:
    x = record
    for p in path:
        if isinstance(p, int):
            if not isinstance(x, list) or p >= len(x):
                return False
        elif not isinstance(x, dict) or p not in x:
            return False
        x = x[p]
    return True


def _get(record: Any, path: tuple) -> Any:
    x = record
    for p in path:
        try:
            x = x[p]
        except (KeyError, IndexError, TypeError):
            return None
    return x


def compile_spec(doc: Any, budget: Optional[Budget] = None, style: TextStyle = TextStyle(),
                 open_objects: bool = True) -> CompiledSpec:
    """Compile a spec document (a dict, or JSON text) into a `CompiledSpec`; `open_objects=False`
    closes objects with additionalProperties true or a schema (xgrammar-like strictness)."""
    if isinstance(doc, (str, bytes)):
        try:
            doc = load_json(doc)
        except json.JSONDecodeError as e:
            raise SpecError("", f"spec is not valid JSON: {e}") from None
        except InputLimitError as e:
            raise SpecError("", f"spec is not accepted: {e}") from None
    return CompiledSpec(doc, budget, style, open_objects)


def _free_number_value(s: Scalar) -> Any:
    """A value inside a free number's bounds: 0 where it fits, else the nearest closed bound, else
    a point strictly inside (decimal: a midpoint of decimals, or a bound plus or minus one); for a
    `non_integer` number the first of those that is not an integer, else one half past an integer."""
    if s.number_within(Fraction(0)):
        return 0
    cands: list[Fraction] = []
    if s.nlo is not None and not s.nlo_open:
        cands.append(s.nlo)
    if s.nhi is not None and not s.nhi_open:
        cands.append(s.nhi)
    if s.nlo is not None and s.nhi is not None:
        m = (s.nlo + s.nhi) / 2
        cands += [m, m + min(Fraction(1, 2), (s.nhi - m) / 2)]  # m + a part of (0, 1/2]: inside, not whole
    if s.nlo is not None:
        cands += [s.nlo + 1, math.floor(s.nlo) + Fraction(3, 2)]
    if s.nhi is not None:
        cands += [s.nhi - 1, math.ceil(s.nhi) - Fraction(3, 2)]
    cands.append(Fraction(1, 2))
    for v in cands:
        if s.number_within(v):
            return int(v) if v.denominator == 1 else v
    raise AssertionError(f"free number at {s.pointer or '/'} has no value (refused when compiled)")


MAX_UNIQUE_ITEMS = 1000  # a uniqueItems array without maxItems is bounded by its items' domain
UNICODE_CHARS = 0x110000 - 0x800  # the code points a JSON string may hold (no lone surrogates)


def unique_relations(template: LayoutNode, text_paths: Optional[list] = None) -> list[Relation]:
    """`uniqueItems` as FactorSpec's own all_different over the array's items where the items have
    a finite domain (enums, booleans, bounded integers and fixed-point numbers) and the array is
    reached through declared object properties (none of them in an object with minProperties,
    maxProperties or dependentRequired): exact, and relations may name the array. Every
    other uniqueItems array is marked `text_unique`: the text automaton keeps its items distinct
    (textstate.py); its template path (None under a union or reference) goes to `text_paths`."""
    out: list[Relation] = []
    seen_refs: set[int] = set()

    def walk(node: LayoutNode, keys: Optional[list[str]], under_array: bool) -> None:
        if isinstance(node, Obj):
            # a field's presence tied by minProperties etc.: no all_different below (ground.py)
            inner = under_array or node.rules is not None
            for f in node.fields:
                walk(f.node, None if keys is None else keys + [f.key], inner)
            for x in ([node.extra] if node.keys is None else node.keys.values) if node.extra is not None else []:
                walk(x, None if keys is None else keys + ["*"], True)
        elif isinstance(node, Arr):
            if node.unique:
                item = node.item
                if keys and not under_array and "*" not in keys and isinstance(item, Scalar) and item.finite:
                    _all_different(node, keys, out)
                else:
                    _text_unique(node)
                    if text_paths is not None:
                        text_paths.append(None if keys is None else tuple(keys))
            if node.contains is not None and text_paths is not None:  # counted by the text automaton
                text_paths.append(None if keys is None else tuple(keys))
            walk(node.item, None if keys is None else keys + ["*"], True)
        elif isinstance(node, Scalar) and node.kind in ("union", "ref"):
            if node.kind == "ref":  # each target once, however many reference nodes lead to it
                if id(node.alts[0]) in seen_refs:
                    return
                seen_refs.add(id(node.alts[0]))
            for a in node.alts:
                walk(a, None, under_array)

    walk(template, [], False)
    return out


def _all_different(node: Arr, keys: list[str], out: list[Relation]) -> None:
    ptr = node.pointer
    item = node.item
    assert isinstance(item, Scalar)
    size = len(item.values) if item.kind == "enum" else item.hi - item.lo + 1  # type: ignore[operator]
    if node.max_items is None or node.max_items > size:
        if size > MAX_UNIQUE_ITEMS:
            raise SpecError(f"{ptr}/uniqueItems", f"uniqueItems over {size} possible item values needs "
                            f"maxItems (at most {MAX_UNIQUE_ITEMS})")
        node.max_items = size  # exact: distinct items from a domain of `size` values
    if node.min_items > node.max_items:
        raise SpecError(f"{ptr}/minItems", f"minItems {node.min_items} distinct items, but the items "
                        f"have only {size} possible values")
    ast = {"op": "call", "func": "all_different", "args": [{"path": keys + ["*"]}]}
    out.append(Relation(f"uniqueItems at {ptr}", f"all_different({'.'.join(keys)}[*])",
                        from_json(ast), "", f"{ptr}/uniqueItems"))


def _text_unique(node: Arr) -> None:
    """Mark a uniqueItems array for the text automaton, or refuse it naming the pointer: a later
    item must always be possible until minItems is met. (Items of every kind are compared as JSON
    values, members in any order: textstate.py, unique_values.py.)"""
    ptr = node.pointer
    m = node.min_items
    if m >= 2:
        n = _values_at_least(node.item, m, set())
        if n is None:
            raise SpecError(f"{ptr}/minItems", f"uniqueItems with minItems {m}: FactorSpec cannot tell "
                            f"whether the items have {m} distinct values")
        if n < m:
            raise SpecError(f"{ptr}/minItems", f"minItems {m} distinct items, but the items have only "
                            f"{n} possible values")
    node.text_unique = True


def _values_at_least(node: LayoutNode, m: int, refs: set[int]) -> Optional[int]:
    """min(m, the number of distinct values of `node`) where that is known, else None."""
    if isinstance(node, Obj):
        if node.rules is not None:
            return None
        n = 1
        for f in node.fields:
            c = _values_at_least(f.node, m, refs)
            if c is None:
                return None
            n = min(m, n * (c + (0 if f.required else 1)))
        if node.extra is None or n >= m:
            return n
        if node.keys is None:  # any undeclared key may hold a value of `extra`: infinitely many
            c = _values_at_least(node.extra, 1, refs)
            return m if c is not None and c >= 1 else None
        return None  # patterned keys: the declared fields' count is only a lower bound
    if isinstance(node, Arr):
        c = _values_at_least(node.item, m, refs)
        if c is not None and c >= 1 and node.max_items is None:
            return m  # arrays of every length
        return None
    if node.kind == "enum":
        return min(m, len({node.text(v) for v in node.values}))
    if node.kind in ("integer", "fixed"):
        return m if node.lo is None or node.hi is None else min(m, max(0, node.hi - node.lo + 1))
    if node.kind == "number":
        if node.nlo is not None and node.nhi is not None and node.nlo == node.nhi:
            return 1 if node.number_within(node.nlo) else 0
        return m
    if node.kind == "string":
        if node.lang is not None:
            return 0 if node.lang.start < 0 else min(m, node.lang.count(node.lang.start, 0, m))
        if node.max_len is None or node.max_len > node.min_len:
            return m
        return min(m, UNICODE_CHARS ** node.min_len)
    if node.kind == "any":
        return m
    if node.kind == "union":
        best = 0
        for a in node.alts:
            c = _values_at_least(a, m, refs)
            if c is None:
                return None
            best = max(best, c)
        return best if best >= m else None  # alternatives may overlap: only a lower bound
    return None


def text_unique_relation_check(spec: Any, text_paths: list) -> None:
    """A relation may not name the items or length of an array whose uniqueItems the text automaton
    keeps (the solver would not know the items must differ)."""
    paths = [p for p in text_paths if p is not None]
    if not paths:
        return
    for table in (spec.var_of, spec.len_var_of, spec.present_var_of):
        for vp in table:
            norm = tuple("*" if isinstance(x, int) else x for x in vp)
            for p in paths:
                if norm[:len(p)] == p:
                    raise SpecError("/x-factorspec/relations", f"a relation names {path_text(vp)}, inside the "
                                    f"array {'.'.join(p)} whose uniqueItems (items not finite, or not at a "
                                    "declared path) or 'contains' the text automaton keeps; relations on such "
                                    "arrays are not supported")
