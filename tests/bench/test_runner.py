"""The benchmark runner end to end on a real (small) model: FactorSpec configurations served by
CPU mask workers give exactly the tokens of in-process matchers, every record valid."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def problems():
    from benchmarks.commands import _default_data, _problems

    return _problems(_default_data(), 3)


@pytest.fixture(scope="module")
def contexts():
    from benchmarks.runner import load_context

    pooled = load_context("smollm2-135m", max_width=32, workers=1)
    local = load_context("smollm2-135m", max_width=32, workers=0)
    yield pooled, local
    pooled.close()


@pytest.mark.parametrize("config,batch", [("fs_mask", 2), ("fs_chain", 1), ("fs_full", 3)])
def test_pooled_runs_equal_in_process_runs(contexts, problems, config, batch):
    from benchmarks.runner import run_config, summarize

    pooled, local = contexts
    rows_p, wall_p = run_config(pooled, config, problems, batch, progress=False)
    rows_l, _ = run_config(local, config, problems, batch, progress=False)
    assert [r["token_ids"] for r in rows_p] == [r["token_ids"] for r in rows_l]
    assert all(r["valid"] for r in rows_p)
    s = summarize(config, rows_p, wall_p)
    assert s["valid_rate"] == 1.0
    assert 0 < s["decode_seconds_per_record"] <= s["seconds_per_record"]
    assert set(s["engine_seconds"]) == {"prefill", "drafts", "forward", "masks", "verify"}
    if config == "fs_full":
        assert s["tokens_per_verify_step"] > 20
