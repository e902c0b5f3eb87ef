"""Grounding: relations (ASTs with index variables and paths) -> factors over solver variables.

Paths resolve against the schema template; every record slot, array length or optional-field
presence bit that a relation mentions becomes a `Var`. A relation instance that mentions an
item of a variable-length array (or an optional field) applies only when that item exists.
"""
from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Optional, Union

from factorspec.errors import RelationError, SpecError
from factorspec.graph import expr as E
from factorspec.graph.domain import dom_range
from factorspec.graph.globals.all_different import AllDiff
from factorspec.graph.globals.linear import LinSum
from factorspec.graph.recursion import recursive_part
from factorspec.graph.relations import from_json, parse, to_text
from factorspec.graph.schema import Arr, LayoutNode, Obj, Scalar, escape_pointer, path_text

MAX_INSTANCES = 200_000
MAX_VARS = 100_000
DIV_LIMIT = 1024  # a divisor that is not a constant may take at most this many values


def nodes_hold(nodes: Iterable[Any], A: Sequence[Any]) -> bool:
    """Whether every node holds on the complete assignment A (internal values), exactly as
    `check` decides: an undefined value (a missing table key, the min of nothing) makes a node
    false. One place for the search's leaf check, its node keys, CP-SAT's answers and moves."""
    try:
        return all(n.ev(A) for n in nodes)
    except (TypeError, ZeroDivisionError):
        return False


@dataclass
class Relation:
    """One relation of the spec, as written."""

    name: str
    text: str
    ast: dict
    message: str = ""
    pointer: str = ""
    soft: bool = False  # a preference: never restricts records or masks, reported apart by check
    weight: int = 1


@dataclass
class Factor:
    """One grounded relation instance (a factor of the graph)."""

    relation: Relation
    node: E.Node
    bindings: dict[str, Any]
    slots: list[E.Var]

    def describe(self) -> str:
        b = ", ".join(f"{k}={v}" for k, v in self.bindings.items())
        return f"{self.relation.name}" + (f" [{b}]" if b else "")


# Values during grounding -----------------------------------------------------------------------

@dataclass
class Ref:
    """A location in the record: a concrete path and its template node."""

    path: tuple
    node: LayoutNode


@dataclass
class SelRef:
    """A location chosen by a variable index: options[k] when the index variable equals k."""

    index: E.Node
    options: dict[int, GVal]  # Refs (or, through attributes, SelRefs/values of them)


@dataclass
class ListVal:
    """A list of guarded items (from `arr[*]` or a list literal)."""

    items: list[tuple[Optional[E.Node], Any]]


@dataclass
class TableRef:
    name: str
    data: Any


GVal = Union[E.Node, Ref, SelRef, ListVal, TableRef]


class BoundInt(int):
    """A position bound by `for i in range(len(xs))` on a variable-length array: an int that
    carries the condition that the position exists (`len(xs) > i`), a guard of its instances."""

    guard: Optional[E.Node]

    def __new__(cls, value: int, guard: Optional[E.Node] = None) -> BoundInt:
        obj = super().__new__(cls, value)
        obj.guard = guard
        return obj


def _norm_value(v: Any, where: str) -> Any:
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        if not math.isfinite(v):
            raise SpecError(where, f"table values must be finite numbers, got {v!r}")
        f = Fraction(repr(v))
        return int(f) if f.denominator == 1 else f
    raise SpecError(where, f"table values must be JSON scalars, got {json.dumps(v)[:40]}")


@dataclass(frozen=True)
class SubTable:
    """A table inside a table (`{"ann": {"mon": 8}}`, `[{"a": 1}, ...]`): looked up one key at a
    time, `hours[p][d]`; it is not a value (membership and comparison refuse it)."""

    data: Any  # a normalised table: a dict, or a list of row tuples

    def __hash__(self) -> int:
        return id(self)


def _norm_entry(v: Any, where: str) -> Any:
    """A value of an object table: a scalar, or a table of its own (an object, or a list)."""
    if isinstance(v, (dict, list)):
        return SubTable(_norm_table_at(where, v))
    return _norm_value(v, where)


def _norm_table(name: str, data: Any) -> Any:
    return _norm_table_at(f"/x-factorspec/tables/{escape_pointer(name)}", data)


def _norm_table_at(where: str, data: Any) -> Any:
    if isinstance(data, dict):
        out = {k: _norm_entry(v, f"{where}/{escape_pointer(k)}") for k, v in data.items()}
        _same_shape(list(out.values()), where)
        return out
    if isinstance(data, list):
        if data and all(isinstance(r, dict) for r in data):  # a list of objects: positional sub-tables
            return [(SubTable(_norm_table_at(f"{where}/{i}", r)),) for i, r in enumerate(data)]
        rows = []
        width = None
        for i, r in enumerate(data):
            cells = r if isinstance(r, list) else [r]
            row = tuple(_norm_value(x, f"{where}/{i}") for x in cells)
            if width is not None and len(row) != width:
                raise SpecError(f"{where}/{i}", f"table row has {len(row)} columns, earlier rows have {width}")
            width = len(row)
            rows.append(row)
        return rows
    raise SpecError(where, "a table must be an object (lookup) or an array (allowed tuples/values)")


def _holds_tables(rows: Any) -> bool:
    """Whether a list table's entries are tables (a list of objects)."""
    return isinstance(rows, list) and bool(rows) and len(rows[0]) == 1 and isinstance(rows[0][0], SubTable)


def _same_shape(vals: list, where: str) -> None:
    """An object table holds values or tables, not both (a lookup's kind must be one)."""
    subs = sum(isinstance(v, SubTable) for v in vals)
    if 0 < subs < len(vals):
        raise SpecError(where, "an object table holds either values or tables, not both")


class Grounder:
    """Grounds every relation of a spec over the schema template."""

    def __init__(self, template: LayoutNode, tables: dict, relations: list[Relation]) -> None:
        self.template = template
        self.tables = {k: _norm_table(k, v) for k, v in tables.items()}
        self.relations = relations
        self.vars: list[E.Var] = []
        self.var_of: dict[tuple, E.Var] = {}  # scalar slot path -> var
        self.len_var_of: dict[tuple, E.Var] = {}  # array path -> length var
        self.present_var_of: dict[tuple, E.Var] = {}  # optional field path -> presence var
        self.factors: list[Factor] = []
        self._guard_cache: dict[tuple, list[E.Node]] = {}
        self._rel: Optional[Relation] = None
        self._slots: list[E.Var] = []
        # conditions a relation instance needs to be defined (a variable index within the array's
        # length): conjoined with the instance inside its guards, so an instance that needs an
        # item that does not exist is false (like an undefined value), not vacuous
        self._reqs: list[E.Node] = []
        self._count = 0
        if isinstance(template, Obj):
            for f in template.fields:
                if f.key in self.tables:
                    raise SpecError(f"/x-factorspec/tables/{escape_pointer(f.key)}",
                                    f"table name {f.key!r} is also a top-level property")

    # -- errors ---------------------------------------------------------------------------------
    def err(self, msg: str) -> RelationError:
        r = self._rel
        return RelationError(r.name if r else "?", msg, r.pointer if r else "")

    # -- variables ------------------------------------------------------------------------------
    def _order(self, path: tuple) -> tuple:
        node, key = self.template, []
        for p in path:
            if isinstance(node, Obj):
                i = [f.key for f in node.fields].index(p)
                key.append(i)
                node = node.fields[i].node
            elif isinstance(node, Arr):
                key.append(p)
                node = node.item
        return tuple(key)

    def _new_var(self, path: tuple, kind: str, lo: int, hi: int, **kw: Any) -> E.Var:
        if len(self.vars) >= MAX_VARS:
            raise self.err(f"more than {MAX_VARS} variables: the record is too large to ground")
        # a presence bit is guarded by its ancestors only (not by itself: that recursed forever)
        upto = kw.pop("guard_upto", len(path) if kw.get("structural") else None)
        v = E.Var(len(self.vars), kw.pop("name", path_text(path)), path, kind, lo, hi, **kw)
        g = self.guards(path, upto=upto)
        v.guard = E.conj(g)
        self.vars.append(v)
        return v

    def slot_var(self, ref: Ref) -> E.Var:
        if ref.path in self.var_of:
            return self.var_of[ref.path]
        s = ref.node
        assert isinstance(s, Scalar)
        self._not_recursive(ref, "")
        if not s.finite:
            what = {"string": "a free-text string", "number": "a number without multipleOf",
                    "any": "any JSON value"}.get(s.kind, "an unbounded value")
            if s.kind == "union":
                kinds = ", ".join(dict.fromkeys(
                    "null" if getattr(a, "kind", "") == "enum" and getattr(a, "values", None) == [None]
                    else getattr(a, "kind", type(a).__name__.lower()) for a in s.alts))
                what = f"a union of several types ({kinds})"
            raise self.err(f"{path_text(ref.path)} ({s.pointer or '/'}) is {what}; relations may only "
                           "use fields of one type with a finite domain (enum, boolean, bounded integer, bounded "
                           "fixed-point)")
        order = self._order(ref.path)
        if s.kind == "enum":
            vals = s.values
            if all(isinstance(x, bool) for x in vals):
                kind = "bool"
                vals = [False, True]
                v = self._new_var(ref.path, kind, 0, 1, values=vals, order=order, scalar=s)
                if len(s.values) == 1:
                    v.lo = v.hi = int(s.values[0])
            else:
                kind = "num" if all(isinstance(x, (int, Fraction)) and not isinstance(x, bool) for x in vals) else "sym"
                v = self._new_var(ref.path, kind, 0, len(vals) - 1, values=list(vals), order=order, scalar=s)
        else:
            assert s.lo is not None and s.hi is not None  # finite (checked above)
            v = self._new_var(ref.path, "num", s.lo, s.hi, step=s.step, order=order, scalar=s)
        self.var_of[ref.path] = v
        return v

    def _not_recursive(self, base: Any, ast: Any) -> None:
        """Relations never name a field inside a recursive part of the layout (recursion.py): its
        locations are unbounded, so there is nothing finite to ground."""
        node = recursive_part(base.node) if isinstance(base, Ref) else None
        if node is not None:
            target = node.alts[0].pointer if node.alts else "?"
            raise self.err(f"{path_text(base.path)} ({node.pointer or '/'}) is a recursive reference (to "
                           f"{target or '/'}): relations cannot name fields inside a recursive part of the schema"
                           + (f" (in {to_text(ast)})" if ast else ""))

    def _check_max_items(self, path: tuple, a: Arr) -> int:
        if a.max_items is None:
            raise self.err(f"array {path_text(path)} ({a.pointer or '/'}) needs maxItems to be used in relations")
        if a.max_items > MAX_VARS:
            raise self.err(f"array {path_text(path)} ({a.pointer or '/'}) has maxItems {a.max_items}; at most "
                           f"{MAX_VARS} items can be used in relations")
        return a.max_items

    def len_var(self, ref: Ref) -> Optional[E.Var]:
        a = ref.node
        assert isinstance(a, Arr)
        max_items = self._check_max_items(ref.path, a)
        if a.min_items == max_items:
            return None
        if ref.path not in self.len_var_of:
            self.len_var_of[ref.path] = self._new_var(ref.path, "num", a.min_items, max_items, structural=True,
                                                      name=f"len({path_text(ref.path)})",
                                                      order=self._order(ref.path) + (-1,))
        return self.len_var_of[ref.path]

    def guards(self, path: tuple, upto: Optional[int] = None) -> list[E.Node]:
        """Presence conditions of the location at `path` (its ancestors' lengths/presence)."""
        upto = len(path) if upto is None else upto
        key = path[:upto]
        if key in self._guard_cache:
            return self._guard_cache[key]
        out: list[E.Node] = []
        node = self.template
        for i, p in enumerate(key):
            if isinstance(node, Arr):
                lv = self.len_var(Ref(path[:i], node))
                if lv is not None and p >= node.min_items:
                    out.append(E.Cmp(">", E.VarRef(lv), E.Const(p)))
                node = node.item
            elif isinstance(node, Obj):
                f = next(f for f in node.fields if f.key == p)
                if not f.required:
                    fp = path[: i + 1]
                    if node.rules is not None and fp not in self.present_var_of:
                        raise self.err(f"the presence of {path_text(fp)} ({node.pointer}/properties/"
                                       f"{escape_pointer(f.key)}) is tied by minProperties/maxProperties/"
                                       "dependentRequired of its object; relations on it are not supported")
                    if fp not in self.present_var_of:
                        pv = self._new_var(fp, "bool", 0, 1, values=[False, True], structural=True,
                                           name=f"present({path_text(fp)})", guard_upto=len(fp) - 1,
                                           # document order: the key is decided before its value
                                           order=self._order(fp)[:-1] + (self._order(fp)[-1] - 0.5,))
                        self.present_var_of[fp] = pv
                    out.append(E.Cmp("==", E.VarRef(self.present_var_of[fp]), E.Const(True)))
                node = f.node
        self._guard_cache[key] = out
        return out

    # -- grounding ------------------------------------------------------------------------------
    def check_size(self) -> None:
        """Fail at once, naming the relation, when the star paths of the relations alone (read
        against the schema, nothing grounded) need more than MAX_VARS variables: grounding would
        build variables for seconds before reaching the limit (issue #14)."""
        seen: set[tuple] = set()
        total = 0
        for rel in self.relations:
            self._rel = rel
            for key, n in _star_slots(rel.ast, self.template):
                if key not in seen:
                    seen.add(key)
                    total += n
            if total > MAX_VARS:
                raise self.err(f"more than {MAX_VARS} variables: the record is too large to ground "
                               f"(the relations' [*] paths alone need {total})")
        self._rel = None

    def ground_all(self) -> None:
        self.check_size()
        for rel in self.relations:
            self._rel = rel
            ast = rel.ast
            if ast.get("op") == "forall":
                for env, body in self._expand_forall(ast, {}):
                    self._emit(rel, body, env)
            else:
                self._emit(rel, ast, {})
        self._rel = None

    def _emit(self, rel: Relation, ast: dict, env: dict) -> None:
        self._count += 1
        if self._count > MAX_INSTANCES:
            raise self.err(f"more than {MAX_INSTANCES} relation instances: the spec is too large to ground")
        guards: list[E.Node] = self._bound_guards(env)
        self._slots = []
        self._reqs = []
        node = self.boolean(self.expr(ast, env, guards), ast)
        node = self._with_reqs(node, self._reqs)
        self._reqs = []
        g = E.conj(_dedupe(guards))
        if g is not None:
            node = E.implies(g, node)
        node = _prune(node)
        shown = {k: path_text(v.path) if isinstance(v, Ref) else int(v) if isinstance(v, BoundInt) else v
                 for k, v in env.items()}
        if isinstance(node, E.Const):
            if not node.v:
                self.factors.append(Factor(rel, node, shown, []))
            return
        self.factors.append(Factor(rel, node, shown, list(dict.fromkeys(self._slots))))

    def _bound_guards(self, env: dict) -> list[E.Node]:
        """Presence of the items that variables are bound to (`for l in lines`): an instance over
        an item that does not exist applies only when it does, as one that indexes it."""
        out: list[E.Node] = []
        for v in env.values():
            if isinstance(v, Ref):
                out.extend(self.guards(v.path))
            elif isinstance(v, BoundInt) and v.guard is not None:
                out.append(v.guard)
        return out

    def _expand_forall(self, ast: dict, env: dict):
        names = ast["vars"]
        for binding in self._bindings(names, ast.get("range"), ast["body"], env):
            inner = {**env, **binding}
            body = ast["body"]
            if body.get("op") == "forall":
                yield from self._expand_forall(body, inner)
            else:
                yield inner, body

    def _bindings(self, names: list[str], rng: Optional[dict], body: dict, env: dict) -> list[dict]:
        """Every binding of `names` (each over its range, given the names bound before it)."""
        out: list[dict] = [{}]
        for name in names:
            if name in env or name in self.tables:
                raise self.err(f"index variable {name!r} shadows another name")
            nxt = []
            for b in out:
                for v in self._range_of(name, rng, body, {**env, **b}):
                    nxt.append({**b, name: v})
                if len(nxt) > MAX_INSTANCES:
                    raise self.err(f"more than {MAX_INSTANCES} bindings of {', '.join(names)}")
            out = nxt
        return out

    def _range_of(self, name: str, rng: Optional[dict], body: dict, env: dict) -> list[Any]:
        if rng is not None:
            if rng["op"] == "range":
                lo = self._const_int(rng["args"][0], env)
                upto = self._upto_length(rng["args"][1], env)
                if upto is not None:  # 0..len(xs) on a variable-length array: positions that exist
                    most, least, lv = upto
                    return [BoundInt(k, None if k < least else E.Cmp(">", E.VarRef(lv), E.Const(k)))
                            for k in range(lo, most)]
                hi = self._const_int(rng["args"][1], env)
                if hi - lo > MAX_INSTANCES:
                    raise self.err(f"range {lo}..{hi} of {name!r} is too large (more than {MAX_INSTANCES} values)")
                return list(range(lo, hi))
            ref = self._quiet_expr(rng["args"][0], env)
            if isinstance(ref, TableRef):
                return self._table_members(ref, name)
            # indices when the variable indexes the array it ranges over (`xs[i] for i in xs`); items
            # otherwise, as Python reads it (`l.qty for l in lines`, `avail[p] for p in roster[d]`)
            items = isinstance(ref, ListVal) or _is_base(body, name) or \
                not any(base == rng["args"][0] for base, _ in _index_sites(body, name))
            if isinstance(ref, ListVal):  # `for g in tables[*].guests[*]`: the items a star reaches
                if not all(isinstance(r, Ref) for _g, r in ref.items):
                    raise self.err(f"{name!r} ranges over the items of {to_text(rng['args'][0])}, so it cannot "
                                   f"be an index; range over an array path to get indices")
                return [r for _g, r in ref.items]
            if not isinstance(ref, Ref) or not isinstance(ref.node, Arr):
                raise self.err(f"'in' range of {name!r} must be an array path (its indices), a table "
                               f"(its values, or an object table's keys) or a..b, not "
                               f"{to_text(rng['args'][0])}")
            count = self._check_max_items(ref.path, ref.node)
            if items:  # `for l in lines` with l never an index: Python's reading, l is each item
                return [Ref(ref.path + (k,), ref.node.item) for k in range(count)]
            return list(range(count))
        # infer: every array index that mentions `name` must be in bounds
        allowed: Optional[set[int]] = None
        for base, idx in _index_sites(body, name):
            n = self._site_size(base, env)
            if n is None:
                continue
            ok: set[int] = set()
            usable = True
            for i in range(-n - 4, n + 4):
                try:
                    k = self._const_int(idx, {**env, name: i})
                except RelationError:
                    usable = False
                    break
                if 0 <= k < n:
                    ok.add(i)
            if not usable:
                continue
            allowed = ok if allowed is None else allowed & ok
        if allowed is None:
            raise self.err(f"cannot infer the range of {name!r}: index an array with it or write "
                           f"'forall {name} in a..b: ...'")
        return sorted(allowed)

    def _upto_length(self, ast: dict, env: dict) -> Optional[tuple[int, int, E.Var]]:
        """(maxItems, minItems, length var) when `ast` is len(ARRAY) of a variable-length array."""
        if ast.get("op") != "call" or ast.get("func") != "len" or len(ast.get("args", [])) != 1:
            return None
        try:
            ref = self._quiet_expr(ast["args"][0], env)
        except RelationError:
            return None
        if not isinstance(ref, Ref) or not isinstance(ref.node, Arr):
            return None
        lv = self.len_var(ref)
        return None if lv is None else (self._check_max_items(ref.path, ref.node), ref.node.min_items, lv)

    def _quiet_expr(self, ast: dict, env: dict) -> GVal:
        """`expr` for a look at a location (range inference): no guards, requirements or slots
        leak into the relation instance being grounded."""
        reqs, slots = self._reqs, self._slots
        self._reqs, self._slots = [], list(slots)
        try:
            return self.expr(ast, env, [])
        finally:
            self._reqs, self._slots = reqs, slots

    def _site_size(self, base: dict, env: dict) -> Optional[int]:
        """The number of items of what `base` names (an array, or a positional table), for range
        inference; None when it names neither. A base that mentions variables bound further in
        (`grid[r]` while inferring c in `grid[r][c]`) is read from the schema: every item of an
        array has the same schema, so the same maxItems."""
        try:
            ref: Any = self._quiet_expr(base, env)
        except RelationError:
            ref = self._shape(base, env)
        if isinstance(ref, TableRef):
            return len(ref.data) if isinstance(ref.data, list) else None
        if isinstance(ref, Ref):
            ref = ref.node
        if isinstance(ref, Arr):
            return self._check_max_items((), ref) if ref.max_items is not None else None
        return None

    def _shape(self, ast: dict, env: dict) -> Optional[LayoutNode]:
        """The schema node a path names, with every index read as 'some item'."""
        if "name" in ast and "op" not in ast:
            nm = ast["name"]
            if isinstance(self.template, Obj) and nm not in env and nm not in self.tables:
                for f in self.template.fields:
                    if f.key == nm:
                        return f.node
            return None
        op = ast.get("op")
        if op in ("attr", "index"):
            base = self._shape(ast["args"][0], env)
            if op == "attr" and isinstance(base, Obj):
                return next((f.node for f in base.fields if f.key == ast["attr"]), None)
            if op == "index" and isinstance(base, Arr):
                return base.item
        return None

    def _table_members(self, t: TableRef, name: str) -> list[Any]:
        """What `name in TABLE` ranges over: an object table's keys, a list table's values."""
        if isinstance(t.data, dict):
            return list(t.data)
        if _holds_tables(t.data):
            raise self.err(f"{name!r} cannot range over table {t.name!r}: its entries are tables "
                           f"(write 'forall k in 0..{len(t.data)}: ... {t.name}[k] ...' to take them by position)")
        if any(len(r) != 1 for r in t.data):
            raise self.err(f"{name!r} cannot range over table {t.name!r}: its rows have several columns "
                           f"(write 'forall k in 0..{len(t.data)}: ... {t.name}[k][0] ...' to take rows by position)")
        return [r[0] for r in t.data]

    def _const_int(self, ast: dict, env: dict) -> int:
        v = self.expr(ast, env, [])
        if isinstance(v, E.Node) and not v.vars:
            val = v.ev([])
            if isinstance(val, int) and not isinstance(val, bool):
                return val
            if isinstance(val, Fraction) and val.denominator == 1:
                return int(val)
        if isinstance(v, E.Node) and any(self.vars[i] in self.len_var_of.values() for i in v.vars):
            raise self.err(f"{to_text(ast)} must be a constant integer, but it depends on the length of a "
                           f"variable-length array (minItems < maxItems); range over the items that exist with "
                           f"'forall i in ARRAY: ...' or 'forall i: ...' instead")
        raise self.err(f"{to_text(ast)} must be a constant integer (only index variables and constants)")

    # value conversion --------------------------------------------------------------------------
    def value(self, v: GVal, ast: dict) -> E.Node:
        if isinstance(v, E.Node):
            return v
        if isinstance(v, Ref):
            if isinstance(v.node, Obj):
                raise self.err(f"{path_text(v.path)} is an object, not a value: compare its fields "
                               f"({to_text(ast)}.{v.node.fields[0].key if v.node.fields else 'field'}), or use "
                               f"indices to tell items apart (forall i, j: i != j implies ...) (in {to_text(ast)})")
            if not isinstance(v.node, Scalar):
                raise self.err(f"{path_text(v.path)} is an array, not a value: aggregate it (sum, len, min, max, "
                               f"all_different, x in ...) or index it (in {to_text(ast)})")
            var = self.slot_var(v)
            self._slots.append(var)
            vals = var.values or []
            if len(vals) == 1 and var.kind != "bool":
                return E.Const(vals[0])
            return E.VarRef(var)
        if isinstance(v, SelRef):
            return E.Select(v.index, {k: self.value(r, ast) for k, r in v.options.items()})
        if isinstance(v, ListVal) and ast.get("op") not in ("tuple", "list"):
            raise self.err(f"{to_text(ast)} is a list of items, not one value: aggregate it (sum, count, min, max, "
                           f"all_different, len(set(...))) or write a generator, e.g. count(x[i] == 0 for i)")
        if isinstance(v, TableRef):
            raise self.err(f"{to_text(ast)} is a table, not a value: look a value up in it ({v.name}[key]) "
                           f"or test membership (x in {v.name})")
        raise self.err(f"{to_text(ast)} is not a value")

    def boolean(self, v: GVal, ast: dict) -> E.Node:
        n = self.value(v, ast)
        if n.kind != "bool":
            raise self.err(f"{to_text(ast)} is not a condition (true/false)")
        return n

    def numeric(self, v: GVal, ast: dict) -> E.Node:
        n = self.value(v, ast)
        if n.kind not in ("num", "bool"):
            raise self.err(f"{to_text(ast)} is not a number")
        return n

    # expressions -------------------------------------------------------------------------------
    def expr(self, ast: dict, env: dict, guards: list) -> GVal:
        if "const" in ast:
            return E.Const(ast["const"])
        if "name" in ast and "op" not in ast:
            nm = ast["name"]
            if nm in env:
                bound = env[nm]
                if isinstance(bound, BoundInt):
                    return E.Const(int(bound))
                return bound if isinstance(bound, Ref) else E.Const(bound)
            if nm in self.tables:
                return TableRef(nm, self.tables[nm])
            if nm == "$":
                return Ref((), self.template)
            if isinstance(self.template, Obj):
                for f in self.template.fields:
                    if f.key == nm:
                        guards.extend(self.guards((nm,)))
                        return Ref((nm,), f.node)
                if self.template.extra is not None:
                    raise self.err(_open_member_message(self.template, nm, nm, to_text(ast)))
            raise self.err(f"unknown name {nm!r} (an index variable is bound by 'forall {nm}: ...' or a generator "
                           f"'... for {nm}'; this is not a top-level property, table or index variable)")
        op = ast["op"]
        args = ast.get("args", [])
        if op == "attr":
            base = self.expr(args[0], env, guards)
            return self._attr(base, ast["attr"], guards, ast)
        if op == "index":
            base = self.expr(args[0], env, guards)
            key = self.value(self.expr(args[1], env, guards), args[1])
            return self._index_by(base, key, guards, ast)
        if op == "star":
            base = self.expr(args[0], env, guards)
            return self._star(base, ast)
        if op == "/":
            a = self.numeric(self.expr(args[0], env, guards), args[0])
            b = self.numeric(self.expr(args[1], env, guards), args[1])
            return self._divide(a, b, ast)
        if op == "if":
            return self._conditional(ast, env, guards)
        if op in ("+", "-", "*", "//", "%"):
            a = self.numeric(self.expr(args[0], env, guards), args[0])
            b = self.numeric(self.expr(args[1], env, guards), args[1])
            if op in ("//", "%"):
                if b.vars:
                    return self._floor_divide(op, a, b, ast)
                if b.ev([]) == 0:
                    raise self.err(f"division by zero (in {to_text(ast)})")
            return _fold(E.Arith(op, a, b))
        if op == "neg":
            return _fold(E.Unary("neg", self.numeric(self.expr(args[0], env, guards), args[0])))
        if op in ("==", "!=", "<", "<=", ">", ">="):
            a = self.value(self.expr(args[0], env, guards), args[0])
            b = self.value(self.expr(args[1], env, guards), args[1])
            kinds = {a.kind, b.kind}
            if op in ("==", "!="):
                self._check_null(a, b, args, ast)
                self._check_literal(a, b, args, ast)
            if op not in ("==", "!=") and kinds == {"sym"}:
                return _fold(E.Cmp(op, *self._string_ranks(a, b, ast)))
            if op not in ("==", "!=") and not kinds <= {"num"}:
                raise self.err(f"'{op}' compares numbers only, or strings with strings (in {to_text(ast)})")
            if len(kinds) > 1 and not (isinstance(a, E.Const) or isinstance(b, E.Const)) and kinds != {"num", "bool"}:
                raise self.err(f"comparing a {a.kind} with a {b.kind} (in {to_text(ast)})")
            return _fold(E.Cmp(op, a, b))
        if op in ("and", "or"):
            parts = [self.boolean(self.expr(x, env, guards), x) for x in args]
            return _fold((E.And if op == "and" else E.Or)(parts))
        if op == "not":
            return _fold(E.Not(self.boolean(self.expr(args[0], env, guards), args[0])))
        if op == "implies":
            a = self.boolean(self.expr(args[0], env, guards), args[0])
            b = self.boolean(self.expr(args[1], env, guards), args[1])
            return _fold(E.implies(a, b))
        if op == "in":
            return self._in(args[0], args[1], env, guards, ast)
        if op in ("forall", "exists"):
            parts = []
            for bnd in self._bindings(ast["vars"], ast.get("range"), ast["body"], env):
                g: list = self._bound_guards(bnd)
                outer_reqs, self._reqs = self._reqs, []
                try:
                    body = self.boolean(self.expr(ast["body"], {**env, **bnd}, g), ast["body"])
                    body = self._with_reqs(body, self._reqs)
                finally:
                    self._reqs = outer_reqs
                gc = E.conj(_dedupe(g))
                if op == "forall":
                    parts.append(body if gc is None else E.implies(gc, body))
                else:
                    parts.append(body if gc is None else E.And([gc, body]))
            if not parts:
                return E.Const(op == "forall")
            return _fold(E.And(parts) if op == "forall" else E.Or(parts))
        if op == "tuple" or op == "list":
            return ListVal([(None, self.value(self.expr(x, env, guards), x)) for x in args])
        if op == "call":
            return self._call(ast, env, guards)
        if op == "gen":
            raise self.err("a generator ('... for i') may only appear inside sum/count/min/max/all_different")
        raise self.err(f"unknown operator {op!r}")

    def _attr(self, base: GVal, name: str, guards: list, ast: dict) -> GVal:
        if isinstance(base, SelRef):
            opts = {}
            for k, r in base.options.items():
                extra: list = []
                opts[k] = self._attr(r, name, extra, ast)
                if self._foreign_guards(r, extra):  # its presence would have to depend on the index
                    raise self.err(f"optional property {name!r} read through a variable index or last()/[-1] "
                                   f"is not supported (in {to_text(ast)})")
            return SelRef(base.index, opts)
        if isinstance(base, ListVal):
            items = []
            for g, r in base.items:
                extra = []
                r2 = self._attr(r, name, extra, ast)  # an optional field adds its presence guard
                items.append((E.conj(([g] if g is not None else []) + extra), r2))
            return ListVal(items)
        if isinstance(base, TableRef) and isinstance(base.data, dict):  # menu[k].kcal: menu[k]["kcal"]
            return self._lookup(base, E.Const(name), ast)
        self._not_recursive(base, ast)
        if isinstance(base, Ref) and isinstance(base.node, Scalar) and base.node.kind == "any":
            raise self.err(f"{path_text(base.path)}.{name} is inside an open layout: {path_text(base.path)} "
                           f"({base.node.pointer or '/'}) may be any JSON value, so relations cannot name its "
                           f"fields (in {to_text(ast)})")
        if not isinstance(base, Ref) or not isinstance(base.node, Obj):
            if isinstance(base, Ref) and isinstance(base.node, Arr):
                raise self.err(f"'.{name}' applied to {path_text(base.path)}, which is an array, not an object: "
                               f"take an item "
                               f"({to_text(ast['args'][0])}[i].{name}) or every item ({to_text(ast['args'][0])}[*]."
                               f"{name}) (in {to_text(ast)})")
            if isinstance(base, Ref) and isinstance(base.node, Scalar):
                raise self.err(f"'.{name}' applied to {path_text(base.path)}, which is a single value, not an "
                               f"object (in {to_text(ast)})")
            raise self.err(f"'.{name}' applied to something that is not an object (in {to_text(ast)})")
        for f in base.node.fields:
            if f.key == name:
                path = base.path + (name,)
                guards.extend(self.guards(path))
                return Ref(path, f.node)
        if base.node.extra is not None:
            raise self.err(_open_member_message(base.node, path_text(base.path + (name,)), name, to_text(ast)))
        raise self.err(f"{path_text(base.path)} has no property {name!r}")

    def _foreign_guards(self, option: GVal, extra: list) -> list:
        """The guards of a location under an option of a `SelRef` other than the option's own
        existence: the index that picks the option already implies that (last() picks the last
        item there is; a variable index must be below the length)."""
        if not extra or not isinstance(option, Ref):
            return extra
        own = {_node_key(g) for g in self.guards(option.path)}
        return [g for g in extra if _node_key(g) not in own]

    def _index(self, base: GVal, idx: int, guards: list, ast: dict) -> GVal:
        if isinstance(base, ListVal):
            if not -len(base.items) <= idx < len(base.items):
                raise self.err(f"index {idx} out of range (in {to_text(ast)})")
            return base.items[idx][1]
        self._not_recursive(base, ast)
        if not isinstance(base, Ref) or not isinstance(base.node, Arr):
            raise self.err(f"indexing something that is not an array (in {to_text(ast)})")
        a = base.node
        max_items = self._check_max_items(base.path, a)
        if idx < 0:
            if a.min_items == max_items:
                idx += max_items
            else:
                lv = self.len_var(base)
                assert lv is not None  # the length varies
                opts: dict[int, GVal] = {}
                for n in range(max(a.min_items, -idx), max_items + 1):
                    p = base.path + (n + idx,)
                    opts[n] = Ref(p, a.item)
                if not opts:
                    raise self.err(f"index {idx} is out of range of {path_text(base.path)}")
                if a.min_items < -idx:  # like arr[k], last(arr) applies only when the item exists
                    guards.append(E.Cmp(">=", E.VarRef(lv), E.Const(-idx)))
                return SelRef(E.VarRef(lv), opts)
        if not 0 <= idx < max_items:
            raise self.err(f"index {idx} is out of range of {path_text(base.path)} (maxItems {max_items})")
        path = base.path + (idx,)
        guards.extend(self.guards(path))
        return Ref(path, a.item)

    def _star(self, base: GVal, ast: dict) -> ListVal:
        if isinstance(base, ListVal):  # nested stars: tables[*].guests[*] is every guest of every table
            items: list[tuple[Optional[E.Node], Any]] = []
            for g, r in base.items:
                for g2, r2 in self._star(r, ast).items:
                    items.append((E.conj([x for x in (g, g2) if x is not None]), r2))
            return ListVal(items)
        if isinstance(base, SelRef):
            raise self.err(f"[*] after a variable index is not supported (in {to_text(ast)}); "
                           f"range over the items with a generator instead")
        self._not_recursive(base, ast)
        if not isinstance(base, Ref) or not isinstance(base.node, Arr):
            what = path_text(base.path) if isinstance(base, Ref) else to_text(ast["args"][0])
            kind = {Obj: "an object", Scalar: "a single value"}.get(type(base.node), "not an array") \
                if isinstance(base, Ref) else "not an array"
            raise self.err(f"[*] applied to {what}, which is {kind}, not an array (in {to_text(ast)})")
        a = base.node
        max_items = self._check_max_items(base.path, a)
        items = []
        for k in range(max_items):
            p = base.path + (k,)
            items.append((E.conj(self.guards(p)[len(self.guards(base.path)):]), Ref(p, a.item)))
        return ListVal(items)

    def _lookup(self, t: TableRef, key: E.Node, ast: dict) -> Any:
        if not isinstance(t.data, dict):
            return self._table_position(t, key, ast)
        vals = list(t.data.values())
        if vals and isinstance(vals[0], SubTable):  # a table of tables: hours[p][d]
            if isinstance(key, E.Const):
                if key.v not in t.data:
                    raise self.err(f"key {key.v!r} is not in table {t.name!r}")
                return TableRef(f"{t.name}[{key.v!r}]", t.data[key.v].data)
            keys = list(t.data)
            pos = E.Lookup({k: i for i, k in enumerate(keys)}, _set_safe(key), "num")
            return SelRef(pos, {i: TableRef(f"{t.name}[{k!r}]", t.data[k].data) for i, k in enumerate(keys)})
        kind = "num" if all(isinstance(v, (int, Fraction)) and not isinstance(v, bool) for v in vals) else "sym"
        if isinstance(key, E.Const):
            if key.v not in t.data:
                raise self.err(f"key {key.v!r} is not in table {t.name!r}")
            return E.Const(t.data[key.v])
        self._check_keys(t, key, ast)
        return E.Lookup(t.data, _set_safe(key), kind)

    def _check_keys(self, t: TableRef, key: E.Node, ast: dict) -> None:
        """A field none of whose values is a key of the table: every lookup would have no value."""
        if not isinstance(key, E.VarRef):
            return
        if key.var.values is None:  # a bounded number; JSON object keys are strings
            if key.kind == "num" and t.data and all(isinstance(k, str) for k in t.data):
                raise self.err(f"{key.var.name} is a number and table {t.name!r} is an object (its keys are "
                               f"strings), so {to_text(ast)} never has a value; a list table is indexed by "
                               f"position")
            return
        try:
            if any(v in t.data for v in key.var.values):
                return
        except TypeError:
            return
        keys = ", ".join(json.dumps(k) for k in list(t.data)[:8]) + (", ..." if len(t.data) > 8 else "")
        raise self.err(f"no value of {key.var.name} is a key of table {t.name!r} (its keys: {keys}), so "
                       f"{to_text(ast)} never has a value")

    def _table_position(self, t: TableRef, key: E.Node, ast: dict) -> Any:
        """t[k] on a list table: the k-th value (a table of scalars) or the k-th row (a table of
        rows, itself a positional table: dist[a][b]). A variable k outside 0..len-1 has no value."""
        rows = t.data
        if key.kind != "num":
            raise self.err(f"table {t.name!r} is a list, so it is indexed by position (a number), "
                           f"not by a {key.kind} (in {to_text(ast)})")
        wide = any(len(r) != 1 for r in rows)

        sub = _holds_tables(rows)
        wide = wide or sub

        def item(k: int) -> Any:
            if sub:
                return TableRef(f"{t.name}[{k}]", rows[k][0].data)
            if wide:
                return TableRef(f"{t.name}[{k}]", [(x,) for x in rows[k]])
            return E.Const(rows[k][0])

        if isinstance(key, E.Const):
            k = key.v
            if isinstance(k, Fraction) and k.denominator == 1:
                k = int(k)
            if not isinstance(k, int):
                raise self.err(f"position {k} in table {t.name!r} is not an integer (in {to_text(ast)})")
            if not -len(rows) <= k < len(rows):
                raise self.err(f"position {k} is out of range of table {t.name!r} ({len(rows)} entries)")
            return item(k % len(rows))
        if wide:
            return SelRef(_set_safe(key), {k: item(k) for k in range(len(rows))})
        vals = [r[0] for r in rows]
        kind = "num" if all(isinstance(v, (int, Fraction)) and not isinstance(v, bool) for v in vals) else "sym"
        return E.Lookup(dict(enumerate(vals)), _set_safe(key), kind)

    def _index_by(self, base: GVal, key: E.Node, guards: list, ast: dict) -> GVal:
        """base[key]: a path step (constant key), an element (variable key) or a table lookup."""
        if isinstance(base, TableRef):
            return self._lookup(base, key, ast)
        if isinstance(base, SelRef):  # an index into an item that a variable index chose
            opts = {}
            for k, r in base.options.items():
                extra: list = []
                opts[k] = self._index_by(r, key, extra, ast)
                if self._foreign_guards(r, extra):
                    raise self.err(f"a variable-length array inside an item chosen by a variable index "
                                   f"is not supported (in {to_text(ast)})")
            return SelRef(base.index, opts)
        if not key.vars:
            k = key.v if isinstance(key, E.Const) else key.ev([])
            if isinstance(k, Fraction) and k.denominator == 1:
                k = int(k)
            if not isinstance(k, int) or isinstance(k, bool) or key.kind == "bool":
                raise self.err(f"{to_text(ast['args'][1])} must be an integer index (in {to_text(ast)})")
            return self._index(base, k, guards, ast)
        if isinstance(base, ListVal):
            if any(g is not None for g, _ in base.items) or not base.items:
                raise self.err(f"a variable index into a list of items that may not exist is not "
                               f"supported (in {to_text(ast)})")
            return SelRef(_set_safe(key), {k: x for k, (_g, x) in enumerate(base.items)})
        if not isinstance(base, Ref) or not isinstance(base.node, Arr):
            raise self.err(f"indexing something that is not an array (in {to_text(ast)})")
        if key.kind != "num":
            raise self.err(f"an array index must be a number; {to_text(ast['args'][1])} is a "
                           f"{'condition' if key.kind == 'bool' else 'string'} (in {to_text(ast)})")
        n = self._check_max_items(base.path, base.node)
        lv = self.len_var(base)
        if lv is not None:  # the chosen item must exist
            self._reqs.append(E.Cmp("<", key, E.VarRef(lv)))
        return SelRef(_set_safe(key), {k: Ref(base.path + (k,), base.node.item) for k in range(n)})

    def _divide(self, a: E.Node, b: E.Node, ast: dict) -> E.Node:
        """Exact division a / b (rationals). By a constant it is a product; by a field or a
        length it is an element over b's possible values (b == 0 has no value: the instance is
        false)."""
        if not b.vars:
            d = b.ev([])
            if not isinstance(d, (int, Fraction)):
                raise self.err(f"{to_text(ast['args'][1])} has no value to divide by (in {to_text(ast)})")
            if d == 0:
                raise self.err(f"division by zero (in {to_text(ast)})")
            return _fold(E.Scale(a, _norm_num(Fraction(1) / Fraction(d))))
        vals = _finite_values(b, all_vars=self.vars)
        if vals is None:
            raise self.err(f"dividing by {to_text(ast['args'][1])} is not supported: divide by a constant, a "
                           f"field, a length, or an expression of at most {DIV_LIMIT} integer values "
                           f"(in {to_text(ast)})")
        opts: dict[Any, E.Node] = {}
        for v in vals:
            if v != 0:
                opts[v] = _set_safe(_fold(E.Scale(a, _norm_num(Fraction(1) / Fraction(v)))))
        if not opts:
            raise self.err(f"division by zero: {to_text(ast['args'][1])} can only be 0 (in {to_text(ast)})")
        return E.Select(_set_safe(b), opts)

    def _floor_divide(self, op: str, a: E.Node, b: E.Node, ast: dict) -> E.Node:
        """a // b and a % b by a field (Python's floor semantics): an element over b's possible
        values, each a division by a constant; b == 0 has no value (the instance is false)."""
        vals = _finite_values(b, all_vars=self.vars)
        if vals is None:
            raise self.err(f"'{op}' by {to_text(ast['args'][1])} is not supported: divide by a constant, a "
                           f"field, a length, or an expression of at most {DIV_LIMIT} values (in {to_text(ast)})")
        opts: dict[Any, E.Node] = {v: _set_safe(_fold(E.Arith(op, a, E.Const(v)))) for v in vals
                if isinstance(v, (int, Fraction)) and not isinstance(v, bool) and v != 0}
        if not opts:
            raise self.err(f"division by zero: {to_text(ast['args'][1])} can only be 0 (in {to_text(ast)})")
        return E.Select(_set_safe(b), opts)

    def _conditional(self, ast: dict, env: dict, guards: list) -> E.Node:
        """`A if C else B`: the items that a branch mentions need to exist only when it is taken."""
        cond_ast, a_ast, b_ast = ast["args"]
        c = self.boolean(self.expr(cond_ast, env, guards), cond_ast)
        branches = []
        for x in (a_ast, b_ast):
            g: list = []
            outer_reqs, self._reqs = self._reqs, []
            try:
                n = self.value(self.expr(x, env, g), x)
                branches.append((n, E.conj(_dedupe(g)), E.conj(self._reqs)))
            finally:
                self._reqs = outer_reqs
        (a, ga, ra), (b, gb, rb) = branches
        ka, kb = a.kind, b.kind
        if ka != kb and {ka, kb} != {"num", "bool"} and not (isinstance(a, E.Const) and a.v is None) \
                and not (isinstance(b, E.Const) and b.v is None):
            raise self.err(f"the two values of '... if ... else ...' differ in kind ({ka} and {kb}) "
                           f"(in {to_text(ast)}); a comparison inside a branch needs parentheses")
        if ga is not None or gb is not None:
            guards.append(_fold(E.If(c, ga or E.Const(True), gb or E.Const(True))))
        if ra is not None:
            self._reqs.append(E.implies(c, ra))
        if rb is not None:
            self._reqs.append(E.implies(E.Not(c), rb))
        if isinstance(c, E.Const):
            return a if c.v else b
        return E.If(c, a, b)

    def _check_literal(self, a: E.Node, b: E.Node, args: list, ast: dict) -> None:
        """`s == "X"` with a literal that the enum field can never take (a typo, or a number
        against strings): always false (or, with !=, always true), so an error names it."""
        for x, lit in ((a, args[1]), (b, args[0])):
            if not isinstance(x, E.VarRef) or x.var.kind == "bool":
                continue
            if "const" not in lit or isinstance(lit["const"], bool) or lit["const"] is None:
                continue
            c = lit["const"]
            if x.var.values is None:  # a bounded number: only a string literal can never match
                if isinstance(c, str):
                    raise self.err(f"{x.var.name} is a number, so '{to_text(ast)}' compares it with a string "
                                   f"and is always {'false' if ast['op'] == '==' else 'true'}")
                continue
            vals = x.var.values
            if any(v == c and type(v) is not bool for v in vals):
                continue
            shown = ", ".join(json.dumps(v, default=str) for v in vals[:8]) + (", ..." if len(vals) > 8 else "")
            raise self.err(f"{x.var.name} can never be {json.dumps(c, default=str)} (its values: {shown}), so "
                           f"'{to_text(ast)}' is always {'false' if ast['op'] == '==' else 'true'}")

    def _check_null(self, a: E.Node, b: E.Node, args: list, ast: dict) -> None:
        """`field == null` on a field that can never be null is a mistake for has(field)."""
        for x, y, y_ast in ((a, b, args[1]), (b, a, args[0])):
            if isinstance(x, E.Const) and x.v is None and isinstance(y, E.VarRef):
                v = y.var
                if v.values is None or None not in v.values:
                    raise self.err(f"{v.name} can never be null (its schema allows no null), so "
                                   f"'{to_text(ast)}' does not test whether it is present: a relation on an "
                                   f"absent field holds vacuously; write has({to_text(y_ast)}) instead")

    def _string_ranks(self, a: E.Node, b: E.Node, ast: dict) -> tuple[E.Node, E.Node]:
        """Strings in order (lexicographic by code point): each side becomes its rank among every
        string either side can take; a value that is not a string has no rank (instance false)."""
        va, vb = _finite_values(a, sym=True), _finite_values(b, sym=True)
        if va is None or vb is None:
            raise self.err(f"'<' on strings needs enum fields, table values or constants (in {to_text(ast)})")
        strs = sorted({x for x in va + vb if isinstance(x, str)})
        rank = {x: i for i, x in enumerate(strs)}

        def ranked(n: E.Node) -> E.Node:
            if isinstance(n, E.Const):
                if n.v not in rank:
                    raise self.err(f"{n.v!r} is not a string, so it has no order (in {to_text(ast)})")
                return E.Const(rank[n.v])
            return E.Lookup(rank, n, "num")

        return ranked(a), ranked(b)

    def _with_reqs(self, node: E.Node, reqs: list[E.Node]) -> E.Node:
        if not reqs:
            return node
        return _fold(E.And(list(reqs) + [node]))

    def _in(self, item_ast: dict, cont_ast: dict, env: dict, guards: list, ast: dict) -> E.Node:
        item = self.expr(item_ast, env, guards)
        elems = [self.value(x, item_ast) for _, x in item.items] if isinstance(item, ListVal) \
            else [self.value(item, item_ast)]
        if cont_ast.get("op") == "list" and cont_ast["args"] and \
                any(a.get("op") == "tuple" for a in cont_ast["args"]):  # (a, b) in [(1, 2), (2, 3)]
            rows: list[tuple] = []
            for a in cont_ast["args"]:
                row = a["args"] if a.get("op") == "tuple" else [a]
                cells = [self.value(self.expr(x, env, guards), x) for x in row]
                if not all(isinstance(c, E.Const) for c in cells):
                    raise self.err(f"a list of tuples on the right of 'in' must hold constants (in {to_text(ast)})")
                rows.append(tuple(c.v for c in cells))  # type: ignore[attr-defined]
            if any(len(r) != len(elems) for r in rows):
                raise self.err(f"{len(elems)} values tested against tuples of another length (in {to_text(ast)})")
            return _fold(E.Member(elems, rows))
        cont: GVal
        if cont_ast.get("op") == "gen":  # x in [p.item for p in packed]: one of the items generated
            cont = ListVal(self._items(cont_ast, env, guards))
        else:
            cont = self.expr(cont_ast, env, guards)
        if isinstance(cont, Ref) and isinstance(cont.node, Arr):  # x in arr: one of its items
            cont = self._star(cont, cont_ast)
        if isinstance(cont, TableRef):
            if isinstance(cont.data, dict):
                rows = [(k,) for k in cont.data]
            else:
                rows = cont.data
                if _holds_tables(rows):
                    raise self.err(f"table {cont.name!r} holds tables, so nothing is a member of it; "
                                   f"look an entry up first (in {to_text(ast)})")
        elif isinstance(cont, ListVal):
            vals = [(g, self.value(n, cont_ast)) for g, n in cont.items]
            if all(g is None and isinstance(v, E.Const) for g, v in vals):
                rows = [(v.v,) for _, v in vals]  # type: ignore[attr-defined]
            else:  # items of the record (x in xs, x in xs[*]): equal to some item that exists
                if len(elems) != 1:
                    raise self.err(f"tuple membership needs a table (in {to_text(ast)})")
                return _fold(E.Or([E.Cmp("==", elems[0], v) if g is None else E.And([g, E.Cmp("==", elems[0], v)])
                                   for g, v in vals]))
        else:
            raise self.err(f"'in' needs a table, an array of the record or a [list] on its right, not "
                           f"{to_text(cont_ast)} (in {to_text(ast)})")
        if rows and any(len(r) != len(elems) for r in rows):
            raise self.err(f"{len(elems)} values tested against a table of {len(rows[0])} columns (in {to_text(ast)})")
        return _fold(E.Member(elems, list(rows)))

    def _items(self, arg: dict, env: dict, guards: list, tuples: bool = False) -> list[tuple[Optional[E.Node], Any]]:
        """The guarded items an aggregate ranges over (with `tuples`, an item may be a tuple of
        values, for all_different and set)."""
        if arg.get("op") == "gen":
            out = []
            names = arg.get("vars") or [arg["var"]]
            elem = arg["args"][0]
            scope = {"op": "tuple", "args": [elem] + ([arg["cond"]] if arg.get("cond") is not None else [])}
            for b in self._bindings(names, arg.get("range"), scope, env):
                e2 = {**env, **b}
                g: list = self._bound_guards(b)
                outer_reqs, self._reqs = self._reqs, []
                try:
                    val = self._item_value(elem, e2, g, tuples)
                    if arg.get("cond") is not None:
                        g.append(self.boolean(self.expr(arg["cond"], e2, g), arg["cond"]))
                    reqs = self._reqs
                finally:
                    self._reqs = outer_reqs
                gc = E.conj(_dedupe(g))
                if reqs:  # an item that is counted must be defined
                    r = E.conj(reqs)
                    assert r is not None
                    self._reqs.append(r if gc is None else E.implies(gc, r))
                out.append((gc, val))
            return out
        if tuples and arg.get("op") == "tuple":
            return [(None, self._item_value(arg, env, guards, True))]
        v = self.expr(arg, env, guards)
        if isinstance(v, Ref) and isinstance(v.node, Arr):  # sum(xs) as Python writes it: sum(xs[*])
            v = self._star(v, arg)
        if isinstance(v, ListVal):
            return [(g, self.value(x, arg)) for g, x in v.items]
        return [(None, self.value(v, arg))]

    def _item_value(self, ast: dict, env: dict, guards: list, tuples: bool) -> Any:
        if ast.get("op") == "tuple":
            if not tuples:
                raise self.err(f"a tuple {to_text(ast)} is not a number; tuples may be items of "
                               f"all_different(...) and set(...) only")
            return tuple(self.value(self.expr(x, env, guards), x) for x in ast["args"])
        return self.value(self.expr(ast, env, guards), ast)

    def _call(self, ast: dict, env: dict, guards: list) -> GVal:
        func, args = ast["func"], ast["args"]
        if func in ("has", "present"):
            return self._has(ast, env)
        if func == "set":
            raise self.err(f"set(...) may only be counted, as len(set(...)) (in {to_text(ast)})")
        if func == "len" and len(args) == 1 and args[0].get("op") == "call" and args[0].get("func") == "set":
            items: list[tuple[Optional[E.Node], Any]] = []
            for a in args[0]["args"]:
                items += self._items(a, env, guards, tuples=True)
            _check_tuples(items, self.err, args[0])
            return _fold(_distinct_count(items))
        if func in ("len", "first", "last"):
            if len(args) != 1:
                raise self.err(f"{func}() takes one array")
            if func == "len" and args[0].get("op") == "gen":  # len([x for x in xs if x > 0])
                return _fold(_sum([E.Const(1) if g is None else E.If(g, E.Const(1), E.Const(0))
                                   for g, _x in self._items(args[0], env, guards, tuples=True)]))
            base = self.expr(args[0], env, guards)
            if func == "len" and isinstance(base, TableRef):  # a table's entries (or keys)
                return E.Const(len(base.data))
            if func == "len" and isinstance(base, ListVal):  # len(tables[*].guests[*]): the items there are
                return _fold(_sum([E.Const(1) if g is None else E.If(g, E.Const(1), E.Const(0))
                                   for g, _x in base.items]))
            if not isinstance(base, Ref) or not isinstance(base.node, Arr):
                if func == "len" and isinstance(base, Ref) and isinstance(base.node, Scalar) \
                        and base.node.kind in ("string", "enum"):
                    raise self.err(f"len() of the string {path_text(base.path)} is not supported: relations "
                                   f"compare strings as whole values (bound a free string's length with "
                                   f"minLength/maxLength in the schema) (in {to_text(ast)})")
                raise self.err(f"{func}() needs an array (in {to_text(ast)})")
            if func == "len":
                lv = self.len_var(base)
                return E.Const(base.node.max_items) if lv is None else E.VarRef(lv)
            return self._index(base, 0 if func == "first" else -1, guards, ast)
        if func in ("abs", "round"):
            want = 1 if func == "abs" else 2
            if len(args) != want:
                raise self.err(f"{func}() takes {want} argument(s)" + (
                    ": round(x, q) rounds to a multiple of q, half up (round(x, 1) for a whole number)"
                    if func == "round" else ""))
            x = self.numeric(self.expr(args[0], env, guards), args[0])
            if func == "abs":
                return _fold(E.Unary("abs", x))
            q = self.numeric(self.expr(args[1], env, guards), args[1])
            if q.vars or q.ev([]) <= 0:
                raise self.err("round(x, q) needs a positive constant q")
            return _fold(E.Unary("round", x, q.ev([])))
        items = []
        for a in args:
            items += self._items(a, env, guards, tuples=func in ("all_different", "no_overlap"))
        if func == "no_overlap":
            return _fold(_no_overlap(items, self.err, ast))
        if func == "all_different":
            if any(isinstance(n, tuple) for _g, n in items):
                return _fold(_distinct_tuples(items, self.err, ast))
            return _fold(AllDiff(items))
        if func in ("all", "any"):  # Python's all/any: forall/exists over the items there are
            for _g, n in items:
                if n.kind != "bool":
                    raise self.err(f"{func}() takes conditions (true/false items) (in {to_text(ast)})")
            if func == "all":
                return _fold(E.And([n if g is None else E.implies(g, n) for g, n in items]) if items
                             else E.Const(True))
            return _fold(E.Or([n if g is None else E.And([g, n]) for g, n in items]) if items else E.Const(False))
        if func == "count":
            terms: list[E.Node] = []
            for g, n in items:
                if n.kind != "bool":
                    raise self.err("count() counts conditions (true/false items)")
                c = n if g is None else E.And([g, n])
                terms.append(E.If(c, E.Const(1), E.Const(0)))
            return _fold(_sum(terms))
        if func in ("min", "max") and items and all(n.kind == "sym" for _g, n in items):
            return self._string_extreme(func, items, ast)
        for _g, n in items:
            if n.kind not in ("num", "bool"):
                raise self.err(f"{func}() needs numbers, or strings only (in {to_text(ast)})")
        if func == "sum":
            return _fold(_sum([n if g is None else E.If(g, n, E.Const(0)) for g, n in items]))
        if not items:
            raise self.err(f"{func}() of nothing")
        return _fold(E.MinMax(func == "max", items))

    def _string_extreme(self, func: str, items: list, ast: dict) -> E.Node:
        """min/max of strings (code-point order, as '<'): the extreme rank, read back as its string."""
        vals: list = []
        for _g, n in items:
            vs = _finite_values(n, sym=True)
            if vs is None:
                raise self.err(f"{func}() of strings needs enum fields, table values or constants (in {to_text(ast)})")
            vals += vs
        strs = sorted({x for x in vals if isinstance(x, str)})
        rank = {x: i for i, x in enumerate(strs)}
        ranked: list[tuple[Optional[E.Node], E.Node]] = [
            (g, E.Const(rank[n.v]) if isinstance(n, E.Const) and n.v in rank else E.Lookup(rank, n, "num"))
            for g, n in items]
        return E.Lookup(dict(enumerate(strs)), E.AsInterval(E.MinMax(func == "max", ranked)), "sym")

    def _has(self, ast: dict, env: dict) -> E.Node:
        """has(path): whether the field or item exists in the record (optional properties,
        items of variable-length arrays); a required field of an existing object is always there."""
        args = ast["args"]
        if len(args) != 1:
            raise self.err(f"{ast['func']}() takes one path (in {to_text(ast)})")
        local: list = []
        outer_reqs, self._reqs = self._reqs, []
        try:
            ref = self.expr(args[0], env, local)
            reqs = self._reqs
        finally:
            self._reqs = outer_reqs
        if not isinstance(ref, Ref) or reqs:
            raise self.err(f"{ast['func']}() needs the path of a field or an item with constant indices, "
                           f"e.g. has(discount) or has(items[3]); got {to_text(args[0])}")
        g = E.conj(_dedupe(local))
        return E.Const(True) if g is None else g


def _norm_num(v: Fraction) -> Any:
    return int(v) if v.denominator == 1 else v


def _set_safe(n: E.Node) -> E.Node:
    """Nodes that narrow by a set of values as is; arithmetic seen through its interval."""
    if isinstance(n, (E.VarRef, E.Const, E.Lookup, E.Select, E.AsInterval)) or n.kind != "num":
        return n
    return E.AsInterval(n)


def _finite_values(n: E.Node, sym: bool = False, all_vars: Optional[list[E.Var]] = None) -> Optional[list]:
    """Every value `n` can take (a superset for arithmetic), when that is a short list, else None."""
    if isinstance(n, E.AsInterval):
        return _finite_values(n.a, sym)
    if isinstance(n, E.Const):
        return [n.v]
    if isinstance(n, E.VarRef):
        v = n.var
        if v.values is not None:
            return list(dict.fromkeys(v.value(k) for k in range(len(v.values))))
        if v.hi - v.lo >= DIV_LIMIT:
            return None
        return [v.value(k) for k in range(v.lo, v.hi + 1)]
    if isinstance(n, E.Lookup):
        return list(dict.fromkeys(n.table.values()))
    if isinstance(n, E.Select):
        out: list = []
        for o in n.options.values():
            vs = _finite_values(o, sym)
            if vs is None:
                return None
            out += vs
        return list(dict.fromkeys(out))
    if isinstance(n, E.If):
        xa, xb = _finite_values(n.a, sym), _finite_values(n.b, sym)
        return None if xa is None or xb is None else list(dict.fromkeys(xa + xb))
    if sym or n.kind != "num" or all_vars is None or not _integer_valued(n):
        return None
    # integer arithmetic over small domains (a length plus one, a sum of counts): its interval
    lo, hi = n.fwd([dom_range(v.lo, v.hi) for v in all_vars])
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi - lo >= DIV_LIMIT:
        return None
    return list(range(int(lo), int(hi) + 1))


def _integer_valued(n: E.Node) -> bool:
    """Whether every value of `n` is an integer (so an interval of it lists its values)."""
    def is_int(x: Any) -> bool:
        return isinstance(x, int) or (isinstance(x, Fraction) and x.denominator == 1)
    if isinstance(n, E.Const):
        return is_int(n.v)
    if isinstance(n, E.VarRef):
        v = n.var
        return all(is_int(x) for x in v.values) if v.values is not None else is_int(v.step)
    if isinstance(n, E.Arith):
        return n.op in ("+", "-", "*", "//") and _integer_valued(n.a) and _integer_valued(n.b)
    if isinstance(n, E.Unary):
        return n.op in ("neg", "abs") and _integer_valued(n.a)
    if isinstance(n, E.If):
        return _integer_valued(n.a) and _integer_valued(n.b)
    if isinstance(n, E.AsInterval):
        return _integer_valued(n.a)
    if isinstance(n, E.Scale):
        return isinstance(n.k, int) and _integer_valued(n.a)
    if isinstance(n, E.Lookup):
        return all(is_int(x) for x in n.table.values())
    if isinstance(n, E.Select):
        return all(_integer_valued(o) for o in n.options.values())
    return False


def _same(x: Any, y: Any) -> E.Node:
    """x == y for item values (nodes, or tuples of nodes compared component by component)."""
    if isinstance(x, tuple):
        return E.And([E.Cmp("==", p, q) for p, q in zip(x, y)])
    return E.Cmp("==", x, y)


def _check_tuples(items: list, err: Any, ast: dict) -> None:
    widths = {len(n) if isinstance(n, tuple) else 0 for _g, n in items}
    if len(widths) > 1:
        raise err(f"items of {ast['func']}() must all be single values or all tuples of one length "
                  f"(in {to_text(ast)})")


def _distinct_tuples(items: list, err: Any, ast: dict) -> E.Node:
    """all_different over tuples: every two present items differ in some component."""
    _check_tuples(items, err, ast)
    parts: list[E.Node] = []
    for i, (gi, xi) in enumerate(items):
        for gj, xj in items[:i]:
            ne = E.Not(_same(xi, xj))
            g = E.conj([x for x in (gi, gj) if x is not None])
            parts.append(ne if g is None else E.implies(g, ne))
    return E.And(parts) if parts else E.Const(True)


def _no_overlap(items: list, err: Any, ast: dict) -> E.Node:
    """no_overlap((start, end), ...): every present interval [start, end) has end >= start, and
    any two present intervals are disjoint (end_i <= start_j or end_j <= start_i; touching is
    allowed). Grounded as those pairs, which `globals/no_overlap_recognition.py` reads back."""
    for _g, n in items:
        if not isinstance(n, tuple) or len(n) != 2 or any(x.kind != "num" for x in n):
            raise err(f"items of no_overlap() are (start, end) pairs of numbers, e.g. "
                      f"no_overlap((m[i].start, m[i].start + m[i].minutes) for i) (in {to_text(ast)})")
    parts: list[E.Node] = []
    for gi, (si, ei) in items:
        ok = E.Cmp(">=", ei, si)
        parts.append(ok if gi is None else E.implies(gi, ok))
    for i, (gi, (si, ei)) in enumerate(items):
        for gj, (sj, ej) in items[:i]:
            apart = E.Or([E.Cmp("<=", ej, si), E.Cmp("<=", ei, sj)])
            g = E.conj([x for x in (gj, gi) if x is not None])
            parts.append(apart if g is None else E.implies(g, apart))
    return E.And(parts) if parts else E.Const(True)


def _distinct_count(items: list) -> E.Node:
    """len(set(...)): the present items whose value no earlier present item has."""
    terms: list[E.Node] = []
    for i, (gi, xi) in enumerate(items):
        conds: list[E.Node] = [] if gi is None else [gi]
        for gj, xj in items[:i]:
            same = _same(xj, xi)
            conds.append(E.Not(same if gj is None else E.And([gj, same])))
        c = E.conj(conds)
        terms.append(E.Const(1) if c is None else E.If(c, E.Const(1), E.Const(0)))
    return _sum(terms)


def _sum(terms: list[E.Node]) -> E.Node:
    """One flat linear node (globals/linear.py): a chain of binary '+' nests as deep as the
    array is long (RecursionError at 1,000 items) and propagates in O(n**2)."""
    if not terms:
        return E.Const(0)
    if len(terms) == 1:
        return terms[0]
    return LinSum([(1, t) for t in terms])


def _prune(n: E.Node) -> E.Node:
    """A relation instance with its constant parts decided: `forall i, j: i < j implies ...`
    grounds `i >= j` instances to `not false or ...`, always true (dropped, instead of costing a
    factor each), and `not true or X` to X. Only whole constant disjuncts/conjuncts go, and an
    absorbing one only where nothing is evaluated before it (an undefined value there would make
    the instance false)."""
    if isinstance(n, (E.Or, E.And)):
        keep: list[E.Node] = []
        for a in n.args:
            a = _prune(a)
            if not a.vars and isinstance(a, E.Const):
                if bool(a.v) != isinstance(n, E.Or):
                    continue  # a neutral constant
                if not keep:  # an absorbing constant before any other part decides it (`ev`
                    return E.Const(isinstance(n, E.Or))  # stops there too, as `or` does)
            keep.append(a)
        if not keep:
            return E.Const(isinstance(n, E.And))
        return keep[0] if len(keep) == 1 else type(n)(keep)
    if isinstance(n, E.Not) and not n.vars:
        return _fold(n)
    return n


def _dedupe(nodes: list[E.Node]) -> list[E.Node]:
    seen, out = set(), []
    for n in nodes:
        key = _node_key(n)
        if key not in seen:
            seen.add(key)
            out.append(n)
    return out


def _node_key(n: E.Node) -> Any:
    if isinstance(n, E.Cmp) and isinstance(n.a, E.VarRef) and isinstance(n.b, E.Const):
        return ("cmp", n.op, n.a.var.id, n.b.v)
    return id(n)


def _fold(n: E.Node) -> E.Node:
    """Evaluate constant sub-expressions now."""
    if not n.vars:
        try:
            v = n.ev([])
        except TypeError:  # an undefined constant (no item to take min/max of): decided per record
            return n
        if v is None or v is E.UNDEFINED:
            return n
        return E.Const(bool(v) if n.kind == "bool" else v)
    return n


def _index_sites(ast: Any, name: str):
    """(base, index) pairs of `index` nodes whose index expression mentions `name`."""
    if not isinstance(ast, dict):
        return
    if ast.get("op") == "index" and _mentions(ast["args"][1], name):
        yield ast["args"][0], ast["args"][1]
    if ast.get("op") in ("forall", "exists") and name in ast.get("vars", []):
        return
    if ast.get("op") == "gen" and (ast.get("var") == name or name in (ast.get("vars") or [])):
        return
    for key in ("args",):
        for a in ast.get(key, []) or []:
            yield from _index_sites(a, name)
    for key in ("body", "cond", "range"):
        if ast.get(key):
            yield from _index_sites(ast[key], name)


def _is_base(ast: Any, name: str) -> bool:
    """Whether `name` is the base of a path in `ast` (`name.field`, `name[k]`): an item, not an index."""
    if not isinstance(ast, dict):
        return False
    if ast.get("op") in ("attr", "index", "star") and ast["args"][0] == {"name": name}:
        return True
    if ast.get("op") in ("forall", "exists") and name in ast.get("vars", []):
        return False
    if ast.get("op") == "gen" and (ast.get("var") == name or name in (ast.get("vars") or [])):
        return False
    return any(_is_base(a, name) for a in ast.get("args", []) or []) or \
        any(_is_base(ast.get(k), name) for k in ("body", "cond", "range") if ast.get(k))


def _mentions(ast: Any, name: str) -> bool:
    if not isinstance(ast, dict):
        return False
    if ast.get("name") == name and "op" not in ast:
        return True
    return any(_mentions(a, name) for a in ast.get("args", []) or []) or \
        any(_mentions(ast.get(k), name) for k in ("body", "cond", "range") if ast.get(k))


def _at(ptr: str, fn: Any, *args: Any) -> Any:
    """Call a parser; its RelationError points at the relation (its index in the list)."""
    try:
        return fn(*args)
    except RelationError as e:
        e.pointer = ptr
        e.args = (f"{ptr}: {e.message}",)
        raise


def load_relations(ext: Any) -> tuple[dict, list[Relation]]:
    """Read the `x-factorspec` extension: its tables and relations."""
    base = "/x-factorspec"
    if ext is None:
        return {}, []
    if not isinstance(ext, dict):
        raise SpecError(base, "x-factorspec must be an object with 'tables' and 'relations'")
    extra = set(ext) - {"tables", "relations"}
    if extra:
        key = sorted(extra)[0]
        raise SpecError(f"{base}/{escape_pointer(key)}", f"unknown key {key!r} in x-factorspec")
    tables = ext.get("tables", {})
    if not isinstance(tables, dict):
        raise SpecError(f"{base}/tables", "tables must be an object of named tables")
    rels_raw = ext.get("relations", [])
    if not isinstance(rels_raw, list):
        raise SpecError(f"{base}/relations", "relations must be a list")
    rels: list[Relation] = []
    names = set()
    for i, r in enumerate(rels_raw):
        ptr = f"{base}/relations/{i}"
        message = ""
        expr: Any
        soft, weight = False, 1
        if isinstance(r, str):
            name, expr = f"relation[{i}]", r
        elif isinstance(r, dict):
            extra = set(r) - {"name", "expr", "message", "soft", "weight"}
            if extra:
                key = sorted(extra)[0]
                raise SpecError(f"{ptr}/{escape_pointer(key)}", f"unknown key {key!r} in a relation")
            soft, weight = _soft_of(r, ptr)
            given = r.get("name", f"relation[{i}]")
            if not isinstance(given, str) or not given:
                raise SpecError(f"{ptr}/name", "a relation's name must be a non-empty string")
            name = given
            expr = r.get("expr")
            message = r.get("message", "")
            if not isinstance(message, str):
                raise SpecError(f"{ptr}/message", "message must be a string")
        else:
            raise SpecError(ptr, "a relation must be a string or an object with 'expr'")
        if name in names:
            raise SpecError(f"{ptr}/name", f"duplicate relation name {name!r}")
        names.add(name)
        if isinstance(expr, str):
            ast = _at(ptr, parse, expr, name)
            text = expr
        elif isinstance(expr, dict):
            ast = _at(ptr, from_json, expr, name)
            try:
                text = to_text(ast)
            except (ValueError, KeyError, TypeError, IndexError, RecursionError):
                raise RelationError(name, "malformed AST", ptr) from None
        else:
            raise SpecError(f"{ptr}/expr", "expr must be a string or an AST object")
        rels.append(Relation(name, text, ast, message, ptr, soft, weight))
    return tables, rels


def _soft_of(r: dict, ptr: str) -> tuple[bool, int]:
    """`"soft": true` (with an optional positive integer `"weight"`, 1 by default)."""
    soft = r.get("soft", False)
    if not isinstance(soft, bool):
        raise SpecError(f"{ptr}/soft", "soft must be true or false")
    if "weight" not in r:
        return soft, 1
    w = r["weight"]
    if not soft:
        raise SpecError(f"{ptr}/weight", "a weight is for soft relations only (add \"soft\": true)")
    if not isinstance(w, int) or isinstance(w, bool) or w < 1:
        raise SpecError(f"{ptr}/weight", f"weight must be a positive integer, got {json.dumps(w)[:40]}")
    return soft, w


def _open_member_message(obj: Obj, where: str, name: str, text: str) -> str:
    """A relation names a property an open object does not declare: it would be an extra member."""
    ptr = f"{obj.pointer}/additionalProperties"
    return (f"{where} names {name!r}, which is not a declared property of the open object at {obj.pointer or '/'}: "
            f"it could only be an extra member ({ptr}), and relations may only name declared properties "
            f"(in {text})")


_SIZE_SKIP_CALLS = ("has", "present", "len", "first", "last")  # read presence or length, not values
_SIZE_SKIP_OPS = ("forall", "exists", "gen")  # a body under an empty range grounds nothing


def _star_slots(ast: dict, template: LayoutNode) -> list[tuple[tuple, int]]:
    """(key, count) for every path of `ast` made of names and [*] only that reaches a finite
    scalar: grounding makes `count` slot variables for it (one per item), plus one length
    variable per variable-length array it crosses. A lower bound on the variables of the
    relation (paths with indices, and quantifier bodies, are left out); iterative (no recursion
    on deep ASTs)."""
    out: list[tuple[tuple, int]] = []
    stack: list[Any] = [ast]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        op = node.get("op")
        if op in _SIZE_SKIP_OPS or (op == "call" and node.get("func") in _SIZE_SKIP_CALLS):
            continue
        if op in ("star", "attr") or ("name" in node and op is None):
            found = _pure_path(node, template)
            if found is not None:
                out += found
                continue
        args = node.get("args")
        if isinstance(args, list):
            stack.extend(args)
    return out


def _pure_path(node: dict, template: LayoutNode) -> Optional[list[tuple[tuple, int]]]:
    chain: list[dict] = []
    while node.get("op") in ("star", "attr"):
        chain.append(node)
        args = node.get("args")
        if not isinstance(args, list) or not args or not isinstance(args[0], dict):
            return None
        node = args[0]
    if "name" not in node or "op" in node or not isinstance(template, Obj):
        return None
    cur: Optional[LayoutNode] = next((f.node for f in template.fields if f.key == node["name"]), None)
    key: tuple = (node["name"],)
    count = 1
    out: list[tuple[tuple, int]] = []
    for step in reversed(chain):
        if step["op"] == "attr":
            if not isinstance(cur, Obj):
                return None
            cur = next((f.node for f in cur.fields if f.key == step.get("attr")), None)
            key += (step.get("attr"),)
        else:
            if not isinstance(cur, Arr) or cur.max_items is None or cur.max_items > MAX_VARS:
                return None  # grounding names the array that breaks its own limit
            if cur.min_items != cur.max_items:
                out.append((("len",) + key, count))
            count *= cur.max_items
            cur = cur.item
            key += ("*",)
    if not isinstance(cur, Scalar) or not cur.finite:
        return None
    return out + [(key, count)]
