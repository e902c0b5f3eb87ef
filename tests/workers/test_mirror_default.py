"""The mirror's default (issue #14): on where the host has a core for every worker, the spares
and the caller (a dead worker's requests are then served from their shadows), off where it would
compete with the workers for cores (it doubles the fault-free work of accepting tokens)."""
from __future__ import annotations

import os

import pytest
from worker_helpers import VOCAB

from factorspec.workers import MaskWorkerPool
from factorspec.workers import pool as pool_mod


@pytest.mark.parametrize("cores,workers,spares,want", [
    (16, 4, 1, True), (6, 4, 1, True), (5, 4, 1, False), (2, 2, 1, False), (2, 1, 0, False), (64, 1, 0, False),
])
def test_mirror_fits_counts_a_core_for_each_process(monkeypatch: pytest.MonkeyPatch, cores: int, workers: int,
                                                     spares: int, want: bool) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)))
    assert pool_mod.mirror_fits(workers, spares) is want


@pytest.mark.parametrize("cores", [1, 8])
def test_pool_default_mirror_follows_the_cores(monkeypatch: pytest.MonkeyPatch, cores: int) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)))
    with MaskWorkerPool(1, VOCAB, max_rows=2, spares=1) as pool:
        assert pool.mirror is (cores == 8)
    with MaskWorkerPool(1, VOCAB, max_rows=2, spares=1, mirror=False) as pool:
        assert pool.mirror is False


def test_bad_mirror_value_raises() -> None:
    with pytest.raises(ValueError, match="mirror"):
        MaskWorkerPool(1, VOCAB, max_rows=2, mirror="yes")
