"""Recursive `$ref` (factorspec/graph/recursion.py): a layout graph and a depth-bounded text
machine that stays exact.

Brute force on small recursive schemas with a small depth limit: every byte prefix the machine
accepts (over all 256 bytes, up to a length) extends to a value the `jsonschema` validator accepts
within the depth limit, and every prefix of such a value is accepted; the complete texts are
exactly the valid values' texts. Random byte walks at the project's MAX_DEPTH, the depth limit
itself, schemas without a finite instance, and relations naming a field inside recursion."""
from __future__ import annotations

import itertools
import json
import random
from typing import Any

import jsonschema
import pytest

from factorspec.errors import EmptySchema, RelationError, SpecError
from factorspec.graph import compile_spec
from factorspec.graph.limits import MAX_DEPTH, depth_of
from factorspec.graph.textstate import TextMachine
from tests.graph.walks import byte_walks

_TREE = {"$defs": {"n": {"type": "object", "additionalProperties": False, "required": ["v"],
                         "properties": {"v": {"enum": [0, 1]},
                                        "k": {"type": "array", "maxItems": 2, "items": {"$ref": "#/$defs/n"}}}}},
         "$ref": "#/$defs/n"}
# (schema, depth limit, atoms and keys of the universe, longest prefix enumerated)
CASES: list[tuple[dict, int, list, list[str], int]] = [
    (_TREE, 3, [0, 1], ["v", "k"], 22),
    ({"anyOf": [{"type": "null"}, {"type": "boolean"}, {"type": "array", "maxItems": 2, "items": {"$ref": "#"}}]},
     3, [None, True, False], [], 14),
    ({"type": "object", "properties": {"next": {"$ref": "#"}}, "additionalProperties": False}, 4, [], ["next"], 40),
    # mutual recursion; an array that must hold an item
    ({"$defs": {"a": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"$ref": "#/$defs/b"}},
                "b": {"anyOf": [{"const": 0}, {"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"}, 3, [0], [], 16),
    # the smallest value is 2 deep: at the limit only null items
    ({"$defs": {"x": {"type": "array", "minItems": 1, "maxItems": 2,
                      "items": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/x"}]}}},
      "type": "object", "properties": {"c": {"$ref": "#/$defs/x"}}, "required": ["c"], "additionalProperties": False},
     3, [None], ["c"], 24),
    # property-count rules with a recursive member
    ({"type": "object", "properties": {"a": {"$ref": "#"}, "b": {"type": "null"}}, "minProperties": 1,
      "additionalProperties": False}, 3, [None], ["a", "b"], 22),
    ({"oneOf": [{"type": "null"}, {"type": "array", "maxItems": 2, "items": {"$ref": "#"}}]}, 3, [None], [], 14),
]
# free-text keys: too many prefixes to enumerate, walked only
WALKED = [s for s, *_ in CASES] + [
    {"$defs": {"o": {"type": "object", "maxProperties": 1, "additionalProperties": {"$ref": "#/$defs/o"}}},
     "$ref": "#/$defs/o"}]


def _text(v: Any) -> str:
    return json.dumps(v, separators=(", ", ": "))


def _universe(atoms: list, keys: list[str], depth: int, max_len: int) -> list[Any]:
    """Every value of nesting depth <= `depth` made of `atoms`, lists of at most 2 items and
    objects over `keys` (in that order), whose text has at most `max_len` characters."""
    vals: list[tuple[int, Any]] = [(len(_text(a)), a) for a in atoms]

    def rows(r: int, room: int) -> list[list[Any]]:
        """Tuples of r values whose texts take at most `room` characters together."""
        if r == 0:
            return [[]]
        out = []
        for n, v in vals:  # sorted by length: stop at the first that does not fit
            if n > room:
                break
            out += [[v] + t for t in rows(r - 1, room - n)]
        return out

    for _ in range(depth):
        vals.sort(key=lambda x: x[0])
        nxt = list(atoms) + [[], {}]
        for r in (1, 2):
            nxt += rows(r, max_len - 2 - 2 * (r - 1))
        for r in range(1, len(keys) + 1):
            for ks in itertools.combinations(keys, r):
                room = max_len - 2 - sum(len(k) + 4 for k in ks) - 2 * (r - 1)
                nxt += [dict(zip(ks, t)) for t in rows(r, room)]
        vals = [(len(_text(v)), v) for v in {_text(v): v for v in nxt}.values() if len(_text(v)) <= max_len]
    return [v for _, v in vals]


def _prefixes(tm: TextMachine, max_len: int) -> tuple[set[bytes], set[bytes]]:
    """Every byte string of at most `max_len` bytes the machine accepts as a prefix, and those that
    are complete records (every byte tried at every step)."""
    seen, finals = {b""}, set()
    level = [(b"", tm.initial())]
    while level:
        nxt = []
        for text, c in level:
            if tm.is_final(c):
                finals.add(text)
            if len(text) == max_len:
                continue
            for b in range(256):
                c2 = tm.step(c, b)
                if c2:
                    seen.add(text + bytes([b]))
                    nxt.append((text + bytes([b]), c2))
        level = nxt
    return seen, finals


def prefixes_and_valid_texts(schema: dict, limit: int, atoms: list, keys: list[str], n: int
                             ) -> tuple[set[bytes], set[bytes], set[bytes], set[bytes]]:
    """(prefixes the machine keeps, its final texts, valid texts of the universe, their prefixes),
    texts of at most `n` bytes, values nested at most `limit` deep."""
    tm = TextMachine(compile_spec(schema), max_depth=limit)
    validator = jsonschema.Draft202012Validator(schema)
    valid = {_text(v).encode() for v in _universe(atoms, keys, limit, n + 14)
             if depth_of(v) <= limit and validator.is_valid(v)}
    seen, finals = _prefixes(tm, n)
    want = {t[:i] for t in valid for i in range(min(len(t), n) + 1)}
    return seen, finals, valid, want


def byte_walks_at_max_depth(schema: dict, seed: int) -> int:
    """Finished byte walks at the default depth limit, every one valid and within it."""
    tm = TextMachine(compile_spec(schema))
    assert tm.max_depth == MAX_DEPTH
    validator = jsonschema.Draft202012Validator(schema)
    return byte_walks(tm, lambda v: validator.is_valid(v) and depth_of(v) <= MAX_DEPTH, random.Random(seed),
                      walks=20, steps=400, stop=0.2)


@pytest.mark.parametrize("k", range(len(CASES)))
def test_prefixes_are_exactly_those_of_valid_values(k: int) -> None:
    seen, finals, valid, want = prefixes_and_valid_texts(*CASES[k])
    n = CASES[k][4]
    assert seen == want, (sorted(seen - want)[:5], sorted(want - seen)[:5])
    assert finals == {t for t in valid if len(t) <= n}


@pytest.mark.parametrize("k", range(len(WALKED)))
def test_byte_walks_at_max_depth(k: int) -> None:
    assert byte_walks_at_max_depth(WALKED[k], k) >= 10


def _feed(tm: TextMachine, text: bytes) -> frozenset:
    c = tm.initial()
    for b in text:
        c = tm.step(c, b)
        assert c, text
    return c


def test_depth_limit_allows_only_non_recursive_completions() -> None:
    """A linked list nests exactly MAX_DEPTH objects at most: the deepest one may only close."""
    tm = TextMachine(compile_spec(CASES[2][0]))
    c = _feed(tm, b'{"next": ' * (MAX_DEPTH - 1) + b"{")
    assert [b for b in range(256) if tm.step(c, b)] == [ord("}")]
    c = tm.step(c, ord("}"))
    for _ in range(MAX_DEPTH - 1):
        c = tm.step(c, ord("}"))
        assert c
    assert tm.is_final(c)
    deep = json.loads(b'{"next": ' * (MAX_DEPTH - 1) + b"{}" + b"}" * (MAX_DEPTH - 1))
    assert depth_of(deep) == MAX_DEPTH
    # one level less: `"next"` is still allowed
    c = _feed(tm, b'{"next": ' * (MAX_DEPTH - 2) + b"{")
    assert tm.step(c, ord('"'))


def test_smallest_values_end_the_recursion() -> None:
    """`solve` and the witness build a smallest instance through the alternative that ends soonest."""
    for schema, *_ in CASES:
        cs = compile_spec(schema)
        rec = cs.solve()
        assert jsonschema.Draft202012Validator(schema).is_valid(rec), (schema, rec)
    value = {"$defs": {"v": {"anyOf": [{"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/v"}},
                                       {"$ref": "#/$defs/v"}, {"type": "null"}]}}, "$ref": "#/$defs/v"}
    assert compile_spec(value).solve() is None


@pytest.mark.parametrize("schema", [
    {"$defs": {"a": {"type": "object", "properties": {"x": {"$ref": "#/$defs/a"}}, "required": ["x"]}},
     "$ref": "#/$defs/a"},
    {"type": "array", "minItems": 1, "items": {"$ref": "#"}},
    {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
    {"$defs": {"a": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/b"}},
               "b": {"type": "object", "required": ["y"], "properties": {"y": {"$ref": "#/$defs/a"}}}},
     "$ref": "#/$defs/b"},
])
def test_no_finite_instance_admits_no_value(schema: dict) -> None:
    with pytest.raises(EmptySchema) as ei:
        compile_spec(schema)
    assert "recursive" in ei.value.message


def test_an_unproductive_alternative_or_field_is_never_entered() -> None:
    """Parts without a finite instance stay in the layout but are never started (no dead end)."""
    schema = {"$defs": {"bad": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/bad"}}},
              "type": "object", "additionalProperties": False,
              "properties": {"a": {"$ref": "#/$defs/bad"}, "b": {"anyOf": [{"$ref": "#/$defs/bad"}, {"const": 1}]}}}
    tm = TextMachine(compile_spec(schema))
    c = _feed(tm, b'{"')
    assert [chr(b) for b in range(256) if tm.step(c, b)] == ["b"]
    c = _feed(tm, b'{"b": ')
    assert [chr(b) for b in range(256) if tm.step(c, b)] == ["1"]


def _with_relation(rel: str) -> dict:
    node = {"type": "object", "additionalProperties": False, "required": ["v"],
            "properties": {"v": {"type": "integer", "minimum": 0, "maximum": 5},
                           "kids": {"type": "array", "maxItems": 2, "items": {"$ref": "#/$defs/n"}}}}
    return {"$defs": {"n": node}, "type": "object", "additionalProperties": False, "required": ["top", "w"],
            "properties": {"top": {"$ref": "#/$defs/n"}, "w": {"type": "integer", "minimum": 0, "maximum": 5}},
            "x-factorspec": {"relations": [{"name": "r", "expr": rel}]}}


@pytest.mark.parametrize("rel", ["top.kids[0].v == w", "all(k.v > 1 for k in top.kids)", "top.kids[*].v[0] == 1"])
def test_relation_inside_recursion_names_relation_and_pointer(rel: str) -> None:
    with pytest.raises(RelationError) as ei:
        compile_spec(_with_relation(rel))
    msg = str(ei.value)
    assert "'r'" in msg and "/$defs/n/properties/kids/items" in msg and "recursive" in msg


def test_relation_outside_recursion_is_enforced() -> None:
    """A relation on fields that are not inside the recursive part grounds as usual; the machine
    enforces it and the recursive part is free."""
    schema = _with_relation("top.v + w == 5")
    cs = compile_spec(schema)
    tm = TextMachine(cs)
    plain = {k: v for k, v in schema.items() if k != "x-factorspec"}
    validator = jsonschema.Draft202012Validator(plain)

    def ok(v: Any) -> bool:
        return validator.is_valid(v) and v["top"]["v"] + v["w"] == 5

    assert byte_walks(tm, ok, random.Random(7), walks=20, steps=300, stop=0.2) >= 10
    c = _feed(tm, b'{"top": {"v": 2, "kids": [{"v": 4}]}, "w": ')
    assert [chr(b) for b in range(256) if tm.step(c, b)] == ["3"]


def test_unique_items_inside_recursion_is_kept_in_the_text() -> None:
    """uniqueItems under a reference: kept by the text automaton (spec.unique_relations), walks valid."""
    schema = {"$defs": {"n": {"type": "object", "properties": {
        "tags": {"type": "array", "uniqueItems": True, "items": {"enum": [1, 2]}},
        "kids": {"type": "array", "items": {"$ref": "#/$defs/n"}}}}}, "$ref": "#/$defs/n"}
    tm = TextMachine(compile_spec(schema))
    validator = jsonschema.Draft202012Validator(schema)
    assert byte_walks(tm, validator.is_valid, random.Random(3), walks=20, steps=200, stop=0.2) >= 5
    c = _feed(tm, b'{"tags": [1, 2')
    assert [chr(b) for b in range(256) if tm.step(c, b)] == ["]"]
