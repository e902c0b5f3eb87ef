"""End to end through vLLM's engine on CPU (SmolLM2-135M, 2 NATURAL PLAN instances):
every record valid; FactorSpec drafts change nothing in the output (identical to FactorSpec
masks without drafts) while taking far fewer forwards; vLLM's ngram proposer with xgrammar
(syntax only) runs in the same test for comparison. The drafted run takes its mask rows from
two mask worker processes (FACTORSPEC_VLLM_MASK_WORKERS=2, with the in-process rows computed
alongside and compared row for row); the plain FactorSpec run fills them in-process, so the
identity check also compares the two paths. Needs vLLM (skips otherwise); about 2-4 minutes on
2 CPU cores (three engine starts of ~15-25 s each)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from vllm_helpers import MODEL, cpu_env, model_dir, require_vllm, trip_instances

require_vllm()

N = 2


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    model_dir()  # skips when the embedded model is not installed
    trip_instances(N)  # skips without the shared data
    out = {}
    tmp = tmp_path_factory.mktemp("vllm_e2e")
    for name in ("factorspec", "factorspec_draft", "xgrammar_ngram", "factorspec_draft_sampled"):
        cfg = name.replace("_sampled", "")
        path = tmp / f"{name}.json"
        cmd = [sys.executable, "-m", "benchmarks.vllm_e2e", "run", "--config", cfg,
               "--model", MODEL, "--n", str(N), "--k", "32", "--max-tokens", "400", "--out", str(path)]
        if name.endswith("_sampled"):  # temperature > 0: vLLM's rejection sampler verifies the drafts
            cmd += ["--temperature", "0.7", "--seed", "0"]
        env = cpu_env()
        env["FACTORSPEC_VLLM_MASK_WORKERS"] = "2" if cfg == "factorspec_draft" else "0"
        env["FACTORSPEC_VLLM_MASK_WORKERS_CHECK"] = "1" if cfg == "factorspec_draft" else "0"
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        assert p.returncode == 0 and path.is_file(), f"{name} failed:\n{p.stdout[-3000:]}\n{p.stderr[-6000:]}"
        out[name] = json.loads(path.read_text())
    return out


def test_every_factorspec_record_is_valid(runs):
    for cfg in ("factorspec", "factorspec_draft"):
        recs = runs[cfg]["records"]
        assert len(recs) == N
        for r in recs:
            assert r["valid"], (cfg, r.get("why"), r.get("text"))
            assert r["finish_reason"] == "stop"


def test_drafts_do_not_change_the_output(runs):
    plain, drafted = runs["factorspec"]["records"], runs["factorspec_draft"]["records"]
    for a, b in zip(plain, drafted):
        assert a["token_ids"] == b["token_ids"]
        assert a["text"] == b["text"]
    assert runs["factorspec"]["spec_decode"].get("spec_decode_num_drafts", 0) == 0


def test_factorspec_drafts_beat_ngram_per_verify_step(runs):
    fs, ng = runs["factorspec_draft"], runs["xgrammar_ngram"]
    s_fs, s_ng = fs["summary"], ng["summary"]
    print("tokens per forward: factorspec", s_fs["tokens_per_step"], "ngram+xgrammar", s_ng["tokens_per_step"])
    # certain drafts are exact: every drafted token is accepted
    sd = fs["spec_decode"]
    assert sd["spec_decode_num_draft_tokens"] > 0
    assert sd["spec_decode_num_accepted_tokens"] == sd["spec_decode_num_draft_tokens"]
    assert s_fs["tokens_per_step"] > 10
    assert s_fs["tokens_per_step"] > 2 * s_ng["tokens_per_step"]
    # the masks of all speculative positions came from the mask workers (next test)
    assert fs["mask_fill"]["worker_rows"] >= s_fs["forwards"]


def test_mask_workers_fill_the_rows_exactly(runs):
    fs, plain = runs["factorspec_draft"], runs["factorspec"]
    mf, w = fs["mask_fill"], fs["mask_workers"]
    # every FactorSpec row of the drafted run came from the workers, none from the engine process
    assert w["workers"] == 2 and len(w["worker_pids"]) == 2 and w["engine_pid"] not in w["worker_pids"]
    assert w["worker_errors"] == [] and w["worker_restarts"] == 0
    assert mf["worker_rows"] > 0 and mf["fill_rows"] == 0
    # one pool step (one message per worker) per engine step, whatever the number of draft positions
    assert mf["worker_pool_steps"] == mf["worker_calls"] > 0
    # the JSON records the setting each run used
    assert w["setting"] == "2" and plain["mask_workers"]["setting"] == "0"
    # ... and equal the in-process batched call's rows (computed alongside, FACTORSPEC_VLLM_MASK_WORKERS_CHECK)
    assert mf["worker_check_rows"] == mf["worker_rows"] and mf["worker_check_mismatches"] == 0
    # the run without workers filled its rows in-process
    assert plain["mask_workers"]["workers"] == 0 and plain["mask_fill"]["fill_rows"] > 0
    assert plain["mask_fill"].get("worker_rows", 0) == 0


def test_sampled_factorspec_drafts_give_valid_records(runs):
    """temperature 0.7 through vLLM with FactorSpec's proposer: every record valid, drafts
    proposed and verified by vLLM's rejection sampler, and every certain draft token accepted
    (its masked distribution is one-hot: probability 1 under any temperature). Before the CPU
    fix of `expand_batch_to_tokens` (patches.py, hook 5) about a third were."""
    run = runs["factorspec_draft_sampled"]
    assert run["temperature"] == 0.7
    for r in run["records"]:
        assert r["valid"], (r.get("why"), r.get("text"))
        assert r["finish_reason"] == "stop"
    sd = run["spec_decode"]
    print("sampled: tokens per forward", run["summary"]["tokens_per_step"], "drafts", sd)
    assert sd["spec_decode_num_draft_tokens"] > 0
    # FactorSpec drafts only certain tokens, so each is accepted, bar the tokens drafted past the
    # stop token of a record's last step
    stops = len(run["records"]) * 32
    assert sd["spec_decode_num_accepted_tokens"] >= sd["spec_decode_num_draft_tokens"] - stops, sd
    greedy = runs["factorspec_draft"]["summary"]["tokens_per_step"]
    assert run["summary"]["tokens_per_step"] >= 0.8 * greedy, (run["summary"], greedy)
