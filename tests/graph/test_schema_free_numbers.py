"""Free numbers (no multipleOf) with bounds: the text machine accepts exactly the canonical
decimals inside the bounds (inclusive or exclusive, one- or two-sided), a prefix stays open iff
some extension is accepted (brute force over every short text), `check` agrees with `jsonschema`,
and `solve` writes a value inside the bounds."""
from __future__ import annotations

import itertools
from fractions import Fraction
from typing import Any

import jsonschema
import pytest

from factorspec.errors import SpecError
from factorspec.graph import compile_spec
from factorspec.graph.relations import format_decimal
from factorspec.graph.textstate import TextMachine

BOUNDS: list[dict] = [
    {"minimum": 0, "maximum": 10},
    {"exclusiveMinimum": 0.5, "exclusiveMaximum": 0.75},
    {"minimum": -3.25},
    {"maximum": -2},
    {"exclusiveMaximum": 0},
    {"exclusiveMinimum": -1, "maximum": 1.5},
    {"minimum": 12, "exclusiveMaximum": 120},
    {"minimum": 0.25, "maximum": 0.25},
    {"minimum": 1, "exclusiveMinimum": 1, "maximum": 2},  # the exclusive bound wins the tie
    {"exclusiveMinimum": 99.5},
]
ALPHABET = "-0123456789."


def _run(tm: TextMachine, text: str) -> frozenset:
    c = tm.initial()
    for b in text.encode():
        c = tm.step(c, b)
        if not c:
            break
    return c


def _canonical(text: str) -> Fraction | None:
    """The value of `text` if it is a canonical decimal (the machine's number form), else None."""
    try:
        v = Fraction(text)
    except (ValueError, ZeroDivisionError):
        return None
    if text.startswith(("+", ".")) or "e" in text or "_" in text or " " in text or "/" in text:
        return None
    return v if format_decimal(v if v.denominator != 1 else int(v)) == text else None


def _texts(n: int) -> list[str]:
    return ["".join(t) for k in range(1, n + 1) for t in itertools.product(ALPHABET, repeat=k)]


SHORT = _texts(4)
EXTENSIONS = [""] + _texts(3)


@pytest.mark.parametrize("k", range(len(BOUNDS)))
def test_accepted_texts_are_the_canonical_decimals_in_bounds(k: int) -> None:
    schema = {"type": "number", **BOUNDS[k]}
    tm = TextMachine(compile_spec(schema))
    validator = jsonschema.Draft202012Validator(schema)
    accepted = 0
    for t in SHORT:
        v = _canonical(t)
        want = v is not None and validator.is_valid(int(v) if v.denominator == 1 else float(t))
        got = tm.is_final(_run(tm, t))
        assert got == want, (schema, t)
        accepted += got
    assert accepted > 0 or k == 9


@pytest.mark.parametrize("k", range(len(BOUNDS)))
def test_a_prefix_stays_open_iff_some_extension_is_accepted(k: int) -> None:
    """No dead end: every prefix the machine keeps has an accepted extension (of at most three
    more characters, enough for these bounds), and every prefix it refuses has none."""
    schema = {"type": "number", **BOUNDS[k]}
    tm = TextMachine(compile_spec(schema))
    validator = jsonschema.Draft202012Validator(schema)

    def valid(t: str) -> bool:
        v = _canonical(t)
        return v is not None and validator.is_valid(int(v) if v.denominator == 1 else float(t))

    for p in _texts(3):
        c = _run(tm, p)
        if c:  # kept: the machine itself finds an accepted extension
            assert any(tm.is_final(_run(tm, p + e)) for e in EXTENSIONS), (schema, p)
        elif len(p) <= 2:  # refused: the oracle finds no valid extension either
            assert not any(valid(p + e) for e in EXTENSIONS), (schema, p)


@pytest.mark.parametrize("k", range(len(BOUNDS)))
def test_check_and_solve_agree_with_the_validator(k: int) -> None:
    schema = {"type": "object", "properties": {"x": {"type": "number", **BOUNDS[k]}}, "required": ["x"],
              "additionalProperties": False}
    cs = compile_spec(schema)
    validator = jsonschema.Draft202012Validator(schema)
    values: list[Any] = [-4, -3.25, -3.26, -2, -1, -0.5, 0, 0.25, 0.5, 0.6, 0.75, 1, 1.5, 2, 10, 10.5, 12, 99.5,
                         99.6, 119.99, 120, 10**30, -10**30, True, "1"]
    for x in values:
        assert (cs.check({"x": x}) == []) == validator.is_valid({"x": x}), (schema, x)
    rec = cs.solve()
    assert validator.is_valid({"x": float(rec["x"]) if isinstance(rec["x"], Fraction) else rec["x"]}), rec
    assert cs.check(rec) == []


def test_bounds_that_leave_no_value_are_refused() -> None:
    for b in ({"minimum": 2, "maximum": 1}, {"exclusiveMinimum": 1, "maximum": 1}):
        with pytest.raises(SpecError) as e:
            compile_spec({"type": "object", "properties": {"x": {"type": "number", **b}}, "required": ["x"]})
        assert e.value.pointer == "/properties/x" and "no value" in e.value.message
        # optional: the property is left out exactly (errors.EmptySchema), only {} fits
        cs = compile_spec({"type": "object", "properties": {"x": {"type": "number", **b}}})
        assert cs.check({}) == [] and cs.check({"x": 1}) != []


def test_a_relation_on_a_free_number_is_refused_naming_it() -> None:
    with pytest.raises(SpecError) as e:
        compile_spec({"type": "object", "properties": {"x": {"type": "number", "minimum": 0, "maximum": 1}},
                      "required": ["x"], "x-factorspec": {"relations": ["x < 1"]}})
    assert "number without multipleOf" in str(e.value)
