"""The grounded factor graph as an OR-tools CP-SAT model, for exact feasibility questions.

Why: the own search is complete but learns little; CP-SAT (clause learning, LP relaxation, global
propagators) answers scheduling and assignment questions in milliseconds where the own search
runs out of budget. Its answers must stay exact, so the model is built as a *relaxation* of the
factors (every record that satisfies the factors satisfies the model) and:
  * INFEASIBLE proves that no record extends the question's domains (a relaxation has a superset
    of the records);
  * a solution counts only after every factor has been evaluated on it exactly (`holds`, the
    same check as the own search's leaves), so a solution of the relaxation that breaks a factor
    with no exact translation leaves the question to the own search;
  * UNKNOWN (the time limit) is BudgetExceeded, never a guess.
Values are exact integers: a variable's internal value is its CP-SAT variable; a numeric
expression is a linear form with Fraction coefficients over CP-SAT variables, multiplied by the
lcm of its denominators where it meets a constraint (fixed-point decimals and exact fractions
become integer constraints); symbolic values (enum strings, null) are codes, one per distinct
value; a node with no translation (an unknown node type, magnitudes past int64 safety, a product
with a fractional scale) is left out of the model (its factor is relaxed away). A value that may
be undefined (a key missing from a table, min/max of no present item) is a free variable there:
the factor is false on it anyway, so leaving it free only relaxes.
`ortools` is imported inside the functions here, never at import time of the core.
"""
from __future__ import annotations

import math
import threading
import time
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Optional

from factorspec.errors import BudgetExceeded
from factorspec.graph import expr as E
from factorspec.graph import symmetry
from factorspec.graph.domain import dcontains, dmax, dmin, dsize
from factorspec.graph.globals.all_different import AllDiff
from factorspec.graph.globals.linear import LinSum
from factorspec.graph.globals.no_overlap import NoOverlap
from factorspec.graph.ground import nodes_hold

if TYPE_CHECKING:
    from factorspec.graph.solver import Problem

SAFE = 2 ** 50  # bound on |value| of any CP-SAT variable or expression built here (int64 headroom)
TABLE_ROWS = 20_000
# an all_different whose items need pairwise constraints (guarded items, or not enforced) past this
# many pairs is left out (a relaxation): 865 unique items made 373,680 pairs, 38 s of model build
# (JSONSchemaBench JsonSchemaStore/github-workflow-template-properties) inside a 5 s question
MAX_PAIRS = 20_000
KEEP_ALL = True
# implied no_overlap globals as CP-SAT intervals: off, measured slower (meetings 16 in 3 rooms,
# one run side by side: CPU p50 62 / 72 ms with, 40 / 39 ms without; CP-SAT finds the pairwise
# disjunctions on its own)
NO_OVERLAP = False  # a reified membership table larger than this is relaxed away
# the first, light try of a feasibility question (Model.solve): CP-SAT's search alone. Measured
# (thread CPU per solve, the CP-SAT questions of one seeded walk per generality kind, replayed;
# load 3): round robin 6 teams p50 108 -> 8 ms, meetings 28 -> 4, seating 25 -> 7, exams 23 -> 5,
# latin 23 -> 3; none of those questions needed the full solver after it: the deterministic time
# they used was at most 0.003 (p50 0.0002). A question it leaves open pays it on top of the full
# solve (0.05 cost 0.2 s CPU on a 6-team round robin's refutation; 0.01 about a fifth of that)
LIGHT: dict[str, Any] = {"cp_model_presolve": False, "cp_model_probing_level": 0, "symmetry_level": 0,
                         "linearization_level": 0, "use_sat_inprocessing": False}
LIGHT_DTIME = 0.01  # deterministic seconds (reproducible under load, unlike wall-clock)
# a feasibility question the light try leaves open gets the verified symmetry breaking of
# graph/symmetry.py (packing 13 items in 3 bags, 10 packed: UNKNOWN after 30 s without, INFEASIBLE
# in 0.12 s CPU with the positions in order)
SYMMETRY = True
# == / != of two variables of at most this many values each: clauses over their value literals
# (`_Builder._pair_eq`), not linear constraints. Measured (thread CPU of the 85 CP-SAT questions of
# one 6-team pairwise fixtures walk, replayed on one model, load 2.6): sum 4,740 -> 2,144 ms, p50
# 31.5 -> 18.3, max (the root) 1,616 -> 249; model 1,545 -> 1,050 variables; meetings 24 in 3
# rooms (334 questions) unchanged (5.7 / 5.9 s)
PAIR_VALUES = 64
# order comparisons shared by their difference (one literal however written), and the operands
# of a factor's top-level `or` as literals that imply them (`_Builder._implied`)
ORDER_SHARED = True
_AVAILABLE: Optional[bool] = None


def available() -> bool:
    """Whether `ortools` can be imported (checked once)."""
    global _AVAILABLE
    if _AVAILABLE is None:
        try:
            import ortools.sat.python.cp_model  # noqa: F401
            _AVAILABLE = True
        except ImportError:
            _AVAILABLE = False
    return _AVAILABLE


class Unsupported(Exception):
    """A node with no translation: its factor is left out of the model (a relaxation)."""


def holds(p: Problem, A: list) -> bool:
    """Every factor holds on the full assignment A (internal values), exactly as `check` decides."""
    return nodes_hold((f.node for f in p.factors), A)


Lin = tuple[dict[int, Fraction], Fraction]  # ({cp var index: coef}, const): sum(coef * var) + const
Lit = Any  # True / False, or a CP-SAT literal


def _lcm_den(xs: Any) -> int:
    out = 1
    for x in xs:
        out = math.lcm(out, Fraction(x).denominator)
    return out


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, Fraction)) and not isinstance(v, bool)


class _Builder:
    def __init__(self, p: Problem) -> None:
        from ortools.sat.python import cp_model
        self.cp = cp_model
        self.m = cp_model.CpModel()
        self.p = p
        self.cvars: list[Any] = []  # CP-SAT variables by proto index
        self.bounds: list[tuple[int, int]] = []
        self.codes: dict[Any, int] = {}  # symbolic value -> code
        self.exact = True  # False once anything was relaxed
        self.deadline: Optional[float] = None  # of the question the build runs in (monotonic)
        self.dropped: list[str] = []
        self._bool_of: dict[int, Any] = {}
        self._eq_cache: dict[tuple[int, int], Any] = {}
        self._pair_cache: dict[tuple[int, int, Fraction, Fraction], Any] = {}  # `_pair_eq`
        self._var_lins: dict[int, Lin] = {}  # `_num_var`, by variable id
        self._pair_half: dict[tuple, Any] = {}  # (`_pair_eq` key, "==" / "!=") -> an implying literal
        self._order_lits: dict[tuple, Any] = {}  # order comparison (`_order` key) -> its literal
        self._order_half: dict[tuple, Any] = {}  # ... -> a literal that implies it (`_implied`)
        # translations of shared subexpressions (the grounder shares nodes: a pair key under an
        # all_different of tuples is one node in 105 pairwise factors), by (kind, node id); the
        # node is kept beside its translation so that its id cannot be reused
        self._memo: dict[tuple[str, int], tuple[E.Node, Any]] = {}
        self.xs = []
        for v in p.vars:
            if abs(v.lo) > SAFE or abs(v.hi) > SAFE:
                raise Unsupported(f"domain of {v.name} past int64 safety")
            self.xs.append(self._new(v.lo, v.hi, v.name))

    # -- variables ---------------------------------------------------------------------------
    def _new(self, lo: int, hi: int, name: str = "") -> Any:
        if abs(lo) > SAFE or abs(hi) > SAFE:
            raise Unsupported("bounds past int64 safety")
        x = self.m.new_int_var(lo, hi, name)
        assert x.index == len(self.cvars)  # proto index = position in cvars
        self.cvars.append(x)
        self.bounds.append((lo, hi))
        return x

    def _newbool(self) -> Any:
        b = self.m.new_bool_var("")
        self.cvars.append(b)
        self.bounds.append((0, 1))
        return b

    def code(self, v: Any) -> int:
        if v not in self.codes:
            self.codes[v] = len(self.codes)
        return self.codes[v]

    # -- linear forms ------------------------------------------------------------------------
    def _expr(self, lin: Lin, mult: int) -> Any:
        """mult * lin as an integer CP-SAT expression (mult clears every denominator)."""
        vs, c = lin
        coefs, xs, bound = [], [], abs(c * mult)
        for i, k in vs.items():
            ki = k * mult
            if ki.denominator != 1:
                raise Unsupported("non-integral scaling")
            lo, hi = self.bounds[i]
            bound += abs(ki) * max(abs(lo), abs(hi))
            coefs.append(int(ki))
            xs.append(self.cvars[i])
        cm = c * mult
        if cm.denominator != 1:
            raise Unsupported("non-integral scaling")
        if bound > SAFE:
            raise Unsupported("magnitudes past int64 safety")
        return self.cp.LinearExpr.weighted_sum(xs, coefs) + int(cm)

    @staticmethod
    def _den(lin: Lin) -> int:
        return _lcm_den(list(lin[0].values()) + [lin[1]])

    def _range(self, lin: Lin) -> tuple[Fraction, Fraction]:
        lo = hi = Fraction(lin[1])
        for i, k in lin[0].items():
            a, b = self.bounds[i]
            lo += min(k * a, k * b)
            hi += max(k * a, k * b)
        return lo, hi

    def _aux(self, lin: Lin) -> Lin:
        """A fresh integer variable u = s * lin; returns lin as u / s (bounds from lin's)."""
        s = self._den(lin)
        lo, hi = self._range(lin)
        u = self._new(int(lo * s), int(hi * s))
        self.m.add(u == self._expr(lin, s))
        return {len(self.cvars) - 1: Fraction(1, s)}, Fraction(0)

    def _var_lin(self, x: Any, scale: int = 1) -> Lin:
        return {x.index: Fraction(1, scale)}, Fraction(0)

    def _free(self, lo: int, hi: int) -> Any:
        """A variable for a value that may be undefined (left free there: a relaxation)."""
        return self._new(lo, hi)

    # -- numeric nodes -----------------------------------------------------------------------
    def _memoised(self, tag: str, n: E.Node, build: Any) -> Any:
        """build(n), once per node: a node's translation is a function of the node alone (its
        auxiliary variables and defining constraints hold for every record), so a node shared by
        several factors needs them once."""
        key = (tag, id(n))
        hit = self._memo.get(key)
        if hit is not None and hit[0] is n:
            return hit[1]
        out = build(n)
        self._memo[key] = (n, out)
        return out

    def num(self, n: E.Node) -> Lin:
        """n as a linear form over CP-SAT variables (see `_num`)."""
        if not n.vars:
            return self._num(n)
        return self._memoised("num", n, self._num)

    def _num(self, n: E.Node) -> Lin:
        if not n.vars:
            v = self._const(n)
            if isinstance(v, bool):
                v = int(v)
            if not _is_num(v):
                raise Unsupported("a non-numeric constant in arithmetic")
            return {}, Fraction(v)
        if n.kind == "bool" and not isinstance(n, E.VarRef):
            lit = self.lit(n)
            return self._lit_lin(lit)
        t = type(n)
        if t is E.VarRef:
            return self._num_var(n)  # type: ignore[arg-type]
        if t is LinSum:
            out: dict[int, Fraction] = {}
            c = Fraction(n.const)  # type: ignore[attr-defined]
            for k, term in n.terms:  # type: ignore[attr-defined]
                vs, tc = self.num(term)
                c += k * tc
                for i, a in vs.items():
                    out[i] = out.get(i, Fraction(0)) + k * a
            return {i: a for i, a in out.items() if a != 0}, c
        if t in (E.AsInterval,):
            return self.num(n.a)  # type: ignore[attr-defined]
        if t is E.Scale:
            return _scale(self.num(n.a), Fraction(n.k))  # type: ignore[attr-defined]
        if t is E.Arith:
            return self._arith(n)  # type: ignore[arg-type]
        if t is E.Unary:
            return self._unary(n)  # type: ignore[arg-type]
        if t is E.If:
            return self._if_num(n)  # type: ignore[arg-type]
        if t is E.Lookup:
            return self._lookup_num(n)  # type: ignore[arg-type]
        if t is E.Select:
            return self._select_num(n)  # type: ignore[arg-type]
        if t is E.MinMax:
            return self._minmax(n)  # type: ignore[arg-type]
        raise Unsupported(f"numeric node {t.__name__}")

    def _const(self, n: E.Node) -> Any:
        try:
            return n.ev([])
        except (TypeError, ZeroDivisionError, IndexError, KeyError):
            raise Unsupported("a constant with no value") from None

    def _lit_lin(self, lit: Lit) -> Lin:
        if lit is True or lit is False:
            return {}, Fraction(int(lit))
        if lit.index >= 0:
            return {lit.index: Fraction(1)}, Fraction(0)
        b = lit.negated()  # ~b as 1 - b
        return {b.index: Fraction(-1)}, Fraction(1)

    def _num_var(self, n: E.VarRef) -> Lin:
        """The variable's value as a linear form, once per variable (the grounder builds a
        reference per factor; an enum of numbers gets one element constraint, not one each)."""
        hit = self._var_lins.get(n.var.id)
        if hit is None:
            hit = self._var_lins[n.var.id] = self._num_var_new(n)
        return hit

    def _num_var_new(self, n: E.VarRef) -> Lin:
        v = n.var
        x = self.xs[v.id]
        if v.values is None:
            return {x.index: Fraction(v.step)}, Fraction(0)
        vals = [v.value(k) for k in range(len(v.values))]
        if v.kind == "bool":
            vals = [int(bool(a)) for a in vals]
        if not all(_is_num(a) or isinstance(a, bool) for a in vals):
            raise Unsupported(f"{v.name} has non-numeric values in arithmetic")
        vals = [int(a) if isinstance(a, bool) else a for a in vals]
        if vals == list(range(len(vals))):
            return {x.index: Fraction(1)}, Fraction(0)
        s = _lcm_den(vals)
        u = self._new(int(min(vals) * s), int(max(vals) * s))
        self.m.add_element(x, [int(a * s) for a in vals], u)
        return self._var_lin(u, s)

    def _arith(self, n: E.Arith) -> Lin:
        op = n.op
        a = self.num(n.a)
        if op in ("+", "-"):
            b = self.num(n.b)
            return _add(a, _scale(b, Fraction(-1)) if op == "-" else b)
        if op == "*":
            b = self.num(n.b)
            if not a[0]:
                return _scale(b, a[1])
            if not b[0]:
                return _scale(a, b[1])
            sa, sb = self._den(a), self._den(b)
            ea, eb = self._int_var(a, sa), self._int_var(b, sb)
            la, ha = self.bounds[ea.index]
            lb, hb = self.bounds[eb.index]
            ps = (la * lb, la * hb, ha * lb, ha * hb)
            u = self._new(min(ps), max(ps))
            self.m.add_multiplication_equality(u, [ea, eb])
            return self._var_lin(u, sa * sb)
        # // and %: a constant divisor (checked at grounding)
        if n.b.vars:
            raise Unsupported("a divisor that is a variable")
        c = self._const(n.b)
        if not _is_num(c) or c == 0:
            raise Unsupported("a divisor that is not a number")
        c = Fraction(c)
        q = self._floor_div(a, c)
        if op == "//":
            return q
        return _add(a, _scale(q, -c))

    def _int_var(self, lin: Lin, s: int) -> Any:
        """A CP-SAT variable equal to s * lin (lin itself when it is one variable, coef 1/s)."""
        vs, c = lin
        if c == 0 and len(vs) == 1:
            (i, k), = vs.items()
            if k * s == 1:
                return self.cvars[i]
        lo, hi = self._range(lin)
        u = self._new(int(lo * s), int(hi * s))
        self.m.add(u == self._expr(lin, s))
        return u

    def _floor_div(self, a: Lin, c: Fraction) -> Lin:
        """q = floor(a / c) as an integer variable: c*q <= a < c*q + c (c > 0), mirrored for c < 0."""
        lo, hi = self._range(a)
        qs = (lo / c, hi / c)
        q = self._new(math.floor(min(qs)), math.floor(max(qs)))
        ql: Lin = {q.index: Fraction(1)}, Fraction(0)
        d = _add(a, _scale(ql, -c))  # a - c*q, in [0, c) for c > 0 and (c, 0] for c < 0
        s = self._den(d)
        e = self._expr(d, s)
        if c > 0:
            self.m.add(e >= 0)
            self.m.add(e <= int(c * s) - 1)
        else:
            self.m.add(e <= 0)
            self.m.add(e >= int(c * s) + 1)
        return ql

    def _unary(self, n: E.Unary) -> Lin:
        a = self.num(n.a)
        if n.op == "neg":
            return _scale(a, Fraction(-1))
        if n.op == "abs":
            s = self._den(a)
            lo, hi = self._range(a)
            u = self._new(0, int(max(abs(lo), abs(hi)) * s))
            self.m.add_abs_equality(u, self._expr(a, s))
            return self._var_lin(u, s)
        q = Fraction(n.q)  # round half up to a multiple of q: q * floor(a / q + 1/2)
        r = self._floor_div(_add(a, ({}, q / 2)), q)
        return _scale(r, q)

    def _value_var(self, lins: list[Lin], undefined: bool) -> tuple[Any, int]:
        """A variable u (scale s) wide enough for every lin in `lins` (and free when undefined)."""
        s = _lcm_den(self._den(x) for x in lins) if lins else 1
        rs = [self._range(x) for x in lins] or [(Fraction(0), Fraction(0))]
        lo, hi = min(r[0] for r in rs), max(r[1] for r in rs)
        u = self._new(math.floor(lo * s), math.ceil(hi * s))
        if undefined:
            self.exact = False
        return u, s

    def _if_num(self, n: E.If) -> Lin:
        c = self.lit(n.c)
        a, b = self.num(n.a), self.num(n.b)
        if c is True:
            return a
        if c is False:
            return b
        if not a[0] and not b[0]:  # constant branches (a count's 1 / 0): b + (a - b) * c, exactly
            return _add(b, _scale(self._lit_lin(c), a[1] - b[1]))
        u, s = self._value_var([a, b], False)
        self.m.add(u == self._expr(a, s)).only_enforce_if(c)
        self.m.add(u == self._expr(b, s)).only_enforce_if(~c)
        return self._var_lin(u, s)

    def _lookup_num(self, n: E.Lookup) -> Lin:
        vals = list(n.table.values())
        if not all(_is_num(v) for v in vals):
            raise Unsupported("a numeric lookup with non-numeric values")
        cases, complete = self._lookup_cases(n)
        if not cases:
            raise Unsupported("a lookup with no key in its table")
        s = _lcm_den(v for _lit, v in cases)
        cover = self._covering(cases) if complete else None
        if cover is not None:
            x, klo, vals = cover
            ints = [int(Fraction(v) * s) for v in vals]
            step = ints[1] - ints[0] if len(ints) > 1 else 0
            if all(w == ints[0] + step * j for j, w in enumerate(ints)):
                # an affine table (a rank, an identity): the key's own variable, no auxiliary
                return {x.index: Fraction(step, s)}, Fraction(ints[0] - step * klo, s)
            u = self._new(min(ints), max(ints))
            self.m.add_element(x - klo if klo else x, ints, u)
            return self._var_lin(u, s)
        lo, hi = min(v for _l, v in cases), max(v for _l, v in cases)
        u = self._new(math.floor(lo * s), math.ceil(hi * s))
        if not complete:
            self.exact = False
        self._cases(u, [(lit, {}, Fraction(v)) for lit, v in cases], s, complete, n)
        return self._var_lin(u, s)

    def _covering(self, cases: list[tuple[Any, Any]]) -> Optional[tuple[Any, int, list]]:
        """(x, lo, the value at each k of lo..hi) when the cases are `x == k` for exactly the
        values lo..hi of x's bounds, one variable x (the table is then a function of x: an
        element constraint, not one reified case per key)."""
        specs = [c for c, _v in cases]
        if not all(isinstance(c, tuple) for c in specs):
            return None
        x = specs[0][1]
        if isinstance(x, int) or any(c[1] is not x for c in specs):
            return None
        lo, hi = self.bounds[x.index]
        by_k = {c[2]: v for c, v in cases}
        if len(by_k) != len(cases) or set(by_k) != set(range(lo, hi + 1)):
            return None
        return x, lo, [by_k[k] for k in range(lo, hi + 1)]

    def _lookup_cases(self, n: E.Lookup) -> tuple[list[tuple[Any, Any]], bool]:
        """(literal 'the key is this table key', the table's value) per reachable key, and whether
        every value of the key is a table key. An enum slot as key: its index variable; any other
        symbolic key: its code."""
        key = n.key
        if isinstance(key, E.VarRef) and key.var.values is not None and key.var.kind != "bool":
            x = self.xs[key.var.id]
            out, complete = [], True
            for k, kv in enumerate(key.var.values):
                try:
                    hit = kv in n.table
                except TypeError:
                    hit = False
                if hit:
                    out.append((("eq", x, k), n.table[kv]))
                else:
                    complete = False
            return out, complete
        if key.kind == "num":
            return self._lookup_num_key(n)
        cv, vals = self.sym(key)
        out = []
        complete = True
        for kv in vals:
            try:
                hit = kv in n.table
            except TypeError:
                hit = False
            if hit:
                out.append((("eq", cv, self.code(kv)), n.table[kv]))
            else:
                complete = False
        return out, complete

    def _lookup_num_key(self, n: E.Lookup) -> tuple[list[tuple[Any, Any]], bool]:
        """`_lookup_cases` for a numeric key (e.g. the rank that min/max of strings reads back
        through a table): one case per table key the key's integer variable can equal. Complete
        when every value of that variable's range is a table key (`ev` finds any other undefined)."""
        lin = self.num(n.key)
        keys = [(Fraction(int(k)) if isinstance(k, bool) else Fraction(k), v)
                for k, v in n.table.items() if _is_num(k) or isinstance(k, bool)]
        s = math.lcm(self._den(lin), _lcm_den(k for k, _v in keys))
        x = self._int_var(lin, s)
        lo, hi = self.bounds[x.index]
        out, hit = [], set()
        for k, v in keys:
            w = k * s
            if w.denominator == 1 and lo <= w <= hi and int(w) not in hit:
                hit.add(int(w))
                out.append((("eq", x, int(w)), v))
        return out, len(hit) == hi - lo + 1

    def _eq_lit(self, spec: Any) -> Lit:
        """The literal `x == k` (one per variable and value)."""
        _tag, x, k = spec
        if isinstance(x, int):  # a constant code
            return x == k
        key = (x.index, k)
        hit = self._eq_cache.get(key)
        if hit is not None:
            return hit
        lo, hi = self.bounds[x.index]
        if not lo <= k <= hi:
            return False
        b = self._newbool()
        self.m.add(x == k).only_enforce_if(b)
        self.m.add(x != k).only_enforce_if(~b)
        self._eq_cache[key] = b
        return b

    def _cases(self, u: Any, cases: list[tuple[Any, dict, Fraction]], s: int, complete: bool, n: E.Node) -> None:
        """u == s * value under each case literal (an ('eq', var, k) spec or a literal)."""
        lits = []
        for spec, vs, c in cases:
            lit = self._eq_lit(spec) if isinstance(spec, tuple) else spec
            if lit is False:
                continue
            e = self._expr((vs, c), s)
            if lit is True:
                self.m.add(u == e)
                return
            self.m.add(u == e).only_enforce_if(lit)
            lits.append(lit)
        del n, complete

    def _select_num(self, n: E.Select) -> Lin:
        idx = self.num(n.index)
        opts = {k: self.num(o) for k, o in n.options.items()}
        lo, hi = self._range(idx)
        live = {k: o for k, o in opts.items() if lo <= k <= hi}
        if not live:
            raise Unsupported("a select with no option in range")
        iv = self._int_var(idx, 1) if self._den(idx) == 1 else None
        if iv is None:
            raise Unsupported("a select index that is not an integer")
        u, s = self._value_var(list(live.values()), False)
        ilo, ihi = self.bounds[iv.index]
        if any(k not in live for k in range(ilo, ihi + 1)):
            self.exact = False
        for k, o in live.items():
            lit = self._eq_lit(("eq", iv, k))
            self.m.add(u == self._expr(o, s)).only_enforce_if(lit)
        return self._var_lin(u, s)

    def _minmax(self, n: E.MinMax) -> Lin:
        items = [(None if g is None else self.lit(g), self.num(x)) for g, x in n.items]
        items = [(g, x) for g, x in items if g is not False]
        if not items:
            raise Unsupported("min/max of no item")
        sure = any(g is None or g is True for g, _x in items)
        u, s = self._value_var([x for _g, x in items], not sure)
        if all(g is None or g is True for g, _x in items):  # every item present: CP-SAT's own min/max
            es = [self._expr(x, s) for _g, x in items]
            if n.is_max:
                self.m.add_max_equality(u, es)
            else:
                self.m.add_min_equality(u, es)
            return self._var_lin(u, s)
        sels = []
        for g, x in items:
            e = self._expr(x, s)
            if g is None or g is True:
                self.m.add(u >= e if n.is_max else u <= e)
            else:
                self.m.add(u >= e if n.is_max else u <= e).only_enforce_if(g)
            sel = self._newbool()
            self.m.add(u == e).only_enforce_if(sel)
            if g is not None and g is not True:
                self.m.add_implication(sel, g)
            sels.append(sel)
        if sure:
            self.m.add_bool_or(sels)
        else:  # no present item: the value is undefined (free)
            self.m.add_bool_or(sels + [~g for g, _x in items if g is not None])
        return self._var_lin(u, s)

    # -- symbolic nodes: (code variable or constant code, the values it may take) ---------------
    def sym(self, n: E.Node) -> tuple[Any, list]:
        """n as (a code variable or a constant code, the values it may take) (see `_sym`)."""
        if not n.vars:
            return self._sym(n)
        return self._memoised("sym", n, self._sym)

    def _sym(self, n: E.Node) -> tuple[Any, list]:
        if not n.vars:
            v = self._const(n)
            return self.code(v), [v]
        t = type(n)
        if t is E.VarRef:
            v = n.var  # type: ignore[attr-defined]
            if v.values is None:
                raise Unsupported("a symbolic slot without values")
            vals = [v.value(k) for k in range(len(v.values))]
            codes = [self.code(a) for a in vals]
            x = self.xs[v.id]
            if codes == list(range(len(codes))):
                return x, vals
            cv = self._new(min(codes), max(codes))
            self.m.add_element(x, codes, cv)
            return cv, vals
        if t is E.Lookup:
            cases, complete = self._lookup_cases(n)  # type: ignore[arg-type]
            if not cases:
                raise Unsupported("a lookup with no key in its table")
            vals = [v for _l, v in cases]
            codes = [self.code(v) for v in vals]
            cover = self._covering(cases) if complete else None
            if cover is not None:
                x, klo, kvals = cover
                kcodes = [self.code(v) for v in kvals]
                if kcodes == list(range(klo, klo + len(kcodes))):
                    return x, list(dict.fromkeys(vals))  # the key's codes are the values' codes
                u = self._new(min(kcodes), max(kcodes))
                self.m.add_element(x - klo if klo else x, kcodes, u)
                return u, list(dict.fromkeys(vals))
            u = self._new(min(codes), max(codes))
            if not complete:
                self.exact = False
            self._cases(u, [(lit, {}, Fraction(self.code(v))) for lit, v in cases], 1, complete, n)
            return u, list(dict.fromkeys(vals))
        if t is E.If:
            c = self.lit(n.c)  # type: ignore[attr-defined]
            a, va = self.sym(n.a)  # type: ignore[attr-defined]
            b, vb = self.sym(n.b)  # type: ignore[attr-defined]
            if c is True:
                return a, va
            if c is False:
                return b, vb
            codes = [self.code(x) for x in va + vb]
            u = self._new(min(codes), max(codes))
            self.m.add(u == a).only_enforce_if(c)
            self.m.add(u == b).only_enforce_if(~c)
            return u, list(dict.fromkeys(va + vb))
        if t is E.Select:
            idx = self.num(n.index)  # type: ignore[attr-defined]
            if self._den(idx) != 1:
                raise Unsupported("a select index that is not an integer")
            iv = self._int_var(idx, 1)
            ilo, ihi = self.bounds[iv.index]
            opts = {k: self.sym(o) for k, o in n.options.items() if ilo <= k <= ihi}  # type: ignore[attr-defined]
            if not opts:
                raise Unsupported("a select with no option in range")
            if any(k not in opts for k in range(ilo, ihi + 1)):
                self.exact = False
            allv = [x for _c, vs in opts.values() for x in vs]
            codes = [self.code(x) for x in allv]
            u = self._new(min(codes), max(codes))
            for k, (c, _vs) in opts.items():
                lit = self._eq_lit(("eq", iv, k))
                self.m.add(u == c).only_enforce_if(lit)
            return u, list(dict.fromkeys(allv))
        raise Unsupported(f"symbolic node {t.__name__}")

    # -- boolean nodes -----------------------------------------------------------------------
    def lit(self, n: E.Node) -> Lit:
        """A literal equivalent to node n (True/False for constants; see `_lit`)."""
        if not n.vars:
            return self._lit(n)
        return self._memoised("lit", n, self._lit)

    def _lit(self, n: E.Node) -> Lit:
        if not n.vars:
            v = self._const(n)
            return bool(v)
        t = type(n)
        if t is E.VarRef:
            return self._bool_var(n)  # type: ignore[arg-type]
        if t is E.Not:
            a = self.lit(n.a)  # type: ignore[attr-defined]
            return (not a) if isinstance(a, bool) else ~a
        if t is E.And or t is E.Or:
            is_and = t is E.And
            args = [self.lit(a) for a in n.args]  # type: ignore[attr-defined]
            if any(a is (not is_and) for a in args):
                return not is_and
            args = [a for a in args if not isinstance(a, bool)]
            if not args:
                return is_and
            if len(args) == 1:
                return args[0]
            b = self._newbool()
            if is_and:
                self.m.add_bool_and(args).only_enforce_if(b)
                self.m.add_bool_or([~a for a in args]).only_enforce_if(~b)
            else:
                self.m.add_bool_or(args).only_enforce_if(b)
                self.m.add_bool_and([~a for a in args]).only_enforce_if(~b)
            return b
        if t is E.Cmp:
            return self._cmp(n, None)  # type: ignore[arg-type]
        if t is E.If:
            c = self.lit(n.c)  # type: ignore[attr-defined]
            if isinstance(c, bool):
                return self.lit(n.a if c else n.b)  # type: ignore[attr-defined]
            a, b = self.lit(n.a), self.lit(n.b)  # type: ignore[attr-defined]
            r = self._newbool()
            for cond, x in ((c, a), (~c, b)):
                if isinstance(x, bool):
                    self.m.add_bool_or([~cond, r if x else ~r])
                else:
                    self.m.add(r == x).only_enforce_if(cond)
            return r
        if t is E.Member:
            return self._member(n, False)  # type: ignore[arg-type]
        if t is AllDiff:
            return self._alldiff(n, False)  # type: ignore[arg-type]
        if n.kind != "bool":
            raise Unsupported(f"{t.__name__} as a condition")
        # a numeric 0/1 node used as a condition
        lin = self.num(n)
        s = self._den(lin)
        b = self._newbool()
        e = self._expr(lin, s)
        self.m.add(e != 0).only_enforce_if(b)
        self.m.add(e == 0).only_enforce_if(~b)
        return b

    def _bool_var(self, n: E.VarRef) -> Lit:
        v = n.var
        if v.id in self._bool_of:
            return self._bool_of[v.id]
        x = self.xs[v.id]
        # a value as a condition is its Python truth, as `ev` reads it (and/or/not/if)
        if v.values is not None:
            truth = [bool(v.value(k)) for k in range(len(v.values))]
        elif v.hi - v.lo < 4096:
            truth = [k * v.step != 0 for k in range(v.lo, v.hi + 1)]
        else:
            raise Unsupported(f"{v.name} as a condition")
        b = self._newbool()
        base = 0 if v.values is not None else v.lo
        trues = [k + base for k, t in enumerate(truth) if t]
        falses = [k + base for k, t in enumerate(truth) if not t]
        dom = self.cp.Domain.from_values
        self.m.add_linear_expression_in_domain(x, dom(trues)).only_enforce_if(b)
        self.m.add_linear_expression_in_domain(x, dom(falses)).only_enforce_if(~b)
        self._bool_of[v.id] = b
        return b

    def _diff(self, a: E.Node, b: E.Node) -> Lin:
        """a - b as a linear form (two single-variable forms, the common case, without Fraction
        sums)."""
        la, lb = self.num(a), self.num(b)
        if len(la[0]) == 1 and len(lb[0]) == 1 and la[0].keys() != lb[0].keys():
            return {**la[0], **{k: -c for k, c in lb[0].items()}}, la[1] - lb[1]
        return _add(la, _scale(lb, Fraction(-1)))

    def _pair(self, a: E.Node, b: E.Node) -> tuple[str, Any, Any]:
        """Both sides as integer expressions of one kind: ('num', s*a, s*b) or ('sym', code, code)."""
        if a.kind == "sym" or b.kind == "sym":
            if a.kind != b.kind:
                raise Unsupported("a comparison of a symbolic and a numeric value")
            ca, _ = self.sym(a)
            cb, _ = self.sym(b)
            return "sym", ca, cb
        return self._num_pair(self._diff(a, b))

    def _num_pair(self, d: Lin) -> tuple[str, Any, Any]:
        """('num', s*d, 0): the difference d of two sides as an integer expression (or int)."""
        s = self._den(d)
        if not d[0]:  # a constant difference
            return "num", int(d[1] * s), 0
        return "num", self._expr(d, s), 0

    def _order(self, n: E.Cmp) -> Optional[tuple[str, Lin, tuple]]:
        """An order comparison of numbers as (op, d, key) with `d op 0`, op < or <= (a > b is
        b - a < 0); key: the comparison whatever its spelling, under which its literals are
        shared (the grounder builds `apart` once per factor that mentions it). None for
        anything else."""
        if n.op not in ("<", "<=", ">", ">=") or n.a.kind == "sym" or n.b.kind == "sym":
            return None
        if n.op in ("<", "<="):
            op, d = n.op, self._diff(n.a, n.b)
        else:
            op, d = ("<" if n.op == ">" else "<="), self._diff(n.b, n.a)
        return op, d, (op, tuple(sorted(d[0].items())), d[1])

    def _implied(self, n: E.Node) -> Lit:
        """A literal that implies n, not necessarily the converse: enough for an operand of a
        factor's top-level `or` (the factor holds once some operand's literal is true and that
        operand holds; a record of the factor sets each literal to its operand's truth). Why: an
        order comparison then posts one conditional linear constraint, not two, and a conjunction
        implies each of its parts (meetings: `apart` is two such comparisons per pair). Anything
        else gets its full literal (`lit`)."""
        if not n.vars:
            return self.lit(n)
        t = type(n)
        if t is E.Cmp and n.op in ("==", "!=") and PAIR_VALUES:  # type: ignore[attr-defined]
            got_pair = self._pair_eq(n.a, n.b, half=n.op)  # type: ignore[attr-defined]
            return self.lit(n) if got_pair is None else got_pair
        if t is E.Cmp:
            got = self._order(n)  # type: ignore[arg-type]
            if got is None:
                return self.lit(n)
            op, d, key = got
            for cache in (self._order_lits, self._order_half):
                hit = cache.get(key)
                if hit is not None:
                    return hit
            _kind, x, y = self._num_pair(d)
            if isinstance(x, int):
                return x < 0 if op == "<" else x <= 0
            b = self._newbool()
            self.m.add(_rel(op, x, y)[0]).only_enforce_if(b)
            self._order_half[key] = b
            return b
        if t is E.And:
            parts = [self._implied(a) for a in n.args]  # type: ignore[attr-defined]
            if any(p is False for p in parts):
                return False
            parts = [p for p in parts if p is not True]
            if not parts:
                return True
            if len(parts) == 1:
                return parts[0]
            b = self._newbool()
            self.m.add_bool_and(parts).only_enforce_if(b)
            return b
        return self.lit(n)

    def _var_eq(self, a: E.Node, b: E.Node) -> Optional[Lit]:
        """a == b as the literal `x == k` of `_eq_lit` when it says that one variable x takes
        one value k (a count's `home == p`), else None."""
        if a.kind == "sym" or b.kind == "sym":
            ca, cb = self.sym(a)[0], self.sym(b)[0]
            if isinstance(ca, int) and not isinstance(cb, int):
                ca, cb = cb, ca
            if isinstance(cb, int) and not isinstance(ca, int) and ca.index >= 0:
                return self._eq_lit(("eq", ca, cb))
            return None
        vs, c = self._diff(a, b)
        if len(vs) != 1:
            return None
        (i, k), = vs.items()
        val = -c / k  # k * x + c == 0
        if val.denominator != 1:
            return False
        return self._eq_lit(("eq", self.cvars[i], int(val)))

    def _pair_eq(self, a: E.Node, b: E.Node, half: Optional[str] = None) -> Optional[Lit]:
        """a == b as a literal over the shared value literals `x == k` (`_eq_lit`) where a - b
        is c1*x + c2*y + c0 over two variables of at most `PAIR_VALUES` values each; else None.
        Why: as linear constraints, the side `a != b` has a domain with a hole, which CP-SAT
        expands into two more literals, a clause and two conditional precedences each time it
        loads the model (a 6-team round robin written pairwise: 1,290 of them, 3,925 variables
        loaded for 1,545 built); as clauses over value literals it loads as SAT clauses.
        Exact: r <=> OR_k (x == k and y == f(k)), f(k) the one y value with c1*k + c2*y + c0 == 0.
        `half` "==" or "!=": a literal that implies a == b (resp. a != b), not the converse
        (`_implied`): one clause per value of x instead of two; a full literal of the same
        relation is reused where it exists."""
        if a.kind == "sym" or b.kind == "sym":
            if a.kind != b.kind:
                return None
            ca, cb = self.sym(a)[0], self.sym(b)[0]
            if isinstance(ca, int) or isinstance(cb, int) or ca.index < 0 or cb.index < 0:
                return None
            d: Lin = {ca.index: Fraction(1), cb.index: Fraction(-1)}, Fraction(0)
            if ca.index == cb.index:
                return None
        else:
            d = self._diff(a, b)
        if len(d[0]) != 2:
            return None
        (i, c1), (j, c2) = sorted(d[0].items())
        (lo_i, hi_i), (lo_j, hi_j) = self.bounds[i], self.bounds[j]
        if hi_i - lo_i >= PAIR_VALUES or hi_j - lo_j >= PAIR_VALUES:
            return None
        key = (i, j, c2 / c1, d[1] / c1)  # the same relation, however a factor wrote it
        hit = self._pair_cache.get(key)
        if hit is not None:
            return hit if half != "!=" else ~hit
        if half is not None:
            hit = self._pair_half.get((key, half))
            if hit is not None:
                return hit
        x, y = self.cvars[i], self.cvars[j]
        r = self._newbool()
        if half is None:
            self._pair_cache[key] = r
        else:
            self._pair_half[(key, half)] = r
        nr = ~r
        # y == f(k) = -(c1*k + c0) / c2, in integers: s clears the denominators
        s = _lcm_den((c1, c2, d[1]))
        a1, a2, a0 = int(c1 * s), int(c2 * s), int(d[1] * s)
        for k in range(lo_i, hi_i + 1):
            nxk = ~self._eq_lit(("eq", x, k))
            num = -(a1 * k + a0)
            v = num // a2
            yv = self._eq_lit(("eq", y, v)) if v * a2 == num and lo_j <= v <= hi_j else False
            if yv is False:
                if half != "!=":
                    self.m.add_bool_or([nr, nxk])
            elif half == "!=":
                self.m.add_bool_or([nr, nxk, ~yv])
            else:
                if half is None:
                    self.m.add_bool_or([nxk, ~yv, r])
                self.m.add_bool_or([nr, nxk, yv])
        return r

    def _cmp(self, n: E.Cmp, enforce: Optional[bool]) -> Lit:
        """Cmp as a literal; with `enforce` set, posted as a hard constraint (True) instead."""
        op = n.op
        if not enforce and op in ("==", "!=") and PAIR_VALUES:
            eq = self._pair_eq(n.a, n.b)
            if eq is not None:
                return eq if op == "==" else ~eq
        order = self._order(n) if ORDER_SHARED else None
        if order is not None:
            op, d, key = order
            if not enforce:
                hit = self._order_lits.get(key)
                if hit is not None:
                    return hit
            kind, x, y = self._num_pair(d)
        else:
            kind, x, y = self._pair(n.a, n.b)
        if kind == "sym" and op not in ("==", "!="):
            raise Unsupported("an order comparison of symbolic values")
        if isinstance(x, int) and isinstance(y, int):
            return bool({"==": x == y, "!=": x != y, "<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y}[op])
        if not enforce and op in ("==", "!="):
            eq = self._var_eq(n.a, n.b)
            if eq is not None:  # the shared literal `x == k` (one per variable and value)
                return eq if op == "==" else (not eq if isinstance(eq, bool) else ~eq)
        pos, neg = _rel(op, x, y)
        if enforce:
            self.m.add(pos)
            return True
        b = self._newbool()
        self.m.add(pos).only_enforce_if(b)
        self.m.add(neg).only_enforce_if(~b)
        if order is not None:
            self._order_lits[order[2]] = b
        return b

    def _column(self, e: E.Node, col: list) -> tuple[Any, list[Optional[int]]]:
        """Element e as an integer variable, and each row value of its column in those units
        (None: the value can never equal e)."""
        if e.kind == "sym":
            cv, _vals = self.sym(e)
            if isinstance(cv, int):
                cv = self._new(cv, cv)
            return cv, [self.code(v) for v in col]
        lin = self.num(e)
        nums = [Fraction(int(v)) if isinstance(v, bool) else (Fraction(v) if _is_num(v) else None) for v in col]
        s = math.lcm(self._den(lin), _lcm_den(v for v in nums if v is not None))
        x = self._int_var(lin, s)
        lo, hi = self.bounds[x.index]
        out: list[Optional[int]] = []
        for v in nums:
            w = None if v is None else v * s
            out.append(int(w) if w is not None and lo <= w <= hi else None)
        return x, out

    def _member(self, n: E.Member, enforce: bool) -> Lit:
        width = len(n.elems)
        table = [r for r in n.rows if len(r) == width]  # a row of another width never equals the tuple
        xs, vals = [], []
        for j, e in enumerate(n.elems):
            x, vs = self._column(e, [r[j] for r in table])
            xs.append(x)
            vals.append(vs)
        cand = [tuple(vals[j][r] for j in range(width)) for r in range(len(table))]
        rows: list[tuple[int, ...]] = list(dict.fromkeys(
            tuple(k for k in r if k is not None) for r in cand if None not in r))
        if enforce:
            self.m.add_allowed_assignments(xs, rows)
            return True
        if not rows:
            return False
        if len(rows) * len(xs) > TABLE_ROWS:
            raise Unsupported("a reified membership table too large")
        # b <=> some row equals the tuple, each row literal <=> all of its columns equal
        return self._or([self._and([self._eq_lit(("eq", x, k)) for x, k in zip(xs, r)]) for r in rows])

    def _alldiff(self, n: AllDiff, enforce: bool) -> Lit:
        items = [(None if g is None else self.lit(g), x) for g, x in n.items]
        items = [(g, x) for g, x in items if g is not False]
        if not items:
            return True
        sym_kind = any(x.kind == "sym" for _g, x in items)
        if sym_kind and not all(x.kind == "sym" for _g, x in items):
            raise Unsupported("all_different over symbolic and numeric values together")
        if sym_kind:
            es = [self.sym(x)[0] for _g, x in items]
        else:
            lins = [self.num(x) for _g, x in items]
            s = _lcm_den(self._den(x) for x in lins)
            es = [self._expr(x, s) for x in lins]
        plain = all(g is None or g is True for g, _x in items)
        if enforce and plain:
            self.m.add_all_different(es)
            return True
        if len(es) * (len(es) - 1) // 2 > MAX_PAIRS:
            raise Unsupported(f"all_different over {len(es)} items needs more than {MAX_PAIRS} pairwise constraints")
        pair_lits = []
        for i in range(len(es)):
            if self.deadline is not None and time.monotonic() > self.deadline:
                raise _BuildTimeout()
            for j in range(i + 1, len(es)):
                if isinstance(es[i], int) and isinstance(es[j], int):
                    if es[i] == es[j]:
                        gs = [g for g in (items[i][0], items[j][0]) if g is not None and g is not True]
                        if not gs:
                            return False if not enforce else self._fail()
                        if enforce:
                            self.m.add_bool_or([~g for g in gs])
                        else:
                            pair_lits.append(self._or([~g for g in gs]))
                    continue
                gs = [g for g in (items[i][0], items[j][0]) if g is not None and g is not True]
                if enforce:
                    self.m.add(es[i] != es[j]).only_enforce_if(gs)
                else:
                    d = self._newbool()
                    self.m.add(es[i] != es[j]).only_enforce_if(d)
                    self.m.add(es[i] == es[j]).only_enforce_if(~d)
                    pair_lits.append(self._or([d] + [~g for g in gs]))
        if enforce:
            return True
        return self._and(pair_lits)

    def _fail(self) -> bool:
        self.m.add_bool_or([])
        return True

    def _or(self, lits: list) -> Lit:
        if len(lits) == 1:
            return lits[0]
        b = self._newbool()
        self.m.add_bool_or(lits).only_enforce_if(b)
        self.m.add_bool_and([~a for a in lits]).only_enforce_if(~b)
        return b

    def _and(self, lits: list) -> Lit:
        if not lits:
            return True
        if len(lits) == 1:
            return lits[0]
        b = self._newbool()
        self.m.add_bool_and(lits).only_enforce_if(b)
        self.m.add_bool_or([~a for a in lits]).only_enforce_if(~b)
        return b

    # -- implied globals ---------------------------------------------------------------------
    def post_no_overlap(self, g: NoOverlap) -> None:
        """An implied no_overlap (recognised from the pairwise factors, which it only restates)
        as CP-SAT intervals: one per task, or per task and resource value (present when the
        task's resource takes that value). Redundant, so the model's records are unchanged; it
        gives CP-SAT its disjunctive propagation over the whole set."""
        ivs: list[Any] = []
        per_value: dict[int, list[Any]] = {}
        for i, t in enumerate(g.tasks):
            start: Lin = {self.xs[t.s].index: Fraction(t.step(t.s))}, Fraction(0)
            end: Lin = {}, Fraction(t.p)
            for v in t.ends:
                end = _add(end, ({self.xs[v].index: Fraction(t.step(v))}, Fraction(0)))
            if self._den(start) != 1 or self._den(end) != 1:
                raise Unsupported("a task with fractional bounds")
            sv, ev = self._int_var(start, 1), self._int_var(end, 1)
            size = _add(end, _scale(start, Fraction(-1)))
            lo, hi = self._range(size)
            if hi < t.pmin:
                raise Unsupported("a task shorter than its proven duration")
            zv = self._new(max(int(lo), t.pmin), int(hi))
            self.m.add(zv == self._expr(size, 1))
            if g.resources is None:
                ivs.append(self.m.new_interval_var(sv, zv, ev, ""))
                continue
            r = self.xs[g.resources[i]]
            rlo, rhi = self.bounds[r.index]
            for k in range(rlo, rhi + 1):
                lit = self._eq_lit(("eq", r, k))
                if lit is False:
                    continue
                iv = self.m.new_optional_interval_var(sv, zv, ev, lit, "")
                per_value.setdefault(k, []).append(iv)
        if g.resources is None:
            self.m.add_no_overlap(ivs)
        for group in per_value.values():
            if len(group) >= 2:
                self.m.add_no_overlap(group)

    # -- factors -----------------------------------------------------------------------------
    def post(self, n: E.Node) -> None:
        """Node n holds (a factor): posted directly where CP-SAT has the constraint."""
        t = type(n)
        if t is E.And:
            for a in n.args:  # type: ignore[attr-defined]
                self.post(a)
            return
        if t is E.Cmp:
            self._cmp(n, True)  # type: ignore[arg-type]
            return
        if t is E.Member:
            self._member(n, True)  # type: ignore[arg-type]
            return
        if t is AllDiff:
            self._alldiff(n, True)  # type: ignore[arg-type]
            return
        if t is E.Or:
            lits = [self._implied(a) if ORDER_SHARED else self.lit(a) for a in n.args]  # type: ignore[attr-defined]
            if any(a is True for a in lits):
                return
            self.m.add_bool_or([a for a in lits if a is not False])
            return
        lit = self.lit(n)
        if lit is True:
            return
        if lit is False:
            self.m.add_bool_or([])
            return
        self.m.add_bool_or([lit])


def _rel(op: str, x: Any, y: Any) -> tuple[Any, Any]:
    """The constraint `x op y` and its negation, as CP-SAT bounded expressions."""
    if op == "==":
        return x == y, x != y
    if op == "!=":
        return x != y, x == y
    if op == "<":
        return x < y, x >= y
    if op == "<=":
        return x <= y, x > y
    if op == ">":
        return x > y, x <= y
    return x >= y, x < y


def _scale(a: Lin, k: Fraction) -> Lin:
    if k == 0:
        return {}, Fraction(0)
    return {i: c * k for i, c in a[0].items()}, a[1] * k


def _add(a: Lin, b: Lin) -> Lin:
    vs = dict(a[0])
    for i, c in b[0].items():
        vs[i] = vs.get(i, Fraction(0)) + c
    return {i: c for i, c in vs.items() if c != 0}, a[1] + b[1]


class Model:
    """A problem's CP-SAT model, built once; each question copies it and sets the domains."""

    def __init__(self, p: Problem, deadline: Optional[float] = None) -> None:
        b = _Builder(p)
        b.deadline = deadline
        for f in p.factors:
            if deadline is not None and time.monotonic() > deadline:
                raise _BuildTimeout()
            # each factor on a scratch copy of the builder's state would cost a model copy per
            # factor; instead a factor that fails to translate midway leaves only auxiliary
            # variables and constraints that its own (unposted) literals guard, or that define
            # auxiliary values: both relax nothing away and constrain nothing else
            try:
                b.post(f.node)
            except Unsupported as e:
                b.exact = False
                b.dropped.append(f"{f.describe()}: {e}")
        for g in p.globals:
            if isinstance(g, NoOverlap) and NO_OVERLAP:
                try:
                    b.post_no_overlap(g)
                except Unsupported:
                    pass  # an implied constraint left out relaxes nothing
        self.builder = b
        self.exact = b.exact
        self.dropped = b.dropped
        self.n_vars = len(p.vars)
        self._local = threading.local()  # per thread: the scratch model a question overwrites

    def _scratch(self) -> Any:
        """A copy of the built model to set one question's domains on: one CpModel per thread,
        its proto overwritten by the built one's on each question. Why: `clone()` constructs a
        CpModel each time, and the constructor's pre-PEP8 aliases alone cost 4.5 ms of a 30 ms
        question (meetings 24 in 3 rooms, replayed); the proto copy costs 2 ms."""
        m = getattr(self._local, "m", None)
        if m is None:
            m = self._local.m = self.builder.m.clone()
        else:
            m.proto.copy_from(self.builder.m.proto)
            m.rebuild_constant_map()
        return m

    def solve(self, D: list, seconds: float, budget_seconds: float,
              objective: Optional[tuple[int, bool]] = None,
              hint: Optional[list] = None) -> tuple[bool, Optional[list]]:
        """(True, a solution of the relaxation) or (False, None) when INFEASIBLE; BudgetExceeded
        when CP-SAT stops at the time limit undecided. `objective` (var id, maximise?): the
        solution is an optimum of that variable over the relaxation (proven, else BudgetExceeded).
        `hint`: a record close to the one sought (the asking state's witness), given to CP-SAT as
        its solution hint where it lies within D.

        A feasibility question runs twice at most: first `LIGHT` (no presolve, probing, symmetry
        or LP: along a walk most questions are a small repair of a known record, which CP-SAT's
        search finds in a few milliseconds while its presolve alone costs tens), within
        `LIGHT_DTIME` deterministic seconds; only when that stops undecided, the full solver
        with what is left of the time. Both answers are CP-SAT's proofs on the same model."""
        cp = self.builder.cp
        t0 = time.monotonic()
        m = self._scratch()
        proto = m.proto
        spans: dict[int, list[int]] = {}  # id(domain) -> its intervals (items often share one domain)
        for i in range(self.n_vars):
            d = D[i]
            var = proto.variables[i]
            var.domain.clear()
            if dsize(d) == 0:
                return False, None
            iv = spans.get(id(d))
            if iv is None:
                if isinstance(d, frozenset):
                    lo, hi = dmin(d), dmax(d)
                    iv = [lo, hi] if len(d) == hi - lo + 1 else cp.Domain.from_values(sorted(d)).flattened_intervals()
                else:
                    iv = [d[0], d[1]]
                spans[id(d)] = iv
            var.domain.extend(iv)
        if hint is not None:
            xs = self.builder.xs
            for i in range(self.n_vars):
                if dcontains(D[i], hint[i]):
                    m.add_hint(xs[i], hint[i])
        if objective is not None:
            x = m.get_int_var_from_proto_index(objective[0])
            if objective[1]:
                m.maximize(x)
            else:
                m.minimize(x)
        else:
            if LIGHT:
                st, s = self._run(m, LIGHT, seconds - (time.monotonic() - t0), objective, LIGHT_DTIME)
                if st != cp.UNKNOWN:
                    return self._answer(st, s, objective, budget_seconds, t0)
            if SYMMETRY:  # a hard question: interchangeable items in order (graph/symmetry.py)
                for chain in symmetry.chains(self.builder.p, D):
                    for a, b in zip(chain, chain[1:]):
                        m.add(m.get_int_var_from_proto_index(a) <= m.get_int_var_from_proto_index(b))
        st, s = self._run(m, {}, seconds - (time.monotonic() - t0), objective)
        return self._answer(st, s, objective, budget_seconds, t0)

    def _run(self, m: Any, params: dict[str, Any], seconds: float, objective: Optional[tuple[int, bool]],
             dtime: Optional[float] = None) -> tuple[Any, Any]:
        s = self.builder.cp.CpSolver()
        s.parameters.num_workers = 1  # the machine's cores are shared; one question, one core
        # no dual reductions in presolve: with them, 9.15 proves a wrong optimum on a tiny model
        # (min x1 s.t. x0 + x1 + 2 x2 + 2 x3 <= 4, x0 != x1 over -2..4 gives -1, not -2; the
        # brute-force tests meet it), and exactness is this backend's contract
        s.parameters.keep_all_feasible_solutions_in_presolve = KEEP_ALL or objective is not None
        s.parameters.max_time_in_seconds = max(0.001, seconds)
        if dtime is not None:
            s.parameters.max_deterministic_time = dtime
        for k, v in params.items():
            setattr(s.parameters, k, v)
        return s.solve(m), s

    def _answer(self, st: Any, s: Any, objective: Optional[tuple[int, bool]], budget_seconds: float,
                t0: float) -> tuple[bool, Optional[list]]:
        cp = self.builder.cp
        if st == cp.INFEASIBLE:
            return False, None
        if st == cp.OPTIMAL or (st == cp.FEASIBLE and objective is None):
            xs = self.builder.xs
            return True, [int(s.value(xs[i])) for i in range(self.n_vars)]
        used = round(time.monotonic() - t0, 3)
        raise BudgetExceeded("seconds (CP-SAT)", budget_seconds, used)


class _BuildTimeout(Exception):
    """The model's build passed the asking question's deadline."""


def model_of(p: Problem, deadline: Optional[float] = None) -> Optional[Model]:
    """The problem's model, built on first use and kept on the problem (None: not representable,
    or its build passed the deadline of the question that asked first: a model that large is not
    worth CP-SAT's time on later questions either, which then go to the own search)."""
    cache = p.backend_cache
    if "cpsat" not in cache:
        try:
            cache["cpsat"] = Model(p, deadline)
        except (Unsupported, _BuildTimeout):
            cache["cpsat"] = None
    return cache["cpsat"]
