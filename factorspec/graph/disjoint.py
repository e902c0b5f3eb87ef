"""When can no value match two schemas? The test that lets `oneOf` compile as a plain union.

A `oneOf` whose alternatives are pairwise disjoint is exactly their union, with no negation.
This module proves disjointness from the schemas themselves (never from a layout), per JSON type:
two alternatives are disjoint on type t when one excludes t, when some conjunct of each (allOf
and `$ref` flattened) rules the other out (number ranges, length and count ranges, patterns whose
intersection is empty, finite values the other rejects, array items), when a property one of them
requires has disjoint value schemas in the two (closed objects give `false` for an undeclared
key), or when every member of an `anyOf`/`oneOf` inside one is disjoint from the other.
Every answer is an over-approximation of the overlap: `True` means provably disjoint, `False`
only "not proven" (the caller then negates, or refuses). `restrict` says exactly whether a schema
admits all, none or some of the values of one type; `exclusive_plan` uses it to drop the types
where two alternatives admit every value (no such value matches exactly one).
Pure dict work, like `all_of.py` and `negation.py`: no layout, no solver."""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Optional

from factorspec.errors import SpecError
from factorspec.graph.regex_lang import StringLang, all_patterns_lang, pattern_lang

TYPES = ("null", "boolean", "object", "array", "string", "number")
MAX_DEPTH = 6  # nested property/item schemas looked into; past it: "not proven"
MAX_CONJUNCTS = 64


@dataclass(frozen=True)
class Vocabulary:
    """What the schema compiler knows about keywords (passed in: schema.py imports this module)."""

    validation: frozenset[str]
    keyword_type: dict[str, str]  # a type-specific keyword -> the one JSON type it constrains
    noop: Callable[[str, Any], bool]
    normalise: Callable[[dict], dict]  # draft-04 exclusive bounds -> numeric form


def json_type(v: Any) -> str:
    """The JSON type name of a Python JSON value (integers and fractions are "number")."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float, Fraction)):
        return "number"
    if isinstance(v, str):
        return "string"
    return "array" if isinstance(v, list) else "object"


def _canon(v: Any) -> str:
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (int, float, Fraction)):
        return "n" + str(Fraction(str(v)) if isinstance(v, float) else Fraction(v))
    if isinstance(v, list):
        return "[" + ",".join(_canon(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ",".join(json.dumps(k) + ":" + _canon(x) for k, x in sorted(v.items())) + "}"
    return repr(v)


def _number(v: Any) -> Optional[Fraction]:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        return Fraction(str(v)) if isinstance(v, float) else Fraction(v)
    except (ValueError, OverflowError):
        return None


def _count(v: Any) -> Optional[int]:
    if isinstance(v, bool):
        return None
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return v if isinstance(v, int) and v >= 0 else None


_META = set("\\.^$|?*+()[]{}")


def _anchored_literal(p: str) -> Optional[str]:
    """The one string `^literal$` matches (no metacharacter inside), else None."""
    if len(p) >= 2 and p[0] == "^" and p[-1] == "$" and not (set(p[1:-1]) & _META):
        return p[1:-1]
    return None


class Overlaps:
    """Disjointness of schemas of one document (local `$ref`s resolved by `resolve`).
    `refs_alone`: drafts 4 to 7 ignore every keyword beside `$ref`."""

    def __init__(self, vocab: Vocabulary, resolve: Callable[[Any, str], tuple[Any, str]], refs_alone: bool) -> None:
        self.v, self.resolve, self.refs_alone = vocab, resolve, refs_alone
        self._memo: dict[tuple, tuple[Any, Any, bool]] = {}  # keeps a and b alive: ids stay theirs
        self._patterns: dict[tuple[str, str, int], bool] = {}
        self._langs: dict[Any, Optional[StringLang]] = {}

    # -- views of a schema ------------------------------------------------------------------------
    def _keys(self, x: dict) -> list[str]:
        return [k for k in x if k in self.v.validation and not self.v.noop(k, x[k])]

    def conjuncts(self, a: Any) -> tuple[list[Any], bool]:
        """Schemas without allOf/`$ref` whose conjunction is `a` (False among them if `a` admits
        nothing), and whether the list is complete (a `$ref` that does not resolve is left out)."""
        out: list[Any] = []
        stack, complete, seen = [a], True, 0
        while stack:
            x = stack.pop()
            seen += 1
            if seen > MAX_CONJUNCTS:
                return out, False
            if x is True:
                continue
            if x is False:
                return [False], True
            if not isinstance(x, dict):
                complete = False
                continue
            x = self.v.normalise(x)
            keys = self._keys(x)
            if "$ref" in keys:
                try:
                    target = self.resolve(x["$ref"], "")[0]
                except SpecError:
                    complete = False
                    continue
                stack.append(target)
                if self.refs_alone:
                    continue
            plain = {k: x[k] for k in keys if k not in ("allOf", "$ref")}
            if plain:
                out.append(plain)
            if isinstance(x.get("allOf"), list) and "allOf" in keys:
                stack.extend(x["allOf"])
        return out, complete

    # -- one type ---------------------------------------------------------------------------------
    def restrict(self, a: Any, t: str, depth: int = 0) -> Optional[bool]:
        """Exactly: True when `a` admits every value of JSON type t (integers are numbers), False
        when it admits none, None when some or unknown."""
        if depth > MAX_DEPTH:
            return None
        cs, complete = self.conjuncts(a)
        out: Optional[bool] = True
        for c in cs:
            if c is False:
                return False
            r = self._restrict_plain(c, t, depth)
            if r is False:
                return False
            if r is None:
                out = None
        return out if complete else (None if out is True else out)

    def _restrict_plain(self, c: dict, t: str, depth: int) -> Optional[bool]:
        out: Optional[bool] = True
        for k, v in c.items():
            if k == "type":
                ts = [v] if isinstance(v, str) else v
                if not isinstance(ts, list) or not all(isinstance(x, str) for x in ts):
                    return None
                if t not in {"number" if x == "integer" else x for x in ts}:
                    return False
                if t == "number" and "number" not in ts:
                    out = None
            elif k in ("enum", "const"):
                vals = [v] if k == "const" else v
                if not isinstance(vals, list):
                    return None
                if not any(json_type(x) == t for x in vals):
                    return False
                out = None
            elif k in self.v.keyword_type:
                if self.v.keyword_type[k] == t:
                    out = None
            elif k in ("anyOf", "oneOf"):
                if not isinstance(v, list) or not v:
                    return None
                rs = [self.restrict(m, t, depth + 1) for m in v]
                if all(r is False for r in rs):
                    return False
                if k == "oneOf" and rs.count(True) >= 2:
                    return False  # every value of type t matches two alternatives: none matches one
                full = any(r is True for r in rs) if k == "anyOf" else \
                    rs.count(True) == 1 and rs.count(False) == len(rs) - 1
                if not full:
                    out = None
            elif k == "not":
                r = self.restrict(v, t, depth + 1)
                if r is True:
                    return False
                if r is None:
                    out = None
            elif k == "if":
                ri = self.restrict(v, t, depth + 1)
                rt = self.restrict(c.get("then", True), t, depth + 1)
                re = self.restrict(c.get("else", True), t, depth + 1)
                r = rt if ri is True else re if ri is False else rt if rt == re else None
                if r is False:
                    return False
                if r is None:
                    out = None
            elif k in ("then", "else"):
                continue  # read with `if` (without it they constrain nothing)
            else:
                out = None
        return out

    def implied(self, parent: dict, a: Any, t: str) -> bool:
        """Every value of type t that `parent` admits also matches `a`: each conjunct of `a` is
        `required` names the parent requires too, or a keyword the parent has with the same value
        (outside the properties group, whose keywords depend on each other), or nothing for t."""
        ca, complete = self.conjuncts(a)
        cp, _ = self.conjuncts(parent)
        if not complete or False in ca:
            return False
        need = {n for c in cp if isinstance(c.get("required"), list) for n in c["required"]}
        group = {"properties", "patternProperties", "additionalProperties"}
        for c in ca:
            rest: dict = {}
            for k, v in c.items():
                if k == "required" and isinstance(v, list) and set(v) <= need:
                    continue
                if k not in group and any(p.get(k) == v for p in cp):
                    continue
                rest[k] = v
            if rest and self._restrict_plain(rest, t, 0) is not True:
                return False
        return True

    # -- two schemas ------------------------------------------------------------------------------
    def disjoint_any(self, a: Any, b: Any, depth: int = 0) -> bool:
        """No value of any type matches both."""
        return all(self.disjoint(a, b, t, depth) for t in TYPES)

    def disjoint(self, a: Any, b: Any, t: str, depth: int = 0) -> bool:
        """No value of JSON type t matches both `a` and `b` (True only when proven)."""
        if depth > MAX_DEPTH:
            return False
        key = (id(a), id(b), t)
        hit = self._memo.get(key)
        if hit is not None:
            return hit[2]
        self._memo[key] = (a, b, False)  # a cycle through $ref: not proven
        out = self._disjoint(a, b, t, depth)
        self._memo[key] = (a, b, out)
        return out

    def _disjoint(self, a: Any, b: Any, t: str, depth: int) -> bool:
        if self.restrict(a, t, depth) is False or self.restrict(b, t, depth) is False:
            return True
        ca, _ = self.conjuncts(a)
        cb, _ = self.conjuncts(b)
        if False in ca or False in cb:
            return True
        for x in ca:
            for y in cb:
                if self._plain_disjoint(x, y, t, depth):
                    return True
        for cs, other in ((ca, b), (cb, a)):
            for x in cs:
                for k in ("anyOf", "oneOf"):
                    ms = x.get(k)
                    if isinstance(ms, list) and ms and all(self.disjoint(m, other, t, depth + 1) for m in ms):
                        return True
        if t == "object" and self._objects_disjoint(ca, cb, depth):
            return True
        return self._values_disjoint(ca, cb, t) or self._values_disjoint(cb, ca, t)

    def _values_disjoint(self, ca: list, cb: list, t: str) -> bool:
        """`a` has finite values of type t, and each is rejected by `a` or `b` for sure."""
        for x in ca:
            vals = [x["const"]] if "const" in x else x.get("enum") if "enum" in x else None
            if isinstance(vals, list):
                return all(any(self._rejects(c, v) for c in ca + cb) for v in vals if json_type(v) == t)
        return False

    def _rejects(self, c: dict, v: Any) -> bool:
        """The plain conjunct `c` surely rejects the value `v`."""
        t = json_type(v)
        if self._restrict_plain_type(c, v) is False:
            return True
        if "enum" in c and isinstance(c["enum"], list) and _canon(v) not in {_canon(x) for x in c["enum"]}:
            return True
        if "const" in c and _canon(v) != _canon(c["const"]):
            return True
        if t == "number" and not self._in_range(c, _number(v)):
            return True
        if t == "string":
            lo, hi = self._length(c, "minLength", "maxLength")
            if len(v) < lo or (hi is not None and len(v) > hi):
                return True
            p = c.get("pattern")
            if isinstance(p, str) and self._matches(p, v) is False:
                return True
        if "not" in c and self._accepts(c["not"], v):
            return True
        return False

    def _restrict_plain_type(self, c: dict, v: Any) -> Optional[bool]:
        ts = c.get("type")
        ts = [ts] if isinstance(ts, str) else ts
        if not isinstance(ts, list):
            return None
        t = json_type(v)
        if t == "number" and "number" not in ts and "integer" in ts:
            n = _number(v)
            return n is not None and n.denominator == 1
        return t in ts

    def _accepts(self, x: Any, v: Any) -> bool:
        """`x` surely admits `v` (only simple keywords are read; anything else: not sure)."""
        cs, complete = self.conjuncts(x)
        if not complete or False in cs:
            return False
        simple = {"type", "enum", "const", "minLength", "maxLength", "pattern", "minimum", "maximum",
                  "exclusiveMinimum", "exclusiveMaximum"}
        for c in cs:
            if not set(c) <= simple or self._rejects(c, v):
                return False
            if "pattern" in c and isinstance(v, str) and self._matches(c["pattern"], v) is not True:
                return False
        return True

    # -- per-type ranges --------------------------------------------------------------------------
    def _range(self, *cs: dict) -> tuple[Optional[Fraction], bool, Optional[Fraction], bool]:
        """The tightest number bounds of the conjuncts `cs` together: (lo, lo open, hi, hi open)."""
        lo, lo_open, hi, hi_open = None, False, None, False
        for c in cs:
            for k, opn in (("minimum", False), ("exclusiveMinimum", True)):
                n = _number(c.get(k))
                if n is not None and (lo is None or n > lo or (n == lo and opn)):
                    lo, lo_open = n, opn
            for k, opn in (("maximum", False), ("exclusiveMaximum", True)):
                n = _number(c.get(k))
                if n is not None and (hi is None or n < hi or (n == hi and opn)):
                    hi, hi_open = n, opn
        return lo, lo_open, hi, hi_open

    def _in_range(self, c: dict, n: Optional[Fraction]) -> bool:
        if n is None:
            return True
        lo, lo_open, hi, hi_open = self._range(c)
        if lo is not None and (n < lo or (lo_open and n == lo)):
            return False
        return not (hi is not None and (n > hi or (hi_open and n == hi)))

    def _length(self, c: dict, lo_kw: str, hi_kw: str) -> tuple[int, Optional[int]]:
        lo = _count(c.get(lo_kw)) or 0
        return lo, _count(c.get(hi_kw))

    def _plain_disjoint(self, x: dict, y: dict, t: str, depth: int) -> bool:
        if t == "number":
            nlo, lo_open, nhi, hi_open = self._range(x, y)
            return nlo is not None and nhi is not None and (nlo > nhi or (nlo == nhi and (lo_open or hi_open)))
        pairs = {"string": ("minLength", "maxLength"), "array": ("minItems", "maxItems"),
                 "object": ("minProperties", "maxProperties")}
        if t in pairs:
            cxl, cxh = self._length(x, *pairs[t])
            cyl, cyh = self._length(y, *pairs[t])
            top = min((h for h in (cxh, cyh) if h is not None), default=None)
            if top is not None and max(cxl, cyl) > top:
                return True
        if t == "string":
            ps = [p for p in (x.get("pattern"), y.get("pattern")) if isinstance(p, str)]
            if len(ps) == 2 and ps[0] != ps[1]:
                least = max(self._length(x, "minLength", "maxLength")[0], self._length(y, "minLength", "maxLength")[0])
                return self._patterns_disjoint(ps[0], ps[1], least)
        if t == "array":
            ix, iy = x.get("items"), y.get("items")
            if isinstance(ix, (dict, bool)) and isinstance(iy, (dict, bool)) and \
                    max(self._length(x, "minItems", "maxItems")[0], self._length(y, "minItems", "maxItems")[0]) > 0:
                return self.disjoint_any(ix, iy, depth + 1)
        return False

    def _matches(self, p: Any, v: str) -> Optional[bool]:
        """Whether pattern p finds a match in v (None: p does not compile here)."""
        if p not in self._langs:
            try:
                self._langs[p] = pattern_lang(p, "") if isinstance(p, str) else None
            except SpecError:
                self._langs[p] = None
        lang = self._langs[p]
        return None if lang is None else lang.matches(v)

    def _patterns_disjoint(self, p: str, q: str, least: int) -> bool:
        """No string of at least `least` characters matches both patterns (memoised: a oneOf of n
        alternatives asks n^2 times)."""
        key = (p, q, least) if p < q else (q, p, least)
        if key not in self._patterns:
            lp, lq = _anchored_literal(p), _anchored_literal(q)
            if lp is not None and lq is not None:
                self._patterns[key] = lp != lq or len(lp) < least
            else:
                try:
                    self._patterns[key] = all_patterns_lang([p, q], "", least).empty()
                except SpecError:
                    self._patterns[key] = False
        return self._patterns[key]

    # -- objects ----------------------------------------------------------------------------------
    def _member_schema(self, c: dict, k: str) -> Any:
        """The schema a member named k must match under the plain conjunct `c` (False: k is not
        allowed), or True when `c` says nothing sure about it."""
        props = c.get("properties")
        if isinstance(props, dict) and k in props:
            return props[k]
        pats = c.get("patternProperties")
        if isinstance(pats, dict) and pats:
            for p, x in pats.items():
                m = self._matches(p, k)
                if m is None:
                    return True
                if m:
                    return x
        return c.get("additionalProperties", True)

    def _objects_disjoint(self, ca: list, cb: list, depth: int) -> bool:
        """A property one side requires has disjoint value schemas on the two sides."""
        names: list[str] = []
        for c in ca + cb:
            r = c.get("required")
            if isinstance(r, list):
                names += [n for n in r if isinstance(n, str) and n not in names]
        for k in names:
            xs = [self._member_schema(c, k) for c in ca]
            ys = [self._member_schema(c, k) for c in cb]
            for x in xs:
                for y in ys:
                    if x is True or y is True:
                        continue
                    if x is False or y is False or self.disjoint_any(x, y, depth + 1):
                        return True
        return False


@dataclass
class Plan:
    """How a oneOf compiles as a union: the types no value of which matches exactly one
    alternative (to be excluded), or the first pair not proven disjoint."""

    excluded: list[str]
    why: list[str]  # per excluded type, which alternatives every value of it matches
    pair: Optional[tuple[int, int, str]] = None  # (i, j, type) when not proven


def exclusive_plan(ov: Overlaps, alts: list, parent: dict) -> Plan:
    """Per JSON type the parent admits: two or more alternatives admitting every value of the
    type exclude it; else every pair of alternatives admitting some value must be disjoint on it
    (within the parent's other keywords)."""
    excluded: list[str] = []
    why: list[str] = []
    for t in TYPES:
        if ov.restrict(parent, t) is False:
            continue
        rs = [ov.restrict(a, t) for a in alts]
        live = [i for i, r in enumerate(rs) if r is not False]
        held = [i for i in live if rs[i] is True or ov.implied(parent, alts[i], t)]
        if len(held) >= 2:
            excluded.append(t)
            why.append(f"every {t} value {'that the keywords beside oneOf admit ' if parent else ''}matches "
                       f"alternatives {', '.join(f'#{i}' for i in held)}")
            continue
        for n, i in enumerate(live):
            for j in live[n + 1:]:
                if not ov.disjoint({"allOf": [alts[i], parent]}, {"allOf": [alts[j], parent]}, t):
                    return Plan(excluded, why, (i, j, t))
    return Plan(excluded, why)
