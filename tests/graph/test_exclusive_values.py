"""oneOf whose alternatives include a finite set of object values (an enum/const of objects), and
`not` excluding object values from an object layout (schema.py `_exclusive`, `_excluding`,
`_without_objects`; layout_values.py). Brute force over a universe of small objects with the
`jsonschema` validator as the judge: every value the compiled spec accepts is valid, every valid
value whose keys the layouts declare is accepted; byte walks never dead-end."""
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

_KEYS = ["a", "b", "c"]
_INNER: list[Any] = [0, 1, "a", "b", None, {"a": 0}]


def _objects() -> list[dict]:
    out: list[dict] = []
    for n in range(3):
        for ks in itertools.combinations(_KEYS, n):
            for vs in itertools.product(_INNER, repeat=n):
                out.append(dict(zip(ks, vs)))
    return out


OBJECTS = _objects()
UNIVERSE: list[Any] = [None, 0, "a", [], [0]] + OBJECTS


def _value_schema(r: random.Random) -> Any:
    return r.choice([{"type": "integer"}, {"type": "string"}, {"enum": [0, "a"]}, {"const": 1},
                     {"type": "string", "not": {"enum": ["a"]}}, {"type": ["integer", "null"]},
                     {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False}])


def _closed(r: random.Random) -> dict:
    keys = r.sample(_KEYS, r.randrange(1, 3))
    s: dict[str, Any] = {"type": "object", "properties": {k: _value_schema(r) for k in keys},
                         "additionalProperties": False}
    req = [k for k in keys if r.random() < 0.6]
    if req:
        s["required"] = req
    return s


def _values(r: random.Random) -> dict:
    vals = r.sample(OBJECTS, r.randrange(1, 4))
    return {"const": vals[0]} if len(vals) == 1 and r.random() < 0.5 else {"enum": vals}


def _schema(r: random.Random) -> dict:
    alts = [_closed(r) for _ in range(r.randrange(1, 3))] + [_values(r)]
    r.shuffle(alts)
    s: dict[str, Any] = {"oneOf": alts}
    if r.random() < 0.5:
        s["type"] = "object"
    return s


@pytest.mark.parametrize("chunk", range(5))
def test_one_of_with_object_values_equals_the_validator(chunk: int) -> None:
    compiled = overlapping = 0
    for seed in range(chunk * 40, chunk * 40 + 40):
        s = _schema(random.Random(seed))
        validator = jsonschema.Draft202012Validator(s)
        try:
            cs = compile_spec(s)
        except EmptySchema:
            assert not any(validator.is_valid(v) for v in UNIVERSE), s
            continue
        except SpecError:
            continue
        compiled += 1
        for v in UNIVERSE:
            ok = validator.is_valid(v)
            assert (cs.check(v) == []) == ok, (s, v, ok)
        overlapping += any(sum(jsonschema.Draft202012Validator(a).is_valid(v) for a in s["oneOf"]) > 1
                           for v in UNIVERSE)
    assert compiled >= 30 and overlapping >= 4, (compiled, overlapping)


@pytest.mark.parametrize("seed", range(40))
def test_not_excluding_object_values_equals_the_validator(seed: int) -> None:
    r = random.Random(seed)
    base = _closed(r)
    excluded = r.sample(OBJECTS, r.randrange(1, 4)) + r.sample([0, "a", None], 1)
    s = {**base, "not": {"enum": excluded}}
    validator = jsonschema.Draft202012Validator(s)
    try:
        cs = compile_spec(s)
    except EmptySchema:
        assert not any(validator.is_valid(v) for v in UNIVERSE), s
        return
    for v in UNIVERSE:
        assert (cs.check(v) == []) == validator.is_valid(v), (s, v)


def test_excluding_the_only_values_is_empty() -> None:
    s = {"type": "object", "properties": {"a": {"const": 1}}, "required": ["a"], "additionalProperties": False,
         "not": {"const": {"a": 1}}}
    with pytest.raises(EmptySchema):
        compile_spec(s)


def test_values_the_layout_never_writes_need_no_exclusion() -> None:
    """{"b": 0} is outside the closed layout: excluding it changes nothing."""
    s = {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False,
         "not": {"enum": [{"b": 0}, [1]]}}
    cs = compile_spec(s)
    assert cs.check({"a": 3}) == [] and cs.check({}) == []


def test_swagger_data_type_shape_compiles_exactly() -> None:
    """The swagger 1.2 "data type" oneOf (Github_medium/o11666): a closed $ref object, a void
    value, and a model type whose string also admits "void": {"type": "void"} matches two
    alternatives, so it is invalid, and every other model type is valid."""
    s = {"type": "object", "oneOf": [
        {"required": ["$ref"], "properties": {"$ref": {"type": "string"}}, "additionalProperties": False},
        {"enum": [{"type": "void"}]},
        {"required": ["type"], "properties": {"type": {"type": "string", "not": {"enum": ["integer", "array"]}}},
         "additionalProperties": False}]}
    cs = compile_spec(s)
    validator = jsonschema.Draft202012Validator(s)
    for v in [{"type": "void"}, {"type": "pet"}, {"type": "integer"}, {"$ref": "x"}, {"$ref": "x", "type": "a"},
              {}, {"type": "voi"}, {"type": "voidx"}]:
        assert (cs.check(v) == []) == validator.is_valid(v), v
    assert byte_walks(TextMachine(cs), validator.is_valid, random.Random(0), prefer='{}",: $reftypvoid') > 0


@pytest.mark.parametrize("seed", range(8))
def test_byte_walks_never_dead_end(seed: int) -> None:
    r = random.Random(500 + seed)
    while True:
        s = _schema(r)
        try:
            tm = TextMachine(compile_spec(s))
            break
        except SpecError:
            continue
    validator = jsonschema.Draft202012Validator(s)
    assert byte_walks(tm, validator.is_valid, random.Random(seed), prefer='{}",: 01abnul') > 0
