"""JSON Schema subset -> an ordered record layout (a template tree).

The template says what a record looks like; `ground.py` expands the parts that relations
mention into solver variables. A validation keyword FactorSpec cannot compile exactly is a
`SpecError` naming the keyword and its JSON Pointer, never a silent ignore. Keywords that
constrain nothing (annotations, unknown or vendor keywords such as `x-*`, draft-04 `id`,
`format` unless enforced, keywords of another type than the node's) are ignored, as the JSON
Schema specification says, and listed in the compile report (`SchemaCompiler.report`).

Narrowings (sound: every text FactorSpec allows is valid for the schema; documented in
docs/spec.md): an object without `additionalProperties` is closed (one with
`additionalProperties` true or a schema is open, unless `open_objects=False` closes it too);
declared fields come first, in their order, then extra members; a schema without `type` but
with type-implying keywords (`properties`, `items`, `minLength`, ...) takes those types; numbers
are written without exponent; texts are compact (separators from `TextStyle`).
"""
from __future__ import annotations

import bisect
import dataclasses
import json
import math
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any, Optional, Union, cast

from factorspec.errors import EmptySchema, SpecError
from factorspec.graph import metaschemas
from factorspec.graph.all_of import merge_all_of
from factorspec.graph.disjoint import Overlaps, Plan, Vocabulary, exclusive_plan
from factorspec.graph.exclusive import exclusive_terms
from factorspec.graph.limits import MAX_VIOLATIONS
from factorspec.graph.negation import (
    DISJOINT,
    NEGATIONS,
    OBJECT_LAYERS,
    REGULAR,
    SOME_MEMBER,
    NegationTable,
    eliminate,
    excluded_values,
    excludes_integers,
    has_conditionals,
    is_value_exclusion,
)
from factorspec.graph.objects import ObjectRules, dependency_violations
from factorspec.graph.regex_lang import (
    Dfa,
    StringLang,
    any_string_dfa,
    compile_pattern,
    literal_pattern,
    literal_set_dfa,
    pattern_lang,
    product,
    regular_lang,
)
from factorspec.graph.relations import format_decimal
from factorspec.graph.some_member import expand_some_member

EXTENSION_KEY = "x-factorspec"
ANNOTATIONS = {"title", "description", "$schema", "$id", "$comment", "examples", "default", "deprecated",
               "readOnly", "writeOnly", "$anchor"}
# Keywords that never constrain an instance here: core identifiers (draft-04 `id` included; only
# local '#/...' references are resolved, so a base URI changes nothing), annotations, and
# `format`/`content*` (annotations by default since 2019-09; jsonschema does not assert them).
IGNORED_KEYWORDS = ANNOTATIONS | {"id", "$vocabulary", "$dynamicAnchor", "$recursiveAnchor", "format",
                                  "contentEncoding", "contentMediaType", "contentSchema", "$defs",
                                  "definitions"}
# Every validation/applicator keyword of drafts 4 to 2020-12. One of these that a node cannot
# compile is refused; any other key is an unknown keyword and is ignored (and reported).
VALIDATION_KEYWORDS = {
    "type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
    "maxLength", "minLength", "pattern", "items", "additionalItems", "prefixItems", "maxItems", "minItems",
    "uniqueItems", "contains", "minContains", "maxContains", "maxProperties", "minProperties", "required",
    "properties", "patternProperties", "additionalProperties", "dependencies", "dependentRequired",
    "dependentSchemas", "propertyNames", "if", "then", "else", "allOf", "anyOf", "oneOf", "not", "$ref",
    "$dynamicRef", "$recursiveRef", "unevaluatedItems", "unevaluatedProperties",
    REGULAR,  # internal (negation.py, all_of.py): patterns that must and must not match
    SOME_MEMBER,  # internal (negation.py, some_member.py): some member fails a negated object's schemas
    OBJECT_LAYERS,  # internal (all_of.py): the object keywords of an allOf's members, each applied to every key
}
# keywords that only constrain instances of one JSON type (a no-op on the others)
_TYPE_SPECIFIC = {
    "object": {"properties", "required", "additionalProperties", "patternProperties", "minProperties",
               "maxProperties", "propertyNames", "dependencies", "dependentRequired", "dependentSchemas",
               "unevaluatedProperties", SOME_MEMBER, OBJECT_LAYERS},
    "array": {"items", "additionalItems", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains",
              "minContains", "maxContains", "unevaluatedItems"},
    "string": {"minLength", "maxLength", "pattern", REGULAR},
    "number": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
}
_KEYWORD_TYPE = {k: t for t, ks in _TYPE_SPECIFIC.items() for k in ks}
_TYPE_SPECIFIC_KEYS = set(_KEYWORD_TYPE)
MAX_EXCLUSION_DOMAIN = 4096  # a range minus `not` values becomes an enum of at most this many values
JSON_TYPES = ("null", "boolean", "object", "array", "number", "string")
_TYPE_KEYWORDS = {
    "object": {"properties", "required", "additionalProperties", "minProperties", "maxProperties",
               "dependentRequired", "dependencies", "patternProperties", "propertyNames", OBJECT_LAYERS},
    "array": {"items", "minItems", "maxItems", "uniqueItems", "contains", "minContains", "maxContains"},
    "integer": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
    "number": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
    "string": {"minLength", "maxLength", "pattern", REGULAR},
    "boolean": set(),
    "null": set(),
}


def escape_pointer(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


@dataclass
class Scalar:
    """A leaf. `kind`: enum, integer, fixed (number with multipleOf), boolean, string (free text),
    number (free JSON number), any (any JSON value: the schema `true`/`{}`), union (one of `alts`;
    relations never name a union or an any). Integer/fixed values are held as integers in units of `step`."""

    pointer: str
    kind: str
    values: list[Any] = field(default_factory=list)  # enum (and boolean/null as enums)
    lo: int | None = None  # bounds in units of `step`
    hi: int | None = None
    step: Union[int, Fraction] = 1
    min_len: int = 0
    max_len: int | None = None
    alts: list[LayoutNode] = field(default_factory=list)  # kind "union": the alternatives (anyOf, type lists)
    # kind "number" (a free number) only: exact bounds as values, each inclusive or open
    nlo: Optional[Fraction] = None
    nlo_open: bool = False
    nhi: Optional[Fraction] = None
    nhi_open: bool = False
    # kind "number" only: no integer is a value (a `not` of type integer). FactorSpec writes numbers
    # without exponent and a fraction's last digit non-zero, so the text of such a value is one whose
    # fraction part is non-empty (never `1.0`, an integer from draft 6 on and a float in draft 4)
    non_integer: bool = False
    # kind "string" only: the regular language of `pattern` within the length bounds (regex_lang.py)
    lang: Optional[StringLang] = None

    def number_within(self, v: Fraction) -> bool:
        """A free number's value inside its bounds (exactly), and not an integer if `non_integer`."""
        if self.non_integer and v.denominator == 1:
            return False
        if self.nlo is not None and (v < self.nlo or (self.nlo_open and v == self.nlo)):
            return False
        return not (self.nhi is not None and (v > self.nhi or (self.nhi_open and v == self.nhi)))

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
    """An object: the declared fields in order, then (open objects only) members with other keys,
    each value matching `extra` (additionalProperties true or a schema)."""

    pointer: str
    fields: list[Field]
    extra: Optional[LayoutNode] = None
    rules: Optional[ObjectRules] = None  # minProperties/maxProperties/dependentRequired, if they constrain
    # patternProperties/propertyNames: the extra keys' language and the value schema of each key
    # (`extra` is then one of `keys.values`, kept so code that only asks "open?" needs no change)
    keys: Optional[KeySpace] = None

    def extra_node(self, key: str) -> Optional[LayoutNode]:
        """The value schema of an extra member with this key (None: no such member is allowed)."""
        if self.keys is not None:
            return self.keys.value_node(key)
        return self.extra


@dataclass(eq=False)
class KeySpace:
    """The keys an object's extra members may have under patternProperties/propertyNames, exactly:
    `lang` is the product automaton of propertyNames and every pattern (labels: (propertyNames
    holds, pattern 0 matches, ...)), accepting a key only where the value schema that applies (the
    allOf of the matching patterns' schemas, else additionalProperties) admits a value. `values[i]`
    is the value node of the keys matching exactly the patterns `sigs[i]`; `declared` the keys
    that are never extra members (declared properties and required/dependency names)."""

    lang: StringLang
    sigs: list[frozenset[int]]
    values: list[LayoutNode]
    declared: frozenset[str]

    def __post_init__(self) -> None:
        self._index = {sg: i for i, sg in enumerate(self.sigs)}
        self._memo: dict[int, int] = {}
        self._declared_in = frozenset(k for k in self.declared if self.lang.matches(k))
        self._declared_sorted = sorted(self._declared_in)
        self._matches_memo: dict[str, bool] = {}

    def value_index(self, key: str) -> int:
        return self.index_at(self.lang.dfa.run(key))

    def index_at(self, q: int) -> int:
        """The value node's index for the keys ending in DFA state q (the text machine knows q at
        a key's end: running the DFA over the key again would cost its length at every byte)."""
        got = self._memo.get(q)
        if got is None:
            lab = self.lang.dfa.labels[q]
            assert isinstance(lab, tuple)
            got = self._memo[q] = self._index[frozenset(i for i, m in enumerate(lab[1:]) if m)]
        return got

    def value_node(self, key: str) -> Optional[LayoutNode]:
        if key in self.declared or not self.lang.matches(key):
            return None
        return self.values[self.value_index(key)]

    def _excluded_with(self, prefix: str, excluded: frozenset) -> list[str]:
        """The excluded keys of the language that extend `prefix`: declared ones found by bisection
        in their sorted list (asked at every byte of a key: many declared names cost no scan)."""
        ds = self._declared_sorted
        i = bisect.bisect_left(ds, prefix)
        out = []
        while i < len(ds) and ds[i].startswith(prefix):
            if ds[i] in excluded:
                out.append(ds[i])
            i += 1
        return out + [e for e in excluded - self.declared if e.startswith(prefix) and self._in_lang(e)]

    def _in_lang(self, key: str) -> bool:
        """lang.matches, remembered: a used key is asked again at every byte of every later key."""
        got = self._matches_memo.get(key)
        if got is None:
            if len(self._matches_memo) > 4096:
                self._matches_memo.clear()
            got = self._matches_memo[key] = self.lang.matches(key)
        return got

    def at_least(self, n: int) -> bool:
        """Has the language at least n keys that are not declared (possible extra members)?"""
        d = len(self._declared_in)
        return self.lang.count(self.lang.start, 0, n + d) - d >= n

    def more_keys(self, used: frozenset) -> bool:
        """Is some key of the language neither declared nor used (may another member start)?"""
        taken = len(self._declared_in) + len(used - self.declared)
        return self.lang.count(self.lang.start, 0, taken + 1) > taken

    def open_after(self, q: int, n: int, prefix: str, excluded: frozenset) -> bool:
        """After the key prefix (state q, n characters; feasible), is some allowed key left?"""
        c = len(self._excluded_with(prefix, excluded))
        return c == 0 or self.lang.count(q, n, c + 1) > c

    def range_open(self, q: int, n: int, prefix: str, excluded: frozenset, lo: int, hi: int) -> bool:
        """Can a character in [lo, hi] come next after the key prefix, leading to an allowed key?"""
        ex = self._excluded_with(prefix, excluded)
        nxt = {ord(e[len(prefix)]) for e in ex if len(e) > len(prefix)}
        if not ex or (not nxt and all(len(e) == len(prefix) for e in ex)):
            return self.lang.range_live(q, n, lo, hi)
        for a, b in self.lang.live_intervals(q, n):
            a, b = max(a, lo), min(b, hi)
            if a <= b and b - a + 1 > sum(1 for x in nxt if a <= x <= b):
                return True  # a character no excluded key continues with
        for cp in sorted(x for x in nxt if lo <= x <= hi):
            t = self.lang.step(q, n, cp)
            if t >= 0 and self.open_after(t, self.lang.norm(n + 1), prefix + chr(cp), excluded):
                return True
        return False


@dataclass
class Arr:
    pointer: str
    item: LayoutNode
    min_items: int
    max_items: int | None
    unique: bool = False  # uniqueItems: compiled as FactorSpec's all_different (spec.unique_relations)
    # uniqueItems kept by the text automaton instead (items not finite, or not at a declared path):
    # each item's canonical text must differ from the earlier ones' (textstate.py, 'U' tasks)
    text_unique: bool = False
    # `contains`: (minContains, maxContains or None). The item is then a union whose alternative 0
    # is the items that match `contains` and alternative 1 (if any) those that do not; the text
    # automaton counts the items written as alternative 0 ('C' arrays in textstate.py)
    contains: Optional[tuple[int, Optional[int]]] = None

    def item_alt(self, i: int) -> LayoutNode:
        """The node a smallest instance writes as item i: a matching item while minContains is not
        met (min_items already counts them), then any item."""
        if self.contains is None:
            return self.item
        alts = self.item.alts  # type: ignore[union-attr]
        return alts[0] if i < self.contains[0] or len(alts) == 1 else alts[1]


LayoutNode = Union[Scalar, Obj, Arr]  # one node of the record layout (the template tree)


class _MustBeAbsent(SpecError):
    """An optional property admits no value in an open object (`SchemaCompiler._object` retries
    the object on the key-space path, which keeps the key out of the extra members)."""


def _num(v: Any, ptr: str, kw: str) -> Fraction:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise SpecError(f"{ptr}/{kw}", f"{kw} must be a number, got {json.dumps(v)}")
    if isinstance(v, float) and not math.isfinite(v):
        raise SpecError(f"{ptr}/{kw}", f"{kw} must be finite")
    return Fraction(str(v))


MAX_MIN_SIZE = 100_000  # minItems/minLength beyond this would make every record huge


def _dependency_entries(s: dict, keys: set[str], ptr: str) -> Iterator[tuple[str, str, Any, str]]:
    """(keyword, property, its dependency as written, pointer) of every dependencies /
    dependentRequired entry present in `keys` (each keyword must be an object)."""
    for kw in ("dependencies", "dependentRequired"):
        if kw not in keys:
            continue
        d = s[kw]
        if not isinstance(d, dict):
            raise SpecError(f"{ptr}/{kw}", f"{kw} must be an object")
        for a, bs in d.items():
            yield kw, a, bs, f"{ptr}/{kw}/{escape_pointer(a)}"


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
    """Turns a schema document into the template tree, resolving local `$ref`s.

    `report` lists, after `compile()`, every keyword that was ignored (it constrains nothing) or
    every narrowing applied, as (JSON Pointer, keyword, note)."""

    MAX_DEPTH = 64

    def __init__(self, doc: dict, open_objects: bool = True, share_targets: bool = True) -> None:
        # references into the official meta-schemas: copied into the document (metaschemas.py)
        remote = metaschemas.remote_refs(doc) if isinstance(doc, dict) and metaschemas.REMOTE_KEY not in doc else []
        remote = [n for n in remote if metaschemas.load(n) is not None]
        self._remote = {n: i for i, n in enumerate(remote)}
        self.doc = metaschemas.embed(doc, remote) if remote else doc
        # additionalProperties true/schema: open (the default; extra members after the declared
        # fields), or with open_objects=False closed like an object without the keyword (a sound
        # narrowing, noted in the report)
        self.open_objects = open_objects
        self._ref_stack: list[str] = []
        self._refs = _ref_table()
        self._negations = NegationTable()  # complements of $ref targets (negation.py)
        self._shared: dict[str, LayoutNode] = {}  # reference key -> its compiled recursive target
        # share_targets: a non-recursive target of SHARE_MIN_NODES nodes or more, met again, is a
        # reference node to its first compile (`_referenced`); off where relations name fields
        # (the grounder never descends into a reference node)
        self.share_targets = share_targets
        self._acyclic: dict[str, LayoutNode] = {}  # reference key -> its large non-recursive target
        self.acyclic_links = 0  # reference nodes made to those
        self._plans: dict[str, Plan] = {}  # oneOf text -> its disjointness plan (`_plan`)
        self._report: dict[tuple[str, str], str] = {}
        self._ov: Optional[Overlaps] = None
        self._anchor_table: Optional[dict[str, str]] = None

    @property
    def report(self) -> list[tuple[str, str, str]]:
        return [(p, k, n) for (p, k), n in self._report.items()]

    def _note(self, ptr: str, kw: str, note: str) -> None:
        self._report.setdefault((f"{ptr}/{escape_pointer(kw)}" if kw else ptr or "/", kw), note)

    def compile(self) -> LayoutNode:
        if not isinstance(self.doc, dict):
            raise SpecError("", f"a spec must be a JSON object (a JSON Schema), got {type(self.doc).__name__}")
        from factorspec.graph import recursion  # recursive $ref (recursion.py imports this module)

        token = DISJOINT.set(self._overlaps().disjoint_any)
        negations = NEGATIONS.set(self._negations)
        try:
            root = self.node(self.doc, "", 0)
        finally:
            NEGATIONS.reset(negations)
            DISJOINT.reset(token)
        try:
            recursion.check(root, self._refs)
        except SpecError:
            if self.acyclic_links:  # a refusal the shared targets may have caused: `compile_schema` retries
                raise _SharingRefused() from None
            raise
        return root

    def _resolve(self, ref: Any, ptr: str) -> tuple[Any, str]:
        """A reference -> (target schema, its JSON Pointer). Local forms: '#/...' (a JSON Pointer in
        a URI fragment: percent-escapes decoded), '#name' (an anchor: `$anchor` name, or a draft-04
        to 07 `id`/`$id` '#name'), and '<root id>#...' (the document's own `$id`/`id`)."""
        if isinstance(ref, str) and not ref.startswith("#"):
            base, _, frag = ref.partition("#")
            if base and base == self._root_id():
                ref = "#" + frag
        if isinstance(ref, str) and not ref.startswith("#"):
            name = metaschemas.meta_schema_base(ref)
            frag = ref.partition("#")[2]
            if name in self._remote and (not frag or frag.startswith("/")):
                ref = f"#/{metaschemas.REMOTE_KEY}/{self._remote[name]}{frag}"
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise SpecError(f"{ptr}/$ref", f"only local references ('#/...', '#anchor' or the document's own "
                            f"id, or a draft-04/06/07 meta-schema URI) are supported, got {ref!r}")
        frag = urllib.parse.unquote(ref[1:])
        negated = self._negations.resolve(frag)
        if negated is not None:
            return negated, frag
        if frag and not frag.startswith("/"):
            anchors = self._anchors()
            if frag not in anchors:
                raise SpecError(f"{ptr}/$ref", f"anchor reference {ref!r} names no `$anchor` or `$id`/`id` "
                                f"'#{frag}' in the document")
            frag = anchors[frag]
        target: Any = self.doc
        parts = frag.split("/")[1:] if frag else []
        for raw in parts:
            part = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(target, dict) and part in target:
                target = target[part]
            elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
                target = target[int(part)]
            else:
                raise SpecError(f"{ptr}/$ref", f"reference {ref!r} does not resolve")
        if not isinstance(target, (dict, bool)):
            raise SpecError(f"{ptr}/$ref", f"reference {ref!r} is not a schema object")
        return target, frag

    def _unevaluated(self, s: dict, ptr: str) -> dict:
        """unevaluatedProperties X where the in-place subschemas (this one, its allOf members and
        $ref targets, transitively) are plain: the keys they evaluate are exactly their properties
        and patternProperties (or all keys, where one has additionalProperties: X is then a no-op),
        so X is the additionalProperties of one more allOf member that lists all of them. An
        anyOf/oneOf/not/if/dependentSchemas among them evaluates keys only where it matches: refused."""
        names: dict[str, bool] = {}
        patterns: dict[str, bool] = {}
        seen: set[str] = set()
        every = False

        def visit(m: Any, mptr: str) -> None:
            nonlocal every
            if not isinstance(m, dict):
                return
            for kw in ("anyOf", "oneOf", "not", "if", "dependentSchemas", "$dynamicRef", "$recursiveRef"):
                if kw in m:
                    raise SpecError(f"{ptr}/unevaluatedProperties", f"unevaluatedProperties beside an in-place "
                                    f"'{kw}' (at {mptr}/{kw}) cannot be compiled exactly: list the properties "
                                    "and use additionalProperties")
            if isinstance(m.get("dependencies"), dict) and any(isinstance(v, dict) for v in m["dependencies"].values()):
                raise SpecError(f"{ptr}/unevaluatedProperties", f"unevaluatedProperties beside schema dependencies "
                                f"(at {mptr}/dependencies) cannot be compiled exactly")
            if m is not s and "unevaluatedProperties" in m:
                every = True  # an inner unevaluatedProperties evaluates every key it lets through
            if "additionalProperties" in m:
                every = True
            if isinstance(m.get("properties"), dict):
                names.update(dict.fromkeys(m["properties"], True))
            if isinstance(m.get("patternProperties"), dict):
                patterns.update(dict.fromkeys(m["patternProperties"], True))
            if isinstance(m.get("$ref"), str):
                target, tptr = self._resolve(m["$ref"], mptr)
                if tptr not in seen:
                    seen.add(tptr)
                    visit(target, tptr)
            if isinstance(m.get("allOf"), list):
                for i, a in enumerate(m["allOf"]):
                    visit(a, f"{mptr}/allOf/{i}")

        visit(s, ptr)
        rest = {k: v for k, v in s.items() if k != "unevaluatedProperties"}
        if every:
            self._note(ptr, "unevaluatedProperties", "every key is evaluated in place (additionalProperties): "
                       "a no-op")
            return rest
        member: dict[str, Any] = {"properties": names, "additionalProperties": s["unevaluatedProperties"]}
        if patterns:
            member["patternProperties"] = patterns
        self._note(ptr, "unevaluatedProperties", "the additionalProperties of one more allOf member listing the "
                   "properties evaluated in place")
        return {**rest, "allOf": list(rest.get("allOf", [])) + [member]}

    def _root_id(self) -> Optional[str]:
        """The document's own base URI (`$id`, or draft-04 `id`), without an empty fragment."""
        rid = self.doc.get("$id", self.doc.get("id"))
        return rid[:-1] if isinstance(rid, str) and rid.endswith("#") else rid if isinstance(rid, str) else None

    def _anchors(self) -> dict[str, str]:
        """Anchor name -> JSON Pointer of its schema, over the whole document (computed once)."""
        if self._anchor_table is None:
            table: dict[str, str] = {}

            def walk(x: Any, at: str) -> None:
                if isinstance(x, dict):
                    for kw in ("$anchor", "$id", "id"):
                        a = x.get(kw)
                        if isinstance(a, str):
                            name = a if kw == "$anchor" else a[1:] if a.startswith("#") and a[1:2] != "/" else ""
                            if name:
                                table.setdefault(name, at)
                    for k, v in x.items():
                        if k not in ("enum", "const", "default", "examples"):
                            walk(v, f"{at}/{escape_pointer(k)}")
                elif isinstance(x, list):
                    for i, v in enumerate(x):
                        walk(v, f"{at}/{i}")

            walk(self.doc, "")
            self._anchor_table = table
        return self._anchor_table

    def _keywords(self, s: dict, ptr: str) -> set[str]:
        """The validation keywords of a schema object; every other key is noted as ignored."""
        keys = set()
        for k, v in s.items():
            if k in VALIDATION_KEYWORDS:
                if _is_noop(k, v):
                    continue
                keys.add(k)
            elif k == EXTENSION_KEY:
                if ptr != "":
                    raise SpecError(f"{ptr}/{k}", f"{k!r} is only allowed at the root of the spec")
            elif k == "format":
                self._note(ptr, k, f"format {v!r} is an annotation: not enforced")
            elif k not in ANNOTATIONS and k not in ("$defs", "definitions") and not (
                    k == metaschemas.REMOTE_KEY and ptr == "" and self._remote):
                self._note(ptr, k, "not a validation keyword: ignored")
        return keys

    def node(self, s: Any, ptr: str, depth: int) -> LayoutNode:
        if depth > self.MAX_DEPTH:
            raise SpecError(ptr, f"schema nests deeper than {self.MAX_DEPTH} levels")
        if s is True:
            return Scalar(ptr, "any")
        if s is False:
            raise EmptySchema(ptr, "the schema 'false' admits no value")
        if not isinstance(s, dict):
            raise SpecError(ptr, f"a schema must be an object, got {json.dumps(s)[:60]}")
        s = _draft4_exclusive(s)
        keys = self._keywords(s, ptr)
        if "unevaluatedProperties" in keys:
            s = self._unevaluated(s, ptr)
            keys = self._keywords(s, ptr)
        if "$ref" in keys:
            others = keys - {"$ref"}
            if others and self._ref_siblings_ignored():
                for k in sorted(others):
                    self._note(ptr, k, "beside '$ref': ignored (drafts 4 to 7 ignore the siblings of $ref)")
                others = set()
            if others:  # 2019-09 and later: $ref is one more applicator beside the others
                rest = {k: v for k, v in s.items() if k != "$ref"}
                return self._all_of({**rest, "allOf": [{"$ref": s["$ref"]}] + list(rest.get("allOf", []))},
                                    ptr, depth)
            target, tptr = self._resolve(s["$ref"], ptr)
            ref = "#" + tptr  # one key per target, however the reference spells it
            return self._referenced(ref, lambda: self.node(target, tptr, depth + 1), ptr)
        if keys & {"not", "if", "then", "else", "dependentSchemas", "dependencies"} and \
                has_conditionals({k: s[k] for k in keys}):
            # not / if-then-else / schema dependencies pushed into positive allOf members (negation.py)
            kw = next(k for k in ("not", "if", "then", "else", "dependentSchemas", "dependencies") if k in keys)
            self._note(ptr, kw, "rewritten into positive keywords")
            narrowed: list[tuple[str, str]] = []
            try:
                positive = eliminate(s, ptr, self._resolve, _draft4_exclusive, VALIDATION_KEYWORDS, narrowed)
                for nptr, why in narrowed:
                    self._note(nptr, "", why)
                return self.node(positive, ptr, depth + 1)
            except SpecError as e:
                if _resolves(self.doc, e.pointer):
                    raise
                cls = EmptySchema if isinstance(e, EmptySchema) else SpecError
                raise cls(f"{ptr}/{kw}", f"{e.message} (at {e.pointer or '/'} of the positive rewrite of "
                          f"'{kw}')") from None
        if "allOf" in keys:
            return self._all_of(s, ptr, depth)
        if SOME_MEMBER in keys:  # from a 'not' over an object's members (some_member.py)
            expanded, narrowing = expand_some_member(s, ptr)
            if narrowing:
                self._note(ptr, "not", narrowing)
            return self.node(expanded, ptr, depth + 1)
        for k in ("$dynamicRef", "$recursiveRef"):
            if k in keys:
                raise SpecError(f"{ptr}/{escape_pointer(k)}", f"unsupported keyword {k!r}")
        if "anyOf" in keys or "oneOf" in keys:
            return self._union(s, keys, ptr, depth)
        typ = s.get("type")
        types: list[str] | None = None
        if isinstance(typ, list):
            if not typ or not all(isinstance(t, str) and t in _TYPE_KEYWORDS for t in typ):
                raise SpecError(f"{ptr}/type", f"a list of types must name known types, got {json.dumps(typ)[:60]}")
            types = [t for t in dict.fromkeys(typ) if not (t == "integer" and "number" in typ)]
            if len(types) == 1:
                typ, types = types[0], None
        elif typ is not None and (not isinstance(typ, str) or typ not in _TYPE_KEYWORDS):
            raise SpecError(f"{ptr}/type", f"unknown type {typ!r}")
        if "not" in keys and not ("enum" in keys or "const" in keys):  # a value exclusion (negation.py)
            finite: dict[str, list[Any]] = {"boolean": [False, True], "null": [None]}
            ts = types if types is not None else [typ] if isinstance(typ, str) else None
            if ts is not None and len(ts) > 1 and not all(t in finite for t in ts):
                return self._per_type(s, ts, ptr, depth)
            if ts == ["string"]:  # excluded strings: a negated literal pattern (regex_lang.py)
                words = [w for w in excluded_values(s["not"]) if isinstance(w, str)]
                r = dict(s.get(REGULAR, {"all": [], "none": []}))
                r["none"] = list(r.get("none", [])) + ([literal_pattern(words)] if words else [])
                rest = {k: v for k, v in s.items() if k != "not"}
                return self.node({**rest, REGULAR: r} if r["none"] or r.get("all") else rest, ptr, depth + 1)
            if ts is None or not all(t in finite for t in ts):
                return self._excluding(s, ptr, depth)
            s = {**s, "enum": [v for t in ts for v in finite[t]]}
            keys = keys | {"enum"}
        if "enum" in keys or "const" in keys:
            lit = [s["const"]] if "const" in s else s["enum"] if isinstance(s["enum"], list) else []
            if any(isinstance(v, (dict, list)) for v in lit):
                return self._structured_enum(s, lit, ptr, depth)
            return self._enum(s, keys, ptr, types if types is not None else typ)
        if typ is None and types is None:
            types = [t for t in ("object", "array", "string", "number") if keys & _TYPE_SPECIFIC[t]]
            if not types:
                return Scalar(ptr, "any")
            self._note(ptr, "type", f"no 'type': taken as {' or '.join(types)} from its keywords")
            if len(types) == 1:
                typ, types = types[0], None
        if types is not None:
            alts = [self.node({**s, "type": t}, ptr, depth) for t in types]
            return Scalar(ptr, "union", alts=alts)
        assert isinstance(typ, str)
        base = "number" if typ == "integer" else typ
        for k in sorted(keys - {"type"}):
            t = _KEYWORD_TYPE.get(k)
            if t is not None and t != base:
                self._note(ptr, k, f"applies to {t}s only: a no-op for type {typ!r}")
            elif k not in _TYPE_KEYWORDS[typ] and not (k == "additionalItems" and typ == "array"):
                raise SpecError(f"{ptr}/{escape_pointer(k)}", f"unsupported keyword {k!r} for type {typ!r}")
        if typ == "object":
            return self._object(s, keys, ptr, depth)
        if typ == "array":
            return self._array(s, keys, ptr, depth)
        if typ == "boolean":
            return Scalar(ptr, "enum", values=[False, True])
        if typ == "null":
            return Scalar(ptr, "enum", values=[None])
        if typ == "string":
            lo = _nonneg_int(s.get("minLength", 0), ptr, "minLength")
            hi = _nonneg_int(s["maxLength"], ptr, "maxLength") if "maxLength" in s else None
            if hi is not None and hi < lo:
                raise EmptySchema(f"{ptr}/maxLength", f"maxLength {hi} < minLength {lo}: no string fits")
            lang = None
            if REGULAR in keys:  # several patterns, some negated: their product (regex_lang.py)
                pos, neg = _regular_of(s)
                lang = regular_lang(pos, neg, ptr, lo, hi)
                if lang.empty():
                    raise EmptySchema(f"{ptr}/pattern", "no string of the allowed lengths matches the patterns "
                                      "(and none of the excluded ones)")
            elif "pattern" in keys:  # a regular language, intersected with the length bounds (regex_lang.py)
                lang = pattern_lang(s["pattern"], f"{ptr}/pattern", lo, hi)
                if lang.empty():
                    raise EmptySchema(f"{ptr}/pattern", "no string of the allowed lengths matches the pattern")
            return Scalar(ptr, "string", min_len=lo, max_len=hi, lang=lang)
        return self._numeric(s, ptr, typ)

    def _per_type(self, s: dict, types: list[str], ptr: str, depth: int) -> LayoutNode:
        """A type list with a value exclusion: one alternative per type, those left empty dropped."""
        alts: list[LayoutNode] = []
        for t in types:
            try:
                alts.append(self.node({**s, "type": t}, ptr, depth + 1))
            except EmptySchema as e:
                self._note(ptr, "not", f"type {t!r} admits no value here ({e.message})")
        if not alts:
            raise EmptySchema(f"{ptr}/not", "'not' excludes every value of every type")
        return alts[0] if len(alts) == 1 else Scalar(ptr, "union", alts=alts)

    def _excluding(self, s: dict, ptr: str, depth: int) -> LayoutNode:
        """A bounded integer or fixed-point number minus the values a `not` excludes: the
        remaining values, as an enum (at most MAX_EXCLUSION_DOMAIN of them)."""
        if s.get("type") is None and not any(k in s for k in _TYPE_SPECIFIC_KEYS):
            # any value minus some values: one alternative per type, each filtered (exact)
            return self._per_type(s, ["null", "boolean", "object", "array", "number", "string"], ptr, depth)
        base = self.node({k: v for k, v in s.items() if k != "not"}, ptr, depth + 1)
        if isinstance(base, (Obj, Arr)) or (isinstance(base, Scalar) and base.kind == "number"):
            # only excluded values of the node's own type matter (an object is never 3)
            same = dict if isinstance(base, Obj) else list if isinstance(base, Arr) else None
            relevant = [x for x in excluded_values(s["not"]) if (isinstance(x, same) if same is not None
                        else isinstance(x, (int, float)) and not isinstance(x, bool))]
            if same is not None:  # a value the object/array layout never produces needs no exclusion
                from factorspec.graph.layout_values import rejects  # it reads this module's nodes
                relevant = [x for x in relevant if not rejects(base, x)]
            if not relevant and not (same is None and excludes_integers(s["not"])):
                return base
            if isinstance(base, Obj) and base.extra is None and base.keys is None:
                return self._without_objects(s, base, relevant, ptr, depth)
        if isinstance(base, Scalar) and base.kind == "integer" and excludes_integers(s["not"]):
            raise EmptySchema(f"{ptr}/not", "'not' excludes every integer")
        if isinstance(base, Scalar) and base.kind == "number" and excludes_integers(s["not"]):
            return self._non_integer(base, s["not"], ptr)
        if isinstance(base, Scalar) and base.kind in ("integer", "fixed", "number") and not excludes_integers(
                s["not"]) and not (base.finite and base.hi - base.lo < MAX_EXCLUSION_DOMAIN):  # type: ignore[operator]
            return self._punctured(base, s["not"], ptr)
        if not (isinstance(base, Scalar) and base.kind in ("integer", "fixed") and base.finite
                and base.hi - base.lo < MAX_EXCLUSION_DOMAIN):  # type: ignore[operator]
            what = base.kind if isinstance(base, Scalar) else type(base).__name__.lower()
            raise SpecError(f"{ptr}/not", "'not' excluding values is supported where the values are finite "
                            f"(enum, const, boolean, null, an integer or multipleOf range of at most "
                            f"{MAX_EXCLUSION_DOMAIN} values); here the values are {what}")
        excluded = {_canon(x) for x in excluded_values(s["not"])}
        integers = excludes_integers(s["not"])
        assert base.lo is not None and base.hi is not None
        values = [v for v in (base.decode(k) for k in range(base.lo, base.hi + 1))
                  if _canon(v) not in excluded and not (integers and _matches_type(v, "integer"))]
        if not values:
            raise EmptySchema(f"{ptr}/not", "'not' excludes every value of the range")
        return Scalar(ptr, "enum", values=values)

    def _non_integer(self, base: Scalar, exclusion: Any, ptr: str) -> LayoutNode:
        """A free number minus every integer (and maybe finitely many other values): the same
        ranges with `non_integer` set, exactly (the text automaton ends such a number only after a
        fraction part). Empty only where the range is one integer."""
        node = dataclasses.replace(base, non_integer=True)
        if node.nlo is not None and node.nlo == node.nhi and not node.number_within(node.nlo):
            raise EmptySchema(f"{ptr}/not", "'not' excludes every integer, and the range holds only one")
        self._note(ptr, "not", "a number that is not an integer: written with a fraction part")
        return self._punctured(node, exclusion, ptr)

    def _without_objects(self, s: dict, base: Obj, values: list[dict], ptr: str, depth: int) -> LayoutNode:
        """A closed object layout minus finitely many object values it may produce: for each value
        v, "differs from v" is one of: a key of v absent, a declared key outside v present, or a key
        of v present with a value other than v's (a `not` over that value, compiled as its own
        exclusion); their anyOf, in an allOf with the schema less its `not` (exact: a closed
        object's keys are its declared fields, so these cover every way of not being v)."""
        declared = {f.key: f for f in base.fields}
        added: list[Any] = []
        for v in values:
            parts: list[Any] = []
            for k, x in v.items():
                if not declared[k].required:
                    parts.append({"properties": {k: False}})
                parts.append({"required": [k], "properties": {k: {"not": {"const": x}}}})
            parts += [{"required": [k]} for k in declared if k not in v]
            if not parts:
                raise EmptySchema(f"{ptr}/not", "'not' excludes the only value of the object layout")
            added.append(parts[0] if len(parts) == 1 else {"anyOf": parts})
        self._note(ptr, "not", f"{len(values)} excluded object value(s) written as 'some property differs'")
        rest = {k: x for k, x in s.items() if k != "not"}
        return self.node({**rest, "allOf": list(rest.get("allOf", [])) + added}, ptr, depth + 1)

    def _punctured(self, base: Scalar, exclusion: Any, ptr: str) -> LayoutNode:
        """A large or unbounded integer/fixed-point range, or a free number, minus finitely many
        values: the union of the ranges between them (for a free number: open at each removed
        value), exactly; the text automaton then knows a value is allowed when its number ends."""
        cuts: set[Fraction] = set()
        for x in excluded_values(exclusion):
            if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x):
                cuts.add(Fraction(str(x)) if isinstance(x, float) else Fraction(x))
        alts: list[LayoutNode] = []
        if base.kind == "number":
            inside = sorted(v for v in cuts if base.number_within(v))
            if not inside:
                return base
            bounds: list[tuple[Optional[Fraction], bool]] = [(base.nlo, base.nlo_open)] + [(v, True) for v in inside]
            ends: list[tuple[Optional[Fraction], bool]] = [(v, True) for v in inside] + [(base.nhi, base.nhi_open)]
            for (nlo, lo_open), (nhi, hi_open) in zip(bounds, ends):
                alts.append(dataclasses.replace(base, nlo=nlo, nlo_open=lo_open, nhi=nhi, nhi_open=hi_open))
        else:
            units = sorted({int(v / base.step) for v in cuts if (v / base.step).denominator == 1})
            units = [u for u in units if (base.lo is None or u >= base.lo) and (base.hi is None or u <= base.hi)]
            if not units:
                return base
            edges: list[Optional[int]] = [base.lo, *[u + 1 for u in units]]
            tops: list[Optional[int]] = [*[u - 1 for u in units], base.hi]
            for lo, hi in zip(edges, tops):
                if lo is None or hi is None or lo <= hi:
                    alts.append(dataclasses.replace(base, lo=lo, hi=hi))
        self._note(ptr, "not", f"the values it excludes split the range into {len(alts)} ranges")
        if not alts:
            raise EmptySchema(f"{ptr}/not", "'not' excludes every value of the range")
        return alts[0] if len(alts) == 1 else Scalar(ptr, "union", alts=alts)

    def _ref_siblings_ignored(self) -> bool:
        """Drafts 4, 6 and 7 ignore every keyword beside `$ref`; later drafts (and a document
        without `$schema`, which `jsonschema` reads as the latest) apply them."""
        d = self.doc.get("$schema") if isinstance(self.doc, dict) else None
        return isinstance(d, str) and any(f"draft-0{n}" in d for n in (3, 4, 6, 7))

    # -- allOf ------------------------------------------------------------------------------------
    def _all_of(self, s: dict, ptr: str, depth: int) -> LayoutNode:
        """allOf merged into one schema (graph/all_of.py), then compiled as any other node."""
        members = s.get("allOf")
        if isinstance(members, list) and len(members) == 1 and not (self._keywords(s, ptr) - {"allOf"}):
            # allOf of one schema is that schema: compiled as is, so a recursive $ref in it meets the
            # reference stack instead of being inlined by the merge at every level
            return self.node(members[0], f"{ptr}/allOf/0", depth + 1)
        text = json.dumps(s, sort_keys=True, default=str)
        if '"$ref"' in text:
            # the merge inlines its members' $refs, so a recursion through them would never meet the
            # reference stack: the allOf itself is a reference key (its text: the same text in one
            # document is the same schema), and met again inside itself it is a reference node
            return self._referenced(f"allOf {text}", lambda: self._merged_all_of(s, ptr, depth), ptr)
        return self._merged_all_of(s, ptr, depth)

    def _merged_all_of(self, s: dict, ptr: str, depth: int) -> LayoutNode:
        merged = merge_all_of(s, ptr, self._resolve, _draft4_exclusive, VALIDATION_KEYWORDS)
        self._note(ptr, "allOf", "merged into one schema")
        try:
            return self.node(merged, ptr, depth + 1)
        except SpecError as e:
            if not _resolves(self.doc, e.pointer):
                cls = EmptySchema if isinstance(e, EmptySchema) else SpecError
                raise cls(f"{ptr}/allOf", f"{e.message} (at {e.pointer or '/'} of the merged allOf)") from None
            raise

    # -- anyOf / oneOf ----------------------------------------------------------------------------
    def _union(self, s: dict, keys: set[str], ptr: str, depth: int) -> LayoutNode:
        if "anyOf" in keys and "oneOf" in keys:
            # both apply: the oneOf as one more allOf member (merged, distributed: all_of.py)
            rest = {k: v for k, v in s.items() if k != "oneOf"}
            return self._all_of({**rest, "allOf": list(rest.get("allOf", [])) + [{"oneOf": s["oneOf"]}]},
                                ptr, depth)
        kw = "anyOf" if "anyOf" in keys else "oneOf"
        alts = s[kw]
        if not isinstance(alts, list) or not alts:
            raise SpecError(f"{ptr}/{kw}", f"{kw} must be a non-empty list of schemas")
        siblings = {k: s[k] for k in keys if k != kw}
        overlap: SpecError | None = None
        if kw == "oneOf":
            plan = self._plan(alts, {k: v for k, v in s.items() if k != "oneOf"})
            if plan.excluded:
                return self._exclude_types(s, plan.excluded, plan.why, ptr, depth)
            if plan.pair is not None:
                # the schemas may overlap; the layouts may still be separable (below)
                i, j, t = plan.pair
                overlap = SpecError(f"{ptr}/oneOf", f"oneOf alternatives #{i} and #{j} may both match one value "
                                    f"(of type {t}); FactorSpec compiles such a oneOf exactly, as 'this "
                                    "alternative and no other' by negation, only where the complements compile "
                                    "(else the alternatives must be disjoint: by type, const/enum values, ranges, "
                                    "patterns, or a required property whose values differ): use anyOf if "
                                    "exclusivity does not matter")
        nodes: list[LayoutNode] = []
        per_alt: list[tuple[LayoutNode, Any]] = []
        layout_keys: list[set[str] | None] = [None] * len(alts)  # closed object layouts' keys
        layouts: list[LayoutNode | None] = [None] * len(alts)  # each alternative's, with the siblings
        empty: SpecError | None = None
        for i, a in enumerate(alts):
            aptr = f"{ptr}/{kw}/{i}"
            try:
                n, a = self._alternative(siblings, a, aptr, kw, ptr, depth)
            except EmptySchema as e:
                self._note(aptr, "", f"admits no value ({e.message}): the alternative is left out")
                empty = e
                continue
            except SpecError as e:
                if siblings and not _resolves(self.doc, e.pointer):
                    raise SpecError(aptr, f"{e.message} (in the alternative merged with the keywords beside "
                                          f"{kw})") from None
                raise
            per_alt.append((n, a))
            layouts[i] = n
            if isinstance(n, Obj) and n.extra is None:
                layout_keys[i] = {f.key for f in n.fields}
        if not per_alt:
            last = empty.message if empty else ""
            raise EmptySchema(f"{ptr}/{kw}", f"no alternative of {kw} admits a value (the last: {last})")
        if overlap is not None:
            try:  # exact: "this alternative and no other", by negation
                return self._exclusive(s, alts, ptr, depth, overlap, layout_keys, layouts)
            except EmptySchema:
                raise
            except SpecError as e:
                # a sound narrowing of the layouts where a negation does not compile
                self._separate(per_alt, s, ptr, e)
        for n, _ in per_alt:
            nodes.extend(n.alts if isinstance(n, Scalar) and n.kind == "union" else [n])
        return nodes[0] if len(nodes) == 1 else Scalar(ptr, "union", alts=nodes)

    def _plan(self, alts: list, parent: dict) -> Plan:
        """`exclusive_plan`, once per oneOf text: a definition met under many paths repeats its oneOf,
        and the disjointness proofs are a function of the schemas alone (one document)."""
        key = json.dumps([alts, parent], sort_keys=True, default=str)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = exclusive_plan(self._overlaps(), alts, parent)
        return plan

    def _overlaps(self) -> Overlaps:
        if self._ov is None:
            self._ov = Overlaps(_VOCABULARY, self._resolve, self._ref_siblings_ignored())
        return self._ov

    def _exclude_types(self, s: dict, excluded: list[str], whys: list[str], ptr: str, depth: int) -> LayoutNode:
        """oneOf where two alternatives admit every value of some types (within the keywords
        beside it): no value of those types matches exactly one, so the node is narrowed to the
        other types (exact), then compiled."""
        t = s.get("type")
        given = [t] if isinstance(t, str) else t if isinstance(t, list) else list(JSON_TYPES)
        keep = [x for x in given if isinstance(x, str) and ("number" if x == "integer" else x) not in excluded]
        why = "; ".join(whys)
        if not keep:
            raise EmptySchema(f"{ptr}/oneOf", f"the schema admits no value: no value matches exactly one alternative "
                              f"of this oneOf ({why})")
        self._note(f"{ptr}/oneOf", "oneOf", f"{why}: those types are excluded")
        return self.node({**s, "type": keep[0] if len(keep) == 1 else keep}, ptr, depth + 1)

    def _exclusive(self, s: dict, alts: list, ptr: str, depth: int, overlap: SpecError,
                   layout_keys: list[set[str] | None], layouts: list[LayoutNode | None]) -> LayoutNode:
        """oneOf with overlapping alternatives, exactly: anyOf over "alternative i and no other"
        (each other alternative reduced to what can tell it from i, then negated: exclusive.py,
        negation.py), whose alternatives are disjoint by construction. An enum/const alternative
        loses, value by value, the values another alternative's layout (with the siblings)
        certainly produces (layout_values.admits: layouts are sound, so that alternative accepts
        them). Where a negation cannot be compiled, `overlap` stands, with the reason."""
        from factorspec.graph.layout_values import admits  # it reads this module's nodes

        rest = {k: v for k, v in s.items() if k != "oneOf"}
        self._note(f"{ptr}/oneOf", "oneOf", "alternatives may overlap: compiled as 'exactly one' by negation")

        def matches(j: int, v: Any) -> bool:
            n = layouts[j]
            return n is not None and admits(n, v)

        try:
            given = {k: v for k, v in rest.items() if k in VALIDATION_KEYWORDS}
            values = [self._values_of(a) for a in alts]
            only = exclusive_terms(self._overlaps(), alts, given, ptr, layout_keys, values, matches)
            if not only and any(k is not None for k in layout_keys):
                # read by their closed layouts, every alternative's values also match another
                # (open) one; read as written (no layout keys: each term sound on every value,
                # test_exclusive.py), a value may still match exactly one: the narrowing must
                # not turn a schema with values into an empty one
                only = exclusive_terms(self._overlaps(), alts, given, ptr, None, values, matches)
                if only:
                    self._note(f"{ptr}/oneOf", "additionalProperties",
                               "alternatives read as written (objects open): closed, every value "
                               "of each also matches another")
            if not only:
                raise EmptySchema(f"{ptr}/oneOf", "every value of each alternative also matches another one")
            return self.node({**rest, "anyOf": only}, ptr, depth + 1)
        except EmptySchema as e:
            raise EmptySchema(f"{ptr}/oneOf", f"no value matches exactly one alternative of this oneOf "
                              f"({e.pointer or '/'}: {e.message})") from None
        except SpecError as e:
            raise SpecError(overlap.pointer, f"{overlap.message} (exactly-one by negation failed at "
                            f"{e.pointer or '/'}: {e.message})") from None

    def _values_of(self, a: Any) -> list | None:
        """The values of an alternative that is only an enum or a const (through `$ref`s), else None."""
        seen = 0
        def keywords(x: dict) -> set[str]:
            return {k for k in x if k in VALIDATION_KEYWORDS and not _is_noop(k, x[k])}

        while isinstance(a, dict) and "$ref" in a and not (keywords(a) - {"$ref"}) and seen < 16:
            try:
                a = self._resolve(a["$ref"], "")[0]
            except SpecError:
                return None
            seen += 1
        if not isinstance(a, dict) or not (keys := keywords(a)) or not keys <= {"enum", "const"}:
            return None
        if keys == {"const"}:
            return [a["const"]]
        if keys == {"enum"} and isinstance(a["enum"], list):
            return list(a["enum"])
        return None

    def _required_of(self, a: Any) -> list[str]:
        """The `required` names of an alternative (through `$ref`s), or [] if it has none."""
        seen = 0
        while isinstance(a, dict) and "$ref" in a and seen < 16:
            try:
                a = self._resolve(a["$ref"], "")[0]
            except SpecError:
                return []
            seen += 1
        if not isinstance(a, dict):
            return []
        req = a.get("required")
        out = [r for r in req if isinstance(r, str)] if isinstance(req, list) else []
        for m in a.get("allOf", []) if isinstance(a.get("allOf"), list) else []:
            out += [r for r in self._required_of(m) if r not in out]
        return out

    def _separate(self, per_alt: list[tuple[LayoutNode, Any]], parent: dict, ptr: str, overlap: SpecError) -> None:
        """oneOf whose schemas may overlap, made exact on the layouts: every value the layout of
        alternative i admits must fail every other alternative j. It does when j requires a
        property that i's closed layout cannot hold; where i declares it as optional, i's layout
        drops it (a sound narrowing, noted). Otherwise `overlap` (the schema-level error) stands."""
        for i, (ni, ai) in enumerate(per_alt):
            for j, (_nj, aj) in enumerate(per_alt):
                if i == j:
                    continue
                rest = {k: v for k, v in parent.items() if k != "oneOf"}
                if self._overlaps().disjoint_any({"allOf": [ai, rest]}, {"allOf": [aj, rest]}):
                    continue
                if isinstance(ni, Scalar) and ni.kind == "ref" and ni.alts:
                    ni = ni.alts[0]  # a shared recursive target (`_referenced`): narrowed on a copy below
                if not isinstance(ni, Obj) or ni.extra is not None:
                    raise overlap
                declared = {f.key: f for f in ni.fields}
                need = self._required_of(aj)
                if any(k not in declared for k in need):
                    continue  # j requires a property i's layout never writes
                optional = [k for k in need if not declared[k].required]
                if not optional or ni.rules is not None:
                    raise overlap
                k = optional[0]
                # a copy: the node may be shared (a recursive target met elsewhere, `_referenced`)
                ni = replace(ni, fields=[f for f in ni.fields if f.key != k])
                per_alt[i] = (ni, ai)
                self._note(ni.pointer, "oneOf", f"property {k!r} left out here so that no value also matches "
                           f"oneOf alternative #{j} (which requires it)")

    def _alternative(self, siblings: dict, a: Any, aptr: str, kw: str, ptr: str,
                     depth: int) -> tuple[LayoutNode, Any]:
        """An alternative of anyOf/oneOf compiled with the keywords beside it (their allOf), and the
        schema it was compiled from. An alternative that is a `$ref` keeps the reference visible to
        recursion (recursion.py): where its target entails the siblings (`_entails`: the allOf is the
        target itself) it is compiled as the plain `$ref`; otherwise the merged schema is compiled
        under its own reference key (the target's, plus the siblings), so a cycle back to the same
        merge becomes a reference node to it instead of an unfolding that nests until MAX_DEPTH."""
        if not siblings:
            return self.node(a, aptr, depth + 1), a
        target, tptr = a, None
        while isinstance(target, dict) and "$ref" in target and not (self._keywords(target, aptr) - {"$ref"}):
            target, tptr = self._resolve(target["$ref"], aptr)
        if tptr is None:
            merged, mptr = self._merge(siblings, a, aptr, kw, ptr)
            return self.node(merged, mptr, depth + 1), merged
        if _entails(target, siblings):
            return self.node(a, aptr, depth + 1), a
        merged, mptr = self._merge(siblings, a, aptr, kw, ptr)
        key = f"#{tptr} & {json.dumps(siblings, sort_keys=True, default=str)}"
        return self._referenced(key, lambda: self.node(merged, mptr, depth + 1), aptr), merged

    def _referenced(self, key: str, build: Callable[[], LayoutNode], ptr: str) -> LayoutNode:
        """The node of a referenced schema (`key`: its reference key; `build` compiles it). On the reference stack: a
        reference node, linked when the target is done (recursion.py). A target compiled before whose
        layout holds reference nodes (a recursive part) is shared, by a new reference node to it: its
        language is its schema's wherever it is met, and compiling it afresh under every path through
        the cycles is exponential in the number of mutually recursive definitions. So is a large
        non-recursive target (SHARE_MIN_NODES nodes or more) with `share_targets`: a definition used
        in many places is compiled once, not once per use (JSON Schema Store's theme: 42 s -> 1.4 s).
        Shared targets made while a target that then fails was compiled are forgotten (they may point
        into it)."""
        if key in self._ref_stack:
            return self._refs.placeholder(key, ptr)
        hit = self._shared.get(key)
        if hit is not None:
            return self._refs.link(hit, ptr)
        hit = self._acyclic.get(key)
        if hit is not None:
            self.acyclic_links += 1
            return self._refs.link(hit, ptr)
        made, known, known_acyclic = self._refs.made, len(self._shared), len(self._acyclic)
        self._ref_stack.append(key)
        try:
            n = build()
        except SpecError:
            self._refs.drop(key)
            for k in list(self._shared)[known:]:
                del self._shared[k]
            for k in list(self._acyclic)[known_acyclic:]:
                del self._acyclic[k]
            raise
        finally:
            self._ref_stack.pop()
        self._refs.bind(key, n)
        if self._refs.made > made:
            self._shared[key] = n
        elif self.share_targets and _layout_size(n, SHARE_MIN_NODES) >= SHARE_MIN_NODES:
            self._acyclic[key] = n
        return n

    def _merge(self, siblings: dict, a: Any, aptr: str, kw: str, ptr: str) -> tuple[Any, str]:
        """The alternative with the keywords beside anyOf/oneOf (an allOf of the two), where the
        two share no keyword and no interacting group is split between them."""
        while isinstance(a, dict) and "$ref" in a and not (self._keywords(a, aptr) - {"$ref"}):
            a, aptr = self._resolve(a["$ref"], aptr)
        if a is True:
            return dict(siblings), ptr
        if not isinstance(a, dict):
            return a, aptr
        akeys = {k for k in a if k in VALIDATION_KEYWORDS and not _is_noop(k, a[k])}
        united: dict[str, Any] = {}
        if "required" in akeys and "required" in siblings and isinstance(a["required"], list) \
                and isinstance(siblings["required"], list):
            united["required"] = list(dict.fromkeys(siblings["required"] + a["required"]))  # both apply
        shared = any(a[k] != siblings[k] for k in akeys & set(siblings) - set(united))
        split = any((akeys & group) and (set(siblings) & group) and not (akeys & group) <= set(siblings)
                    for group in _INTERACTING)
        if shared or split:  # not a plain union of keywords: the exact allOf merge (graph/all_of.py)
            return {**siblings, "allOf": [a]}, aptr
        return {**siblings, **a, **united}, aptr

    # -- leaves and containers ----------------------------------------------------------------------
    def _structured_enum(self, s: dict, values: list, ptr: str, depth: int) -> LayoutNode:
        """enum/const with object or array values: each value as the schema whose only instance
        it is (`literal_schema`), their anyOf, in an allOf with the keywords beside. Distinct
        values are distinct instances, so no record matches two alternatives."""
        kw = "const" if "const" in s else "enum"
        alts: list[dict] = []
        seen: set[str] = set()
        for i, v in enumerate(values):
            if _canon(v) in seen:
                continue
            seen.add(_canon(v))
            alts.append(literal_schema(v, f"{ptr}/{kw}/{i}" if kw == "enum" else f"{ptr}/const"))
        rest = {k: x for k, x in s.items() if k not in ("enum", "const")}
        one = alts[0] if len(alts) == 1 else {"anyOf": alts}
        return self.node({"allOf": [rest, one]} if rest else one, ptr, depth + 1)

    def _enum(self, s: dict, keys: set[str], ptr: str, typ: str | list[str] | None) -> Scalar:
        if "const" in s:
            values = [s["const"]]
            kw = "const"
        else:
            values, kw = s["enum"], "enum"
            if not isinstance(values, list) or not values:
                raise SpecError(f"{ptr}/enum", "enum must be a non-empty list")
        types = [typ] if isinstance(typ, str) else typ
        out: list[Any] = []
        for i, v in enumerate(values):
            if isinstance(v, (dict, list)):
                raise SpecError(f"{ptr}/{kw}", f"{kw} value #{i} is not a scalar ({json.dumps(v)[:40]}); "
                                "only scalars are supported")
            if isinstance(v, float):
                if not math.isfinite(v):
                    raise SpecError(f"{ptr}/{kw}", f"{kw} value #{i} is not finite")
                v = int(v) if v.is_integer() else Fraction(repr(v))
            if types is not None and not any(_matches_type(v, t) for t in types):
                continue  # JSON Schema: the value must also satisfy 'type'
            if any(type(v) is type(w) and v == w for w in out):
                continue
            out.append(v)
        if not out:
            raise EmptySchema(f"{ptr}/{kw}", f"no {kw} value matches type {typ!r}")
        other = keys - {"type", "enum", "const"}
        for k in sorted(other):
            # keywords beside enum must not exclude values silently: check them
            out = [v for v in out if _satisfies(v, k, s[k], ptr)]
        if not out:
            raise EmptySchema(ptr, "no enum value satisfies the schema's other keywords")
        return Scalar(ptr, "enum", values=out)

    def _object(self, s: dict, keys: set[str], ptr: str, depth: int) -> Obj:
        if "patternProperties" in keys or "propertyNames" in keys or OBJECT_LAYERS in keys:
            return self._patterned(s, keys, ptr, depth)
        props = s.get("properties", {})
        if not isinstance(props, dict):
            raise SpecError(f"{ptr}/properties", "properties must be an object")
        req = s.get("required", [])
        if not isinstance(req, list) or not all(isinstance(r, str) for r in req):
            raise SpecError(f"{ptr}/required", "required must be a list of strings")
        ap = s.get("additionalProperties", False)
        explicit_closed = ap is False and "additionalProperties" in s
        if ap is not False and not self.open_objects:
            self._note(ptr, "additionalProperties", "closed (open_objects=False): no extra members")
            ap = False
        extra = None if ap is False else self.node(ap, f"{ptr}/additionalProperties", depth + 1)
        try:
            return self._object_fields(s, keys, ptr, depth, props, req, extra, explicit_closed)
        except _MustBeAbsent:
            # an optional property no value fits, in an open object: the key space of `_patterned`
            # keeps declared names out of the extra members (exact), where plain `extra` cannot
            return self._patterned(s, keys, ptr, depth)
        except EmptySchema:
            if extra is not None or "additionalProperties" in s or not self.open_objects:
                raise
            # the closing narrowing (no additionalProperties: closed) must not empty a schema that
            # JSON Schema's open reading satisfies (e.g. minProperties above the declared count):
            # there the object is open, any extra member of any value, exactly as written
            try:
                node = self._object_fields(s, keys, ptr, depth, props, req, Scalar(ptr, "any"), False)
            except _MustBeAbsent:
                node = self._patterned({**s, "additionalProperties": True}, keys | {"additionalProperties"}, ptr,
                                       depth)
            self._note(ptr, "additionalProperties", "absent, and the closed narrowing admits no object: open "
                       "(extra members of any value)")
            return node

    def _object_fields(self, s: dict, keys: set[str], ptr: str, depth: int, props: dict, req: list,
                       extra: Optional[LayoutNode], explicit_closed: bool) -> Obj:
        """`_object` past additionalProperties: the declared fields, required names, dependencies
        and property-count rules over `extra` (None: closed)."""
        fields = []
        for k, v in props.items():
            try:
                fields.append(Field(k, self.node(v, f"{ptr}/properties/{escape_pointer(k)}", depth + 1), k in req))
            except EmptySchema as e:
                if k in req:
                    raise
                if extra is not None:  # an open object would take the key back as an extra member
                    raise _MustBeAbsent(e.pointer, f"{e.message}; the property must then be absent, which an open "
                                    "object (additionalProperties true or a schema) cannot enforce here") from None
                # JSON Schema: an optional property whose schema admits no value must be absent
                self._note(f"{ptr}/properties/{escape_pointer(k)}", "", f"admits no value ({e.message}): the "
                           "property is left out")
        for r in dict.fromkeys(req):
            if r not in props:
                if explicit_closed:
                    raise EmptySchema(f"{ptr}/required", f"required property {r!r} is not in properties "
                                    "and additionalProperties is false: no object fits")
                self._note(ptr, "required", f"required property {r!r} is not in properties: any value")
                fields.append(Field(r, extra if extra is not None else Scalar(f"{ptr}/required", "any"), True))
        deps = self._dependencies(s, keys, ptr, fields, extra, explicit_closed)
        lo = _nonneg_int(s["minProperties"], ptr, "minProperties") if "minProperties" in keys else 0
        hi = _nonneg_int(s["maxProperties"], ptr, "maxProperties") if "maxProperties" in keys else None
        if hi is not None and hi < lo:
            raise EmptySchema(f"{ptr}/maxProperties", f"maxProperties {hi} < minProperties {lo}: no object fits")
        index = {f.key: i for i, f in enumerate(fields)}
        rules = ObjectRules(len(fields), sum(1 << i for i, f in enumerate(fields) if f.required), lo, hi,
                            {index[a]: sum(1 << index[b] for b in bs) for a, bs in deps.items()}, extra is not None)
        if not rules.constrains():
            return Obj(ptr, fields, extra)
        if not rules.viable(0, 0, 0):
            kw = "minProperties" if "minProperties" in keys and (hi is None or extra is None) else \
                "maxProperties" if "maxProperties" in keys else sorted(keys & {"dependencies", "dependentRequired"})[0]
            closed = "" if extra is not None else (f" in this closed object ({len(fields)} declared properties; "
                                                   "an object without additionalProperties is closed)")
            raise EmptySchema(f"{ptr}/{kw}", f"no object fits: minProperties {lo}, maxProperties {hi}, the required "
                            f"properties and dependencies together admit no set of properties{closed}")
        return Obj(ptr, fields, extra, rules)

    def _key_names(self, pn: Any, ptr: str, depth: int) -> tuple[Dfa, int, Optional[int]]:
        """propertyNames as a string language: (DFA, minLength, maxLength)."""
        if pn is True:
            return any_string_dfa(), 0, None
        node = self.node(pn, ptr, depth + 1)
        if isinstance(node, Scalar) and node.kind == "any":
            return any_string_dfa(), 0, None
        if isinstance(node, Scalar) and node.kind == "string":
            return (node.lang.dfa if node.lang is not None else any_string_dfa()), node.min_len, node.max_len
        if isinstance(node, Scalar) and node.kind == "enum":
            words = [v for v in node.values if isinstance(v, str)]
            if not words:
                raise EmptySchema(ptr, "no string is allowed as a property name")
            return literal_set_dfa(words), 0, None
        if isinstance(node, Scalar) and node.kind == "union":
            union = self._key_name_union(node, ptr)
            if union is not None:
                return union, 0, None
        raise SpecError(ptr, "propertyNames must describe strings (pattern, minLength/maxLength, enum or const, "
                        "or an anyOf/oneOf of those without length bounds)")

    def _key_name_union(self, node: Scalar, ptr: str) -> Optional[Dfa]:
        """propertyNames that compiled to a union of string languages (an anyOf/oneOf of patterns or
        string enums): the product automaton, accepting where some alternative accepts. None when an
        alternative is not a string language or has length bounds (one DFA cannot keep apart the
        bounds of different alternatives)."""
        parts: list[tuple[Dfa, Any]] = []
        for a in node.alts:
            if isinstance(a, (Obj, Arr)) or (isinstance(a, Scalar) and a.kind in ("number", "integer", "fixed")):
                continue  # a key is a string: an alternative of another type never matches one
            if not isinstance(a, Scalar):
                return None
            if a.kind == "any":
                return any_string_dfa()
            if a.kind == "string" and a.min_len == 0 and a.max_len is None:
                if a.lang is None:
                    return any_string_dfa()
                parts.append((a.lang.dfa, a.lang.accepts))
            elif a.kind == "enum":
                words = [v for v in a.values if isinstance(v, str)]
                if words:
                    parts.append((literal_set_dfa(words), bool))
            elif a.kind == "union":
                inner = self._key_name_union(a, ptr)
                if inner is None:
                    return None
                parts.append((inner, bool))
            else:
                return None
        if not parts:
            raise EmptySchema(ptr, "no string is allowed as a property name")
        prod = product([d for d, _ in parts], ptr)
        labels: list[Any] = [any(bool(acc(x)) for (_, acc), x in zip(parts, cast(tuple, lab)))
                             for lab in prod.labels]
        return Dfa(prod.starts, prod.trans, labels)

    def _value_of(self, schemas: list[tuple[Any, str]], ptr: str, depth: int) -> LayoutNode:
        """The value schema where several schemas apply to one member (their allOf)."""
        if len(schemas) == 1:
            return self.node(schemas[0][0], schemas[0][1], depth + 1)
        try:
            return self.node({"allOf": [x for x, _ in schemas]}, ptr, depth + 1)
        except EmptySchema:
            raise
        except SpecError as e:
            if _resolves(self.doc, e.pointer):
                raise
            raise SpecError(ptr, f"{e.message} (in the allOf of the schemas that apply to one member: "
                            f"{', '.join(p for _, p in schemas)})") from None

    def _layers(self, s: dict, ptr: str) -> list[tuple[dict, list[tuple[str, Any, str]], Any, str]]:
        """The object layers of `s`: OBJECT_LAYERS (an allOf's members, all_of.py) and its own
        properties/patternProperties/additionalProperties, each as (properties, patterns, the
        additionalProperties as written or None when absent, pointer)."""
        out = []
        own = {k: s[k] for k in ("properties", "patternProperties", "additionalProperties") if k in s}
        raw = s.get(OBJECT_LAYERS, [])
        if not isinstance(raw, list):
            raise SpecError(ptr, f"internal keyword {OBJECT_LAYERS} must be a list")
        for layer in list(raw) + ([{"at": ptr, **own}] if own or not raw else []):
            at = layer.get("at", ptr)
            props = layer.get("properties", {})
            if not isinstance(props, dict):
                raise SpecError(f"{at}/properties", "properties must be an object")
            pp = layer.get("patternProperties", {})
            if not isinstance(pp, dict):
                raise SpecError(f"{at}/patternProperties", "patternProperties must be an object")
            pats = [(p, x, f"{at}/patternProperties/{escape_pointer(p)}") for p, x in pp.items()]
            out.append((props, pats, layer.get("additionalProperties"), at))
        return out

    def _patterned(self, s: dict, keys: set[str], ptr: str, depth: int) -> Obj:
        """An object with patternProperties and/or propertyNames (or the object layers of an allOf),
        exactly: each member's value takes, in every layer, the allOf of properties[key] and every
        pattern the key matches (that layer's additionalProperties where none applies); every key
        must satisfy propertyNames; extra keys come from the product automaton of all the layers'
        patterns (`KeySpace`). An extra key is allowed where some layer opens it (a pattern it
        matches, or additionalProperties true or a schema) and no layer forbids it."""
        req = s.get("required", [])
        if not isinstance(req, list) or not all(isinstance(r, str) for r in req):
            raise SpecError(f"{ptr}/required", "required must be a list of strings")
        layers = self._layers(s, ptr)
        pats = [(p, x, pptr, li) for li, (_, lp, _, _) in enumerate(layers) for p, x, pptr in lp]
        dfas = [compile_pattern(p, pp_ptr) for p, _, pp_ptr, _ in pats]
        pn_dfa, pn_lo, pn_hi = self._key_names(s.get("propertyNames", True), f"{ptr}/propertyNames", depth)
        names = StringLang(pn_dfa, bool, pn_lo, pn_hi, f"{ptr}/propertyNames")

        def sig_of(key: str) -> frozenset[int]:
            return frozenset(i for i, d in enumerate(dfas) if d.labels[d.run(key)] is True)

        def parts_of(key: Optional[str], sg: frozenset[int]) -> tuple[list[tuple[Any, str]], bool]:
            """The schemas a member's value must match (every layer's) and whether a layer opens
            the key (lists it, a pattern matches it, or additionalProperties true or a schema)."""
            parts: list[tuple[Any, str]] = []
            opened = False
            for li, (props, _, ap, at) in enumerate(layers):
                here = ([(props[key], f"{at}/properties/{escape_pointer(key)}")] if key is not None and key in props
                        else []) + \
                    [(pats[i][1], pats[i][2]) for i in sorted(sg) if pats[i][3] == li]
                if here:
                    parts += here
                    opened = True
                elif ap is not None:
                    parts.append((ap, f"{at}/additionalProperties"))
                    opened |= ap is not False and self.open_objects
            once: list[tuple[Any, str]] = []
            seen: set[str] = set()
            for x, xp in parts:
                c = json.dumps(x, sort_keys=True, default=str)
                if x is not True and x != {} and c not in seen:
                    seen.add(c)
                    once.append((x, xp))
            return once, opened

        if not self.open_objects and any(ap not in (None, False) for _, _, ap, _ in layers):
            self._note(ptr, "additionalProperties", "closed (open_objects=False): no extra members")
        declared_order = [k for props, _, _, _ in layers for k in props] + list(req)
        fields: list[Field] = []
        for k in dict.fromkeys(declared_order):
            kptr = next((f"{at}/properties/{escape_pointer(k)}" for props, _, _, at in layers if k in props),
                        f"{ptr}/required")
            if not names.matches(k):
                if k in req:
                    raise EmptySchema(f"{ptr}/propertyNames", f"required property {k!r} breaks propertyNames: "
                                      "no object fits")
                self._note(kptr, "", "its name breaks propertyNames: the property is left out")
                continue
            parts, opened = parts_of(k, sig_of(k))
            try:
                if parts:
                    node = self._value_of(parts, kptr, depth)
                elif opened or any(k in props for props, _, _, _ in layers):
                    node = Scalar(kptr, "any")
                else:
                    self._note(ptr, "required", f"required property {k!r} is not in properties: any value")
                    node = Scalar(kptr, "any")
            except EmptySchema as e:
                if k in req:
                    raise
                self._note(kptr, "", f"admits no value ({e.message}): the property is left out")
                continue
            fields.append(Field(k, node, k in req))
        # extra members: one value node per set of matching patterns that some key reaches
        prod = product([pn_dfa] + dfas, ptr)
        sigs: list[frozenset[int]] = []
        values: list[LayoutNode] = []
        tried: set[frozenset[int]] = set()
        for lab in dict.fromkeys(prod.labels):
            assert isinstance(lab, tuple)
            if not lab[0]:
                continue
            sg = frozenset(i for i, m in enumerate(lab[1:]) if m)
            if sg in tried:
                continue
            tried.add(sg)
            parts, opened = parts_of(None, sg)
            if not opened:
                continue  # no layer opens these keys (additionalProperties false or absent: closed)
            try:
                node = self._value_of(parts, f"{ptr}/patternProperties", depth) if parts else Scalar(ptr, "any")
            except EmptySchema as e:
                self._note(ptr, "patternProperties", f"keys matching patterns {sorted(sg)} admit no value "
                           f"({e.message}): no such member")
                continue
            sigs.append(sg)
            values.append(node)
        allowed = frozenset(sigs)

        def accepts(lab: Any) -> bool:
            return bool(lab[0]) and frozenset(i for i, m in enumerate(lab[1:]) if m) in allowed

        declared = frozenset(declared_order)
        space = KeySpace(StringLang(prod, accepts, pn_lo, pn_hi, ptr), sigs, values, declared) if sigs else None
        if space is not None and not space.more_keys(frozenset()):
            space = None
        lo = _nonneg_int(s["minProperties"], ptr, "minProperties") if "minProperties" in keys else 0
        hi = _nonneg_int(s["maxProperties"], ptr, "maxProperties") if "maxProperties" in keys else None
        if hi is not None and hi < lo:
            raise EmptySchema(f"{ptr}/maxProperties", f"maxProperties {hi} < minProperties {lo}: no object fits")
        deps = self._declared_dependencies(s, keys, ptr, fields, frozenset(declared_order))
        rules = ObjectRules(len(fields), sum(1 << i for i, f in enumerate(fields) if f.required), lo, hi, deps,
                            space is not None)
        if space is None:
            self._note(ptr, "patternProperties", "no extra member is possible: the object is closed")
            out = Obj(ptr, fields, None)
        else:
            out = Obj(ptr, fields, space.values[0], keys=space)
            # the property-count rules take the extra members as unlimited: exact while at least
            # minProperties distinct extra keys exist (then minProperties is reachable from every
            # state, each used key leaving as many fewer to reach); maxProperties only forbids more
            if lo > 0 and not space.at_least(lo):
                raise SpecError(f"{ptr}/{'minProperties' if 'minProperties' in keys else 'maxProperties'}",
                                f"minProperties {lo} beside a finite set of fewer than {lo} possible pattern keys "
                                "is not supported")
        if not rules.constrains():
            return out
        if not rules.viable(0, 0, 0):
            raise EmptySchema(f"{ptr}/minProperties", f"no object fits: minProperties {lo}, maxProperties {hi}")
        out.rules = rules
        return out

    def _declared_dependencies(self, s: dict, keys: set[str], ptr: str, fields: list[Field],
                               declared: frozenset[str]) -> dict[int, int]:
        """dependentRequired (and the array form of `dependencies`) of an object with patterns, as
        field index -> bitmask of the fields its presence requires: exact where every name is a
        declared field (a declared name is never an extra member); a name only an extra member
        could be (a pattern key) is refused."""
        index = {f.key: i for i, f in enumerate(fields)}
        out: dict[int, int] = {}
        for kw, a, bs, aptr in _dependency_entries(s, keys, ptr):
            if not isinstance(bs, list) or not all(isinstance(b, str) for b in bs):
                raise SpecError(aptr, f"{kw} beside patternProperties/propertyNames takes lists of names only")
            if a not in index and a in declared:
                continue  # a declared property left out (no value fits): never present
            names = [a] + [b for b in bs if b != a]
            bad = [x for x in names if x not in index]
            if bad:
                raise SpecError(aptr, f"{kw} beside patternProperties/propertyNames is supported only between "
                                f"declared properties ({bad[0]!r} is not one that can be present)")
            out[index[a]] = out.get(index[a], 0) | sum(1 << index[b] for b in names[1:])
        return out

    def _dependencies(self, s: dict, keys: set[str], ptr: str, fields: list[Field], extra: Optional[LayoutNode],
                      explicit_closed: bool) -> dict[str, list[str]]:
        """dependentRequired and the array form of `dependencies`, as key -> required keys. A key
        they name that is not declared becomes an optional field (its value: additionalProperties
        of an open object, any value in an object closed only by FactorSpec's narrowing); in an
        object closed by additionalProperties false, a property that requires an undeclared one
        can never appear and is dropped."""
        out: dict[str, list[str]] = {}
        for kw, a, bs, kp in _dependency_entries(s, keys, ptr):
            if kw == "dependencies" and not isinstance(bs, list):
                if bs is True or bs == {}:
                    continue
                raise SpecError(kp, "dependencies values must be lists of property names or schemas, got "
                                f"{json.dumps(bs)[:40]}")
            if not isinstance(bs, list) or not all(isinstance(b, str) for b in bs):
                raise SpecError(kp, f"{kw} values must be lists of property names")
            out.setdefault(a, [])
            out[a] += [b for b in bs if b != a and b not in out[a]]
        declared = {f.key for f in fields}
        for a in list(out):
            if explicit_closed and (a not in declared or any(b not in declared for b in out[a])):
                if a in declared:
                    f = next(f for f in fields if f.key == a)
                    if f.required:
                        raise EmptySchema(f"{ptr}/required", f"required property {a!r} depends on a property that "
                                        "additionalProperties false forbids: no object fits")
                    fields.remove(f)
                    declared.discard(a)
                    self._note(ptr, "dependentRequired", f"property {a!r} requires an undeclared property in a "
                               "closed object: it never appears")
                del out[a]
                continue
            if a not in declared and extra is None:
                del out[a]  # never written: the layout has no member with that key
                continue
            for k in [a] + out[a]:
                if k not in declared:
                    node = extra if extra is not None else Scalar(f"{ptr}/dependentRequired", "any")
                    fields.append(Field(k, node, False))
                    declared.add(k)
        # a dropped field may be named as another's requirement: that one can never appear either
        changed = True
        while changed:
            changed = False
            for a in list(out):
                if any(b not in declared for b in out[a]) or a not in declared:
                    g = next((f for f in fields if f.key == a), None)
                    if g is not None:
                        if g.required:
                            raise EmptySchema(f"{ptr}/required", f"required property {a!r} depends on a property "
                                            "that can never appear: no object fits")
                        fields.remove(g)
                        declared.discard(a)
                    del out[a]
                    changed = True
        return out

    def _array(self, s: dict, keys: set[str], ptr: str, depth: int) -> Arr:
        items = s.get("items", True)
        if isinstance(items, list):
            raise SpecError(f"{ptr}/items", "items must be one schema object (tuple forms are not supported)")
        if "additionalItems" in keys:
            self._note(ptr, "additionalItems", "a no-op when items is one schema")
        if "items" not in s:
            self._note(ptr, "items", "no 'items': items may be any JSON value")
        lo = _nonneg_int(s.get("minItems", 0), ptr, "minItems")
        hi = _nonneg_int(s["maxItems"], ptr, "maxItems") if "maxItems" in s else None
        if hi is not None and hi < lo:
            raise EmptySchema(f"{ptr}/maxItems", f"maxItems {hi} < minItems {lo}: no array fits")
        try:
            item = self.node(items, f"{ptr}/items", depth + 1)
        except EmptySchema as e:
            if lo > 0:
                raise EmptySchema(f"{ptr}/minItems", f"minItems {lo}, but the items admit no value ({e.message})") \
                    from None
            self._note(f"{ptr}/items", "", f"admits no value ({e.message}): only the empty array")
            return Arr(ptr, Scalar(f"{ptr}/items", "any"), 0, 0)
        unique = s.get("uniqueItems") is True and (hi is None or hi > 1)
        if "contains" in s:
            return self._contains(s, items, item, lo, hi, unique, ptr, depth)
        for k in ("minContains", "maxContains"):
            if k in s:
                self._note(ptr, k, "without 'contains': a no-op")
        return Arr(ptr, item, lo, hi, unique)

    def _contains(self, s: dict, items: Any, item: LayoutNode, lo: int, hi: Optional[int], unique: bool,
                  ptr: str, depth: int) -> Arr:
        """An array with `contains`: its items split into those that match the `contains` schema
        and those that do not (the negation compiled by negation.py), the text automaton counting
        the matching ones. Exact: every item is one or the other. When no item can fail the
        `contains` schema the count is the length; when none can match, minContains must be 0."""
        cmin, cmax = 1, None
        if self._ref_siblings_ignored():  # drafts 4 to 7 have no minContains/maxContains
            for k in ("minContains", "maxContains"):
                if k in s:
                    self._note(ptr, k, "not a keyword of this draft (2019-09 on): ignored")
        else:
            cmin = _nonneg_int(s.get("minContains", 1), ptr, "minContains")
            cmax = _nonneg_int(s["maxContains"], ptr, "maxContains") if "maxContains" in s else None
        if cmax is not None and cmax < cmin:
            raise EmptySchema(f"{ptr}/maxContains", f"maxContains {cmax} < minContains {cmin}: no array fits")
        if cmin == 0 and cmax is None:
            self._note(ptr, "contains", "minContains 0 without maxContains: a no-op")
            return Arr(ptr, item, lo, hi, unique)
        c = s["contains"]
        hit_s = c if items is True else {"allOf": [items, c]}
        miss_s = {"not": c} if items is True else {"allOf": [items, {"not": c}]}
        try:
            hit: Optional[LayoutNode] = self.node(hit_s, f"{ptr}/contains", depth + 1)
        except EmptySchema as e:
            if cmin > 0:
                raise EmptySchema(f"{ptr}/contains", f"no item can match 'contains' ({e.message})") from None
            hit = None
        try:
            miss: Optional[LayoutNode] = self.node(miss_s, f"{ptr}/contains", depth + 1)
        except EmptySchema:
            miss = None
        if hit is None:  # minContains 0: no item matches, so the count stays 0 <= maxContains
            return Arr(ptr, item, lo, hi, unique)
        lo = max(lo, cmin)
        if miss is None:  # every item matches: the count is the length
            hi = cmax if hi is None else hi if cmax is None else min(hi, cmax)
            if hi is not None and hi < lo:
                raise EmptySchema(f"{ptr}/maxContains", "every item matches 'contains', and maxContains/maxItems "
                                  "leave fewer items than minItems/minContains need")
            return Arr(ptr, hit, lo, hi, unique and (hi is None or hi > 1))
        if hi is not None and hi < lo:
            raise EmptySchema(f"{ptr}/maxItems", f"maxItems {hi} < minContains {cmin}: no array fits")
        if unique:
            raise SpecError(f"{ptr}/contains", "'contains' together with uniqueItems is not supported "
                            "(drop one, or list the allowed arrays in an enum)")
        return Arr(ptr, Scalar(f"{ptr}/items", "union", alts=[hit, miss]), lo, hi, contains=(cmin, cmax))

    def _free_number(self, s: dict, ptr: str) -> Scalar:
        """A number without multipleOf: any decimal, bounds kept exactly as values (the tighter of
        minimum/exclusiveMinimum, an exclusive bound winning a tie; the same above)."""
        lo: Optional[Fraction] = None
        hi: Optional[Fraction] = None
        lo_open = hi_open = False
        for kw, is_open in (("minimum", False), ("exclusiveMinimum", True)):
            if kw in s:
                v = _num(s[kw], ptr, kw)
                if lo is None or v > lo or (v == lo and is_open):
                    lo, lo_open = v, is_open
        for kw, is_open in (("maximum", False), ("exclusiveMaximum", True)):
            if kw in s:
                v = _num(s[kw], ptr, kw)
                if hi is None or v < hi or (v == hi and is_open):
                    hi, hi_open = v, is_open
        if lo is not None and hi is not None and (lo > hi or (lo == hi and (lo_open or hi_open))):
            raise EmptySchema(ptr, "the bounds leave no value")
        return Scalar(ptr, "number", nlo=lo, nlo_open=lo_open, nhi=hi, nhi_open=hi_open)

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
            return self._free_number(s, ptr)
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
            raise EmptySchema(ptr, "the bounds leave no value")
        kind = "integer" if step == 1 and typ == "integer" else "fixed"
        return Scalar(ptr, kind, lo=lo, hi=hi, step=step)


_INTERACTING = ({"properties", "patternProperties", "additionalProperties", "unevaluatedProperties"},
                {"items", "prefixItems", "additionalItems", "unevaluatedItems"},
                {"contains", "minContains", "maxContains"}, {"if", "then", "else"},
                {"minimum", "exclusiveMinimum"}, {"maximum", "exclusiveMaximum"})


def _types_of(t: Any) -> Optional[set[str]]:
    if isinstance(t, str):
        return {t}
    if isinstance(t, list) and all(isinstance(x, str) for x in t):
        return set(t)
    return None


def _entails(target: Any, siblings: dict) -> bool:
    """Whether every value of the schema `target` satisfies the keywords `siblings` (so their allOf
    is `target`), by a syntactic check: each sibling is a keyword of the target with the same value
    (a keyword is a constraint, and one constraint twice is itself), `type` may also list more types
    than the target's, and a sibling in a group of interacting keywords (`_INTERACTING`) needs the
    whole group equal in both (additionalProperties means something else beside other properties)."""
    if not isinstance(target, dict):
        return False
    target = _draft4_exclusive(target)
    for k, v in siblings.items():
        if k in ("unevaluatedProperties", "unevaluatedItems", "$ref"):
            return False
        if k == "type":
            have, allowed = _types_of(target.get("type")), _types_of(v)
            if have is None or allowed is None:
                return False
            if not all(t in allowed or (t == "integer" and "number" in allowed) for t in have):
                return False
            continue
        if k not in target or not _same_json(target[k], v):
            return False
        for group in _INTERACTING:
            if k in group and any((g in target) != (g in siblings) or
                                  (g in siblings and not _same_json(target[g], siblings[g])) for g in group):
                return False
    return True


def _same_json(a: Any, b: Any) -> bool:
    """The same JSON text (True is not 1, unlike Python's ==)."""
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def _is_noop(k: str, v: Any) -> bool:
    """A keyword whose value constrains nothing (e.g. minItems 0, uniqueItems false)."""
    if k in ("minItems", "minLength", "minProperties", "minContains"):
        return v == 0 and not isinstance(v, bool)
    if k in ("patternProperties", "dependencies", "dependentRequired", "dependentSchemas"):
        return v == {}
    if k in ("uniqueItems",):
        return v is False
    if k in ("propertyNames", "additionalItems", "unevaluatedItems", "unevaluatedProperties", "contains"):
        return v is True or v == {} if k != "contains" else False
    if k in ("allOf",):
        return v == []
    return False


def _draft4_exclusive(s: dict) -> dict:
    """Draft-04 boolean exclusiveMinimum/exclusiveMaximum -> the numeric form of later drafts."""
    if not any(isinstance(s.get(k), bool) for k in ("exclusiveMinimum", "exclusiveMaximum")):
        return s
    s = dict(s)
    for ex, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if isinstance(s.get(ex), bool):
            if s.pop(ex) and bound in s:
                s[ex] = s.pop(bound)
    return s


def _resolves(doc: Any, ptr: str) -> bool:
    x = doc
    for raw in ptr.lstrip("/").split("/") if ptr not in ("", "/") else []:
        seg = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(x, dict) and seg in x:
            x = x[seg]
        elif isinstance(x, list) and seg.isdigit() and int(seg) < len(x):
            x = x[int(seg)]
        else:
            return False
    return True


def literal_schema(v: Any, ptr: str) -> dict:
    """The schema whose only instance is the JSON value `v` (JSON Schema equality: an object's
    keys in any order, 1 and 1.0 alike). An object is closed with every key required; an array
    is written as items of one schema, so its items must be equal (an array of different items
    would need a tuple layout, which FactorSpec has not: refused naming the pointer)."""
    if isinstance(v, dict):
        return {"type": "object", "properties": {k: literal_schema(x, ptr) for k, x in v.items()},
                "required": list(v), "additionalProperties": False}
    if isinstance(v, list):
        if not v:
            return {"type": "array", "maxItems": 0}
        if len({_canon(x) for x in v}) > 1:
            raise SpecError(ptr, f"an enum/const array value whose items differ ({json.dumps(v)[:40]}) is not "
                            "supported (it needs a tuple layout); list it as an anyOf of schemas instead")
        return {"type": "array", "items": literal_schema(v[0], ptr), "minItems": len(v), "maxItems": len(v)}
    return {"const": v}


def _canon(v: Any) -> str:
    """Canonical JSON of a value (1 and 1.0 are the same number)."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, Fraction):
        return "n" + str(v)
    if isinstance(v, (int, float)):
        return "n" + str(Fraction(str(v))) if not (isinstance(v, float) and not math.isfinite(v)) else repr(v)
    if isinstance(v, list):
        return "[" + ",".join(_canon(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ",".join(json.dumps(k) + ":" + _canon(x) for k, x in sorted(v.items())) + "}"
    return repr(v)


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
    if kw == "not" and is_value_exclusion(arg):
        if excludes_integers(arg) and _matches_type(v, "integer"):
            return False
        return _canon(v) not in {_canon(x) for x in excluded_values(arg)}
    if kw in ("minLength", "maxLength"):
        if not isinstance(v, str):
            return True
        n = _nonneg_int(arg, ptr, kw)
        return len(v) >= n if kw == "minLength" else len(v) <= n
    if kw == "pattern":
        return not isinstance(v, str) or pattern_lang(arg, f"{ptr}/pattern").matches(v)
    if kw == REGULAR:
        pos, neg = _regular_of({REGULAR: arg})
        return not isinstance(v, str) or regular_lang(pos, neg, ptr).matches(v)
    if kw in _TYPE_SPECIFIC["object"] | _TYPE_SPECIFIC["array"]:
        return True  # the values here are scalars (structured ones: `literal_schema`): a no-op on them
    raise SpecError(f"{ptr}/{escape_pointer(kw)}", f"keyword {kw!r} is not supported beside enum/const")


def _regular_of(s: dict) -> tuple[list[str], list[str]]:
    r = s[REGULAR]
    pos = ([s["pattern"]] if isinstance(s.get("pattern"), str) else []) + list(r.get("all", []))
    return list(dict.fromkeys(pos)), list(dict.fromkeys(r.get("none", [])))


def _ref_table() -> Any:
    from factorspec.graph.recursion import RefTable

    return RefTable()


def compile_schema(doc: dict, open_objects: bool = True, share_targets: bool = True) -> LayoutNode:
    """Compile a schema document (the spec minus its relations) into the template tree."""
    return compile_schema_report(doc, open_objects, share_targets)[0]


def compile_schema_report(doc: dict, open_objects: bool = True,
                          share_targets: bool = True) -> tuple[LayoutNode, list[tuple[str, str, str]]]:
    """The template tree and the compile report: every ignored keyword and every narrowing, as
    (JSON Pointer, keyword, note). A layout that shares large targets but that the recursion check
    refuses (a reference node turns on its rules) is compiled again without sharing, so sharing
    never refuses a schema the plain compile accepts. An untyped root read as the types its
    keywords imply that admits no value so takes the types the standard still admits
    (`_implied_types`), with a note, instead of refusing a schema that has valid instances."""
    try:
        return _compile_report(doc, open_objects, share_targets)
    except EmptySchema as e:
        implied = _implied_types(doc)
        if implied is None:
            raise
        empty = []
        for t in implied:  # which implied types admit no value on their own
            try:
                _compile_report({**doc, "type": t}, open_objects, share_targets)
            except EmptySchema:
                empty.append(t)
            except SpecError:
                raise e from None
        if not empty:
            raise
        types = [t for t in JSON_TYPES if t not in empty]
        try:
            node, report = _compile_report({**doc, "type": types}, open_objects, share_targets)
        except SpecError:
            raise e from None
        note = (f"no 'type', and no {' or '.join(empty)} value fits its keywords ({e.pointer}: {e.message}); "
                f"taken as {' or '.join(types)}, which the standard admits there")
        return node, report + [("/type", "type", note)]


def _compile_report(doc: dict, open_objects: bool,
                    share_targets: bool) -> tuple[LayoutNode, list[tuple[str, str, str]]]:
    c = SchemaCompiler(doc, open_objects, share_targets)
    try:
        node = c.compile()
    except _SharingRefused:
        c = SchemaCompiler(doc, open_objects, share_targets=False)
        node = c.compile()
    return node, c.report


# keywords that decide a root's values themselves: a root with one of these is never re-typed
_DECIDING = {"$ref", "anyOf", "oneOf", "allOf", "not", "if", "enum", "const", "type"}


def _implied_types(doc: Any) -> Optional[list[str]]:
    """The types a root without `type` is read as (those its keywords imply, as xgrammar reads
    them). Where that reading admits no value, the standard still admits every value of the
    other types and of each implied type that admits some on its own (type-specific keywords
    constrain only values of their type): `compile_schema_report` takes those. None where the
    root is typed or decided otherwise, or where relations name its fields."""
    if not isinstance(doc, dict) or _DECIDING & set(doc):
        return None
    ext = doc.get(EXTENSION_KEY)
    if isinstance(ext, dict) and ext.get("relations"):
        return None
    implied = [t for t, ks in _TYPE_SPECIFIC.items() if ks & set(doc)]
    return implied or None


class _SharingRefused(Exception):
    """The recursion check refused a layout with reference nodes to shared non-recursive targets."""


SHARE_MIN_NODES = 256  # layout nodes from which a non-recursive `$ref` target is shared, not copied


def _layout_size(node: LayoutNode, cap: int) -> int:
    """The number of layout nodes reachable from `node`, counted up to `cap` (cheap on huge ones)."""
    from factorspec.graph.recursion import children  # recursion.py imports this module

    seen, stack = {id(node)}, [node]
    while stack and len(seen) < cap:
        for k in children(stack.pop()):
            if id(k) not in seen:
                seen.add(id(k))
                stack.append(k)
    return len(seen)


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
        if node.extra is not None:
            keys = {f.key for f in node.fields}
            parts += [f"{json.dumps(k, ensure_ascii=False)}{style.key_sep}"
                      f"{canonical_text(node.extra_node(k) or node.extra, v, style)}"
                      for k, v in value.items() if k not in keys]
        return "{" + style.item_sep.join(parts) + "}"
    if isinstance(node, Arr):
        return "[" + style.item_sep.join(canonical_text(node.item, v, style) for v in value) + "]"
    if node.kind in ("union", "ref"):
        alt = next((a for a in node.alts if not schema_violations(a, value)), node.alts[0])
        return canonical_text(alt, value, style)
    if node.kind == "any":
        return json.dumps(value, ensure_ascii=False, separators=(style.item_sep, style.key_sep))
    return node.text(value)


def json_key(v: Any) -> Any:
    """A hashable key equal for equal JSON values (numbers by value, 1 == 1.0; objects whatever
    their key order; true is not 1)."""
    if isinstance(v, bool) or v is None:
        return ("b", v)
    if isinstance(v, (int, float, Fraction)):
        return ("n", Fraction(str(v)) if isinstance(v, float) else Fraction(v))
    if isinstance(v, str):
        return ("s", v)
    if isinstance(v, list):
        return ("a", tuple(json_key(x) for x in v))
    if isinstance(v, dict):
        return ("o", frozenset((k, json_key(x)) for k, x in v.items()))
    return ("?", repr(v))


def schema_violations(node: LayoutNode, value: Any, path: tuple = ()) -> list[tuple[tuple, str]]:
    """Every way `value` breaks the template, as (path, message) pairs: the first MAX_VIOLATIONS of
    them (the walk stops there, so a record of 10^6 bad items costs what 10^4 cost)."""
    out: list[tuple[tuple, str]] = []
    if isinstance(node, Obj):
        if not isinstance(value, dict):
            return [(path, f"expected an object, got {_dump(value)}")]
        keys = {f.key for f in node.fields}
        for k in value:
            if len(out) >= MAX_VIOLATIONS:
                break
            if k not in keys:
                xn = node.extra_node(k)
                if xn is None:
                    why = "additionalProperties: false" if node.keys is None else \
                        "patternProperties/propertyNames/additionalProperties"
                    out.append((path + (k,), f"property not allowed ({why})"))
                else:
                    out += schema_violations(xn, value[k], path + (k,))
        for f in node.fields:
            if len(out) >= MAX_VIOLATIONS:
                break
            if f.key in value:
                out += schema_violations(f.node, value[f.key], path + (f.key,))
            elif f.required:
                out.append((path + (f.key,), "required property missing"))
        if node.rules is not None:
            out += [(path, msg) for msg in dependency_violations(node.rules, [f.key for f in node.fields], value,
                                                                 len(value))]
        return out[:MAX_VIOLATIONS]
    if isinstance(node, Arr):
        if not isinstance(value, list):
            return [(path, f"expected an array, got {_dump(value)}")]
        if len(value) < node.min_items or (node.max_items is not None and len(value) > node.max_items):
            out.append((path, f"array length {len(value)} outside [{node.min_items}, {node.max_items}]"))
        if node.text_unique:
            firsts: dict = {}
            for i, v in enumerate(value):
                j = firsts.setdefault(json_key(v), i)
                if j != i:
                    out.append((path + (i,), f"uniqueItems: item {i} equals item {j}"))
        item = node.item
        if node.contains is not None:
            cmin, cmax = node.contains
            hit = item.alts[0]  # type: ignore[union-attr]
            n = sum(1 for v in value if not schema_violations(hit, v))
            if n < cmin or (cmax is not None and n > cmax):
                out.append((path, f"{n} items match 'contains', outside [{cmin}, {cmax}]"))
        if isinstance(item, Scalar) and item.kind in ("integer", "fixed") and item.finite:
            enc = item.encode  # fast path for long arrays of bounded numbers: one call per item
            for i, v in enumerate(value):
                if enc(v) is None:
                    out += schema_violations(item, v, path + (i,))
                    if len(out) >= MAX_VIOLATIONS:  # the caller says the list was cut
                        return out[:MAX_VIOLATIONS]
            return out
        for i, v in enumerate(value):
            out += schema_violations(item, v, path + (i,))
            if len(out) >= MAX_VIOLATIONS:
                return out[:MAX_VIOLATIONS]
        return out
    if node.kind == "any":
        return out
    if node.kind in ("union", "ref"):  # a reference node: its one alternative is the target
        best: Optional[list] = None
        for a in node.alts:
            v = schema_violations(a, value, path)
            if not v:
                return []
            best = v if best is None or len(v) < len(best) else best
        return best or []
    if node.kind == "string":
        if not isinstance(value, str):
            return [(path, f"expected a string, got {_dump(value)}")]
        if len(value) < node.min_len or (node.max_len is not None and len(value) > node.max_len):
            out.append((path, f"string length {len(value)} outside [{node.min_len}, {node.max_len}]"))
        elif node.lang is not None and not node.lang.matches(value):
            out.append((path, f"string {_dump(value)} does not match the pattern of {node.pointer or '/'}"))
        return out
    if node.kind == "number":
        if isinstance(value, bool) or not isinstance(value, (int, float, Fraction)):
            return [(path, f"expected a number, got {_dump(value)}")]
        if isinstance(value, float) and not math.isfinite(value):
            return [(path, f"expected a finite number, got {_dump(value)}")]
        exact = value if isinstance(value, Fraction) else Fraction(str(value)) if isinstance(value, float) \
            else Fraction(value)
        if not node.number_within(exact):
            return [(path, f"value {_dump(value)} is outside the bounds of {node.pointer or '/'}")]
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


_VOCABULARY = Vocabulary(frozenset(VALIDATION_KEYWORDS), _KEYWORD_TYPE, _is_noop, _draft4_exclusive)
