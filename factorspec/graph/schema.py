"""JSON Schema subset -> an ordered record layout (a template tree).

The template says what a record looks like; `ground.py` expands the parts that relations
mention into solver variables. Everything unsupported is a `SpecError` naming the keyword and
its JSON Pointer, never a silent ignore.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Union

from factorspec.errors import SpecError
from factorspec.graph.relations import format_decimal

EXTENSION_KEY = "x-factorspec"
ANNOTATIONS = {"title", "description", "$schema", "$id", "$comment", "examples", "default", "deprecated",
               "readOnly", "writeOnly", "$anchor"}
_TYPE_KEYWORDS = {
    "object": {"properties", "required", "additionalProperties"},
    "array": {"items", "minItems", "maxItems"},
    "integer": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
    "number": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
    "string": {"minLength", "maxLength"},
    "boolean": set(),
    "null": set(),
}


def escape_pointer(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


@dataclass
class Scalar:
    """A leaf. `kind`: enum, integer, fixed (number with multipleOf), boolean, string (free text),
    number (free JSON number). Integer/fixed values are held as integers in units of `step`."""

    pointer: str
    kind: str
    values: list[Any] = field(default_factory=list)  # enum (and boolean/null as enums)
    lo: int | None = None  # bounds in units of `step`
    hi: int | None = None
    step: Union[int, Fraction] = 1
    min_len: int = 0
    max_len: int | None = None

    @property
    def finite(self) -> bool:
        if self.kind == "enum":
            return True
        if self.kind in ("integer", "fixed"):
            return self.lo is not None and self.hi is not None
        return False

    def decode(self, k: int) -> Any:
        """Internal value (enum index or units) -> the JSON value."""
        if self.kind == "enum":
            return self.values[k]
        v = k * self.step
        return v if isinstance(v, int) else (int(v) if v.denominator == 1 else v)

    def encode(self, value: Any) -> int | None:
        """JSON value -> internal value, or None if it is not in this scalar's domain."""
        if self.kind == "enum":
            for k, v in enumerate(self.values):
                if type(v) is type(value) and v == value:
                    return k
                if isinstance(v, (int, float, Fraction)) and not isinstance(v, bool) and \
                        isinstance(value, (int, float)) and not isinstance(value, bool) and \
                        Fraction(str(v)) == Fraction(str(value)):
                    return k
            return None
        if self.kind in ("integer", "fixed"):  # Fraction: records built by solve() hold exact values
            if isinstance(value, bool) or not isinstance(value, (int, float, Fraction)):
                return None
            if isinstance(value, float) and not math.isfinite(value):
                return None
            if type(value) is int and type(self.step) is int:  # fast path: no Fraction per item
                if value % self.step:
                    return None
                k = value // self.step
            else:
                q = Fraction(str(value)) / self.step
                if q.denominator != 1:
                    return None
                k = q.numerator
            if (self.lo is not None and k < self.lo) or (self.hi is not None and k > self.hi):
                return None
            return k
        return None

    def text(self, value: Any) -> str:
        """Canonical text of a value of this scalar."""
        if isinstance(value, bool) or value is None or isinstance(value, str):
            return json.dumps(value, ensure_ascii=False)
        if isinstance(value, float):
            value = Fraction(repr(value))
        return format_decimal(value)


@dataclass
class Field:
    key: str
    node: LayoutNode
    required: bool


@dataclass
class Obj:
    pointer: str
    fields: list[Field]


@dataclass
class Arr:
    pointer: str
    item: LayoutNode
    min_items: int
    max_items: int | None


LayoutNode = Union[Scalar, Obj, Arr]  # one node of the record layout (the template tree)


def _num(v: Any, ptr: str, kw: str) -> Fraction:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise SpecError(f"{ptr}/{kw}", f"{kw} must be a number, got {json.dumps(v)}")
    if isinstance(v, float) and not math.isfinite(v):
        raise SpecError(f"{ptr}/{kw}", f"{kw} must be finite")
    return Fraction(str(v))


MAX_MIN_SIZE = 100_000  # minItems/minLength beyond this would make every record huge


def _nonneg_int(v: Any, ptr: str, kw: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        if isinstance(v, float) and v.is_integer() and v >= 0:
            v = int(v)
        else:
            raise SpecError(f"{ptr}/{kw}", f"{kw} must be a non-negative integer, got {json.dumps(v)}")
    if kw.startswith("min") and v > MAX_MIN_SIZE:
        raise SpecError(f"{ptr}/{kw}", f"{kw} {v} is too large (at most {MAX_MIN_SIZE} is supported)")
    return v


class SchemaCompiler:
    """Turns a schema document into the template tree, resolving local `$ref`s."""

    MAX_DEPTH = 64

    def __init__(self, doc: dict) -> None:
        self.doc = doc
        self._ref_stack: list[str] = []

    def compile(self) -> LayoutNode:
        if not isinstance(self.doc, dict):
            raise SpecError("", f"a spec must be a JSON object (a JSON Schema), got {type(self.doc).__name__}")
        return self.node(self.doc, "", 0)

    def _resolve(self, ref: Any, ptr: str) -> tuple[dict, str]:
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise SpecError(f"{ptr}/$ref", f"only local references ('#/...') are supported, got {ref!r}")
        target: Any = self.doc
        parts = ref[1:].split("/")[1:] if ref != "#" else []
        for raw in parts:
            part = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(target, dict) and part in target:
                target = target[part]
            elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
                target = target[int(part)]
            else:
                raise SpecError(f"{ptr}/$ref", f"reference {ref!r} does not resolve")
        if not isinstance(target, dict):
            raise SpecError(f"{ptr}/$ref", f"reference {ref!r} is not a schema object")
        return target, ref[1:] or ""

    def node(self, s: Any, ptr: str, depth: int) -> LayoutNode:
        if depth > self.MAX_DEPTH:
            raise SpecError(ptr, f"schema nests deeper than {self.MAX_DEPTH} levels")
        if s is True:
            raise SpecError(ptr, "the schema 'true' (any value) is not supported: give a type")
        if not isinstance(s, dict):
            raise SpecError(ptr, f"a schema must be an object, got {json.dumps(s)[:60]}")
        if "$ref" in s:
            others = set(s) - {"$ref"} - ANNOTATIONS - {"$defs", "definitions"}
            if others:
                k = sorted(others)[0]
                raise SpecError(f"{ptr}/{escape_pointer(k)}", f"keyword {k!r} beside '$ref' is not supported")
            ref = s["$ref"]
            if ref in self._ref_stack:
                raise SpecError(f"{ptr}/$ref", f"recursive reference {ref!r} is not supported")
            target, tptr = self._resolve(ref, ptr)
            self._ref_stack.append(ref)
            try:
                return self.node(target, tptr, depth + 1)
            finally:
                self._ref_stack.pop()
        allowed = set(ANNOTATIONS) | {"type", "enum", "const", "$defs", "definitions"}
        if ptr == "":
            allowed.add(EXTENSION_KEY)
        typ = s.get("type")
        if isinstance(typ, list):
            raise SpecError(f"{ptr}/type", f"a list of types {typ} is not supported: give one type")
        if typ is not None and (not isinstance(typ, str) or typ not in _TYPE_KEYWORDS):
            raise SpecError(f"{ptr}/type", f"unknown type {typ!r}")
        if "enum" in s or "const" in s:
            allowed |= set().union(*_TYPE_KEYWORDS.values()) if typ is None else _TYPE_KEYWORDS[typ]
        elif typ is None:
            for k in s:
                if k not in allowed:
                    raise SpecError(f"{ptr}/{escape_pointer(k)}", f"unsupported keyword {k!r}")
            raise SpecError(ptr, "schema has no 'type', 'enum' or 'const'")
        else:
            allowed |= _TYPE_KEYWORDS[typ]
        for k in s:
            if k not in allowed:
                where = f" for type {typ!r}" if typ else ""
                raise SpecError(f"{ptr}/{escape_pointer(k)}", f"unsupported keyword {k!r}{where}")
        if "enum" in s or "const" in s:
            return self._enum(s, ptr, typ)
        if typ == "object":
            return self._object(s, ptr, depth)
        if typ == "array":
            return self._array(s, ptr, depth)
        if typ == "boolean":
            return Scalar(ptr, "enum", values=[False, True])
        if typ == "null":
            return Scalar(ptr, "enum", values=[None])
        if typ == "string":
            lo = _nonneg_int(s.get("minLength", 0), ptr, "minLength")
            hi = _nonneg_int(s["maxLength"], ptr, "maxLength") if "maxLength" in s else None
            if hi is not None and hi < lo:
                raise SpecError(f"{ptr}/maxLength", f"maxLength {hi} < minLength {lo}: no string fits")
            return Scalar(ptr, "string", min_len=lo, max_len=hi)
        assert typ is not None  # no type, enum or const was refused above
        return self._numeric(s, ptr, typ)

    def _enum(self, s: dict, ptr: str, typ: str | None) -> Scalar:
        if "const" in s:
            values = [s["const"]]
            kw = "const"
        else:
            values, kw = s["enum"], "enum"
            if not isinstance(values, list) or not values:
                raise SpecError(f"{ptr}/enum", "enum must be a non-empty list")
        out: list[Any] = []
        for i, v in enumerate(values):
            if isinstance(v, (dict, list)):
                raise SpecError(f"{ptr}/{kw}", f"{kw} value #{i} is not a scalar ({json.dumps(v)[:40]}); "
                                "only scalars are supported")
            if isinstance(v, float):
                if not math.isfinite(v):
                    raise SpecError(f"{ptr}/{kw}", f"{kw} value #{i} is not finite")
                v = int(v) if v.is_integer() else Fraction(repr(v))
            if typ is not None and not _matches_type(v, typ):
                continue  # JSON Schema: the value must also satisfy 'type'
            if any(type(v) is type(w) and v == w for w in out):
                continue
            out.append(v)
        if not out:
            raise SpecError(f"{ptr}/{kw}", f"no {kw} value matches type {typ!r}")
        other = set(s) - ANNOTATIONS - {"type", "enum", "const", "$defs", "definitions"}
        for k in sorted(other):
            # keywords beside enum must not exclude values silently: check them
            out = [v for v in out if _satisfies(v, k, s[k], ptr)]
        if not out:
            raise SpecError(ptr, "no enum value satisfies the schema's other keywords")
        return Scalar(ptr, "enum", values=out)

    def _object(self, s: dict, ptr: str, depth: int) -> Obj:
        props = s.get("properties", {})
        if not isinstance(props, dict):
            raise SpecError(f"{ptr}/properties", "properties must be an object")
        req = s.get("required", [])
        if not isinstance(req, list) or not all(isinstance(r, str) for r in req):
            raise SpecError(f"{ptr}/required", "required must be a list of strings")
        missing = [r for r in req if r not in props]
        if missing:
            raise SpecError(f"{ptr}/required", f"required property {missing[0]!r} is not in properties")
        ap = s.get("additionalProperties", False)
        if ap is not False:
            raise SpecError(f"{ptr}/additionalProperties",
                            "only additionalProperties: false is supported (the record layout is closed)")
        fields = [Field(k, self.node(v, f"{ptr}/properties/{escape_pointer(k)}", depth + 1), k in req)
                  for k, v in props.items()]
        return Obj(ptr, fields)

    def _array(self, s: dict, ptr: str, depth: int) -> Arr:
        if "items" not in s:
            raise SpecError(ptr, "array needs 'items' (one schema for every item)")
        if not isinstance(s["items"], dict):
            raise SpecError(f"{ptr}/items", "items must be one schema object (tuple forms are not supported)")
        lo = _nonneg_int(s.get("minItems", 0), ptr, "minItems")
        hi = _nonneg_int(s["maxItems"], ptr, "maxItems") if "maxItems" in s else None
        if hi is not None and hi < lo:
            raise SpecError(f"{ptr}/maxItems", f"maxItems {hi} < minItems {lo}: no array fits")
        return Arr(ptr, self.node(s["items"], f"{ptr}/items", depth + 1), lo, hi)

    def _numeric(self, s: dict, ptr: str, typ: str) -> Scalar:
        step: Fraction | int = 1
        if "multipleOf" in s:
            m = _num(s["multipleOf"], ptr, "multipleOf")
            if m <= 0:
                raise SpecError(f"{ptr}/multipleOf", "multipleOf must be positive")
            if typ == "integer" and m.denominator != 1:
                raise SpecError(f"{ptr}/multipleOf", "an integer's multipleOf must be an integer")
            try:
                format_decimal(m)
            except ValueError:
                raise SpecError(f"{ptr}/multipleOf", "multipleOf must be a finite decimal") from None
            step = int(m) if m.denominator == 1 else m
        elif typ == "number":
            if any(k in s for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")):
                # a free number with bounds cannot be checked exactly token by token without a step
                raise SpecError(ptr, "a bounded 'number' needs 'multipleOf' (fixed point, e.g. 0.01)")
            return Scalar(ptr, "number")
        lo = hi = None
        if "minimum" in s:
            lo = math.ceil(_num(s["minimum"], ptr, "minimum") / step)
        if "exclusiveMinimum" in s:
            e = math.floor(_num(s["exclusiveMinimum"], ptr, "exclusiveMinimum") / step) + 1
            lo = e if lo is None else max(lo, e)
        if "maximum" in s:
            hi = math.floor(_num(s["maximum"], ptr, "maximum") / step)
        if "exclusiveMaximum" in s:
            e = math.ceil(_num(s["exclusiveMaximum"], ptr, "exclusiveMaximum") / step) - 1
            hi = e if hi is None else min(hi, e)
        if lo is not None and hi is not None and lo > hi:
            raise SpecError(ptr, "the bounds leave no value")
        kind = "integer" if step == 1 and typ == "integer" else "fixed"
        return Scalar(ptr, kind, lo=lo, hi=hi, step=step)


def _matches_type(v: Any, typ: str) -> bool:
    if typ == "string":
        return isinstance(v, str)
    if typ == "boolean":
        return isinstance(v, bool)
    if typ == "null":
        return v is None
    if typ == "integer":
        return isinstance(v, int) and not isinstance(v, bool) or (isinstance(v, Fraction) and v.denominator == 1)
    if typ == "number":
        return isinstance(v, (int, Fraction)) and not isinstance(v, bool)
    return False


def _satisfies(v: Any, kw: str, arg: Any, ptr: str) -> bool:
    if kw in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"):
        if isinstance(v, bool) or not isinstance(v, (int, Fraction)):
            return True
        a = _num(arg, ptr, kw)
        return {"minimum": v >= a, "maximum": v <= a, "exclusiveMinimum": v > a,
                "exclusiveMaximum": v < a, "multipleOf": a != 0 and (Fraction(v) / a).denominator == 1}[kw]
    if kw in ("minLength", "maxLength"):
        if not isinstance(v, str):
            return True
        n = _nonneg_int(arg, ptr, kw)
        return len(v) >= n if kw == "minLength" else len(v) <= n
    raise SpecError(f"{ptr}/{escape_pointer(kw)}", f"keyword {kw!r} is not supported beside enum/const")


def compile_schema(doc: dict) -> LayoutNode:
    """Compile a schema document (the spec minus its relations) into the template tree."""
    return SchemaCompiler(doc).compile()


# ---------------------------------------------------------------------------------------------
# Canonical text and record validation against the template.

@dataclass(frozen=True)
class TextStyle:
    """Separators of the canonical layout (xgrammar's JSON grammar uses these by default)."""

    item_sep: str = ", "
    key_sep: str = ": "


def canonical_text(node: LayoutNode, value: Any, style: TextStyle = TextStyle()) -> str:
    """The one canonical text of a record (assumed valid against the template)."""
    if isinstance(node, Obj):
        parts = [f"{json.dumps(f.key, ensure_ascii=False)}{style.key_sep}{canonical_text(f.node, value[f.key], style)}"
                 for f in node.fields if f.key in value]
        return "{" + style.item_sep.join(parts) + "}"
    if isinstance(node, Arr):
        return "[" + style.item_sep.join(canonical_text(node.item, v, style) for v in value) + "]"
    return node.text(value)


def schema_violations(node: LayoutNode, value: Any, path: tuple = ()) -> list[tuple[tuple, str]]:
    """Every way `value` breaks the template, as (path, message) pairs."""
    out: list[tuple[tuple, str]] = []
    if isinstance(node, Obj):
        if not isinstance(value, dict):
            return [(path, f"expected an object, got {_dump(value)}")]
        keys = {f.key for f in node.fields}
        for k in value:
            if k not in keys:
                out.append((path + (k,), "property not allowed (additionalProperties: false)"))
        for f in node.fields:
            if f.key in value:
                out += schema_violations(f.node, value[f.key], path + (f.key,))
            elif f.required:
                out.append((path + (f.key,), "required property missing"))
        return out
    if isinstance(node, Arr):
        if not isinstance(value, list):
            return [(path, f"expected an array, got {_dump(value)}")]
        if len(value) < node.min_items or (node.max_items is not None and len(value) > node.max_items):
            out.append((path, f"array length {len(value)} outside [{node.min_items}, {node.max_items}]"))
        item = node.item
        if isinstance(item, Scalar) and item.kind in ("integer", "fixed") and item.finite:
            enc = item.encode  # fast path for long arrays of bounded numbers: one call per item
            for i, v in enumerate(value):
                if enc(v) is None:
                    out += schema_violations(item, v, path + (i,))
            return out
        for i, v in enumerate(value):
            out += schema_violations(item, v, path + (i,))
        return out
    if node.kind == "string":
        if not isinstance(value, str):
            return [(path, f"expected a string, got {_dump(value)}")]
        if len(value) < node.min_len or (node.max_len is not None and len(value) > node.max_len):
            out.append((path, f"string length {len(value)} outside [{node.min_len}, {node.max_len}]"))
        return out
    if node.kind == "number":
        if isinstance(value, bool) or not isinstance(value, (int, float, Fraction)):
            return [(path, f"expected a number, got {_dump(value)}")]
        return out
    if node.kind == "integer" and node.lo is None and node.hi is None:
        if isinstance(value, bool) or not isinstance(value, int):
            return [(path, f"expected an integer, got {_dump(value)}")]
        return out
    if node.encode(value) is None:
        return [(path, f"value {_dump(value)} is not allowed by the schema at {node.pointer or '/'}")]
    return out


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)[:40]


def path_text(path: tuple) -> str:
    """('itinerary', 2, 'city') -> 'itinerary[2].city'."""
    s = ""
    for p in path:
        s += f"[{p}]" if isinstance(p, int) else (("." if s else "") + p)
    return s or "$"
