"""`not` and `if`/`then`/`else`, rewritten into positive keywords before the layout is built.

The layout compiler builds a node from positive keywords only, so a negation is pushed inwards
here until it meets keywords whose complement is positive again (De Morgan over `allOf`/`anyOf`,
the complement of a type set, of a bound, of a length or count, of `required`: "some listed
property is absent", of `properties`: "some listed property is present with a value outside its
schema"). The one negative form left is a value exclusion, `{"not": {"enum": [...]}}`, which the
layout compiler applies to finite domains (enum, const, boolean, null) by filtering.
`if`/`then`/`else` becomes `anyOf[allOf[if, then], allOf[not if, else]]`: the two alternatives
are disjoint, so no record is admitted twice and none is lost. A complement that is not
positive (`pattern`, `multipleOf`, `items`, `oneOf`, ...) is refused naming its JSON Pointer.
Pure dict-to-dict work, like `all_of.py`: no layout, no solver."""
from __future__ import annotations

import json
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from factorspec.errors import EmptySchema, SpecError

Resolve = Callable[[Any, str], "tuple[Any, str]"]
REGULAR = "$fsRegular"  # internal keyword: {"all": [patterns that must match], "none": [that must not]}
# internal keyword: a list of conditions, each "some member whose key is not in `except` has a value
# that matches `patterns[p]` for some pattern p its key matches, else `other`" (some_member.py)
SOME_MEMBER = "$fsSomeMember"
# internal keyword (all_of.py): the object layers of an allOf, each {"at": pointer, "properties",
# "patternProperties", "additionalProperties"} as its member wrote them; every layer judges every
# key (a layer's additionalProperties applies to the keys its own properties/patterns do not cover)
OBJECT_LAYERS = "$fsObjectLayers"
MAX_ONE_OF_NEGATED = 8  # not(oneOf) lists every pair of alternatives not proven disjoint
# disjointness proofs of the document being compiled (disjoint.Overlaps.disjoint_any), set by the
# schema compiler: not(oneOf) needs no "some two match" part for pairs proven disjoint
DISJOINT: ContextVar[Callable[[Any, Any], bool] | None] = ContextVar("factorspec_disjoint", default=None)
MAX_NEGATION_DEPTH = 32  # negations nest this deep outside $ref targets (those are NegationTable's)
NEGATED = "$fsNegated"  # internal: '#/$fsNegated/<n>' names the complement of a $ref target (NegationTable)

_ALL_TYPES = ("null", "boolean", "object", "array", "string", "number")
_CONDITIONAL = ("not", "if", "then", "else")
# keywords whose truth depends on each other: negated as one conjunct
_GROUPS = ({"properties", "patternProperties", "additionalProperties", "unevaluatedProperties"},
           {"items", "prefixItems", "additionalItems", "unevaluatedItems"},
           {"contains", "minContains", "maxContains"},
           {"if", "then", "else"})
_OF_TYPE = {"minimum": "number", "maximum": "number", "exclusiveMinimum": "number", "exclusiveMaximum": "number",
            "minLength": "string", "maxLength": "string", "minItems": "array", "maxItems": "array",
            "minProperties": "object", "maxProperties": "object", "required": "object", "properties": "object"}
_FLIP = {"minimum": "exclusiveMaximum", "maximum": "exclusiveMinimum", "exclusiveMinimum": "maximum",
         "exclusiveMaximum": "minimum"}
_COUNT_FLIP = {"minLength": "maxLength", "maxLength": "minLength", "minItems": "maxItems", "maxItems": "minItems",
               "minProperties": "maxProperties", "maxProperties": "minProperties"}


def exclusion_parts(x: Any) -> tuple[list[Any], bool] | None:
    """The values a value exclusion removes and whether it removes every integer, or None when
    `x` (the argument of a `not`) is not a value exclusion. The forms: `{"enum": [...]}`,
    `{"const": v}`, `{"type": "integer"}` (from negating a type), and `{"anyOf": [...]}` of those."""
    if not isinstance(x, dict) or len(x) != 1:
        return None
    if "const" in x:
        return [x["const"]], False
    if "enum" in x:
        return (list(x["enum"]), False) if isinstance(x["enum"], list) else None
    if x.get("type") == "integer":
        return [], True
    if isinstance(x.get("anyOf"), list):
        values: list[Any] = []
        integers = False
        for a in x["anyOf"]:
            part = exclusion_parts(a)
            if part is None:
                return None
            values += part[0]
            integers |= part[1]
        return values, integers
    return None


def is_value_exclusion(x: Any) -> bool:
    """The one negative form the layout compiler takes: `not` over values (exclusion_parts)."""
    return exclusion_parts(x) is not None


def excluded_values(x: dict) -> list[Any]:
    part = exclusion_parts(x)
    assert part is not None
    return part[0]


def excludes_integers(x: dict) -> bool:
    part = exclusion_parts(x)
    return part is not None and part[1]


def make_exclusion(values: list[Any], integers: bool) -> dict:
    """The `not` argument that excludes `values` (and every integer, if `integers`)."""
    parts = ([{"enum": values}] if values else []) + ([{"type": "integer"}] if integers else [])
    return parts[0] if len(parts) == 1 else {"anyOf": parts}


class NegationTable:
    """The complements of `$ref` targets made in one compile, each once, under a pointer of its own
    ('#/$fsNegated/<n>', which the compiler's resolver answers from here): a complement met again
    while it is being made is that pointer, so the complement of a recursive schema is a recursive
    schema (compiled, depth-bounded, like any other: recursion.py) instead of an endless rewrite."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}  # target pointer -> n
        self.defs: list[Any] = []  # n -> the complement (_PENDING while it is being made)
        self.notes: list[list[tuple[str, str]]] = []  # n -> its narrowings, repeated on every reuse

    def resolve(self, frag: str) -> Any | None:
        """The complement a fragment '/$fsNegated/<n>' names, or None for any other fragment."""
        head, _, n = frag.lstrip("/").partition("/")
        if head != NEGATED or not n.isdigit() or int(n) >= len(self.defs) or self.defs[int(n)] is _PENDING:
            return None
        return self.defs[int(n)]

    def complement(self, tptr: str, make: Callable[[], Any], narrowed: list[tuple[str, str]]) -> Any:
        n = self.index.get(tptr)
        if n is not None:
            if self.defs[n] is _PENDING:
                return {"$ref": f"#/{NEGATED}/{n}"}
            narrowed += self.notes[n]
            return self.defs[n]
        start, mark = len(self.defs), len(narrowed)
        self.index[tptr] = start
        self.defs.append(_PENDING)
        self.notes.append([])
        try:
            neg = make()
        except BaseException:
            # what was made meanwhile may name this complement, which now has none: all of it goes
            # (a refusal, and also a budget or a timeout that stops the compile midway)
            for k in [k for k, v in self.index.items() if v >= start]:
                del self.index[k]
            del self.defs[start:], self.notes[start:]
            raise
        self.defs[start], self.notes[start] = neg, narrowed[mark:]
        return neg


_PENDING = object()
# the compile's NegationTable (set by the schema compiler; without one, $ref targets are inlined)
NEGATIONS: ContextVar[NegationTable | None] = ContextVar("factorspec_negations", default=None)


def has_conditionals(s: dict) -> bool:
    """True when `s` has a `not` or `if`/`then`/`else` that `eliminate` must rewrite."""
    if any(k in s for k in ("if", "then", "else")) or _schema_dependencies(s):
        return True
    return "not" in s and not is_value_exclusion(s["not"])


def _schema_dependencies(s: dict) -> list[tuple[str, str, Any]]:
    """(keyword, property, schema) of every dependentSchemas entry and every `dependencies` entry
    in its schema form (each means: if the property is present, the object matches the schema)."""
    out = []
    for kw in ("dependentSchemas", "dependencies"):
        d = s.get(kw)
        if isinstance(d, dict):
            out += [(kw, k, v) for k, v in d.items() if v is False or (isinstance(v, dict) and v)]
    return out


def eliminate(s: dict, ptr: str, resolve: Resolve, normalise: Callable[[dict], dict],
              validation: set[str], narrowed: list[tuple[str, str]] | None = None) -> dict:
    """`s` with its `not` (unless a value exclusion), `if`/`then`/`else` and schema dependencies
    (dependentSchemas, `dependencies` with a schema: "property absent, or the schema") moved into
    `allOf` members of positive keywords; every other keyword of `s` is kept as it is. Where a
    complement is only approximated from inside (a sound narrowing), (pointer, why) is appended to
    `narrowed`."""
    out = {k: v for k, v in s.items() if k not in _CONDITIONAL}
    added: list[Any] = []
    ctx = _Ctx(resolve, normalise, validation)
    if "not" in s:
        if is_value_exclusion(s["not"]):
            out["not"] = s["not"]
        else:
            added.append(_negate(s["not"], f"{ptr}/not", ctx, 0))
    if "if" in s:
        cond = s["if"]
        then, other = s.get("then", True), s.get("else", True)
        if not (then is True and other is True):  # without then/else, `if` constrains nothing
            added.append(_any([_all([cond, then]), _all([_negate(cond, f"{ptr}/if", ctx, 0), other])]))
    deps = _schema_dependencies(s)
    for _kw, name, dep in deps:
        added.append(_any([{"properties": {name: False}}, dep]))
    for kw in {kw for kw, _, _ in deps}:
        rest = {k: v for k, v in s[kw].items() if isinstance(v, list)}
        if rest:
            out[kw] = rest
        else:
            out.pop(kw, None)
    if narrowed is not None:
        narrowed += ctx.narrowed
    if any(a is False for a in added):
        kw = "not" if "not" in s and not is_value_exclusion(s["not"]) else "if"
        raise EmptySchema(f"{ptr}/{kw}", f"'{kw}' here admits no value")
    added = [a for a in added if a is not True]
    if added:
        out["allOf"] = list(s.get("allOf", [])) + added
    return out


class _Ctx:
    def __init__(self, resolve: Resolve, normalise: Callable[[dict], dict], validation: set[str]) -> None:
        self.resolve, self.normalise, self.validation = resolve, normalise, validation
        self.narrowed: list[tuple[str, str]] = []  # (pointer, why): complements approximated from inside


def _any(parts: list[Any]) -> Any:
    parts = [p for p in parts if p is not False]
    if any(p is True for p in parts):
        return True
    if not parts:
        return False
    return parts[0] if len(parts) == 1 else {"anyOf": parts}


def _all(parts: list[Any]) -> Any:
    parts = [p for p in parts if p is not True]
    if any(p is False for p in parts):
        return False
    if not parts:
        return True
    return parts[0] if len(parts) == 1 else {"allOf": parts}


def _other_types(t: str) -> list[str]:
    return [x for x in _ALL_TYPES if x != t]


def _negate(x: Any, ptr: str, ctx: _Ctx, depth: int) -> Any:
    """A positive schema (or True/False) admitting exactly the values `x` rejects."""
    if depth > MAX_NEGATION_DEPTH:
        raise SpecError(ptr, f"'not' nests deeper than {MAX_NEGATION_DEPTH} levels (a recursive $ref?)")
    if x is True:
        return False
    if x is False:
        return True
    if not isinstance(x, dict):
        raise SpecError(ptr, f"a schema must be an object, got {json.dumps(x)[:60]}")
    x = ctx.normalise(x)
    keys = [k for k in x if k in ctx.validation]
    if not keys:
        return False  # {} (annotations only) admits every value
    if "$ref" in keys:
        target, tptr = ctx.resolve(x["$ref"], ptr)
        rest = {k: v for k, v in x.items() if k != "$ref"}
        table = NEGATIONS.get()
        if table is None:
            neg = _negate(target, tptr, ctx, depth + 1)
        else:  # a target's complement starts a fresh nesting count: its cycles end in the table
            neg = table.complement(tptr, lambda: _negate(target, tptr, ctx, 0), ctx.narrowed)
        if any(k in ctx.validation for k in rest):
            return _any([neg, _negate(rest, ptr, ctx, depth + 1)])
        return neg
    # x is the conjunction of its independent keyword groups: not x = any group fails
    conjuncts: list[dict] = []
    seen: set[str] = set()
    for k in keys:
        if k in seen:
            continue
        group = next((g for g in _GROUPS if k in g), {k})
        here = {g: x[g] for g in keys if g in group}
        seen |= set(here)
        conjuncts.append(here)
    return _any([_negate_one(c, ptr, ctx, depth) for c in conjuncts])


def _negate_one(c: dict, ptr: str, ctx: _Ctx, depth: int) -> Any:
    """The complement of one keyword (or one group of interacting keywords)."""
    (k, v), = list(c.items())[:1]
    kptr = f"{ptr}/{k}"
    if len(c) == 1 and k == "type":
        ts = [v] if isinstance(v, str) else v
        if not isinstance(ts, list) or not all(isinstance(t, str) for t in ts):
            raise SpecError(kptr, f"unknown type {json.dumps(v)[:60]}")
        if "integer" in ts and "number" not in ts:  # the rest: other types, and non-integer numbers
            rest = [t for t in _ALL_TYPES if t not in ts and t != "number"]
            fractional = {"type": "number", "not": {"type": "integer"}}
            return _any(([{"type": rest[0] if len(rest) == 1 else rest}] if rest else []) + [fractional])
        rest = [t for t in _ALL_TYPES if t not in ts]
        return False if not rest else {"type": rest[0] if len(rest) == 1 else rest}
    if len(c) == 1 and k in ("enum", "const"):
        if k == "enum" and not isinstance(v, list):
            raise SpecError(kptr, "enum must be a list")
        return {"not": {k: v}}
    if len(c) == 1 and k in _FLIP:
        if isinstance(v, bool):  # draft-04 exclusive flags were folded into the bounds by normalise
            return False
        return {"anyOf": [{"type": _other_types("number")}, {"type": "number", _FLIP[k]: v}]}
    if len(c) == 1 and k in _COUNT_FLIP:
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise SpecError(kptr, f"{k} must be a non-negative integer")
        t = _OF_TYPE[k]
        if k.startswith("min"):
            inside: Any = False if v == 0 else {"type": t, _COUNT_FLIP[k]: v - 1}
        else:
            inside = {"type": t, _COUNT_FLIP[k]: v + 1}
        return _any([{"type": _other_types(t)}, inside])
    if len(c) == 1 and k == "pattern":
        if not isinstance(v, str):
            raise SpecError(kptr, f"pattern must be a string, got {json.dumps(v)[:60]}")
        # a regular language's complement is regular: strings the pattern does not find a match in
        return {"anyOf": [{"type": _other_types("string")}, {"type": "string", REGULAR: {"all": [], "none": [v]}}]}
    if len(c) == 1 and k == "required":
        if not isinstance(v, list):
            raise SpecError(kptr, "required must be a list of names")
        names = [n for n in dict.fromkeys(v) if isinstance(n, str)]
        if not names:
            return False
        return _all([{"type": "object"}, _any([{"properties": {n: False}} for n in names])])
    if set(c) <= {"properties", "patternProperties", "additionalProperties"}:
        return _negate_members(c, ptr, ctx, depth)
    if set(c) == {"items"} and isinstance(v, (dict, bool)):
        # "some item fails" has no positive form here ('contains' has no layout); from inside:
        # a non-empty array whose items all fail (a sound narrowing, reported)
        neg = _negate(v, kptr, ctx, depth + 1)
        if neg is False:
            return False
        ctx.narrowed.append((kptr, "'not' over 'items' narrowed to: a non-empty array of items that all fail "
                             "'items'"))
        return _all([{"type": "array"}, {"minItems": 1, "items": neg}])
    if len(c) == 1 and k == "oneOf":
        if not isinstance(v, list) or not v:
            raise SpecError(kptr, "oneOf must be a non-empty list of schemas")
        disjoint = DISJOINT.get()
        pairs = [_all([v[i], v[j]]) for i in range(len(v)) for j in range(i + 1, len(v))
                 if disjoint is None or not disjoint(v[i], v[j])]  # a pair proven disjoint never matches
        if len(v) > MAX_ONE_OF_NEGATED and pairs:
            raise SpecError(kptr, f"'not' over a oneOf of {len(v)} alternatives that may overlap (at most "
                            f"{MAX_ONE_OF_NEGATED})")
        # not exactly one: none of them, or some two of them
        none = _all([_negate(m, f"{kptr}/{i}", ctx, depth + 1) for i, m in enumerate(v)])
        return _any([none] + pairs)
    if len(c) == 1 and k == "allOf":
        if not isinstance(v, list):
            raise SpecError(kptr, "allOf must be a list of schemas")
        return _any([_negate(m, f"{kptr}/{i}", ctx, depth + 1) for i, m in enumerate(v)])
    if len(c) == 1 and k == "anyOf":
        if not isinstance(v, list):
            raise SpecError(kptr, "anyOf must be a list of schemas")
        return _all([_negate(m, f"{kptr}/{i}", ctx, depth + 1) for i, m in enumerate(v)])
    if len(c) == 1 and k == "not":
        return v  # not not v = v
    if set(c) <= {"if", "then", "else"}:
        if "if" not in c:
            return False  # then/else without if constrain nothing: their negation admits nothing
        cond = c["if"]
        then, other = c.get("then", True), c.get("else", True)
        ncond = _negate(cond, f"{ptr}/if", ctx, depth + 1)
        return _any([_all([cond, _negate(then, f"{ptr}/then", ctx, depth + 1)]),
                     _all([ncond, _negate(other, f"{ptr}/else", ctx, depth + 1)])])
    if len(c) == 1 and k in ("dependencies", "dependentRequired", "dependentSchemas"):
        return _negate_dependencies(k, v, kptr, ctx, depth)
    if set(c) & {"uniqueItems"} and c.get("uniqueItems") is False:
        return False
    raise SpecError(kptr, f"'not' over {k!r} cannot be compiled exactly (its complement is not a schema "
                    "FactorSpec compiles)")


def _negate_dependencies(k: str, v: Any, kptr: str, ctx: _Ctx, depth: int) -> Any:
    """The complement of dependencies/dependentRequired/dependentSchemas: an object where some
    entry's property is present and one of the names it needs is absent (a list) or its schema
    fails (a schema)."""
    if not isinstance(v, dict):
        raise SpecError(kptr, f"{k} must be an object")
    alts: list[Any] = []
    for name, dep in v.items():
        if isinstance(dep, list) and k != "dependentSchemas":
            if not all(isinstance(n, str) for n in dep):
                raise SpecError(f"{kptr}/{name}", f"{k} lists must hold property names")
            missing = [n for n in dict.fromkeys(dep) if n != name]
            if missing:
                alts.append(_all([{"required": [name]}, _any([{"properties": {n: False}} for n in missing])]))
        elif k != "dependentRequired":
            neg = _negate(dep, f"{kptr}/{name}", ctx, depth + 1)
            if neg is not False:
                alts.append(_all([{"required": [name]}, neg]))
        else:
            raise SpecError(f"{kptr}/{name}", "dependentRequired values must be lists of property names")
    return _all([{"type": "object"}, _any(alts)])


def _negate_members(c: dict, ptr: str, ctx: _Ctx, depth: int) -> Any:
    """The complement of properties/patternProperties/additionalProperties: an object with a
    declared property whose value fails its schema, or (SOME_MEMBER) a member with another key
    whose value fails the pattern schemas its key matches, or additionalProperties where none."""
    props = c.get("properties", {})
    pats = c.get("patternProperties", {})
    if not isinstance(props, dict):
        raise SpecError(f"{ptr}/properties", "properties must be an object")
    if not isinstance(pats, dict):
        raise SpecError(f"{ptr}/patternProperties", "patternProperties must be an object")
    alts: list[Any] = []
    for name, sub in props.items():
        neg = _negate(sub, f"{ptr}/properties/{name}", ctx, depth + 1)
        if neg is not False:
            alts.append({"required": [name], "properties": {name: neg}})
    negp = {p: _negate(x, f"{ptr}/patternProperties/{p}", ctx, depth + 1) for p, x in pats.items()}
    other = _negate(c.get("additionalProperties", True), f"{ptr}/additionalProperties", ctx, depth + 1)
    if other is not False or any(x is not False for x in negp.values()):
        alts.append({SOME_MEMBER: [{"except": list(props), "patterns": negp, "other": other}]})
    return _all([{"type": "object"}, _any(alts)])
