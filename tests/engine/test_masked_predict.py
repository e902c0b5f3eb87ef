"""Engine._masked_predict: rows forced by their mask skip the output projection, with exactly
the result of projecting every row (one-hot rows at bit 31 and in the last partial word, empty
rows, unconstrained rows, all rows forced, none forced)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from engine_doubles import tiny_llama
from factorspec.engine import Engine
from host_reference import masked_argmax_reference

V = 300  # not a multiple of 32: the last word is partial


@pytest.fixture(scope="module")
def engine():
    return Engine(tiny_llama(V), stop_token_ids=[2])


def _onehot(words: int, tok: int) -> np.ndarray:
    row = np.zeros(words, dtype=np.uint32)
    row[tok // 32] = np.uint32(1) << np.uint32(tok % 32)
    return row.view(np.int32)


@pytest.mark.parametrize("kinds", [
    "o", "r", "e", "u", "oooo", "rrr", "orueo", "ooooooooor", "uuuu", "eoe",
])
def test_masked_predict_equals_full_projection(engine, kinds):
    rng = np.random.default_rng(len(kinds) * 7 + kinds.count("o"))
    words = engine.words
    T = len(kinds)
    h = torch.randn(T, engine.model.config.hidden_size)
    bitmask = np.full((T, words), -1, dtype=np.int32)
    constrained = []
    for i, k in enumerate(kinds):
        if k == "u":
            continue  # unconstrained row
        constrained.append(i)
        if k == "o":
            tok = int(rng.choice([31, 63, 299, 0, int(rng.integers(0, V))]))
            bitmask[i] = _onehot(words, tok)
        elif k == "e":
            bitmask[i] = 0
        else:
            bits = rng.random(words * 32) < 0.3
            bits[V:] = False
            bitmask[i] = np.packbits(bits.reshape(-1, 32)[:, ::-1], axis=1, bitorder="big").view(">u4").astype(
                np.uint32).view(np.int32).reshape(-1)
    pred, dead = engine._masked_predict(h, bitmask, constrained)
    logits = engine._logits(h)
    con = torch.tensor(constrained, dtype=torch.long)
    want = masked_argmax_reference(logits, torch.from_numpy(bitmask[constrained]), con if constrained else None) \
        if constrained else logits.argmax(-1)
    want_dead = torch.isneginf(logits.gather(1, want.view(-1, 1)).view(-1))
    for i, k in enumerate(kinds):
        assert bool(dead[i]) == bool(want_dead[i]) == (k == "e")
        if k != "e":
            assert int(pred[i]) == int(want[i]), (i, k)
