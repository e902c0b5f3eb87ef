"""FactorSpec certain drafts as a vLLM speculative proposer (speculative_config method
"custom_class", model "factorspec.integrations.vllm.proposer.FactorSpecProposer").

For each running request whose JSON schema carries ``x-factorspec`` the proposer keeps its own
`Matcher` (fed with the request's output tokens as they are committed) and proposes the tokens
that the spec makes the only choice from the current position: `factorspec.draft.certain_run`. Each
request gets its own draft count (0..num_speculative_tokens): the length of its certain run.
Requests without a FactorSpec schema get no draft.

vLLM constructs the proposer with the VllmConfig alone and calls
``propose(sampled_token_ids, num_tokens_no_spec, token_ids_cpu, slot_mappings=...)`` with
per-batch-row arrays but no request ids; the plugin's model-runner hook
(`patches.patch_model_runner`) binds the runner so that rows can be mapped to requests.
"""
from __future__ import annotations

import time
from typing import Any, Optional

from factorspec.draft import certain_run
from factorspec.integrations.vllm.backend import (compile_checked, is_factorspec_schema, schema_of, shared_vocab,
                                                     with_stops)

STATS: dict[str, float] = {"propose_calls": 0, "propose_s": 0.0, "drafted_tokens": 0, "draft_requests": 0}


class _Track:
    __slots__ = ("matcher", "fed", "dead", "key")

    def __init__(self, matcher: Any, key: Any) -> None:
        self.matcher, self.fed, self.dead, self.key = matcher, 0, False, key


class FactorSpecProposer:
    def __init__(self, vllm_config: Any) -> None:
        self.vllm_config = vllm_config
        sc = vllm_config.speculative_config
        self.k = int(sc.num_speculative_tokens)
        self.max_model_len = int(vllm_config.model_config.max_model_len)
        self._runner: Any = None
        self._tracks: dict[str, _Track] = {}
        self._vocab: Any = None

    # hooks -----------------------------------------------------------------------------------
    def bind_runner(self, runner: Any) -> None:
        self._runner = runner

    def load_model(self, *args: Any, **kwargs: Any) -> None:
        """No model; build the vocabulary now rather than on the first request."""
        self.vocab()

    def vocab(self) -> Any:
        if self._vocab is None:
            from vllm.tokenizers import cached_tokenizer_from_config

            mc = self.vllm_config.model_config
            tok = cached_tokenizer_from_config(model_config=mc)
            self._vocab = shared_vocab(tok, mc.get_vocab_size(), getattr(mc, "tokenizer", None))
        return self._vocab

    # vLLM calls this ---------------------------------------------------------------------------
    def propose(self, sampled_token_ids: list, num_tokens_no_spec: Any, token_ids_cpu: Any,
                slot_mappings: Any = None, **_: Any) -> list[list[int]]:
        t0 = time.perf_counter()
        runner = self._runner
        n = len(sampled_token_ids)
        out: list[list[int]] = [[] for _ in range(n)]
        if runner is None:
            return out
        req_ids = list(runner.input_batch.req_ids)
        live = set(runner.requests)
        for i in range(min(n, len(req_ids))):
            if not sampled_token_ids[i]:
                continue
            rid = req_ids[i]
            state = runner.requests.get(rid)
            if state is None:
                continue
            tr = self._track(rid, state)
            if tr is None or tr.dead:
                continue
            total = int(num_tokens_no_spec[i])
            if total >= self.max_model_len:
                continue
            start = state.num_prompt_tokens + tr.fed
            m = tr.matcher
            if total > start:
                for t in token_ids_cpu[i, start:total].tolist():
                    if not m.accept_token(int(t)):
                        tr.dead = True  # the grammar backend masks this request; stop drafting
                        break
                    tr.fed += 1
                if tr.dead:
                    continue
            elif total < start:  # preempted and recomputed shorter: rebuild
                self._tracks.pop(rid, None)
                continue
            if m.is_terminated():
                continue
            budget = min(self.k, self.max_model_len - total - 1)
            if budget > 0:
                out[i] = certain_run(m, budget)
                if out[i]:
                    STATS["drafted_tokens"] += len(out[i])
                    STATS["draft_requests"] += 1
        for rid in [r for r in self._tracks if r not in live]:
            del self._tracks[rid]
        STATS["propose_calls"] += 1
        STATS["propose_s"] += time.perf_counter() - t0
        return out

    def _track(self, rid: str, state: Any) -> Optional[_Track]:
        sp = state.sampling_params
        so = getattr(sp, "structured_outputs", None) if sp is not None else None
        js = getattr(so, "json", None) if so is not None else None
        key = id(sp)
        tr = self._tracks.get(rid)
        if tr is not None and tr.key == key:
            return tr
        if js is None or not is_factorspec_schema(js):
            self._tracks[rid] = tr = _Track(None, key)
            tr.dead = True
            return tr
        from factorspec.graph.matcher import Matcher

        try:
            stops = getattr(sp, "all_stop_token_ids", None)
            m = Matcher.for_spec(compile_checked(schema_of(js)), with_stops(self.vocab(), stops))
        except Exception:  # noqa: BLE001 - the frontend rejects bad specs; never fail the step
            m = None
        tr = _Track(m, key)
        tr.dead = m is None
        self._tracks[rid] = tr
        return tr
