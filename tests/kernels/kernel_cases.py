"""Shared generators of awkward inputs for the kernel tests (trees, drafts, bitmasks)."""
from __future__ import annotations

import random
from typing import List

import torch


def chain(width: int) -> List[int]:
    """Root plus a certain run of ``width`` drafts."""
    return [-1] + list(range(width))


def star(width: int) -> List[int]:
    """Root with ``width`` children (widest tree of that width)."""
    return [-1] + [0] * width


def random_tree(width: int, rng: random.Random) -> List[int]:
    return [-1] + [rng.randrange(i) for i in range(1, width + 1)]


def mixed_trees(rng: random.Random, bs: int, max_width: int = 16) -> List[List[int]]:
    """Per-request parents: chains, stars, random trees, width 0, and the odd 0-node request."""
    out = []
    for b in range(bs):
        kind = rng.choice(["chain", "star", "random", "random", "zero"])
        w = rng.randint(0, max_width)
        out.append({"chain": chain(w), "star": star(w), "random": random_tree(w, rng), "zero": chain(0)}[kind])
    return out


SHAPES = {
    # name: list of per-request parents
    "batch1_width0": [chain(0)],
    "batch1_width1": [chain(1)],
    "batch1_chain64": [chain(64)],
    "batch1_star64": [star(64)],
    "odd_mixed": [chain(3), star(5), chain(0), random_tree(16, random.Random(3)), chain(1), [], random_tree(9, random.Random(4))],
    "deep_and_wide": [chain(64), star(64), random_tree(64, random.Random(5))],
    "uniform16_bs5": [random_tree(15, random.Random(10 + i)) for i in range(5)],
}


def brute_ancestors(parents: List[int]) -> List[List[bool]]:
    """Independent oracle: row i marks i and all its ancestors (walk up one node at a time)."""
    n = len(parents)
    rows = []
    for i in range(n):
        row = [False] * n
        j = i
        while j >= 0:
            row[j] = True
            j = parents[j]
        rows.append(row)
    return rows


def random_bitmask(rows: int, vocab: int, extra_words: int, gen: torch.Generator) -> torch.Tensor:
    words = (vocab + 31) // 32 + extra_words
    return torch.randint(-(2**31), 2**31 - 1, (rows, words), dtype=torch.int32, generator=gen)
