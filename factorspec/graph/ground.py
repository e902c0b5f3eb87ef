"""Grounding: relations (ASTs with index variables and paths) -> factors over solver variables.

Paths resolve against the schema template; every record slot, array length or optional-field
presence bit that a relation mentions becomes a `Var`. A relation instance that mentions an
item of a variable-length array (or an optional field) applies only when that item exists.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Optional, Union

from factorspec.errors import RelationError, SpecError
from factorspec.graph import expr as E
from factorspec.graph.globals.all_different import AllDiff
from factorspec.graph.globals.linear import LinSum
from factorspec.graph.relations import from_json, parse, to_text
from factorspec.graph.schema import Arr, LayoutNode, Obj, Scalar, escape_pointer, path_text

MAX_INSTANCES = 200_000
MAX_VARS = 100_000


@dataclass
class Relation:
    """One relation of the spec, as written."""

    name: str
    text: str
    ast: dict
    message: str = ""
    pointer: str = ""


@dataclass
class Factor:
    """One grounded relation instance (a factor of the graph)."""

    relation: Relation
    node: E.Node
    bindings: dict[str, int]
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


def _norm_table(name: str, data: Any) -> Any:
    where = f"/x-factorspec/tables/{escape_pointer(name)}"
    if isinstance(data, dict):
        return {k: _norm_value(v, f"{where}/{escape_pointer(k)}") for k, v in data.items()}
    if isinstance(data, list):
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
        if not s.finite:
            what = {"string": "free-text string", "number": "number without multipleOf"}.get(s.kind, "unbounded value")
            raise self.err(f"{path_text(ref.path)} ({s.pointer or '/'}) is a {what}; relations may only "
                           "use fields with a finite domain (enum, boolean, bounded integer, bounded fixed-point)")
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
    def ground_all(self) -> None:
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
        guards: list[E.Node] = []
        self._slots = []
        node = self.boolean(self.expr(ast, env, guards), ast)
        g = E.conj(_dedupe(guards))
        if g is not None:
            node = E.implies(g, node)
        if isinstance(node, E.Const):
            if not node.v:
                self.factors.append(Factor(rel, node, dict(env), []))
            return
        self.factors.append(Factor(rel, node, dict(env), list(dict.fromkeys(self._slots))))

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

    def _range_of(self, name: str, rng: Optional[dict], body: dict, env: dict) -> list[int]:
        if rng is not None:
            if rng["op"] == "range":
                lo = self._const_int(rng["args"][0], env)
                hi = self._const_int(rng["args"][1], env)
                if hi - lo > MAX_INSTANCES:
                    raise self.err(f"range {lo}..{hi} of {name!r} is too large (more than {MAX_INSTANCES} values)")
                return list(range(lo, hi))
            ref = self.expr(rng["args"][0], env, [])
            if not isinstance(ref, Ref) or not isinstance(ref.node, Arr):
                raise self.err(f"'in' range of {name!r} must be an array path or a..b")
            return list(range(self._check_max_items(ref.path, ref.node)))
        # infer: every array index that mentions `name` must be in bounds
        allowed: Optional[set[int]] = None
        for base, idx in _index_sites(body, name):
            try:
                ref = self.expr(base, env, [])
            except RelationError:
                continue  # base mentions inner variables: not usable for inference here
            if not isinstance(ref, Ref) or not isinstance(ref.node, Arr):
                continue
            n = self._check_max_items(ref.path, ref.node)
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

    def _const_int(self, ast: dict, env: dict) -> int:
        v = self.expr(ast, env, [])
        if isinstance(v, E.Node) and not v.vars:
            val = v.ev([])
            if isinstance(val, int) and not isinstance(val, bool):
                return val
            if isinstance(val, Fraction) and val.denominator == 1:
                return int(val)
        raise self.err(f"{to_text(ast)} must be a constant integer (only index variables and constants)")

    # value conversion --------------------------------------------------------------------------
    def value(self, v: GVal, ast: dict) -> E.Node:
        if isinstance(v, E.Node):
            return v
        if isinstance(v, Ref):
            if not isinstance(v.node, Scalar):
                raise self.err(f"{path_text(v.path)} is an {'object' if isinstance(v.node, Obj) else 'array'}, "
                               f"not a value (in {to_text(ast)})")
            var = self.slot_var(v)
            self._slots.append(var)
            vals = var.values or []
            if len(vals) == 1 and var.kind != "bool":
                return E.Const(vals[0])
            return E.VarRef(var)
        if isinstance(v, SelRef):
            return E.Select(v.index, {k: self.value(r, ast) for k, r in v.options.items()})
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
                return E.Const(env[nm])
            if nm in self.tables:
                return TableRef(nm, self.tables[nm])
            if nm == "$":
                return Ref((), self.template)
            if isinstance(self.template, Obj):
                for f in self.template.fields:
                    if f.key == nm:
                        guards.extend(self.guards((nm,)))
                        return Ref((nm,), f.node)
            raise self.err(f"unknown name {nm!r} (not a top-level property, table or index variable)")
        op = ast["op"]
        args = ast.get("args", [])
        if op == "attr":
            base = self.expr(args[0], env, guards)
            return self._attr(base, ast["attr"], guards, ast)
        if op == "index":
            base = self.expr(args[0], env, guards)
            if isinstance(base, TableRef):
                return self._lookup(base, self.value(self.expr(args[1], env, guards), args[1]), ast)
            idx = self._const_int(args[1], env)
            return self._index(base, idx, guards, ast)
        if op == "star":
            base = self.expr(args[0], env, guards)
            return self._star(base, ast)
        if op in ("+", "-", "*", "//", "%"):
            a = self.numeric(self.expr(args[0], env, guards), args[0])
            b = self.numeric(self.expr(args[1], env, guards), args[1])
            if op in ("//", "%"):
                if b.vars or b.ev([]) == 0:
                    raise self.err(f"'{op}' needs a non-zero constant divisor (in {to_text(ast)})")
            return _fold(E.Arith(op, a, b))
        if op == "neg":
            return _fold(E.Unary("neg", self.numeric(self.expr(args[0], env, guards), args[0])))
        if op in ("==", "!=", "<", "<=", ">", ">="):
            a = self.value(self.expr(args[0], env, guards), args[0])
            b = self.value(self.expr(args[1], env, guards), args[1])
            kinds = {a.kind, b.kind}
            if op not in ("==", "!=") and not kinds <= {"num"}:
                raise self.err(f"'{op}' compares numbers only (in {to_text(ast)})")
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
                g: list = []
                body = self.boolean(self.expr(ast["body"], {**env, **bnd}, g), ast["body"])
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
                if extra:  # the option's own presence would have to depend on the index
                    raise self.err(f"optional property {name!r} read through last()/[-1] of a "
                                   f"variable-length array is not supported (in {to_text(ast)})")
            return SelRef(base.index, opts)
        if isinstance(base, ListVal):
            items = []
            for g, r in base.items:
                extra = []
                r2 = self._attr(r, name, extra, ast)  # an optional field adds its presence guard
                items.append((E.conj(([g] if g is not None else []) + extra), r2))
            return ListVal(items)
        if not isinstance(base, Ref) or not isinstance(base.node, Obj):
            raise self.err(f"'.{name}' applied to something that is not an object (in {to_text(ast)})")
        for f in base.node.fields:
            if f.key == name:
                path = base.path + (name,)
                guards.extend(self.guards(path))
                return Ref(path, f.node)
        raise self.err(f"{path_text(base.path)} has no property {name!r}")

    def _index(self, base: GVal, idx: int, guards: list, ast: dict) -> GVal:
        if isinstance(base, ListVal):
            if not -len(base.items) <= idx < len(base.items):
                raise self.err(f"index {idx} out of range (in {to_text(ast)})")
            return base.items[idx][1]
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
        if not isinstance(base, Ref) or not isinstance(base.node, Arr):
            raise self.err(f"[*] applied to something that is not an array (in {to_text(ast)})")
        a = base.node
        max_items = self._check_max_items(base.path, a)
        items = []
        for k in range(max_items):
            p = base.path + (k,)
            items.append((E.conj(self.guards(p)[len(self.guards(base.path)):]), Ref(p, a.item)))
        return ListVal(items)

    def _lookup(self, t: TableRef, key: E.Node, ast: dict) -> E.Node:
        if not isinstance(t.data, dict):
            raise self.err(f"table {t.name!r} is not a lookup table (an object), so [key] does not apply")
        vals = list(t.data.values())
        kind = "num" if all(isinstance(v, (int, Fraction)) and not isinstance(v, bool) for v in vals) else "sym"
        if isinstance(key, E.Const):
            if key.v not in t.data:
                raise self.err(f"key {key.v!r} is not in table {t.name!r}")
            return E.Const(t.data[key.v])
        return E.Lookup(t.data, key, kind)

    def _in(self, item_ast: dict, cont_ast: dict, env: dict, guards: list, ast: dict) -> E.Node:
        item = self.expr(item_ast, env, guards)
        elems = [self.value(x, item_ast) for _, x in item.items] if isinstance(item, ListVal) \
            else [self.value(item, item_ast)]
        cont = self.expr(cont_ast, env, guards)
        if isinstance(cont, TableRef):
            if isinstance(cont.data, dict):
                rows = [(k,) for k in cont.data]
            else:
                rows = cont.data
        elif isinstance(cont, ListVal):
            vals = [n for _, n in cont.items]
            if all(isinstance(v, E.Const) for v in vals):
                rows = [(v.v,) for v in vals]
            else:
                if len(elems) != 1:
                    raise self.err(f"tuple membership needs a table (in {to_text(ast)})")
                return _fold(E.Or([E.Cmp("==", elems[0], v) for v in vals]))
        else:
            raise self.err(f"'in' needs a table name or a [list] on its right (in {to_text(ast)})")
        if rows and any(len(r) != len(elems) for r in rows):
            raise self.err(f"{len(elems)} values tested against a table of {len(rows[0])} columns (in {to_text(ast)})")
        return _fold(E.Member(elems, list(rows)))

    def _items(self, arg: dict, env: dict, guards: list) -> list[tuple[Optional[E.Node], E.Node]]:
        """The guarded items an aggregate ranges over."""
        if arg.get("op") == "gen":
            out = []
            var = arg["var"]
            for b in self._bindings([var], arg.get("range"), arg["args"][0], env):
                e2 = {**env, **b}
                g: list = []
                val = self.value(self.expr(arg["args"][0], e2, g), arg["args"][0])
                if arg.get("cond") is not None:
                    g.append(self.boolean(self.expr(arg["cond"], e2, g), arg["cond"]))
                out.append((E.conj(_dedupe(g)), val))
            return out
        v = self.expr(arg, env, guards)
        if isinstance(v, ListVal):
            return [(g, self.value(x, arg)) for g, x in v.items]
        return [(None, self.value(v, arg))]

    def _call(self, ast: dict, env: dict, guards: list) -> GVal:
        func, args = ast["func"], ast["args"]
        if func in ("len", "first", "last"):
            if len(args) != 1:
                raise self.err(f"{func}() takes one array")
            base = self.expr(args[0], env, guards)
            if not isinstance(base, Ref) or not isinstance(base.node, Arr):
                raise self.err(f"{func}() needs an array (in {to_text(ast)})")
            if func == "len":
                lv = self.len_var(base)
                return E.Const(base.node.max_items) if lv is None else E.VarRef(lv)
            return self._index(base, 0 if func == "first" else -1, guards, ast)
        if func in ("abs", "round"):
            want = 1 if func == "abs" else 2
            if len(args) != want:
                raise self.err(f"{func}() takes {want} argument(s)")
            x = self.numeric(self.expr(args[0], env, guards), args[0])
            if func == "abs":
                return _fold(E.Unary("abs", x))
            q = self.numeric(self.expr(args[1], env, guards), args[1])
            if q.vars or q.ev([]) <= 0:
                raise self.err("round(x, q) needs a positive constant q")
            return _fold(E.Unary("round", x, q.ev([])))
        items: list[tuple[Optional[E.Node], E.Node]] = []
        for a in args:
            items += self._items(a, env, guards)
        if func == "all_different":
            return _fold(AllDiff(items))
        if func == "count":
            terms: list[E.Node] = []
            for g, n in items:
                if n.kind != "bool":
                    raise self.err("count() counts conditions (true/false items)")
                c = n if g is None else E.And([g, n])
                terms.append(E.If(c, E.Const(1), E.Const(0)))
            return _fold(_sum(terms))
        for _g, n in items:
            if n.kind not in ("num", "bool"):
                raise self.err(f"{func}() needs numbers (in {to_text(ast)})")
        if func == "sum":
            return _fold(_sum([n if g is None else E.If(g, n, E.Const(0)) for g, n in items]))
        if not items:
            raise self.err(f"{func}() of nothing")
        return _fold(E.MinMax(func == "max", items))


def _sum(terms: list[E.Node]) -> E.Node:
    """One flat linear node (globals/linear.py): a chain of binary '+' nests as deep as the
    array is long (RecursionError at 1,000 items) and propagates in O(n**2)."""
    if not terms:
        return E.Const(0)
    if len(terms) == 1:
        return terms[0]
    return LinSum([(1, t) for t in terms])


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
    if ast.get("op") == "gen" and ast.get("var") == name:
        return
    for key in ("args",):
        for a in ast.get(key, []) or []:
            yield from _index_sites(a, name)
    for key in ("body", "cond", "range"):
        if ast.get(key):
            yield from _index_sites(ast[key], name)


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
        if isinstance(r, str):
            name, expr = f"relation[{i}]", r
        elif isinstance(r, dict):
            extra = set(r) - {"name", "expr", "message"}
            if extra:
                key = sorted(extra)[0]
                raise SpecError(f"{ptr}/{escape_pointer(key)}", f"unknown key {key!r} in a relation")
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
        rels.append(Relation(name, text, ast, message, ptr))
    return tables, rels
