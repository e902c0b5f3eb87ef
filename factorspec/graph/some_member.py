""""Some member with another key fails": the one existential left by negating an object's
properties/patternProperties/additionalProperties (negation.py, keyword SOME_MEMBER).

It has no positive JSON Schema form on its own, but once merged with the object it constrains
(all_of.py) the keys that object's layout can write are known: its declared properties and
required names. The condition is then an `anyOf` over those keys k outside `except`: "k present,
with a value that also fails the negated schema's pattern schemas k matches (else its
additionalProperties)". Exact for a closed layout; for an open one (additionalProperties true or
a schema, patternProperties) the extra members are never the witness: a sound narrowing that the
caller reports. Pure dict-to-dict work: no layout, no solver."""
from __future__ import annotations

from typing import Any, Optional

from factorspec.errors import EmptySchema, SpecError
from factorspec.graph.negation import OBJECT_LAYERS, SOME_MEMBER
from factorspec.graph.regex_lang import pattern_lang

MAX_WITNESS_KEYS = 64  # alternatives one condition expands into


def _matches(pattern: str, key: str, ptr: str) -> bool:
    return pattern_lang(pattern, ptr).matches(key)


def expand_some_member(s: dict, ptr: str) -> tuple[dict, Optional[str]]:
    """`s` (an object schema with SOME_MEMBER) as an `anyOf` that satisfies its first condition;
    the other conditions stay on every alternative. Returns the schema and, when the layout is
    open (a narrowing), why."""
    conds = s[SOME_MEMBER]
    if not isinstance(conds, list) or not conds:
        raise SpecError(ptr, f"internal keyword {SOME_MEMBER} must be a non-empty list")
    cond, more = conds[0], conds[1:]
    base = {k: v for k, v in s.items() if k != SOME_MEMBER}
    if more:
        base[SOME_MEMBER] = more
    props = s.get("properties", {})
    req = s.get("required", [])
    if not isinstance(props, dict) or not isinstance(req, list):
        raise SpecError(ptr, "properties must be an object and required a list")
    layers = s.get(OBJECT_LAYERS, [])  # an allOf's object layers (all_of.py): they judge every key too
    if not isinstance(layers, list):
        raise SpecError(ptr, f"internal keyword {OBJECT_LAYERS} must be a list")
    ap = s.get("additionalProperties", True if layers else False)
    layered = [k for x in layers for k in x.get("properties", {})]
    names = list(dict.fromkeys(list(props) + layered + [r for r in req if isinstance(r, str)]))
    alts: list[Any] = []
    for k in names:
        if k in cond["except"]:
            continue
        hit = [x for p, x in cond["patterns"].items() if _matches(p, k, f"{ptr}/patternProperties")]
        if hit:
            fails = [x for x in hit if x is not False]
            if not fails:
                continue
            value: Any = True if True in fails else {"anyOf": fails} if len(fails) > 1 else fails[0]
        else:
            value = cond["other"]
            if value is False:
                continue
        own = props[k] if k in props else (True if ap is False else ap)
        if own is False:
            continue
        parts = [x for x in (own, value) if x is not True]
        alt = dict(base)
        alt["required"] = list(req) + ([k] if k not in req else [])
        alt["properties"] = {**props, k: parts[0] if len(parts) == 1 else {"allOf": parts} if parts else True}
        alts.append(alt)
    if len(alts) > MAX_WITNESS_KEYS:
        raise SpecError(ptr, f"'not' over an object's members expands into {len(alts)} alternatives "
                        f"(at most {MAX_WITNESS_KEYS})")
    open_ = ap is not False or bool(s.get("patternProperties")) or \
        any(x.get("additionalProperties", False) is not False or x.get("patternProperties") for x in layers)
    why = ("'not' over an object's members: only its declared properties are taken as the member that fails "
           "(extra members never are)") if open_ else None
    if not alts and open_:
        raise SpecError(ptr, "only an extra member (additionalProperties/patternProperties) can be the member that "
                        "fails the object schema under this 'not': FactorSpec does not compile that")
    if not alts:
        raise EmptySchema(ptr, "no property of this closed object can be the member that a 'not' over "
                          "properties/additionalProperties needs")
    return (alts[0] if len(alts) == 1 else {"anyOf": alts}), why
