"""Does a compiled layout node certainly reject a concrete JSON value?

A `not` that excludes finitely many object/array values from an object/array layout is a no-op
for each value the layout can never produce: the value-by-value check here lets the schema
compiler drop those values (schema.SchemaCompiler._excluding) instead of refusing the schema.
The check is one-sided on purpose: True only where the node's own structure rules the value out
(type, a missing required field, a key a closed object never writes, a count, a bound, an enum,
a string's language); anything it cannot decide (object rules, relations, unlinked references)
answers False, so the value stays excluded or refused, never silently admitted."""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from factorspec.graph.schema import Arr, LayoutNode, Obj, Scalar

MAX_REJECT_DEPTH = 64  # reference/union hops without consuming the value: past it, "unknown"


def rejects(node: LayoutNode, value: Any, depth: int = 0) -> bool:
    """True only if no value the layout `node` admits equals `value` (JSON equality)."""
    if depth > MAX_REJECT_DEPTH:
        return False
    if isinstance(node, Obj):
        return _obj_rejects(node, value, depth)
    if isinstance(node, Arr):
        if not isinstance(value, list):
            return True
        if len(value) < node.min_items or (node.max_items is not None and len(value) > node.max_items):
            return True
        return any(rejects(node.item, x, depth + 1) for x in value)
    return _scalar_rejects(node, value, depth)


def _obj_rejects(node: Obj, value: Any, depth: int) -> bool:
    if not isinstance(value, dict):
        return True
    fields = {f.key: f for f in node.fields}
    if any(f.required and k not in value for k, f in fields.items()):
        return True
    for k, v in value.items():
        f = fields.get(k)
        if f is not None:
            if rejects(f.node, v, depth + 1):
                return True
            continue
        if node.keys is not None:
            if k in node.keys.declared:
                continue  # a name the key space keeps out of the extras but the layout may still know
            sub = node.keys.value_node(k)
        else:
            sub = node.extra
        if sub is None or rejects(sub, v, depth + 1):
            return True
    return False


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and not (isinstance(v, float) and
                                                                             not math.isfinite(v))


def _scalar_rejects(node: Scalar, value: Any, depth: int) -> bool:
    k = node.kind
    if k == "enum" or k in ("integer", "fixed"):
        return node.encode(value) is None
    if k == "boolean":
        return not isinstance(value, bool)
    if k == "string":
        if not isinstance(value, str):
            return True
        if len(value) < node.min_len or (node.max_len is not None and len(value) > node.max_len):
            return True
        return node.lang is not None and not node.lang.matches(value)
    if k == "number":
        if not _is_number(value):
            return True
        return not node.number_within(Fraction(str(value)))
    if k == "union":
        return all(rejects(a, value, depth + 1) for a in node.alts)
    if k == "ref":
        return bool(node.alts) and rejects(node.alts[0], value, depth + 1)
    return False  # "any", or a kind this check does not know: undecided


def admits(node: LayoutNode, value: Any, depth: int = 0) -> bool:
    """True only if the layout `node` certainly produces `value` (so, layouts being sound, its
    schema accepts it); False where it does not or where this check cannot tell (object rules,
    uniqueness, unlinked references)."""
    if depth > MAX_REJECT_DEPTH:
        return False
    if isinstance(node, Obj):
        if not isinstance(value, dict) or node.rules is not None:
            return False
        fields = {f.key: f for f in node.fields}
        if any(f.required and k not in value for k, f in fields.items()):
            return False
        for k, v in value.items():
            f = fields.get(k)
            if f is not None:
                sub: LayoutNode | None = f.node
            elif node.keys is not None:
                sub = None if k in node.keys.declared else node.keys.value_node(k)
            else:
                sub = node.extra
            if sub is None or not admits(sub, v, depth + 1):
                return False
        return True
    if isinstance(node, Arr):
        if not isinstance(value, list) or ((node.unique or node.text_unique) and len(value) > 1):
            return False
        if len(value) < node.min_items or (node.max_items is not None and len(value) > node.max_items):
            return False
        return all(admits(node.item, x, depth + 1) for x in value)
    k = node.kind
    if k == "any":
        return True
    if k == "union":
        return any(admits(a, value, depth + 1) for a in node.alts)
    if k == "ref":
        return bool(node.alts) and admits(node.alts[0], value, depth + 1)
    if k in ("enum", "integer", "fixed", "boolean", "string", "number"):
        return not _scalar_rejects(node, value, depth)
    return False
