"""`allOf`, merged into one schema before the layout is built.

The layout compiler (`schema.SchemaCompiler`) builds a node from one keyword set, so an `allOf`
is rewritten here as the single schema whose instances are exactly those every member accepts:
bounds tightened, types and enums intersected, `required` united, `multipleOf` by least common
multiple, properties merged per key (a nested `allOf`, merged in turn), `additionalProperties`
applied per member as JSON Schema says (a member's `additionalProperties` judges the keys it does
not list itself). A member with `anyOf`/`oneOf` is distributed over (allOf(X, anyOf(A)) is
anyOf(allOf(X, a) for a in A), and the same for oneOf), dropping the alternatives the rest rules
out. What cannot be merged exactly (`not`, `if`, `patternProperties` beside another member's
object keywords, two different `contains`, ...) is refused naming the member's JSON Pointer.
The merge is pure dict-to-dict work: no layout, no solver."""
from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Optional, Union

from factorspec.errors import EmptySchema, SpecError
from factorspec.graph.negation import (
    OBJECT_LAYERS,
    REGULAR,
    SOME_MEMBER,
    eliminate,
    excluded_values,
    excludes_integers,
    has_conditionals,
    is_value_exclusion,
    make_exclusion,
)
from factorspec.graph.regex_lang import pattern_lang

Resolve = Callable[[Any, str], "tuple[Any, str]"]
MAX_ALTERNATIVES = 64  # distributing allOf over anyOf/oneOf members multiplies alternatives
MAX_EXPLORED = 4096  # combinations tried while distributing (contradicting ones are dropped early)

_LOWER = ("minimum", "exclusiveMinimum")
_UPPER = ("maximum", "exclusiveMaximum")
_MIN_COUNT = ("minLength", "minItems", "minProperties", "minContains")
_MAX_COUNT = ("maxLength", "maxItems", "maxProperties", "maxContains")
# keywords merged only when the members that have them agree exactly
_EQUAL_ONLY = ("prefixItems", "additionalItems", "contains", "unevaluatedItems",
               "unevaluatedProperties", "dependentSchemas")
_REFUSED = ("$dynamicRef", "$recursiveRef")  # not/if/then/else: rewritten first (negation.py)
_OBJECT_KEYS = ("properties", "additionalProperties", "patternProperties", "propertyNames", "required", OBJECT_LAYERS)
_LAYER_KEYS = ("properties", "patternProperties", "additionalProperties")
_TYPES = ("null", "boolean", "object", "array", "number", "integer", "string")


class NoValue(Exception):
    """The members admit no common value (an alternative that the merge drops)."""

    def __init__(self, pointer: str, message: str) -> None:
        super().__init__(message)
        self.pointer, self.message = pointer, message


def merge_all_of(s: dict, ptr: str, resolve: Resolve, normalise: Callable[[dict], dict],
                 validation: set[str]) -> dict:
    """The one schema equal to `s` (which has `allOf`): its own keywords and every member's.

    `resolve(ref, ptr)` resolves a local `$ref` (the layout compiler's own), `normalise` turns a
    member into the keyword forms the merge expects (draft-04 exclusive bounds), `validation` is
    the set of validation keywords (anything else is an annotation and is kept from `s` only).
    Raises SpecError naming a pointer when the members cannot be merged exactly or admit nothing."""
    own = {k: v for k, v in s.items() if k != "allOf"}
    # its own keywords are one more member: a `not`/`if` among them is rewritten like a member's
    members = _member({k: v for k, v in own.items() if k in validation}, ptr, resolve, normalise, set(), validation)
    members += _flatten(s["allOf"], f"{ptr}/allOf", resolve, normalise, set(), validation)
    try:
        merged = _merge_members(members, ptr, _Ctx(validation, lambda m, mp: _member(m, mp, resolve, normalise, set(),
                                                                                     validation)))
    except NoValue as e:
        raise EmptySchema(e.pointer, f"{e.message}: the allOf at {ptr or '/'} admits no value") from None
    merged.update({k: v for k, v in own.items() if k not in validation})
    return merged


def _flatten(items: Any, ptr: str, resolve: Resolve, normalise: Callable[[dict], dict],
             refs: set[str], validation: set[str]) -> list[tuple[dict, str]]:
    if not isinstance(items, list) or not items:
        raise SpecError(ptr, "allOf must be a non-empty list of schemas")
    out: list[tuple[dict, str]] = []
    for i, m in enumerate(items):
        mptr = f"{ptr}/{i}"
        out += _member(m, mptr, resolve, normalise, refs, validation)
    return out


def _member(m: Any, mptr: str, resolve: Resolve, normalise: Callable[[dict], dict],
            refs: set[str], validation: set[str]) -> list[tuple[dict, str]]:
    if m is True:
        return []
    if m is False:
        raise EmptySchema(mptr, "an allOf member is the schema 'false': no value fits")
    if not isinstance(m, dict):
        raise SpecError(mptr, f"a schema must be an object, got {json.dumps(m)[:60]}")
    m = normalise(m)
    if has_conditionals({k: v for k, v in m.items() if k in validation}):  # graph/negation.py
        m = eliminate(m, mptr, resolve, normalise, validation)
    out: list[tuple[dict, str]] = []
    if "$ref" in m:
        ref = m["$ref"]
        if ref in refs:
            raise SpecError(f"{mptr}/$ref", f"recursive reference {ref!r} is not supported")
        target, tptr = resolve(ref, mptr)
        out += _member(target, tptr, resolve, normalise, refs | {ref}, validation)
        m = {k: v for k, v in m.items() if k != "$ref"}
    if "allOf" in m:
        out += _flatten(m["allOf"], f"{mptr}/allOf", resolve, normalise, refs, validation)
        m = {k: v for k, v in m.items() if k != "allOf"}
    return [(m, mptr)] + out


@dataclass
class _Ctx:
    validation: set[str]
    member: Callable[[Any, str], list[tuple[dict, str]]]  # a schema as flattened members ($ref, allOf)
    explored: int = 0  # alternatives tried by _distribute, against MAX_EXPLORED

    def spend(self, mptr: str, kw: str) -> None:
        self.explored += 1
        if self.explored > MAX_EXPLORED:
            raise SpecError(f"{mptr}/{kw}", f"allOf over anyOf/oneOf members: more than {MAX_EXPLORED} "
                            "combinations of alternatives tried")


def _same_once(schemas: list[Any]) -> list[Any]:
    """allOf(X, X) is X: equal schemas kept once. Why beyond speed: two copies of a recursive
    $ref target's keywords would otherwise merge into a new allOf at every level, which no $ref
    cycle check sees, and nest until the depth limit."""
    seen: set[str] = set()
    out = []
    for x in schemas:
        key = json.dumps(x, sort_keys=True, default=str)
        if key not in seen:
            seen.add(key)
            out.append(x)
    return out


def _merge_members(members: list[tuple[dict, str]], ptr: str, ctx: _Ctx) -> dict:
    validation = ctx.validation
    seen: set[str] = set()
    once = []
    for m, mptr in members:
        key = json.dumps(m, sort_keys=True, default=str)
        if key not in seen:
            seen.add(key)
            once.append((m, mptr))
    members = once
    for m, mptr in members:
        for k in _REFUSED:
            if k in m:
                raise SpecError(f"{mptr}/{k}", f"keyword {k!r} inside allOf is not supported")
    unions = [(m, mptr) for m, mptr in members if "anyOf" in m or "oneOf" in m]
    if unions:
        return _distribute(members, unions, ptr, ctx)
    out: dict[str, Any] = {}
    _merge_type(members, out)
    _merge_values(members, out)
    _merge_numbers(members, out)
    _merge_counts(members, out)
    _merge_equal(members, out)
    _merge_patterns(members, out)
    _merge_object(members, out, ptr)
    _merge_items(members, out)
    if any(m.get("uniqueItems") is True for m, _ in members):
        out["uniqueItems"] = True
    _merge_dependencies(members, out)
    some = [c for m, _ in members for c in m.get(SOME_MEMBER, [])]  # each must hold: a list of them
    if some:
        out[SOME_MEMBER] = some
    handled = {"type", "enum", "const", "not", "pattern", REGULAR, SOME_MEMBER, "multipleOf", "uniqueItems", "items",
               "dependentRequired", "dependencies", *_LOWER, *_UPPER, *_MIN_COUNT, *_MAX_COUNT, *_EQUAL_ONLY,
               *_OBJECT_KEYS, "maxProperties", "minProperties"}
    for m, mptr in members:
        for k in m:
            if k in validation and k not in handled:
                raise SpecError(f"{mptr}/{k}", f"keyword {k!r} inside allOf cannot be merged")
    return out


def _distribute(members: list[tuple[dict, str]], unions: list[tuple[dict, str]], ptr: str, ctx: _Ctx) -> dict:
    """allOf(X, anyOf(A), ...) = anyOf(allOf(X, a) for a in A); oneOf likewise (a value in X
    matches exactly one a iff it matches exactly one X-and-a). One union member at a time,
    depth first; a partial choice whose plain keywords already contradict (types, values, a
    required property's values) is dropped before the next union is distributed, so the many
    `if`/`then` members of one allOf cost about their number, not 2 to that power."""
    m, mptr = unions[0]
    if "anyOf" in m and "oneOf" in m:
        raise SpecError(f"{mptr}/oneOf", "keyword 'oneOf' beside 'anyOf' is not supported")
    kw = "anyOf" if "anyOf" in m else "oneOf"
    alts = m[kw]
    if not isinstance(alts, list) or not alts:
        raise SpecError(f"{mptr}/{kw}", f"{kw} must be a non-empty list of schemas")
    rest = [(x, xp) for x, xp in members if xp != mptr or x is not m]
    rest.append(({k: v for k, v in m.items() if k != kw}, mptr))
    kept: list[dict] = []
    last: NoValue | None = None
    for i, a in enumerate(alts):
        aptr = f"{mptr}/{kw}/{i}"
        if a is False:
            continue
        ctx.spend(mptr, kw)
        try:
            cand = rest + ctx.member(a, aptr)
            if any("anyOf" in x or "oneOf" in x for x, _ in cand):
                _merge_members([({k: v for k, v in x.items() if k not in ("anyOf", "oneOf")}, xp)
                                for x, xp in cand], ptr, ctx)  # raises NoValue: prune here
            kept.append(_merge_members(cand, ptr, ctx))
        except NoValue as e:
            last = e  # this alternative contradicts the other members: it admits nothing
        except EmptySchema as e:
            last = NoValue(e.pointer, e.message)
    if not kept:
        assert last is not None
        raise last
    if kw == "anyOf":
        kept = _distinct_alternatives(kept)
    width = sum(_leaves(k) for k in kept)
    if width > MAX_ALTERNATIVES:
        raise SpecError(f"{mptr}/{kw}", f"allOf over anyOf/oneOf members makes {width} alternatives "
                        f"(at most {MAX_ALTERNATIVES} are merged)")
    return kept[0] if len(kept) == 1 else {kw: kept}


def _distinct_alternatives(kept: list[dict]) -> list[dict]:
    """anyOf(a, anyOf(b, c), a) is anyOf(a, b, c): a merged alternative that is a bare anyOf is
    spliced in, and equal alternatives are kept once (by canonical JSON), so that the choices that
    merge to the same schema count once against MAX_ALTERNATIVES. Only for anyOf: oneOf(a, a)
    admits nothing that a admits, so a oneOf's copies must stay."""
    flat: list[dict] = []
    for k in kept:
        if set(k) == {"anyOf"} and isinstance(k["anyOf"], list) and all(isinstance(a, dict) for a in k["anyOf"]):
            flat += k["anyOf"]
        else:
            flat.append(k)
    memo: dict[int, tuple[Any, str]] = {}  # the alternatives share their members' subschemas

    def text(v: Any) -> str:
        """Canonical JSON of `v`, once per object (identity kept alive in `memo`)."""
        if not isinstance(v, (dict, list)):
            return json.dumps(v, sort_keys=True, default=str)
        if id(v) not in memo:
            memo[id(v)] = (v, json.dumps(v, sort_keys=True, default=str))
        return memo[id(v)][1]

    seen: set[str] = set()
    once: list[dict] = []
    for k in flat:
        key = "{" + ",".join(json.dumps(x) + ":" + text(v) for x, v in sorted(k.items())) + "}"
        if key not in seen:
            seen.add(key)
            once.append(k)
    # an alternative inside another (a only adds constraints to b) adds no value to the anyOf:
    # dropped, the first of two equal ones kept (equal ones are gone already)
    forms = [_form(k, text) for k in once]
    return [a for i, a in enumerate(once)
            if not any(j != i and _within(forms[i], forms[j]) for j in range(len(once)))]


_Form = Optional[tuple[dict[str, str], frozenset[str], dict[str, Union[str, bool]]]]


def _form(x: dict, text: Callable[[Any], str]) -> _Form:
    """`x` for `_within`: its keywords but properties/required as canonical JSON (`text`), its required
    names, its properties (canonical JSON, False kept as False); None when it is a union or its
    object keywords are malformed (then never compared)."""
    if "anyOf" in x or "oneOf" in x:
        return None
    req, props = x.get("required", []), x.get("properties", {})
    if not isinstance(req, list) or not isinstance(props, dict):
        return None
    rest = {k: text(v) for k, v in x.items() if k not in ("required", "properties")}
    return rest, frozenset(str(r) for r in req), {k: (False if v is False else text(v)) for k, v in props.items()}


def _within(a: _Form, b: _Form) -> bool:
    """A sufficient, syntactic test that every value `a` admits `b` admits too: `b`'s keywords are
    `a`'s (equal), except that `a` may require more properties and may declare more properties as
    `false` (absent), listed by both or by `a` alone; `additionalProperties` must then be equal or
    absent in both, as it judges the keys a member does not list."""
    if a is None or b is None:
        return False
    (ra, qa, pa), (rb, qb, pb) = a, b
    if ra != rb or not qb <= qa:
        return False
    if any(x not in pa or (pa[x] is not False and pa[x] != v) for x, v in pb.items()):
        return False
    return all(v is False for x, v in pa.items() if x not in pb)


def _leaves(x: dict) -> int:
    for kw in ("anyOf", "oneOf"):
        if isinstance(x.get(kw), list):
            return sum(_leaves(a) if isinstance(a, dict) else 1 for a in x[kw])
    return 1


def _types_of(m: dict, mptr: str) -> set[str] | None:
    t = m.get("type")
    if t is None:
        return None
    ts = [t] if isinstance(t, str) else t
    if not isinstance(ts, list) or not all(isinstance(x, str) and x in _TYPES for x in ts):
        raise SpecError(f"{mptr}/type", f"unknown type {json.dumps(t)[:60]}")
    out = set(ts)
    if "number" in out:
        out.add("integer")
    return out


def _merge_type(members: list[tuple[dict, str]], out: dict) -> None:
    common: set[str] | None = None
    for m, mptr in members:
        ts = _types_of(m, mptr)
        if ts is not None:
            common = ts if common is None else common & ts
            if not common:
                raise NoValue(f"{mptr}/type", "allOf members have no type in common")
    if common is not None:
        names = [t for t in _TYPES if t in common and not (t == "integer" and "number" in common)]
        out["type"] = names[0] if len(names) == 1 else names


def _canon(v: Any) -> str:
    """JSON Schema equality: 1 and 1.0 are equal, true and 1 are not."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (int, float)):
        return "n" + str(Fraction(str(v)) if isinstance(v, float) else Fraction(v))
    if isinstance(v, list):
        return "[" + ",".join(_canon(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ",".join(json.dumps(k) + ":" + _canon(v[k]) for k in sorted(v)) + "}"
    return repr(v)


def _merge_values(members: list[tuple[dict, str]], out: dict) -> None:
    allowed: dict[str, Any] | None = None
    for m, mptr in members:
        for kw in ("const", "enum"):
            if kw not in m:
                continue
            vals = [m[kw]] if kw == "const" else m[kw]
            if not isinstance(vals, list):
                raise SpecError(f"{mptr}/enum", "enum must be a list")
            here = {_canon(v): v for v in vals}
            allowed = here if allowed is None else {c: v for c, v in allowed.items() if c in here}
            if not allowed:
                raise NoValue(f"{mptr}/{kw}", "allOf members have no const/enum value in common")
    excluded: dict[str, Any] = {}  # value exclusions, the one negative form left by negation.py
    integers = False  # every integer excluded (the negation of type integer)
    where = ""
    for m, mptr in members:
        if "not" in m:
            if not is_value_exclusion(m["not"]):
                raise SpecError(f"{mptr}/not", "keyword 'not' inside allOf cannot be merged")
            excluded.update({_canon(v): v for v in excluded_values(m["not"])})
            integers |= excludes_integers(m["not"])
            where = f"{mptr}/not"
    if integers and out.get("type") == "integer":
        raise NoValue(where, "the allOf's integers are all excluded by a 'not'")
    if allowed is not None:
        allowed = {c: v for c, v in allowed.items() if c not in excluded
                   and not (integers and _is_integral(v))}
        if not allowed:
            raise NoValue(where, "every const/enum value of the allOf is excluded by a 'not'")
        out["enum"] = list(allowed.values())
    elif excluded or integers:
        out["not"] = make_exclusion(list(excluded.values()), integers)


def _is_integral(v: Any) -> bool:
    """JSON Schema's integer: a number with no fractional part (1.0 is one, true is not)."""
    if isinstance(v, bool) or not isinstance(v, (int, float, Fraction)):
        return False
    return float(v).is_integer() if isinstance(v, float) else Fraction(v).denominator == 1


def _exact(v: Any, where: str) -> Fraction:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (isinstance(v, float) and not math.isfinite(v)):
        raise SpecError(where, f"must be a finite number, got {json.dumps(v)[:60]}")
    return Fraction(str(v)) if isinstance(v, float) else Fraction(v)


def _merge_numbers(members: list[tuple[dict, str]], out: dict) -> None:
    for kws, pick in ((_LOWER, max), (_UPPER, min)):
        for kw in kws:
            vals = [(_exact(m[kw], f"{mptr}/{kw}"), m[kw]) for m, mptr in members if kw in m]
            if vals:
                out[kw] = pick(vals, key=lambda p: p[0])[1]
    steps = [(_exact(m["multipleOf"], f"{mptr}/multipleOf"), mptr) for m, mptr in members if "multipleOf" in m]
    if steps:
        lcm = steps[0][0]
        for q, qptr in steps[1:]:
            if q <= 0 or lcm <= 0:
                raise SpecError(f"{qptr}/multipleOf", "multipleOf must be positive")
            lcm = Fraction(math.lcm(lcm.numerator * q.denominator, q.numerator * lcm.denominator),
                           lcm.denominator * q.denominator)
        if lcm.denominator == 1:
            out["multipleOf"] = int(lcm)
        elif Fraction(str(float(lcm))) == lcm:
            out["multipleOf"] = float(lcm)
        else:
            raise SpecError(f"{steps[-1][1]}/multipleOf", f"the allOf members' common multipleOf ({lcm}) is not "
                            "a decimal number")


def _merge_counts(members: list[tuple[dict, str]], out: dict) -> None:
    for kws, pick in ((_MIN_COUNT, max), (_MAX_COUNT, min)):
        for kw in kws:
            vals = [m[kw] for m, _ in members if kw in m]
            if vals:
                out[kw] = pick(vals)


def _merge_equal(members: list[tuple[dict, str]], out: dict) -> None:
    for kw in _EQUAL_ONLY:
        have = [(m[kw], mptr) for m, mptr in members if kw in m]
        for v, vptr in have[1:]:
            if _canon(v) != _canon(have[0][0]):
                raise SpecError(f"{vptr}/{kw}", f"two different {kw!r} inside allOf cannot be merged exactly")
        if have:
            out[kw] = have[0][0]


def _merge_patterns(members: list[tuple[dict, str]], out: dict) -> None:
    """Patterns all apply (a product of their automata, regex_lang.py); a negated pattern (from
    negation.py) must not match: one `pattern`, or the internal REGULAR keyword for the rest."""
    pos: list[str] = []
    neg: list[str] = []
    for m, mptr in members:
        if "pattern" in m:
            if not isinstance(m["pattern"], str):
                raise SpecError(f"{mptr}/pattern", "pattern must be a string")
            pos.append(m["pattern"])
        r = m.get(REGULAR)
        if isinstance(r, dict):
            pos += list(r.get("all", []))
            neg += list(r.get("none", []))
    pos, neg = list(dict.fromkeys(pos)), list(dict.fromkeys(neg))
    if len(pos) == 1 and not neg:
        out["pattern"] = pos[0]
    elif pos or neg:
        out[REGULAR] = {"all": pos, "none": neg}


def _merge_object(members: list[tuple[dict, str]], out: dict, ptr: str) -> None:
    # propertyNames judges every key of the instance, whatever the other keywords say: the merged
    # object's is the allOf of the members' (exact), and the rest merges without it
    names = [m["propertyNames"] for m, _ in members if "propertyNames" in m and m["propertyNames"] is not True]
    if names:
        members = [({k: v for k, v in m.items() if k != "propertyNames"}, mptr) for m, mptr in members]
        out["propertyNames"] = names[0] if len(names) == 1 else {"allOf": names}
    objs = [(m, mptr) for m, mptr in members if any(k in m for k in _OBJECT_KEYS if k != "required")]
    required: list[str] = []
    for m, mptr in members:
        req = m.get("required", [])
        if not isinstance(req, list):
            raise SpecError(f"{mptr}/required", "required must be a list of names")
        required += [k for k in req if k not in required]
    patterned = [(m, mptr) for m, mptr in objs if "patternProperties" in m or OBJECT_LAYERS in m]
    if patterned and (len(objs) > 1 or OBJECT_LAYERS in patterned[0][0]):
        out[OBJECT_LAYERS] = _layers(objs, required, ptr)
    elif patterned:
        m, _ = objs[0]
        for k in _OBJECT_KEYS:
            if k in m and k != "required":
                out[k] = m[k]
    elif objs:
        keys: list[str] = []
        for m, mptr in objs:
            props = m.get("properties", {})
            if not isinstance(props, dict):
                raise SpecError(f"{mptr}/properties", "properties must be an object")
            keys += [k for k in props if k not in keys]
        keys += [k for k in required if k not in keys]  # required but declared by no member
        props_out: dict[str, Any] = {}
        for k in keys:
            parts: list[Any] = []
            forbidden: str | None = None
            for m, mptr in objs:
                props = m.get("properties", {})
                if k in props:
                    parts.append(props[k])
                elif m.get("additionalProperties", True) is False:
                    forbidden = mptr
                    break
                elif "additionalProperties" in m and m["additionalProperties"] is not True:
                    parts.append(m["additionalProperties"])
            parts = _same_once([p for p in parts if p is not True and p != {}])
            if forbidden is not None or False in parts:
                if k in required and forbidden is None:
                    raise NoValue(f"{ptr}/properties/{k}", f"property {k!r} is required but an allOf member "
                                  "(or a 'not' over 'required') admits no value for it")
                if k in required:
                    raise NoValue(f"{forbidden}/additionalProperties", f"property {k!r} is required but "
                                  "this allOf member's additionalProperties false forbids it (a member's "
                                  "additionalProperties judges the properties it does not list itself)")
                if forbidden is None:
                    props_out[k] = False  # declared as admitting nothing: else extra members would take it
                continue  # forbidden by a member: the merged object cannot have it
            values = _common_values(parts) if len(parts) > 1 else None
            if values is not None and not values:
                if k in required:
                    raise NoValue(f"{ptr}/properties/{k}", f"allOf members give required property {k!r} no "
                                  "const/enum value in common")
                props_out[k] = False  # no value fits: the merged object cannot have it (nor an extra member)
                continue
            if values is not None:
                props_out[k] = {"enum": values}
                continue
            props_out[k] = parts[0] if len(parts) == 1 else ({"allOf": parts} if parts else True)
        out["properties"] = props_out
        # JSON Schema reads an absent additionalProperties as true; the layout policy closes an
        # object without the keyword (docs/spec.md), so the merge keeps "absent" apart from "true"
        given = [m["additionalProperties"] for m, _ in objs if "additionalProperties" in m]
        extra = _same_once([x for x in given if x is not True and x != {}])
        if False in extra:
            out["additionalProperties"] = False
        elif extra:
            out["additionalProperties"] = extra[0] if len(extra) == 1 else {"allOf": extra}
        elif given:
            out["additionalProperties"] = True
    if required:
        out["required"] = required


def _layers(objs: list[tuple[dict, str]], required: list[str], ptr: str) -> list[dict]:
    """The members' object keywords as layers (OBJECT_LAYERS), each judging every key as its member
    wrote it: merging them into one properties/patternProperties/additionalProperties would need the
    complement of one member's patterns as another pattern, so the layout compiler applies them all
    (schema.py `_patterned`). A required key that some layer forbids makes the alternative empty."""
    layers: list[dict] = []
    seen: set[str] = set()
    for m, mptr in objs:
        here = list(m.get(OBJECT_LAYERS, []))
        if any(k in m for k in _LAYER_KEYS):
            here.append({"at": mptr, **{k: m[k] for k in _LAYER_KEYS if k in m}})
        for layer in here:
            key = _canon({k: v for k, v in layer.items() if k != "at"})
            if key not in seen:
                seen.add(key)
                layers.append(layer)
    for layer in layers:
        at = layer.get("at", ptr)
        props, pats = layer.get("properties", {}), layer.get("patternProperties", {})
        if not isinstance(props, dict) or not isinstance(pats, dict):
            raise SpecError(at, "properties and patternProperties must be objects")
        if layer.get("additionalProperties", True) is not False:
            continue
        for k in required:
            if k in props or any(pattern_lang(p, f"{at}/patternProperties").matches(k) for p in pats):
                continue
            raise NoValue(f"{at}/additionalProperties", f"property {k!r} is required but this allOf member's "
                          "additionalProperties false forbids it (it is not in its properties and matches none of "
                          "its patternProperties)")
    return layers


def _common_values(parts: list[Any]) -> list[Any] | None:
    """The values common to property schemas that are plain value sets (const, enum, a value
    exclusion, type), found while merging so that a contradicting alternative is dropped early;
    None when some part is anything else (merged later, by the layout compiler), unless the plain
    parts alone already have no value in common (then no value fits whatever the others say)."""
    allowed: dict[str, Any] | None = None
    excluded: set[str] = set()
    integers = False
    types: set[str] | None = None  # a `type` beside the values filters them (JSON Schema's own test)
    other = False  # some part is not a plain value set: only "no value in common" is sure then
    for p in parts:
        if not isinstance(p, dict) or not p or not set(p) <= {"enum", "const", "not", "type", "title", "description"}:
            other = True
            continue
        if "type" in p:
            t = p["type"]
            ts = [t] if isinstance(t, str) else t
            if not isinstance(ts, list) or not all(isinstance(x, str) and x in _TYPES for x in ts):
                return None
            types = set(ts) if types is None else types & set(ts)
        if "not" in p:
            if not is_value_exclusion(p["not"]):
                return None
            excluded |= {_canon(v) for v in excluded_values(p["not"])}
            integers |= excludes_integers(p["not"])
        for kw in ("const", "enum"):
            if kw in p:
                vals = [p[kw]] if kw == "const" else p[kw]
                if not isinstance(vals, list):
                    return None
                here = {_canon(v): v for v in vals}
                allowed = here if allowed is None else {c: v for c, v in allowed.items() if c in here}
    if allowed is None:
        return None
    values = [v for c, v in allowed.items() if c not in excluded and not (integers and _is_integral(v))
              and (types is None or any(_has_type(v, t) for t in types))]
    return None if other and values else values


def _has_type(v: Any, t: str) -> bool:
    """JSON Schema's type test for a const/enum value (1.0 is an integer, true is not a number)."""
    if t == "integer":
        return _is_integral(v)
    if t == "number":
        return not isinstance(v, bool) and isinstance(v, (int, float, Fraction))
    return {"null": v is None, "boolean": isinstance(v, bool), "string": isinstance(v, str),
            "array": isinstance(v, list), "object": isinstance(v, dict)}[t]


def _merge_items(members: list[tuple[dict, str]], out: dict) -> None:
    have = [(m["items"], mptr) for m, mptr in members if "items" in m]
    if any(isinstance(v, list) for v, _ in have):  # draft-04 tuple form: equal only
        for v, vptr in have[1:]:
            if _canon(v) != _canon(have[0][0]):
                raise SpecError(f"{vptr}/items", "two different tuple 'items' inside allOf cannot be merged exactly")
        out["items"] = have[0][0]
        return
    parts = [v for v, _ in have if v is not True and v != {}]
    if len(parts) == 1:
        out["items"] = parts[0]
    elif parts:
        out["items"] = {"allOf": parts}


def _merge_dependencies(members: list[tuple[dict, str]], out: dict) -> None:
    for kw in ("dependentRequired", "dependencies"):
        merged: dict[str, Any] = {}
        for m, mptr in members:
            deps = m.get(kw)
            if deps is None:
                continue
            if not isinstance(deps, dict):
                raise SpecError(f"{mptr}/{kw}", f"{kw} must be an object")
            for k, v in deps.items():
                if isinstance(v, list) and isinstance(merged.get(k, []), list):
                    merged[k] = list(merged.get(k, [])) + [x for x in v if x not in merged.get(k, [])]
                elif k in merged and _canon(merged[k]) != _canon(v):
                    raise SpecError(f"{mptr}/{kw}/{k}", f"two different {kw!r} entries for {k!r} inside allOf "
                                    "cannot be merged exactly")
                else:
                    merged[k] = v
        if merged:
            out[kw] = merged
