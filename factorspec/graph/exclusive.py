"""oneOf with overlapping alternatives, exactly: "alternative i and no other", with each other
alternative first reduced to what can still tell it apart from i.

oneOf[A1..An] (beside keywords R) is anyOf over i of allOf[R, Ai, not Aj for every j != i]; the
terms are pairwise disjoint, so no value is admitted twice and none is lost. Negating every Aj
whole (negation.py) explodes or meets complements FactorSpec cannot compile (recursive `$ref`,
patterns, numbers minus values...). Within the values of R and Ai, Aj is equivalent to its
*residual*: the conjuncts of Aj that R and Ai do not already imply (same keyword with the same
value, required names already required, a type set that covers Ai's types, a keyword for a type Ai
never has, an anyOf member Ai implies, members of anyOf/oneOf that Ai rules out, and, property by
property, a value schema reduced against Ai's own for that property). So the term only needs
`not residual`. A pair proven disjoint (disjoint.py) needs no negation; a residual that is empty
(Ai implies Aj) makes term i empty (every value of Ai also matches Aj).
Every step keeps the equivalence within Ai: nothing is approximated here. Pure dict work."""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from factorspec.errors import SpecError
from factorspec.graph.disjoint import TYPES, Overlaps, _number

MAX_EXCLUSIVE_ALTERNATIVES = 32  # a oneOf negated pairwise: n * (n - 1) residuals
MAX_RESIDUAL_DEPTH = 8  # property schemas reduced against each other, nested
_GROUP = {"properties", "patternProperties", "additionalProperties"}
_OPAQUE = {"unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$recursiveRef"}


def _same(a: Any, b: Any) -> bool:
    return a is b or json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def _types(v: Any) -> set[str] | None:
    ts = [v] if isinstance(v, str) else v
    if not isinstance(ts, list) or not all(isinstance(t, str) for t in ts):
        return None
    return set(ts)


class Residuals:
    """Residuals of schemas relative to others of one document (disjointness from `ov`)."""

    def __init__(self, ov: Overlaps) -> None:
        self.ov = ov

    def live_types(self, a: Any) -> set[str]:
        """The JSON types of which `a` may admit some value (integers are numbers)."""
        return {t for t in TYPES if self.ov.restrict(a, t) is not False}

    def disjoint(self, a: Any, b: Any, types: set[str]) -> bool:
        return all(self.ov.disjoint(a, b, t) for t in types)

    def residual(self, given: Any, b: Any, depth: int = 0) -> Any:
        """A schema that, on every value `given` admits, accepts exactly what `b` accepts (True:
        `given` implies `b`; False: no value of `given` matches `b`)."""
        types = self.live_types(given)
        if not types or self.disjoint(given, b, types):
            return False
        cb, complete = self.ov.conjuncts(b)
        if False in cb:
            return False
        if not complete:
            return b
        cg, _ = self.ov.conjuncts(given)
        out: list[Any] = []
        for c in cb:
            r = self._reduce(cg, types, given, c, depth)
            if r is False:
                return False
            if r is not True:
                out.append(r)
        if not out:
            return True
        return out[0] if len(out) == 1 else {"allOf": out}

    def _reduce(self, cg: list[dict], types: set[str], given: Any, c: dict, depth: int) -> Any:
        """One plain conjunct of b (no allOf, no $ref), less what `given` implies."""
        if any(k in _OPAQUE for k in c) or any(_same(c, g) for g in cg):
            return True if any(_same(c, g) for g in cg) else c
        out: dict[str, Any] = {}
        group = {k: c[k] for k in c if k in _GROUP}
        for k, v in c.items():
            if k in _GROUP:
                continue
            if k in ("then", "else") and "if" in c:
                continue  # with `if`
            if k == "if":
                cond = {kk: c[kk] for kk in ("if", "then", "else") if kk in c}
                if not any(all(_same(g.get(kk), cond.get(kk)) for kk in ("if", "then", "else")) for g in cg):
                    out.update(cond)
                continue
            kt = self.ov.v.keyword_type.get(k)
            if kt is not None and ("number" if kt == "integer" else kt) not in types:
                continue  # constrains a type `given` never has
            if k != "required" and any(_same(g.get(k, _MISSING), v) for g in cg):
                continue
            r = self._keyword(cg, types, given, k, v, depth)
            if r is False:
                return False
            if r is not True:
                out.update(r)
        if group and "object" in types:
            r = self._members(cg, group, depth)
            if r is False:
                return False
            if r is not True:
                out.update(r)
        return out if out else True

    def _keyword(self, cg: list[dict], types: set[str], given: Any, k: str, v: Any, depth: int) -> Any:
        """The residual of one keyword as a dict of keywords, or True (implied) / False (never)."""
        if k == "type":
            ts = _types(v)
            if ts is None:
                return {k: v}
            if "number" in ts:
                ts = ts | {"integer"}
            have = set(types)
            if "number" in have and "number" not in ts:
                if "integer" in ts and any("integer" in (_types(g.get("type")) or set()) and
                                           "number" not in (_types(g.get("type")) or set()) for g in cg):
                    have.discard("number")
                else:
                    return {k: v}
            return True if have - {"number"} <= ts else {k: v}
        if k == "required":
            if not isinstance(v, list):
                return {k: v}
            need = {n for g in cg if isinstance(g.get("required"), list) for n in g["required"]}
            rest = [n for n in v if n not in need]
            return {k: rest} if rest else True
        if k in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
            n = _number(v)
            if n is None:
                return {k: v}
            lo, lo_open, hi, hi_open = self.ov._range(*cg)
            if k.endswith("inimum") and lo is not None and (lo > n or (lo == n and (lo_open or k == "minimum"))):
                return True
            if k.endswith("aximum") and hi is not None and (hi < n or (hi == n and (hi_open or k == "maximum"))):
                return True
            return {k: v}
        if k in ("anyOf", "oneOf") and isinstance(v, list) and v:
            if depth >= MAX_RESIDUAL_DEPTH:
                return {k: v}
            # members `given` rules out never match within it; one `given` implies satisfies anyOf
            # (within `given` each member is equivalent to its residual, so anyOf/oneOf of the
            # residuals is equivalent to the keyword there)
            kept: list[Any] = []
            for m in v:
                r = self.residual(given, m, depth + 1)
                if r is False:
                    continue
                if r is True and k == "anyOf":
                    return True
                kept.append(r)
            if not kept:
                return False
            if k == "oneOf" and kept.count(True) > 1:
                return False
            if len(kept) == 1:
                return kept[0] if isinstance(kept[0], bool) else {"allOf": [kept[0]]}
            if k == "oneOf" and all(self.ov.disjoint_any(kept[x], kept[y]) for x in range(len(kept))
                                    for y in range(x + 1, len(kept))):
                k = "anyOf"  # no two match one value: exactly one is some one (negated without pairs)
            return {k: [{} if m is True else m for m in kept]}
        return {k: v}

    def _members(self, cg: list[dict], group: dict, depth: int) -> Any:
        """properties (with patternProperties/additionalProperties) of b, less what `given`
        implies: a property's schema reduced against `given`'s for the same name; without
        patternProperties/additionalProperties, a name `given` implies (or never allows) dropped."""
        props = group.get("properties")
        if not isinstance(props, dict):
            return dict(group)
        open_group = set(group) == {"properties"} or (set(group) == {"properties", "additionalProperties"}
                                                      and group["additionalProperties"] is True)
        out: dict[str, Any] = {}
        for name, sub in props.items():
            theirs = [g["properties"][name] for g in cg if isinstance(g.get("properties"), dict)
                      and name in g["properties"]]
            closed = any(g.get("additionalProperties") is False and not g.get("patternProperties")
                         and name not in (g.get("properties") or {}) for g in cg)
            red: Any = sub
            if closed or any(s is False for s in theirs):
                red = True  # the name never occurs within `given`
            elif depth < MAX_RESIDUAL_DEPTH:
                for s in theirs:
                    red = self.residual(s, red, depth + 1)
                    if isinstance(red, bool):
                        break
            if red is True and open_group:
                continue
            out[name] = {} if red is True else red
        if open_group:
            if not out:
                return True
            return {"properties": out}
        return {**group, "properties": out}


_MISSING = object()
MAX_VALUE_DEPTH = 16  # schemas read against one concrete value, nested (past it: "not sure")


def surely_rejects(ov: Overlaps, schema: Any, v: Any, depth: int = 0) -> bool:
    """True only if `schema` rejects the concrete JSON value `v` (one conjunct that rejects it for
    sure: a scalar keyword (disjoint.Overlaps._rejects), a missing required name, a property
    whose schema rejects its value, a key that additionalProperties false (without
    patternProperties) forbids or whose value additionalProperties rejects, a property count, an
    anyOf/oneOf all of whose members reject it). Anything else: False (not sure)."""
    if depth > MAX_VALUE_DEPTH:
        return False
    cs, _ = ov.conjuncts(schema)
    for c in cs:
        if c is False or ov._rejects(c, v):
            return True
        for k in ("anyOf", "oneOf"):
            if isinstance(c.get(k), list) and c[k] and all(surely_rejects(ov, m, v, depth + 1) for m in c[k]):
                return True
        if not isinstance(v, dict) or ov._restrict_plain_type(c, v) is False:
            continue
        req = c.get("required")
        if isinstance(req, list) and any(isinstance(n, str) and n not in v for n in req):
            return True
        for kw, hi in (("minProperties", False), ("maxProperties", True)):
            n = c.get(kw)
            if isinstance(n, int) and not isinstance(n, bool) and (len(v) > n if hi else len(v) < n):
                return True
        props = c.get("properties", {})
        if not isinstance(props, dict):
            continue
        if any(k in props and surely_rejects(ov, props[k], x, depth + 1) for k, x in v.items()):
            return True
        if "patternProperties" not in c and "additionalProperties" in c:
            ap = c["additionalProperties"]
            if any(k not in props and (ap is False or surely_rejects(ov, ap, x, depth + 1)) for k, x in v.items()):
                return True
    return False


def _fusable(r: Any) -> bool:
    """`r` is one plain conjunct whose object keywords are `required`/`properties` only."""
    if not isinstance(r, dict) or not r or set(r) & (_GROUP - {"properties"} | {"allOf", "$ref", "if", "then",
                                                                                  "else"} | _OPAQUE):
        return False
    props, req = r.get("properties", {}), r.get("required", [])
    return isinstance(props, dict) and isinstance(req, list) and all(isinstance(n, str) for n in req)


def _negated(r: Any, keys: set[str] | None = None) -> Any:
    """`not r`, with the complement of `required` and `properties` fused per name where `r` is
    `_fusable`: "n absent or its value fails P[n]" is one optional property of schema `not P[n]`
    (one layout alternative, not two), and "n present with a value failing P[n]" for the
    optional ones. Else `{"not": r}`. With `keys` (the only keys the alternative's closed layout
    writes): a required name outside them is absent from every such value, so `not r` holds
    (True), and an optional one outside them never fails."""
    if not _fusable(r):
        return {"not": r}
    props, req = r.get("properties", {}), r.get("required", [])
    parts: list[Any] = [{"not": {k: v}} for k, v in r.items() if k not in ("required", "properties")]
    for n in dict.fromkeys(req):
        if keys is not None and n not in keys:
            return True
        sub = props.get(n, True)
        parts.append({"type": "object", "properties": {n: False if sub is True else {"not": sub}}})
    for n, sub in props.items():
        if n not in req and sub is not True and sub != {} and (keys is None or n in keys):
            parts.append({"type": "object", "required": [n], "properties": {n: {"not": sub}}})
    if not parts:
        return False
    return parts[0] if len(parts) == 1 else {"anyOf": parts}


def exclusive_terms(ov: Overlaps, alts: list, rest: dict, ptr: str,
                    layout_keys: list[set[str] | None] | None = None,
                    values: list[list | None] | None = None,
                    matches: Callable[[int, Any], bool] | None = None) -> list[Any]:
    """The terms "alternative i and no other" of a oneOf (each an allOf), the empty ones left out.
    `layout_keys[i]`: the keys alternative i's layout writes where that layout is a closed object
    (schema.py; an object without additionalProperties is closed, docs/spec.md), else None: the
    term is then exact on that layout's values (the oneOf as compiled from closed layouts), like
    schema.SchemaCompiler._separate. `values[i]`: where alternative i is only an enum/const, its
    values; `matches(j, v)`: True only if alternative j (with `rest`) certainly accepts v. A value
    some other alternative accepts is never "i and no other": it is left out of term i (decided
    value by value), and a term left without values is empty. Raises SpecError past
    MAX_EXCLUSIVE_ALTERNATIVES."""
    if len(alts) > MAX_EXCLUSIVE_ALTERNATIVES:
        raise SpecError(f"{ptr}/oneOf", f"a oneOf of {len(alts)} overlapping alternatives (at most "
                        f"{MAX_EXCLUSIVE_ALTERNATIVES} are made exclusive by negation)")
    res = Residuals(ov)
    given = [{"allOf": [a, rest]} if rest else a for a in alts]
    terms: list[Any] = []
    for i, a in enumerate(alts):
        rs: list[Any] = []
        empty = False
        for j, b in enumerate(alts):
            if j == i:
                continue
            r = res.residual(given[i], b)
            if r is False:
                continue
            if r is True:
                empty = True
                break
            rs.append(r)
        if empty:
            continue
        own = values[i] if values is not None else None
        alone: list[Any] = []
        if own is not None:
            others = [j for j in range(len(alts)) if j != i]
            kept = [v for v in own if matches is None or not any(matches(j, v) for j in others)]
            # a value every other alternative rejects for sure is "i and no other" as it is
            alone = [v for v in kept if all(surely_rejects(ov, given[j], v) for j in others)]
            rest_values = [v for v in kept if not any(v is x for x in alone)]
            if not rest_values:
                if alone:
                    terms.append({"enum": alone})
                continue  # the others (if any) also match another alternative
            if len(rest_values) < len(own):
                a = {"enum": rest_values}
        # not r is implied by not r2 where r implies r2 (r2's residual given r is empty): left out
        keep = [r for x, r in enumerate(rs)
                if not any(y != x and (res.residual(r, r2) is True and (res.residual(r2, r) is not True or y < x))
                           for y, r2 in enumerate(rs))]
        keys = layout_keys[i] if layout_keys is not None else None
        if keys is not None and not all(_fusable(r) for r in keep):
            keys = None  # a `not` written whole may declare other keys: no reading by the layout
        nots = [n for n in (_negated(r, keys) for r in keep) if n is not True]
        if alone:
            terms.append({"enum": alone})
        if any(n is False for n in nots):
            continue
        terms.append({"allOf": [a] + nots} if nots else a)
    return terms
