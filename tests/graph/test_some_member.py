"""Negations of objects' members (negation._negate_members, some_member.py), of `items` and of
`oneOf`, and schema dependencies (dependentSchemas, `dependencies` with a schema): brute force
against `jsonschema` over a universe of small values. Exact cases: `check` accepts exactly the
values the validator accepts (within the layout's closed objects); narrowed cases: every accepted
value is valid and some value is accepted. Byte walks never dead-end and finish on valid values."""
from __future__ import annotations

import itertools
import random
from typing import Any

import jsonschema
import pytest

from factorspec.errors import EmptySchema, SpecError
from factorspec.graph import compile_spec
from factorspec.graph.textstate import TextMachine
from tests.graph.walks import byte_walks

_B = {"type": "boolean"}
_I = {"type": "integer", "minimum": 0, "maximum": 1}
_S = {"type": "string", "maxLength": 1}

# (schema, exact): exact means the layout's closed objects hold every valid value of the universe
CASES: list[tuple[dict, bool]] = [
    # discriminated closed objects: the empty object matches both, so oneOf excludes it
    ({"oneOf": [{"type": "object", "properties": {"d": {"const": "a"}, "a": _B}, "additionalProperties": False},
                {"type": "object", "properties": {"d": {"const": "b"}, "b": _B}, "additionalProperties": False}]},
     True),
    # two closed objects sharing a required key: told apart by the other keys
    ({"type": "object", "oneOf": [
        {"type": "object", "properties": {"r": _I, "t": {"enum": ["x"]}}, "required": ["r"],
         "additionalProperties": False},
        {"type": "object", "properties": {"r": _I, "b": _I, "t": {"enum": ["x", "y"]}}, "required": ["r"],
         "additionalProperties": False}]}, True),
    # not over properties + additionalProperties schema
    ({"type": "object", "properties": {"a": _I, "b": _I, "c": _S},
      "not": {"properties": {"a": {"const": 0}}, "additionalProperties": {"type": "integer"}}}, True),
    # not over patternProperties: a key matching the pattern with a bad value
    ({"type": "object", "properties": {"a": _I, "b": _S, "c": _I},
      "not": {"properties": {"c": _I}, "patternProperties": {"^[ab]$": {"type": "integer"}}}}, True),
    # dependencies with a schema, and dependentSchemas
    ({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {"a": _I, "b": _S, "c": _B},
      "dependencies": {"a": {"required": ["b"]}}}, True),
    ({"type": "object", "properties": {"a": _I, "b": _S, "c": _B},
      "dependentSchemas": {"c": {"properties": {"a": {"const": 1}}, "required": ["a"]}},
      "dependentRequired": {"b": ["a"]}}, True),
    # not over oneOf: none of them or two of them
    ({"type": ["string", "integer", "boolean"], "maxLength": 1, "minimum": 0, "maximum": 1,
      "not": {"oneOf": [{"type": "string"}, {"type": "integer"}, {"enum": ["x", 1]}]}}, True),
    # arrays told apart by their items: the empty array matches both (not over items, narrowed)
    ({"oneOf": [{"type": "array", "items": _S, "maxItems": 2}, {"type": "array", "items": _I, "maxItems": 2}]},
     True),
    ({"type": "array", "maxItems": 2, "items": {"type": ["integer", "string"], "minimum": 0, "maximum": 1,
                                                 "maxLength": 1},
      "not": {"items": {"type": "integer"}}}, False),
    # value exclusions meet only values of their own type (oneOf of an array, a string, an enum)
    ({"oneOf": [{"type": "array", "items": _I, "maxItems": 2}, {"type": "string", "maxLength": 1},
                {"enum": ["x", "y"]}]}, True),
    ({"not": {"enum": ["x", None]}}, True),
    # an open object: extra members are never the witness (narrowed)
    ({"type": "object", "properties": {"a": _I, "b": _I}, "additionalProperties": _I,
      "not": {"properties": {"a": _I}, "additionalProperties": False}}, False),
]

_VALUES: list[Any] = [0, 1, "x", "y", True, None]


def _universe() -> list[Any]:
    out: list[Any] = list(_VALUES) + [[]]
    for n in (1, 2):
        out += [list(xs) for xs in itertools.product([0, 1, "x", True], repeat=n)]
    for n in range(4):
        for ks in itertools.combinations(["a", "b", "c", "d", "r", "t"], n):
            for vs in itertools.product(["a", "b", 0, 1, "x", "y", True], repeat=n):
                out.append(dict(zip(ks, vs)))
    return out


UNIVERSE = _universe()


def _validator(schema: dict) -> Any:
    """The schema's declared draft (`dependencies` is a draft-07 keyword), else 2020-12."""
    return jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)(schema)


def _in_layout(cs: Any, v: Any) -> bool:
    """A valid value the layout may leave out: an object with undeclared keys (closed layouts)."""
    from factorspec.graph.schema import Obj
    t = cs.template
    alts = t.alts if getattr(t, "kind", "") == "union" else [t]
    if not isinstance(v, dict):
        return True
    return any(isinstance(a, Obj) and (a.extra is not None or set(v) <= {f.key for f in a.fields}) for a in alts)


@pytest.mark.parametrize("k", range(len(CASES)))
def test_check_equals_brute_force(k: int) -> None:
    schema, exact = CASES[k]
    cs = compile_spec(schema)
    validator = _validator(schema)
    accepted = 0
    for v in UNIVERSE:
        ok = cs.check(v) == []
        want = validator.is_valid(v)
        if ok:
            assert want, (schema, v)
            accepted += 1
        elif exact and want:
            assert not _in_layout(cs, v), (schema, v, cs.check(v))
    assert accepted > 0


@pytest.mark.parametrize("k", range(len(CASES)))
def test_byte_walks_never_dead_end(k: int) -> None:
    schema, _ = CASES[k]
    validator = _validator(schema)
    tm = TextMachine(compile_spec(schema))
    assert byte_walks(tm, validator.is_valid, random.Random(k), prefer='{}[]",: 01abcdrtxy') > 0


def test_one_of_closed_objects_that_always_both_match_admits_nothing() -> None:
    same = {"type": "object", "properties": {"a": _I}, "additionalProperties": False}
    with pytest.raises(EmptySchema):
        compile_spec({"oneOf": [same, dict(same)]})


def test_a_witness_only_among_extra_members_is_refused_not_called_empty() -> None:
    schema = {"type": "object", "properties": {"a": _I}, "additionalProperties": _I,
              "not": {"properties": {"a": _I}, "additionalProperties": False}}
    with pytest.raises(SpecError) as e:
        compile_spec(schema)
    assert not isinstance(e.value, EmptySchema) and "extra member" in e.value.message
