"""A free number that must not be an integer (`not: {type: integer}`, or the "number" branch of
`oneOf [integer, number]`): the text machine accepts exactly the canonical decimals with a fraction
part inside the bounds, a prefix stays open iff some extension is accepted (brute force over every
short text against `jsonschema`), `check` agrees with the validator and `solve` writes a value that
is valid; a range that holds one integer only is refused as empty."""
from __future__ import annotations

from fractions import Fraction
from typing import Any

import jsonschema
import pytest

from factorspec.errors import SpecError
from factorspec.graph import compile_spec
from factorspec.graph.textstate import TextMachine
from tests.graph.test_schema_free_numbers import ALPHABET, _canonical, _run, _texts

NOT_INT = {"type": "integer"}
SCHEMAS: list[dict] = [
    {"type": "number", "not": NOT_INT},
    {"type": "number", "minimum": 0, "maximum": 10, "not": NOT_INT},
    {"type": "number", "minimum": 1, "maximum": 2, "not": NOT_INT},
    {"type": "number", "exclusiveMinimum": 0.5, "exclusiveMaximum": 0.75, "not": NOT_INT},
    {"type": "number", "minimum": 1, "maximum": 1.5, "not": NOT_INT},
    {"type": "number", "maximum": -2, "not": NOT_INT},
    {"type": "number", "minimum": 12, "exclusiveMaximum": 13, "not": NOT_INT},
    {"type": "number", "minimum": 0.25, "maximum": 0.25, "not": NOT_INT},
    {"type": "number", "minimum": -1, "maximum": 1, "not": {"anyOf": [NOT_INT, {"const": 0.5}]}},
    {"type": "number", "not": {"type": "integer", "minimum": 1}},  # number minus the integers >= 1
    {"type": "number", "not": {"type": "integer", "minimum": -1, "maximum": 2}},
    {"oneOf": [{"type": "integer", "maximum": 5}, {"type": "number", "minimum": 3, "maximum": 12}]},
    {"oneOf": [{"type": "integer"}, {"type": "string", "maxLength": 0}, {"type": "number"}, {"type": "null"}]},
]
SHORT = _texts(4)
EXTENSIONS = [""] + _texts(2)


def _states(tm: TextMachine, n: int) -> dict[str, frozenset]:
    """The configurations after every text of at most `n` characters (stepped once per character)."""
    out = {"": tm.initial()}
    for t in _texts(n):
        parent = out[t[:-1]]
        out[t] = tm.step(parent, ord(t[-1])) if parent else parent
    return out


def _extends(tm: TextMachine, c: frozenset, depth: int) -> bool:
    """Does the machine accept some extension of at most `depth` more characters from `c`?"""
    if tm.is_final(c):
        return True
    return depth > 0 and any(_extends(tm, n, depth - 1) for b in ALPHABET.encode() if (n := tm.step(c, b)))


def _valid(validator: Any, t: str) -> bool:
    v = _canonical(t)
    return v is not None and validator.is_valid(int(v) if v.denominator == 1 else float(t))


@pytest.mark.parametrize("k", range(len(SCHEMAS)))
def test_accepted_number_texts_are_the_valid_canonical_decimals(k: int) -> None:
    schema = SCHEMAS[k]
    tm = TextMachine(compile_spec(schema))
    validator = jsonschema.Draft202012Validator(schema)
    accepted = 0
    states = _states(tm, 4)
    for t in SHORT:
        got = tm.is_final(states[t])
        assert got == _valid(validator, t), (schema, t)
        accepted += got
    assert accepted > 0 or k == 6  # [12, 13) needs five characters: 12.5


@pytest.mark.parametrize("k", range(len(SCHEMAS)))
def test_a_number_prefix_stays_open_iff_some_extension_is_valid(k: int) -> None:
    """No dead end: every prefix the machine keeps has an accepted extension (of at most three
    more characters, enough for these bounds), and every prefix of at most two characters it refuses
    has no valid extension of at most two more."""
    schema = SCHEMAS[k]
    tm = TextMachine(compile_spec(schema))
    validator = jsonschema.Draft202012Validator(schema)
    for p, c in _states(tm, 3).items():
        if c:
            assert _extends(tm, c, 3 if p else 4), (schema, p)
        elif len(p) <= 2:
            assert not any(_valid(validator, p + e) for e in EXTENSIONS), (schema, p)


@pytest.mark.parametrize("k", range(len(SCHEMAS)))
def test_check_and_solve_agree_with_the_validator(k: int) -> None:
    schema = {"type": "object", "properties": {"x": SCHEMAS[k]}, "required": ["x"], "additionalProperties": False}
    cs = compile_spec(schema)
    validator = jsonschema.Draft202012Validator(schema)
    values: list[Any] = [-4, -3.5, -2, -1.5, -1, -0.5, 0, 0.25, 0.5, 0.6, 0.75, 1, 1.5, 2, 2.5, 5, 10, 10.5, 12,
                         12.5, 13, 10**30, 0.5 + 2**-20, True, "", None, "1"]
    for x in values:
        assert (cs.check({"x": x}) == []) == validator.is_valid({"x": x}), (schema, x)
    rec = cs.solve()
    assert validator.is_valid({"x": float(rec["x"]) if isinstance(rec["x"], Fraction) else rec["x"]}), rec
    assert cs.check(rec) == []


def test_draft4_schema_never_gets_a_whole_fraction() -> None:
    """Draft 4's validator takes 1.0 as a non-integer, later drafts as an integer; FactorSpec never
    writes `1.0` (its number texts are canonical), so the texts it accepts are valid in every draft."""
    schema = {"$schema": "http://json-schema.org/draft-04/schema#", "type": "number", "not": NOT_INT}
    tm = TextMachine(compile_spec(schema))
    assert not tm.is_final(_run(tm, "1.0")) and not tm.is_final(_run(tm, "1"))
    assert tm.is_final(_run(tm, "1.05"))
    states = _states(tm, 4)
    for validator in (jsonschema.Draft4Validator(schema), jsonschema.Draft202012Validator(schema)):
        for t in SHORT:
            if tm.is_final(states[t]):
                assert _valid(validator, t), t


def test_a_range_of_one_integer_is_refused_as_empty() -> None:
    with pytest.raises(SpecError) as e:
        compile_spec({"type": "object", "properties": {"x": {"type": "number", "minimum": 1, "maximum": 1,
                                                             "not": NOT_INT}}, "required": ["x"]})
    assert e.value.pointer.startswith("/properties/x")
