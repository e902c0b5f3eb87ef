"""Large non-recursive `$ref` targets compiled once and shared (schema.py `_referenced`,
`share_targets`): the same language as compiling every use afresh.

With the size threshold lowered to one node every target met twice is shared, and random byte
walks compare the two machines step by step: the same allowed bytes after every prefix, the same
final states, and every finished text valid by `jsonschema`. Then what turns sharing off
(relations in the spec, a layout the recursion check would refuse) and the default threshold."""
from __future__ import annotations

import json
import random
from typing import Any

import jsonschema
import pytest

from factorspec.graph import compile_spec, schema
from factorspec.graph.schema import SchemaCompiler
from factorspec.graph.textstate import TextMachine

_ADDRESS = {"type": "object", "additionalProperties": False, "required": ["kind"],
            "properties": {"kind": {"enum": ["home", "work"]}, "zip": {"type": "string", "pattern": "^[0-9]{2}$"},
                           "floor": {"type": "integer", "minimum": -1, "maximum": 12}}}
SCHEMAS: list[dict] = [
    # one definition used in three places, one of them inside an array
    {"$defs": {"a": _ADDRESS}, "type": "object", "additionalProperties": False, "required": ["home"],
     "properties": {"home": {"$ref": "#/$defs/a"}, "work": {"$ref": "#/$defs/a"},
                    "more": {"type": "array", "maxItems": 2, "items": {"$ref": "#/$defs/a"}}}},
    # uniqueItems over a finite domain: all_different where reached by properties, the text
    # automaton's distinctness through a reference node
    {"$defs": {"t": {"type": "array", "uniqueItems": True, "maxItems": 3, "items": {"enum": ["a", "b", 7]}}},
     "type": "object", "additionalProperties": False, "required": ["x", "y"],
     "properties": {"x": {"$ref": "#/$defs/t"}, "y": {"$ref": "#/$defs/t"}}},
    # a shared target under oneOf with siblings (its own reference key) and plain
    {"$defs": {"p": {"type": "object", "additionalProperties": False,
                     "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 3}, "b": {"type": "boolean"}}}},
     "type": "object", "additionalProperties": False,
     "properties": {"u": {"oneOf": [{"$ref": "#/$defs/p", "required": ["a"]}, {"type": "null"}]},
                    "v": {"$ref": "#/$defs/p"},
                    "w": {"anyOf": [{"$ref": "#/$defs/p"}, {"type": "string", "maxLength": 2}]}}},
    # real recursion beside a shared non-recursive target
    {"$defs": {"leaf": {"type": "object", "additionalProperties": False, "required": ["n"],
                        "properties": {"n": {"enum": [0, 1, None]}, "s": {"type": "string", "maxLength": 3}}},
               "tree": {"type": "object", "additionalProperties": False, "required": ["leaf"],
                        "properties": {"leaf": {"$ref": "#/$defs/leaf"},
                                       "kids": {"type": "array", "maxItems": 2, "items": {"$ref": "#/$defs/tree"}}}}},
     "type": "object", "additionalProperties": False,
     "properties": {"first": {"$ref": "#/$defs/leaf"}, "t": {"$ref": "#/$defs/tree"}}},
    # patternProperties whose values nest to different depths inside a shared target: the recursion
    # check refuses that under a reference node, so the compile falls back to copies
    {"$defs": {"m": {"type": "object", "maxProperties": 2,
                     "patternProperties": {"^a": {"type": "array", "maxItems": 1, "items": {"type": "null"}},
                                           "^b": {"type": "boolean"}}, "additionalProperties": False}},
     "type": "object", "additionalProperties": False,
     "properties": {"m1": {"$ref": "#/$defs/m"}, "m2": {"$ref": "#/$defs/m"}}},
]


def _machines(doc: dict, monkeypatch: pytest.MonkeyPatch) -> tuple[TextMachine, TextMachine]:
    monkeypatch.setattr(schema, "SHARE_MIN_NODES", 1)
    shared = TextMachine(compile_spec(doc))
    monkeypatch.setattr(schema, "SHARE_MIN_NODES", 10**9)
    plain = TextMachine(compile_spec(doc))
    return shared, plain


def _allowed(tm: TextMachine, c: Any) -> list[int]:
    return [b for b in range(256) if tm.step(c, b)]


@pytest.mark.parametrize("k", range(len(SCHEMAS)))
def test_shared_targets_same_language(k: int, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = SCHEMAS[k]
    shared, plain = _machines(doc, monkeypatch)
    validator = jsonschema.Draft202012Validator(doc)
    rng = random.Random(k)
    finished = 0
    for _ in range(40):
        cs, cp, text = shared.initial(), plain.initial(), bytearray()
        for _ in range(90):
            allowed = _allowed(shared, cs)
            assert allowed == _allowed(plain, cp), bytes(text)
            assert shared.is_final(cs) == plain.is_final(cp), bytes(text)
            if shared.is_final(cs) and (not allowed or rng.random() < 0.3):
                assert validator.is_valid(json.loads(text.decode())), bytes(text)
                finished += 1
                break
            assert allowed, f"dead end after {bytes(text)!r}"
            pref = [b for b in allowed if chr(b) in '{}[]",: 0123abtnfkhomewr']
            b = rng.choice(pref if pref and rng.random() < 0.9 else allowed)
            cs, cp = shared.step(cs, b), plain.step(cp, b)
            text.append(b)
    assert finished > 5


def test_threshold_one_shares_every_target_met_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(schema, "SHARE_MIN_NODES", 1)
    c = SchemaCompiler(SCHEMAS[0])
    c.compile()
    assert c.acyclic_links == 2  # "work" and the array's items link to the compile of "home"


def test_uneven_pattern_properties_fall_back_to_copies(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(schema, "SHARE_MIN_NODES", 1)
    c = SchemaCompiler(SCHEMAS[4])
    with pytest.raises(schema._SharingRefused):
        c.compile()
    node, _ = schema.compile_schema_report(SCHEMAS[4])  # the retry without sharing
    assert not any(n.kind == "ref" for n in _scalars(node))


def test_relations_turn_sharing_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """A relation naming a field inside a target used twice grounds (no reference node between)."""
    monkeypatch.setattr(schema, "SHARE_MIN_NODES", 1)
    doc = {**SCHEMAS[0], "x-factorspec": {"relations": ["work.floor > home.floor"]}}
    cs = compile_spec(doc)
    assert cs.check({"home": {"kind": "home", "floor": 2}, "work": {"kind": "work", "floor": 1}}) != []
    assert cs.check({"home": {"kind": "home", "floor": 1}, "work": {"kind": "work", "floor": 2}}) == []


def test_default_threshold_shares_large_targets_only() -> None:
    big = {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(schema.SHARE_MIN_NODES)}}
    doc = {"$defs": {"big": big, "small": _ADDRESS}, "type": "object",
           "properties": {"b1": {"$ref": "#/$defs/big"}, "b2": {"$ref": "#/$defs/big"},
                          "s1": {"$ref": "#/$defs/small"}, "s2": {"$ref": "#/$defs/small"}}}
    c = SchemaCompiler(doc)
    c.compile()
    assert c.acyclic_links == 1
    assert SchemaCompiler(doc, share_targets=False).compile() is not None


def _scalars(root: Any) -> list[Any]:
    from factorspec.graph.recursion import _nodes
    return [n for n in _nodes(root) if isinstance(n, schema.Scalar)]
