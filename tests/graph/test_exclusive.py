"""oneOf with overlapping alternatives made exact by relative negation (graph/exclusive.py):
a residual is equivalent to its schema on every value of the schema it is relative to (brute
force over a universe of small JSON values, `jsonschema` as the judge), and a compiled oneOf
accepts exactly the values `jsonschema` does (random overlapping object/number/string
alternatives), with byte walks that never dead-end."""
from __future__ import annotations

import itertools
import random
from typing import Any

import jsonschema
import pytest

from factorspec.errors import EmptySchema, SpecError
from factorspec.graph import compile_spec
from factorspec.graph.disjoint import Overlaps
from factorspec.graph.exclusive import MAX_EXCLUSIVE_ALTERNATIVES, Residuals, exclusive_terms
from factorspec.graph.schema import _VOCABULARY
from factorspec.graph.textstate import TextMachine
from tests.graph.walks import byte_walks

_LEAVES: list[Any] = [None, True, 0, 1, 2, 1.5, "", "a", "ab"]


def _universe() -> list[Any]:
    out: list[Any] = list(_LEAVES) + [[], [0], ["a", 1]]
    inner = [0, 1, "a", {"a": 0}, {"b": "a"}]
    for n in range(3):
        for ks in itertools.combinations(["a", "b", "c"], n):
            for vs in itertools.product(inner, repeat=n):
                out.append(dict(zip(ks, vs)))
    return out


UNIVERSE = _universe()
_KEYS = ["a", "b", "c"]


def _leaf(r: random.Random, depth: int) -> dict:
    """A small random schema over the universe's types."""
    pick = r.randrange(9 if depth < 2 else 7)
    if pick == 0:
        return {"type": r.choice(["integer", "number", "string", ["integer", "string"]])}
    if pick == 1:
        return {"type": "integer", r.choice(["minimum", "maximum"]): r.randrange(3)}
    if pick == 2:
        return {"enum": r.sample([0, 1, 2, "a", "ab", None], r.randrange(1, 4))}
    if pick == 3:
        return {"type": "string", r.choice(["minLength", "maxLength"]): r.randrange(3)}
    if pick == 4:
        return {"const": r.choice([0, 1, "a"])}
    if pick == 5:
        return {"type": "string", "pattern": r.choice(["^a", "b$", "^a+$"])}
    if pick == 6:
        return {}
    return _object(r, depth + 1)


def _object(r: random.Random, depth: int) -> dict:
    ks = r.sample(_KEYS, r.randrange(1, 4))
    s: dict[str, Any] = {"type": "object", "properties": {k: _leaf(r, depth) for k in ks}}
    if r.random() < 0.6:
        s["required"] = r.sample(ks, r.randrange(1, len(ks) + 1))
    if r.random() < 0.3:
        s["additionalProperties"] = False
    if r.random() < 0.2:
        s["properties"][ks[0]] = {"anyOf": [_leaf(r, depth + 1), _leaf(r, depth + 1)]}
    if "additionalProperties" not in s:  # every universe key declared: the layout's closing of
        for k in _KEYS:                  # open objects (docs/spec.md) never matters here
            s["properties"].setdefault(k, {})
    return s


def _one_of(r: random.Random) -> dict:
    """A oneOf whose alternatives often share property schemas (the corpus's shape)."""
    shared = _object(r, 0)
    alts: list[Any] = []
    for _ in range(r.randrange(2, 4)):
        kind = r.randrange(4)
        if kind == 0:
            alts.append(_leaf(r, 0))
        elif kind == 1:
            alts.append(_object(r, 0))
        else:  # a variation of one object: same properties, other required / one more key
            a = {**shared, "properties": dict(shared["properties"])}
            if r.random() < 0.5:
                a["required"] = r.sample(list(a["properties"]), r.randrange(1, len(a["properties"]) + 1))
            else:
                k = r.choice(_KEYS)
                a["properties"][k] = _leaf(r, 1)
            alts.append(a)
    s: dict[str, Any] = {"oneOf": alts}
    if r.random() < 0.3:
        s["type"] = r.choice(["object", ["object", "integer"]])
    return s


def _valid(schema: Any, v: Any) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(v)


@pytest.mark.parametrize("seed", range(300))
def test_a_residual_is_its_schema_on_every_value_of_the_given(seed: int) -> None:
    r = random.Random(seed)
    s = _one_of(r)
    given, b = s["oneOf"][0], s["oneOf"][1]
    if "type" in s:
        given = {"allOf": [given, {"type": s["type"]}]}
    ov = Overlaps(_VOCABULARY, lambda ref, ptr: (None, ptr), False)
    res = Residuals(ov).residual(given, b)
    vb = jsonschema.Draft202012Validator(b)
    vr = jsonschema.Draft202012Validator(res)
    for v in UNIVERSE:
        if _valid(given, v):
            assert vb.is_valid(v) == vr.is_valid(v), (given, b, res, v)


def _accepts(cs: Any, v: Any) -> bool:
    return cs.check(v) == []


def _flat(v: Any) -> bool:
    """No object inside: the layout closes objects written without additionalProperties (a
    documented narrowing, docs/spec.md), which negation introduces (a type complement's bare
    object); on flat values completeness is exact."""
    return not (isinstance(v, dict) and any(isinstance(x, (dict, list)) for x in v.values()))


def _declared_by_match(s: dict, v: Any) -> bool:
    """v is no object, or every alternative it matches declares all its keys (else the layout's
    closing of an object without properties, e.g. `{}`'s, may leave it out)."""
    if not isinstance(v, dict):
        return True
    return all(isinstance(a.get("properties"), dict) and set(v) <= set(a["properties"])
               for a in s["oneOf"] if _valid(a, v))


@pytest.mark.parametrize("chunk", range(6))
def test_random_overlapping_one_of_equals_the_validator(chunk: int) -> None:
    """Over 50 random schemas per chunk, the terms "alternative i and no other" (compiled as their
    anyOf): every universe value they accept is valid, and every valid flat value is accepted;
    the oneOf itself compiled never accepts an invalid value. Enough compile and overlap for the
    test to mean something."""
    compiled = overlapping = 0
    ov = Overlaps(_VOCABULARY, lambda ref, ptr: (None, ptr), False)
    for seed in range(chunk * 50, chunk * 50 + 50):
        s = _one_of(random.Random(seed))
        rest = {k: v for k, v in s.items() if k != "oneOf"}
        validator = jsonschema.Draft202012Validator(s)
        try:
            whole = compile_spec(s)
        except SpecError:
            whole = None
        terms = exclusive_terms(ov, s["oneOf"], rest, "")
        try:
            cs = compile_spec({**rest, "anyOf": terms}) if terms else None
        except EmptySchema:
            cs = None
        except SpecError:
            continue
        if cs is None:
            assert not any(validator.is_valid(v) for v in UNIVERSE if _flat(v)), s
            continue
        compiled += 1
        both = False
        for v in UNIVERSE:
            ok = validator.is_valid(v)
            if whole is not None and _accepts(whole, v):
                assert ok, (s, v)
            if _flat(v) and _declared_by_match(s, v):
                assert _accepts(cs, v) == ok, (s, terms, v, ok)
            elif _accepts(cs, v):
                assert ok, (s, terms, v)
            if not ok and sum(_valid(a, v) for a in s["oneOf"]) > 1:
                both = True
        overlapping += both
    assert compiled >= 25 and overlapping >= 5, (compiled, overlapping)


@pytest.mark.parametrize("seed", range(12))
def test_byte_walks_never_dead_end(seed: int) -> None:
    r = random.Random(1000 + seed)
    while True:
        s = _one_of(r)
        try:
            tm = TextMachine(compile_spec(s))
            break
        except SpecError:
            continue
    validator = jsonschema.Draft202012Validator(s)
    assert byte_walks(tm, validator.is_valid, random.Random(seed), prefer='{}",: 012abcnul') > 0


def test_shared_property_schemas_are_not_negated() -> None:
    """Two alternatives over one recursive definition, told apart only by what they require: the
    shared (recursive) property schema is implied, so only `required` is negated."""
    schema = {"$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"},
                                                                  "v": {"type": "integer"}}}},
              "oneOf": [{"$ref": "#/$defs/node", "required": ["v"]},
                        {"$ref": "#/$defs/node", "required": ["next"]}]}
    cs = compile_spec(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for v in [{"v": 1}, {"next": {}}, {"v": 1, "next": {}}, {}, {"next": {"v": 1, "next": {}}}]:
        assert _accepts(cs, v) == validator.is_valid(v), v


def test_number_and_integer_is_a_number_that_is_not_an_integer() -> None:
    """integer vs number: exactly one holds for the numbers that are not integers (the number
    layout's non_integer reading), and for nothing else."""
    schema = {"oneOf": [{"type": "integer"}, {"type": "number"}]}
    cs = compile_spec(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for v in [0, 1, -3, 2.5, -0.25, 10.75, "a", None, True]:
        assert _accepts(cs, v) == validator.is_valid(v), v


def test_one_of_beside_any_of_applies_both() -> None:
    i = {"type": "integer", "minimum": 0, "maximum": 2}
    schema = {"type": "object", "properties": {"a": i, "b": i},
              "anyOf": [{"required": ["a"]}, {"required": ["b"]}],
              "oneOf": [{"properties": {"a": {"const": 1}}}, {"properties": {"b": {"const": 1}}}]}
    cs = compile_spec(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for a, b in itertools.product([None, 0, 1], repeat=2):
        v = {k: x for k, x in (("a", a), ("b", b)) if x is not None}
        assert _accepts(cs, v) == validator.is_valid(v), v


def test_too_many_overlapping_alternatives_are_refused_by_name() -> None:
    n = MAX_EXCLUSIVE_ALTERNATIVES + 1
    schema = {"type": "integer", "minimum": 0, "maximum": 99, "oneOf": [{"minimum": i} for i in range(n)]}
    with pytest.raises(SpecError) as e:
        compile_spec(schema)
    assert f"a oneOf of {n} overlapping alternatives (at most {MAX_EXCLUSIVE_ALTERNATIVES}" in e.value.message


def test_closed_layouts_tell_open_alternatives_apart() -> None:
    """Alternatives without additionalProperties (closed layouts, docs/spec.md) that differ by
    the keys they declare and require: exact on the layouts' values (each value with declared
    keys that jsonschema accepts is accepted), and never an invalid value."""
    i = {"type": "integer", "minimum": 0, "maximum": 2}
    schema = {"type": "object", "oneOf": [
        {"properties": {"a": i, "b": i}, "required": ["a"]},
        {"properties": {"c": i, "b": i}, "required": ["c"]},
        {"properties": {"b": {"const": 1}}}]}
    cs = compile_spec(schema)
    validator = jsonschema.Draft202012Validator(schema)
    accepted = 0
    for ks in itertools.chain.from_iterable(itertools.combinations("abc", n) for n in range(4)):
        for vs in itertools.product([0, 1, "x"], repeat=len(ks)):
            v = dict(zip(ks, vs))
            ok = validator.is_valid(v)
            if _accepts(cs, v):
                assert ok, v
                accepted += 1
            elif ok:  # only a value no alternative's layout writes may be left out
                assert not any(_valid(a, v) and set(v) <= set(a["properties"]) for a in schema["oneOf"]), v
    assert accepted >= 5


def test_closed_layout_reading_never_empties_a_one_of_with_values() -> None:
    """Github_trivial/o41582's shape: read by their closed layouts, each alternative's values also
    match the other (open) one; read as written, `{"cat": 1}` matches only the first. The oneOf
    compiles (no false "admits no value") and accepts exactly the validator's values here."""
    s = {"type": "object", "oneOf": [{"properties": {"dog": {"type": "string"}}},
                                     {"properties": {"cat": {"type": "string"}}}]}
    cs = compile_spec(s)
    validator = jsonschema.Draft4Validator(s)
    leaves: list[Any] = ["x", 1, None]
    values: list[Any] = [{}] + [{k: v} for k in ("dog", "cat") for v in leaves]
    values += [{"dog": a, "cat": b} for a in leaves for b in leaves]
    assert sum(validator.is_valid(v) for v in values) >= 4
    for v in values:
        assert _accepts(cs, v) == validator.is_valid(v), v
    assert byte_walks(TextMachine(cs), validator.is_valid, random.Random(0), prefer='{}",: 1xdogcatnul') > 0
