"""Shared pieces of the worker tests: a small byte-level vocabulary and small specs."""
from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np

from factorspec.graph.token_vocab import unpack_mask
from benchmarks.natural_plan import generate, parse_instance, to_spec
from benchmarks.natural_plan.generate import instance_id
from factorspec.workers import BytesVocab

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

MERGES = [b'"', b'": ', b', ', b'{"', b'"}', b'day', b'city', b'": "', b'", "', b'}, {', b'[{', b'}]',
          b'_day', b'start', b'end', b'10', b'20', b'00', b'" ', b'an', b'er', b'in', b'on']
TOKENS = tuple([bytes([i]) for i in range(256)] + MERGES + [b""])
STOP = len(TOKENS) - 1
VOCAB_SIZE = 320  # padded past the tokens, like a model's logits
VOCAB = BytesVocab(TOKENS, (STOP,), VOCAB_SIZE, "bytes+merges")
QUOTE = 34


def plan_specs(count: int, seed: int = 0, sizes: tuple = (3, 4)) -> list[dict]:
    raws = {n: generate(n, seed, (count + len(sizes) - 1) // len(sizes)) for n in sizes}
    out = []
    for k in range(count):
        n = sizes[k % len(sizes)]
        j = k // len(sizes)
        out.append(to_spec(parse_instance(instance_id(n, seed, j), raws[n][j])))
    return out


def example_spec(name: str) -> dict:
    return json.loads((EXAMPLES / f"{name}.spec.json").read_text(encoding="utf-8"))


def certain_chain(draft: Any) -> list[int]:
    """The leading certain chain of a draft tree (what greedy masked decoding must emit)."""
    out = []
    for k, (t, p, c) in enumerate(zip(draft.tokens, draft.parents, draft.certain)):
        if p != k - 1 or not c:
            break
        out.append(t)
    return out


def pick(row: np.ndarray, rng: random.Random) -> int:
    """A random allowed token, steering toward the end (stop, then closing quotes)."""
    ids = [int(i) for i in unpack_mask(row, VOCAB_SIZE)]
    assert ids, "empty mask"
    if STOP in ids:
        return STOP
    if QUOTE in ids and rng.random() < 0.5:
        return QUOTE
    return rng.choice(ids)


def decode(tokens: list[int]) -> Any:
    return json.loads(b"".join(TOKENS[t] for t in tokens if t != STOP))
