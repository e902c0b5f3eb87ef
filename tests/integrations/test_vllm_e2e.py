"""End to end through vLLM's engine on CPU (SmolLM2-135M, 2 NATURAL PLAN instances):
every record valid; FactorSpec drafts change nothing in the output (identical to FactorSpec
masks without drafts) while taking far fewer forwards; vLLM's ngram proposer with xgrammar
(syntax only) runs in the same test for comparison. Needs vLLM (skips otherwise); about
2-3 minutes on 2 CPU cores (three engine starts of ~15-25 s each)."""
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
    for cfg in ("factorspec", "factorspec_draft", "xgrammar_ngram"):
        path = tmp / f"{cfg}.json"
        cmd = [sys.executable, "-m", "factorspec.integrations.vllm.bench", "run", "--config", cfg,
               "--model", MODEL, "--n", str(N), "--k", "32", "--max-tokens", "400", "--out", str(path)]
        p = subprocess.run(cmd, env=cpu_env(), capture_output=True, text=True, timeout=600)
        assert p.returncode == 0 and path.is_file(), f"{cfg} failed:\n{p.stdout[-3000:]}\n{p.stderr[-6000:]}"
        out[cfg] = json.loads(path.read_text())
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
    # the masks of all speculative positions came from the batched FactorSpec call
    assert fs["mask_fill"]["fill_rows"] >= s_fs["forwards"]
