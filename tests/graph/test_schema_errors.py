"""Schema compilation: every unsupported keyword or shape is a SpecError naming its JSON Pointer."""
from __future__ import annotations

import pytest

from factorspec.errors import FactorSpecError, SpecError
from factorspec.graph import compile_spec
from factorspec.graph.schema import compile_schema


def _wrap(node: object) -> dict:
    return {"type": "object", "properties": {"a": node}, "required": ["a"], "additionalProperties": False}


UNSUPPORTED_KEYWORDS = [
    ({"oneOf": [{"type": "integer", "minimum": i} for i in range(33)]}, "oneOf"),  # past 32 overlapping
    ({"type": "object", "properties": {}, "anyOf": [{"properties": {"a": {}}}, {"properties": {"b": {}}}],
      "unevaluatedProperties": False}, "unevaluatedProperties"),
    ({"type": "array", "items": {"type": "integer"}, "prefixItems": []}, "prefixItems"),
    # uniqueItems over any-value items compiles now (unique_values.py); minItems needing more distinct
    # values than items with maxProperties 0 can have is refused
    ({"type": "array", "items": {"type": "object", "maxProperties": 0}, "uniqueItems": True, "minItems": 2},
     "minItems"),
    ({"type": "array", "items": {"type": "integer"}, "contains": {"minimum": 2}, "uniqueItems": True}, "contains"),
    ({"type": "array", "items": {"type": "integer"}, "unevaluatedItems": False}, "unevaluatedItems"),
    ({"$dynamicRef": "#x"}, "$dynamicRef"),
    ({"type": "string", "pattern": "(?<=x)a"}, "pattern"),  # lookbehind: refused (lookaheads compile)
    ({"type": "object", "propertyNames": {"type": "number"}}, "propertyNames"),
    ({"enum": ["a", "b"], "pattern": "(a)\\1"}, "pattern"),  # a backreference
]


@pytest.mark.parametrize("node,keyword", UNSUPPORTED_KEYWORDS, ids=[k for _, k in UNSUPPORTED_KEYWORDS])
def test_unsupported_keyword_names_pointer(node: dict, keyword: str) -> None:
    with pytest.raises(SpecError) as ei:
        compile_spec(_wrap(node))
    assert ei.value.pointer == f"/properties/a/{keyword}", str(ei.value)
    assert repr(keyword) in str(ei.value) or keyword in str(ei.value)


BAD_SHAPES = [
    ({"type": "object", "properties": {"x": {}}, "minProperties": 2, "additionalProperties": False},
     "/properties/a/minProperties"),
    ({"type": "object", "properties": {}, "minProperties": 2, "maxProperties": 1}, "/properties/a/maxProperties"),
    ({"type": "object", "properties": {"x": {}}, "dependencies": {"x": 5}},
     "/properties/a/dependencies/x"),
    ({"type": "object", "properties": {"x": {}}, "required": ["x"], "dependentRequired": {"x": ["y"]},
      "additionalProperties": False}, "/properties/a/required"),
    ({"type": "object", "properties": []}, "/properties/a/properties"),
    ({"type": "object", "properties": {}, "required": "x"}, "/properties/a/required"),
    ({"type": "array", "items": [{"type": "integer"}]}, "/properties/a/items"),
    ({"type": "array", "items": {"type": "integer"}, "minItems": -1}, "/properties/a/minItems"),
    ({"type": "array", "items": {"type": "integer"}, "maxItems": 1.5}, "/properties/a/maxItems"),
    ({"type": "array", "items": {"type": "integer"}, "minItems": 3, "maxItems": 1}, "/properties/a/maxItems"),
    ({"type": "array", "items": {"type": "integer"}, "minItems": 10**12}, "/properties/a/minItems"),
    ({"type": "object", "properties": {}, "additionalProperties": {"pattern": "(?<=y)x"}},
     "/properties/a/additionalProperties/pattern"),
    ({"type": "array", "items": {"pattern": "x{,2}"}}, "/properties/a/items/pattern"),
    ({"type": "int"}, "/properties/a/type"),
    ({"type": {"x": 1}}, "/properties/a/type"),
    ({"$ref": "http://example.com/s.json"}, "/properties/a/$ref"),
    ({"$ref": "#/$defs/missing"}, "/properties/a/$ref"),
    ({"$ref": 5}, "/properties/a/$ref"),
    ({"type": "integer", "minimum": 5, "maximum": 1}, "/properties/a"),
    ({"type": "integer", "maximum": "x"}, "/properties/a/maximum"),
    ({"type": "integer", "minimum": float("inf")}, "/properties/a/minimum"),
    ({"type": "integer", "multipleOf": 0.5}, "/properties/a/multipleOf"),
    ({"type": "number", "multipleOf": 0}, "/properties/a/multipleOf"),
    ({"type": "number", "multipleOf": -0.01}, "/properties/a/multipleOf"),
    ({"type": "string", "minLength": 3, "maxLength": 1}, "/properties/a/maxLength"),
    ({"type": "string", "minLength": "3"}, "/properties/a/minLength"),
    ({"enum": []}, "/properties/a/enum"),
    ({"enum": "abc"}, "/properties/a/enum"),
    ({"enum": [{"a": [1, 2]}]}, "/properties/a/enum/0"),
    ({"const": [1, True]}, "/properties/a/const"),
    ({"enum": [float("nan")]}, "/properties/a/enum"),
    ({"type": "integer", "enum": ["a"]}, "/properties/a/enum"),
    ({"enum": [1, 5], "maximum": 0}, "/properties/a"),
    (5, "/properties/a"),
]


@pytest.mark.parametrize("node,pointer", BAD_SHAPES)
def test_bad_shape_names_pointer(node: object, pointer: str) -> None:
    with pytest.raises(SpecError) as ei:
        compile_spec(_wrap(node))
    assert ei.value.pointer == pointer, str(ei.value)
    assert str(ei.value).startswith(pointer + ": ")


def test_pointer_escapes_and_nesting() -> None:
    doc = {"type": "object", "additionalProperties": False, "required": [],
           "properties": {"a/b~c": {"type": "array", "maxItems": 2,
                                   "items": {"type": "object", "additionalProperties": False,
                                             "properties": {"x": {"type": "string", "pattern": "^(a)\\1"}}}}}}
    with pytest.raises(SpecError) as ei:
        compile_spec(doc)
    assert ei.value.pointer == "/properties/a~1b~0c/items/properties/x/pattern"


def test_ref_errors_point_into_defs() -> None:
    # a recursion without a finite instance (recursive $ref itself compiles: test_schema_recursion.py)
    doc = {"$defs": {"n": {"type": "object", "additionalProperties": False, "required": ["k"],
                           "properties": {"k": {"$ref": "#/$defs/n"}}}}, "$ref": "#/$defs/n"}
    with pytest.raises(SpecError) as ei:
        compile_spec(doc)
    assert ei.value.pointer == "/$defs/n" and "recursive" in str(ei.value)
    doc = {"$defs": {"d": {"type": "string", "pattern": "\\p{L}"}}, "type": "object", "additionalProperties": False,
           "properties": {"a": {"$ref": "#/$defs/d"}}}
    with pytest.raises(SpecError) as ei:
        compile_spec(doc)
    assert ei.value.pointer == "/$defs/d/pattern"


@pytest.mark.parametrize("doc", [[], "x", 5, None, "{not json"])
def test_spec_must_be_an_object(doc: object) -> None:
    with pytest.raises(SpecError) as ei:
        compile_spec(doc)
    assert ei.value.pointer == "/"


def test_extension_only_at_root() -> None:
    with pytest.raises(SpecError) as ei:
        compile_spec(_wrap({"type": "integer", "x-factorspec": {}}))
    assert ei.value.pointer == "/properties/a/x-factorspec"


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    node: dict = {"type": "integer", "minimum": 0, "maximum": 1}
    for _ in range(200):
        node = {"type": "array", "maxItems": 1, "items": node}
    with pytest.raises(SpecError) as ei:
        compile_spec(_wrap(node))
    assert "deeper" in str(ei.value)


def test_relations_need_finite_fields_and_name_the_pointer() -> None:
    doc = _wrap({"type": "integer"})
    doc["x-factorspec"] = {"relations": [{"name": "r", "expr": "a > 1"}]}
    with pytest.raises(SpecError) as ei:
        compile_spec(doc)
    assert ei.value.pointer == "/x-factorspec/relations/0" and "/properties/a" in str(ei.value)


def test_supported_subset_compiles() -> None:
    doc = {
        "$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "x", "title": "t",
        "description": "d", "$comment": "c", "examples": [], "default": {},
        "$defs": {"day": {"type": "integer", "minimum": 1, "exclusiveMaximum": 10}},
        "type": "object", "additionalProperties": False, "required": ["d", "n", "e", "b", "z", "s", "xs"],
        "properties": {
            "d": {"$ref": "#/$defs/day"},
            "n": {"type": "number", "exclusiveMinimum": 0, "maximum": 1, "multipleOf": 0.25},
            "e": {"enum": ["a", 1, None, True, 2.5]},
            "b": {"type": "boolean"}, "z": {"type": "null"},
            "s": {"type": "string", "minLength": 1, "maxLength": 3},
            "c": {"const": "fixed"},
            "xs": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"$ref": "#/$defs/day"}},
        },
    }
    cs = compile_spec(doc)
    rec = cs.solve()
    assert cs.check(rec) == []
    assert isinstance(compile_schema(doc), object)


def test_every_error_is_a_factorspec_error() -> None:
    assert issubclass(SpecError, FactorSpecError)


# Keywords that constrain nothing are ignored (JSON Schema semantics) and listed in the report.
IGNORED = [
    ({"type": "string", "format": "date"}, "/properties/a/format"),
    ({"type": "string", "contentEncoding": "base64"}, "/properties/a/contentEncoding"),
    ({"type": "integer", "minimum": 0, "maximum": 3, "x-other": 1}, "/properties/a/x-other"),
    ({"type": "integer", "minLength": 1}, "/properties/a/minLength"),
    ({"type": "string", "minimum": 1}, "/properties/a/minimum"),
    ({"type": "boolean", "maximum": 1}, "/properties/a/maximum"),
    ({"type": "null", "items": {}}, "/properties/a/items"),
    ({"type": "integer", "id": "http://x/y", "self": {"vendor": 1}}, "/properties/a/self"),
    ({"type": "integer", "pattern": "^[0-9]$"}, "/properties/a/pattern"),
]


@pytest.mark.parametrize("node,pointer", IGNORED, ids=[p.rsplit("/", 1)[1] for _, p in IGNORED])
def test_ignored_keywords_are_reported(node: dict, pointer: str) -> None:
    from factorspec.graph.schema import compile_schema_report
    _, report = compile_schema_report(_wrap(node))
    assert pointer in [p for p, _, _ in report], report
    compile_spec(_wrap(node))


def test_draft4_boolean_exclusive_bounds() -> None:
    cs = compile_spec({"$schema": "http://json-schema.org/draft-04/schema#", **_wrap(
        {"type": "integer", "minimum": 0, "exclusiveMinimum": True, "maximum": 3, "exclusiveMaximum": False})})
    assert cs.template.fields[0].node.lo == 1 and cs.template.fields[0].node.hi == 3


def test_unions_and_any_compile() -> None:
    from factorspec.graph.schema import Scalar
    for node, kind in [({"type": ["integer", "null"]}, "union"),
                       ({"anyOf": [{"type": "string"}, {"type": "null"}]}, "union"),
                       ({"oneOf": [{"const": 1}, {"const": 2}]}, "union"), ({}, "any"), (True, "any"),
                       ({"description": "no type"}, "any")]:
        n = compile_schema(_wrap(node)).fields[0].node
        assert isinstance(n, Scalar) and n.kind == kind, (node, n)
    # a discriminated oneOf is exclusive: compiled
    compile_spec(_wrap({"oneOf": [
        {"type": "object", "properties": {"k": {"const": "a"}, "x": {"type": "integer"}}, "required": ["k"]},
        {"type": "object", "properties": {"k": {"const": "b"}}, "required": ["k"]}]}))


def test_relation_on_a_union_is_refused_naming_it() -> None:
    doc = _wrap({"type": ["integer", "null"]})
    doc["x-factorspec"] = {"relations": [{"name": "r", "expr": "a > 1"}]}
    with pytest.raises(SpecError) as ei:
        compile_spec(doc)
    assert ei.value.pointer == "/x-factorspec/relations/0" and "/properties/a" in str(ei.value)


def test_open_object_automaton_is_exact() -> None:
    """additionalProperties (open by default): extra keys never repeat a declared key (also when
    escaped) or an extra key already written, extra values follow their schema, declared fields
    come first."""
    from factorspec.graph.textstate import TextMachine
    sc = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "boolean"}}, "required": ["a"],
          "additionalProperties": {"type": "string", "maxLength": 2}}
    cs = compile_spec(sc)
    tm = TextMachine(cs)

    def run(text: bytes) -> frozenset:
        c = tm.initial()
        for b in text:
            c = tm.step(c, b)
            if not c:
                break
        return c
    assert run(b'{"a": 1, "a') and not run(b'{"a": 1, "a"')
    assert run(b'{"a": 1, "\\u0061') and not run(b'{"a": 1, "\\u0061"')
    assert tm.is_final(run(b'{"a": 1, "b": true, "zz": "xy", "q": ""}'))
    assert not run(b'{"a": 1, "zz": "xyz')
    assert not run(b'{"a": 1, "zz": 1')
    assert cs.check({"a": 1, "zz": "xy"}) == [] and cs.check({"a": 1, "zz": "xyz"})
    assert run(b'{"a": 1, "zz": "", "z') and not run(b'{"a": 1, "zz": "", "zz"')
    assert not run(b'{"a": 1, "zz": "", "z\\u007a"') and run(b'{"a": 1, "zz": "", "z\\u007b"')
    closed = compile_spec(sc, open_objects=False)
    assert closed.check({"a": 1, "zz": "xy"}) and TextMachine(closed).step(TextMachine(closed).initial(), ord("{"))
