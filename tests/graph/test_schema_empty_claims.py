"""Independent checks of FactorSpec's "admits no value" claims on corpus schemas (issue #12):
each case is the minimal reproduction of one corpus schema's EmptySchema (the sub-schema the
error names, reduced), FactorSpec must refuse it as empty, and the `jsonschema` validator must
reject every instance of a universe that covers it (every key subset with representative
values; every short string over the pattern's alphabet). A relaxed twin (one keyword dropped)
shows the universe is rich enough: the validator accepts some instance of it, and FactorSpec's
check agrees with the validator on the twin over the whole universe.
The full corpus schemas are checked the same way by scripts/verify_empty_claims.py."""
from __future__ import annotations

import itertools
from typing import Any

import jsonschema
import pytest

from factorspec.errors import EmptySchema
from factorspec.graph import compile_spec

_N = {"type": "number"}
_REPS: list[Any] = [None, 1, 2.5, "s", True, [], {}]


def _objects(keys: list[str], reps: list[Any] = _REPS) -> list[Any]:
    out: list[Any] = [None, 1, "s", [], True]
    for n in range(len(keys) + 1):
        for ks in itertools.combinations(keys, n):
            for vs in itertools.product(reps, repeat=n):
                out.append(dict(zip(ks, vs)))
    return out


def _strings(alphabet: str, n: int) -> list[Any]:
    return [None, 1, {}, []] + ["".join(p) for k in range(n + 1) for p in itertools.product(alphabet, repeat=k)]


def _nested(depth: int) -> list[Any]:
    """Objects over the keys of Github_medium/o74424 nested up to `depth` levels."""
    level: list[Any] = [None, 1, "s", {}]
    for _ in range(depth):
        nxt = list(level)
        for ks in itertools.combinations(["nest", "prev", "propA", "propB"], 4):
            for v in level[-3:]:
                nxt.append({k: v for k in ks})
        level = nxt
    return level


_KEYS5 = ["radius", "length", "width", "base", "height"]
_KEYS3 = ["length", "width", "radius"]
# (corpus keys, minimal schema, universe, relaxed twin that admits a value)
CASES: list[tuple[str, dict, list[Any], dict]] = [
    ("Glaiveai2K/calculate_area_{2f92f3ea,3a8a9f78,92ac029d,f8e04f89}",
     {"type": "object", "properties": {k: _N for k in _KEYS5}, "required": _KEYS5,
      "oneOf": [{"required": ["radius"]}, {"required": ["length", "width"]}, {"required": ["base", "height"]}]},
     _objects(_KEYS5, [None, 1, "s"]), {"type": "object", "properties": {k: _N for k in _KEYS5},
                                       "oneOf": [{"required": ["radius"]}, {"required": ["length", "width"]},
                                                 {"required": ["base", "height"]}]}),
    ("Glaiveai2K/calculate_area_{6fd20e8d,8db9d7ff,e8f1513d} (side/side_length for length+width)",
     {"type": "object", "properties": {k: _N for k in ["radius", "side", "base", "height"]},
      "required": ["radius", "side", "base", "height"],
      "oneOf": [{"required": ["radius"]}, {"required": ["side"]}, {"required": ["base", "height"]}]},
     _objects(["radius", "side", "base", "height"]),
     {"type": "object", "properties": {k: _N for k in ["radius", "side", "base", "height"]},
      "required": ["radius"], "oneOf": [{"required": ["radius"]}, {"required": ["side"]}]}),
    ("Glaiveai2K/calculate_area_{d402e1cc,f88fb53c}",
     {"type": "object", "properties": {k: _N for k in _KEYS3}, "required": _KEYS3,
      "oneOf": [{"required": ["length", "width"]}, {"required": ["radius"]}]},
     _objects(_KEYS3), {"type": "object", "properties": {k: _N for k in _KEYS3}, "required": ["length", "width"],
                        "oneOf": [{"required": ["length", "width"]}, {"required": ["radius"]}]}),
    ("Glaiveai2K/calculate_area_43c11cd0",
     {"type": "object", "properties": {k: _N for k in _KEYS3}, "required": _KEYS3,
      "oneOf": [{"not": {"required": ["radius"]}, "required": ["length", "width"]},
                {"not": {"required": ["length", "width"]}, "required": ["radius"]}]},
     _objects(_KEYS3), {"type": "object", "properties": {k: _N for k in _KEYS3},
                        "oneOf": [{"not": {"required": ["radius"]}, "required": ["length", "width"]},
                                  {"not": {"required": ["length", "width"]}, "required": ["radius"]}]}),
    ("Glaiveai2K/calculate_area_e6818129",
     {"type": "object", "properties": {k: _N for k in ["radius", "width", "height", "base"]},
      "required": ["radius", "width", "height", "base"],
      "oneOf": [{"not": {"required": ["width", "height", "base"]}, "required": ["radius"]},
                {"not": {"required": ["radius", "base"]}, "required": ["width", "height"]},
                {"not": {"required": ["radius", "width"]}, "required": ["base", "height"]}]},
     _objects(["radius", "width", "height", "base"]),
     {"type": "object", "properties": {k: _N for k in ["radius", "width", "height", "base"]},
      "oneOf": [{"not": {"required": ["width", "height", "base"]}, "required": ["radius"]},
                {"not": {"required": ["radius", "base"]}, "required": ["width", "height"]},
                {"not": {"required": ["radius", "width"]}, "required": ["base", "height"]}]}),
    ("Github_easy/o21833 (/definations/date_fullyear: the pattern's '/' delimiters are literal)",
     {"type": "string", "minLength": 4, "maxLength": 4, "pattern": "/^[0-9]{4}$/"},
     _strings("/0^$a", 4) + ["/2001/", "2001"], {"type": "string", "minLength": 4, "maxLength": 4, "pattern": "^/?[0-9]{4}/?$"}),
    ("Github_easy/o46142 (/definitions/PropertySpecification: oneOf of three equal object schemas)",
     {"oneOf": [{"type": "object", "properties": {"type": {"type": "string"}, "enum": {"type": "array"}}}] * 3},
     _objects(["type", "enum"]),
     {"oneOf": [{"type": "object", "properties": {"type": {"type": "string"}, "enum": {"type": "array"}}}] * 1}),
    ("Github_hard/{o10346,o4851} (/definitions/instance)",
     {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["id"],
      "additionalProperties": False},
     _objects(["name", "id", "zz"]),
     {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["id"], "additionalProperties": True}),
    ("Github_hard/o4237 (/definitions/solver/properties/options/items: 'description' required, not declared)",
     {"type": "object", "properties": {"name": {"type": "string"}, "value": {"type": "string"},
                                       "word_argument": {"type": "boolean"}},
      "required": ["name", "value", "word_argument", "description"], "additionalProperties": False},
     _objects(["name", "value", "word_argument", "description"], [None, "s", True]),
     {"type": "object", "properties": {"name": {"type": "string"}, "value": {"type": "string"},
                                       "word_argument": {"type": "boolean"}},
      "required": ["name", "value", "word_argument"], "additionalProperties": False}),
    ("Github_hard/o4237 (/definitions/executor/properties/url: format is an annotation, every string "
     "matches all three)",
     {"type": "string", "oneOf": [{"format": "hostname"}, {"format": "ipv4"}, {"format": "ipv6"}]},
     _strings("a1.:", 3) + ["example.com", "127.0.0.1", "::1"],
     {"type": "string", "oneOf": [{"format": "hostname"}]}),
    ("Github_medium/o48406 (/definitions/MyUnion)",
     {"type": "string", "oneOf": [{"type": "string"}, {"type": "string"}, {"type": "number"}]},
     _strings("ab", 2) + [1.5, True], {"type": "string", "oneOf": [{"type": "string"}, {"type": "number"}]}),
    ("Github_medium/o74424 (/definitions/MyModule.Def: requires itself under 'nest')",
     {"$defs": {"d": {"type": "object", "properties": {k: {"$ref": "#/$defs/d"} for k in ["nest", "prev"]},
                      "required": ["nest", "prev"], "additionalProperties": False}}, "$ref": "#/$defs/d"},
     _nested(3),
     {"$defs": {"d": {"type": "object", "properties": {k: {"$ref": "#/$defs/d"} for k in ["nest", "prev"]},
                      "additionalProperties": False}}, "$ref": "#/$defs/d"}),
    ("JsonSchemaStore/statamic.blueprint.schema (/$defs/date/properties/earliest_date: format annotations)",
     {"type": "string", "oneOf": [{"format": "date"}, {"format": "date-time"}]},
     _strings("1-:T", 3) + ["1900-01-01", "1900-01-01T00:00:00Z"], {"type": "string", "oneOf": [{"format": "date"}]}),
    ("Github_hard/o90971, JsonSchemaStore/prometheus (basic_auth beside const null: null matches both "
     "oneOf alternatives)",
     {"type": ["object", "null"], "properties": {"username": {"type": "string"}, "password": {"type": "string"}},
      "oneOf": [{"required": ["password"]}, {"required": ["username"]}], "additionalProperties": False,
      "const": None},
     _objects(["username", "password"], [None, "s"]),
     {"type": ["object", "null"], "properties": {"username": {"type": "string"}, "password": {"type": "string"}},
      "oneOf": [{"required": ["password"]}, {"required": ["username"]}], "additionalProperties": False}),
    ("Github_hard/o10421 (/definitions/ContentTypeType: an object that must be one of two strings)",
     {"type": "object", "additionalProperties": False,
      "oneOf": [{"enum": ["text", "html", "xhtml"]}, {"type": "string", "pattern": "(text|image)/.+"}]},
     _objects(["text", "zz"]) + ["text", "image/png"],
     {"additionalProperties": False,
      "oneOf": [{"enum": ["text", "html", "xhtml"]}, {"type": "string", "pattern": "(text|image)/.+"}]}),
]


@pytest.mark.parametrize("k", range(len(CASES)), ids=[c[0][:60] for c in CASES])
def test_the_empty_claim_holds(k: int) -> None:
    _, schema, universe, twin = CASES[k]
    with pytest.raises(EmptySchema):
        compile_spec(schema)
    validator = jsonschema.Draft202012Validator(schema)
    assert not [v for v in universe if validator.is_valid(v)]
    # the universe is rich enough to find the values of the relaxed twin, and FactorSpec agrees there
    tv = jsonschema.Draft202012Validator(twin)
    assert any(tv.is_valid(v) for v in universe)
    cs = compile_spec(twin)
    for v in universe:
        assert (cs.check(v) == []) == tv.is_valid(v), (twin, v)
