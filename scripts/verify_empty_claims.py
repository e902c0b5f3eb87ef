"""Check FactorSpec's "admits no value" claims on corpus schemas against the `jsonschema` validator.

For each key: compile; where FactorSpec raises EmptySchema, take the schema node its pointer names
(the nearest schema object at or above it), and validate a covering universe against that node (with
the root's definitions beside it, so its local $refs resolve): every key subset of its declared and
required properties with representative values (objects), short strings over the pattern's
alphabet plus the node's examples/defaults (strings), nested objects (recursive schemas). A claim is
CONFIRMED when no instance is valid, REFUTED (a soundness bug) otherwise. The root claim is checked
the same way (root object over its required keys, each taking the valid values found for it).
usage: PYTHONPATH=. python scripts/verify_empty_claims.py KEY... (keys 'Subset/id')"""
from __future__ import annotations

import glob
import itertools
import json
import sys
from typing import Any

import jsonschema

from factorspec.errors import EmptySchema
from factorspec.graph import compile_spec

_REPS: list[Any] = [None, 0, 1, 2.5, "s", True, [], {}]


def _load(keys: set[str]) -> dict[str, Any]:
    out = {}
    for f in glob.glob("/work/shared/data/jsonschemabench/*.jsonl"):
        for line in open(f):
            r = json.loads(line)
            k = f"{r['subset']}/{r['id']}"
            if k in keys:
                out[k] = json.loads(r["schema"]) if isinstance(r["schema"], str) else r["schema"]
    return out


def _node(doc: Any, ptr: str) -> tuple[Any, str]:
    parts = [p.replace("~1", "/").replace("~0", "~") for p in ptr.split("/")[1:]]
    while True:
        x = doc
        try:
            for p in parts:
                x = x[int(p)] if isinstance(x, list) else x[p]
        except (KeyError, IndexError, ValueError, TypeError):
            x = None
        if isinstance(x, dict) and (not parts or parts[-1] not in ("properties", "definitions", "$defs")):
            return x, "/" + "/".join(parts)
        parts = parts[:-1]


def _examples(s: Any) -> list[Any]:
    out: list[Any] = []
    if isinstance(s, dict):
        for k in ("default", "example", "const"):
            if k in s:
                out.append(s[k])
        for k in ("examples", "enum"):
            if isinstance(s.get(k), list):
                out += s[k]
        for v in s.values():
            out += _examples(v)
    elif isinstance(s, list):
        for v in s:
            out += _examples(v)
    return out


def _universe(doc: dict, node: dict) -> list[Any]:
    ex = _examples(node)
    strings = [""] + ["".join(p) for n in (1, 2, 3, 4) for p in itertools.product("a1/-.", repeat=n)]
    keys = list(dict.fromkeys(list(node.get("properties", {})) + list(node.get("required", []))))
    if len(keys) > 6:  # the required keys and a few others
        keys = list(dict.fromkeys(list(node.get("required", [])) + keys))[:6]
    objs: list[Any] = []
    for n in range(len(keys) + 1):
        for ks in itertools.combinations(keys, n):
            reps = _REPS if n <= 3 else [None, 1, "s", {}]
            for vs in itertools.product(reps, repeat=n):
                objs.append(dict(zip(ks, vs)))
    nested: list[Any] = [{}]
    for _ in range(3):
        nested = nested + [{k: v for k in keys} for v in nested[-2:]]
    return _REPS + ex + strings + objs + nested


def check(key: str, doc: dict) -> str:
    try:
        compile_spec(doc)
        return f"{key}\tcompiles"
    except EmptySchema as e:
        err = e
    except Exception as e:  # a refusal other than emptiness: no claim to check
        return f"{key}\trefused ({type(e).__name__}): no emptiness claim"
    node, at = _node(doc, err.pointer)
    sub = {**{k: doc[k] for k in ("definitions", "$defs", "definations") if k in doc}, **node}
    v = jsonschema.validators.validator_for(doc, default=jsonschema.Draft7Validator)(sub)
    uni = _universe(doc, node)
    found = [x for x in uni if v.is_valid(x)]
    root = "" if "type" in doc else ("; root has no 'type': FactorSpec reads it as an object from its keywords "
                                     "(a noted narrowing), JSON Schema also admits non-objects there")
    if found and "type" not in node:
        typed = jsonschema.validators.validator_for(doc, default=jsonschema.Draft7Validator)({**sub, "type": "object"})
        if not [x for x in uni if typed.is_valid(x)]:
            return (f"{key}\tCONFIRMED as an object at {at} ({len(uni)} instances, none a valid object; "
                    f"{json.dumps(found[0])[:40]} is a valid non-object){root}: {err.message[:100]}")
    if found:
        return f"{key}\tREFUTED at {at}: {json.dumps(found[0])[:120]} is valid"
    return f"{key}\tCONFIRMED at {at} ({len(uni)} instances, none valid){root}: {err.message[:100]}"


if __name__ == "__main__":
    keys = sys.argv[1:]
    docs = _load(set(keys))
    for k in keys:
        print(check(k, docs[k]), flush=True)
