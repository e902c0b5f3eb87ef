"""An NGRAM worker whose drafts come from FactorSpec for FactorSpec-constrained requests.

SGLang 0.5.23 builds NGRAM verify steps in ``NGRAMWorker._prepare_for_speculative_decoding``:
``_prepare_draft_tokens(batch) -> (req_drafts [bs*N], mask [bs*N*N])``, then positions and
``retrive_*`` from the mask, the target verify forward, the grammar mask over the tree (host
work, after the forward is launched) and greedy tree verification. This subclass overrides only
``_prepare_draft_tokens``: the corpus still drafts (and learns) for every request, and the rows of
requests whose grammar is a :class:`~factorspec.integrations.sglang.grammar.SGLangFactorSpecGrammar` are
replaced by FactorSpec's drafts (:class:`~factorspec.integrations.sglang.drafter.FactorSpecDrafter`).
The next step's drafts are then prefetched on a background thread, which runs while the target
forward of this step runs.

SGLang runs NGRAM + grammar batches synchronously (``grammar_needs_sync``: the previous step's
accepted tokens are in ``req.output_ids`` and in the grammar before drafting), which is what lets
drafts be read off the grammar state; there is nothing to splice from the overlap future map.

Per-request verify widths (``FACTORSPEC_SGLANG_RAGGED=1``): FactorSpec rows are built ragged
(:meth:`FactorSpecDrafter.build` with ``ragged=True``: ``1 + w_b`` real nodes, each request's width
its own, from :class:`factorspec.draft.CertainWidth`), other rows keep the corpus's ``N``. The
worker's ``target_worker`` is then a proxy whose verify forward packs the batch to the real nodes
(input ids, positions and KV slots at ``b * N + j``, ``j < qo_lens[b]``: ``sum_b qo_lens[b]``
tokens, as vLLM's ``cu_num_draft_tokens``), runs the model once over that packed batch with the
ragged tree-verify attention (:mod:`factorspec.integrations.sglang.cpu`, which reads
``spec_info.factorspec_qo_lens``), and scatters the logits back to NGRAM's ``[bs * N]`` rows.
SGLang's greedy verify, grammar mask, KV move and result processing are untouched: the unforwarded
slots are unreachable in the tree (their mask rows have no ancestor), so their zero logits and
unwritten KV slots are never read. Ragged needs that attention backend (``torch_native`` on CPU);
with any other it stays fixed-width (logged). ``FACTORSPEC_SGLANG_STATS=<file>`` appends one JSON
line per verify forward (batch size, N, widths, tokens the model actually ran).

Selected by :func:`install_drafter` (the launcher calls it in every SGLang process), which makes
``SpeculativeAlgorithm.NGRAM.create_worker`` return this class.
"""
from __future__ import annotations

import json
import logging
import os
import time
from typing import Any, Optional

import numpy as np
import torch
from sglang.srt.speculative import ngram_worker as _ngram_worker_module
from sglang.srt.speculative.ngram_worker import NGRAMWorker

from factorspec.integrations.sglang.drafter import FactorSpecDrafter
from factorspec.integrations.sglang.grammar import SGLangFactorSpecGrammar

logger = logging.getLogger(__name__)

_ORIGINAL_NGRAM_WORKER = NGRAMWorker


def overwrite_with_factorspec(drafter: FactorSpecDrafter, reqs: list[Any], req_drafts: np.ndarray,
                              mask: np.ndarray, prefetch: bool = True, ragged: bool = False,
                              qo_lens: Optional[list[int]] = None) -> tuple[np.ndarray, np.ndarray, Any]:
    """Replace the NGRAM rows of FactorSpec-constrained requests by FactorSpec drafts.

    ``req_drafts[b * N]`` (the corpus's root: the request's last token) is kept as the root.
    Returns ``(req_drafts, mask, NgramDrafts or None)``; the arrays are modified in place, and so
    is ``qo_lens`` (per request the nodes to verify, ``N`` for corpus rows) when given."""
    N = drafter.N
    rows = [i for i, r in enumerate(reqs) if isinstance(getattr(r, "grammar", None), SGLangFactorSpecGrammar)
            and not r.grammar.is_terminated()]
    if not rows:
        return req_drafts, mask, None
    grammars = [reqs[i].grammar for i in rows]
    roots = [int(req_drafts[i * N]) for i in rows]
    d = drafter.build(grammars, roots, ragged=ragged)
    for k, i in enumerate(rows):
        req_drafts[i * N:(i + 1) * N] = d.draft_tokens[k * N:(k + 1) * N]
        mask[i * N * N:(i + 1) * N * N] = d.tree_mask[k * N * N:(k + 1) * N * N]
        if qo_lens is not None:
            qo_lens[i] = d.qo_lens[k]
    if prefetch:
        drafter.prefetch(grammars, d)
    return req_drafts, mask, d


def certain_width_fn(num_draft_tokens: int):
    """Per-request width for ragged verify: :class:`factorspec.draft.CertainWidth` (the certain
    run, plus a small tree while the rate is low), capped at ``N - 1``."""
    from factorspec.draft.width import CertainWidth, CostModel

    policy = CertainWidth(cost=CostModel(max_width=max(0, int(num_draft_tokens) - 1)))

    def width(grammar: Any, batch_size: int) -> int:
        m = grammar.matcher if hasattr(grammar, "matcher") else grammar
        return policy.choose(m, batch_size)

    return width


class _PackedVerifyTarget:
    """The target worker, with a verify forward over only each request's real nodes.

    ``spec_info.factorspec_qo_lens`` (set by the worker) gives ``n_b``; rows ``b * N + j`` with
    ``j < n_b`` are forwarded (packed, in order), the logits scattered back to ``[bs * N]``."""

    def __init__(self, target: Any, owner: FactorSpecNGRAMWorker) -> None:
        self._target = target
        self._owner = owner
        self._buf: Optional[torch.Tensor] = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target, name)

    def forward_batch_generation(self, batch: Any, *args: Any, is_verify: bool = False, **kwargs: Any) -> Any:
        spec = getattr(batch, "spec_info", None) if batch is not None else None
        qo = getattr(spec, "factorspec_qo_lens", None) if is_verify else None
        if not is_verify:
            return self._target.forward_batch_generation(batch, *args, is_verify=is_verify, **kwargs)
        N = int(spec.draft_token_num)
        bs = len(qo) if qo is not None else int(batch.input_ids.numel()) // N
        t0 = time.perf_counter()
        if qo is None:
            res = self._target.forward_batch_generation(batch, *args, is_verify=True, **kwargs)
            self._owner._record(bs, N, [N] * bs, res, time.perf_counter() - t0)
            return res
        dev = batch.input_ids.device
        keep = torch.cat([torch.arange(b * N, b * N + n, dtype=torch.int64) for b, n in enumerate(qo)]).to(dev)
        full_ids, full_loc, full_pos = batch.input_ids, batch.out_cache_loc, spec.positions
        batch.input_ids, batch.out_cache_loc, spec.positions = full_ids[keep], full_loc[keep], full_pos[keep]
        try:
            res = self._target.forward_batch_generation(batch, *args, is_verify=True, **kwargs)
        finally:
            batch.input_ids, batch.out_cache_loc, spec.positions = full_ids, full_loc, full_pos
        out = res.logits_output
        self._owner._record(bs, N, list(qo), res, time.perf_counter() - t0)
        t1 = time.perf_counter()
        logits = out.next_token_logits
        if logits is not None:
            if logits.shape[0] != keep.numel():
                raise RuntimeError(f"packed verify forward returned {logits.shape[0]} rows for {keep.numel()} tokens")
            out.next_token_logits = self._unpack(logits, qo, N)
        hs = getattr(out, "hidden_states", None)
        if hs is not None and hs.shape[0] == keep.numel():
            full = hs.new_zeros((bs * N,) + tuple(hs.shape[1:]))
            full[keep] = hs
            out.hidden_states = full
        _TIMES["unpack_s"] += time.perf_counter() - t1
        return res

    def reserve(self, rows: int, vocab: int, dtype: torch.dtype = torch.float32) -> None:
        """Allocate and touch the unpacked logits tensor for up to ``rows`` rows now (at worker
        start), not in the first verify step at that batch size (measured: 1.09 s of a 4.90 s
        batch-8 Qwen step at low load went to that first allocation); steps take views of it."""
        self._buf = torch.zeros((int(rows), int(vocab)), dtype=dtype)

    def _unpack(self, logits: torch.Tensor, qo: list[int], N: int) -> torch.Tensor:
        """The packed logits at rows ``b * N + j`` of a ``[bs * N, V]`` tensor, zeros elsewhere.
        The tensor is reused from step to step (measured: a fresh zeroed ``[8 * 128, 49152]``
        float tensor plus the scatter took 0.7 s a step on the loaded 2-core host, the reused one
        0.2-0.3 s); every row is rewritten each step, and SGLang's in-place edits (grammar mask,
        penalties) happen within the step that owns it (synchronous NGRAM + grammar: no overlap)."""
        rows = len(qo) * N
        buf = self._buf
        if buf is None or buf.shape[0] < rows or tuple(buf.shape[1:]) != tuple(logits.shape[1:]) \
                or buf.dtype != logits.dtype or buf.device != logits.device:
            buf = self._buf = logits.new_empty((rows,) + tuple(logits.shape[1:]))
        buf = buf[:rows]
        off = 0
        for b, n in enumerate(qo):
            buf[b * N:b * N + n].copy_(logits[off:off + n])
            buf[b * N + n:(b + 1) * N].zero_()
            off += n
        return buf


class FactorSpecNGRAMWorker(_ORIGINAL_NGRAM_WORKER):
    """SGLang's NGRAM worker with FactorSpec drafts for FactorSpec-constrained requests."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.factorspec_ragged = ragged_requested()
        self.factorspec_drafter = self._new_drafter()
        self.factorspec_last = None
        self.factorspec_qo_lens: Optional[list[int]] = None
        self._factorspec_stats_path = os.environ.get("FACTORSPEC_SGLANG_STATS") or None
        self._packed_target = _PackedVerifyTarget(self._target_worker, self)
        if self.factorspec_ragged:
            try:
                rows = int(self.server_args.max_running_requests or 1) * int(self.draft_token_num)
                self._packed_target.reserve(rows, int(self.model_runner.model_config.vocab_size))
            except (AttributeError, TypeError, ValueError, RuntimeError) as e:  # allocated at the first step instead
                logger.info("FactorSpec ragged verify: no logits reserve (%s)", e)
        self._factorspec_in_step = False
        self._step: dict[str, Any] = {}
        logger.info("FactorSpec drafter active (N=%d draft tokens per request, %s widths)", self.draft_token_num,
                    "per-request" if self.factorspec_ragged else "fixed")

    def _new_drafter(self) -> FactorSpecDrafter:
        fn = certain_width_fn(self.draft_token_num) if self.factorspec_ragged else None
        return FactorSpecDrafter(self.draft_token_num, width_fn=fn)

    @property
    def target_worker(self) -> Any:
        # the packing proxy only inside this worker's own step (nothing else sees a stand-in)
        return self._packed_target if self._factorspec_in_step else self._target_worker

    def forward_batch_generation(self, batch: Any, *args: Any, **kwargs: Any) -> Any:
        self._factorspec_in_step = True
        self._step = {}
        for k in _TIMES:
            _TIMES[k] = 0.0
        t0 = time.perf_counter()
        try:
            return super().forward_batch_generation(batch, *args, **kwargs)
        finally:
            self._factorspec_in_step = False
            if self._step.get("forward_tokens") is not None:
                self._step.update({k: round(v, 6) for k, v in _TIMES.items()})
                self._step["step_s"] = round(time.perf_counter() - t0, 6)
                self._write_step()

    def _ragged_ok(self) -> bool:
        """Ragged verify needs the attention backend that reads ``factorspec_qo_lens``."""
        if not self.factorspec_ragged:
            return False
        from factorspec.integrations.sglang.cpu import verify_backend_class

        ok = isinstance(getattr(self.model_runner, "attn_backend", None), verify_backend_class())
        if not ok and not getattr(self, "_ragged_warned", False):
            logger.warning("FACTORSPEC_SGLANG_RAGGED: attention backend %s has no ragged verify; fixed widths",
                           type(getattr(self.model_runner, "attn_backend", None)).__name__)
            self._ragged_warned = True
        return ok

    def _prepare_draft_tokens(self, batch: Any) -> tuple[np.ndarray, np.ndarray]:
        t0 = time.perf_counter()
        req_drafts, mask = super()._prepare_draft_tokens(batch)
        t1 = time.perf_counter()
        if self.factorspec_drafter.N != self.draft_token_num:  # adaptive speculation changed N
            self.factorspec_drafter.close()
            self.factorspec_drafter = self._new_drafter()
        ragged = self._ragged_ok() and not getattr(batch, "return_logprob", False)
        qo = [self.draft_token_num] * len(batch.reqs) if ragged else None
        req_drafts, mask, self.factorspec_last = overwrite_with_factorspec(
            self.factorspec_drafter, batch.reqs, req_drafts, mask, ragged=ragged, qo_lens=qo)
        if hasattr(self, "_step"):
            self._step["corpus_s"] = round(t1 - t0, 6)
            self._step["factorspec_draft_s"] = round(time.perf_counter() - t1, 6)
        self.factorspec_qo_lens = qo if (qo is not None and self.factorspec_last is not None) else None
        return req_drafts, mask

    def _prepare_for_speculative_decoding(self, batch: Any) -> None:
        self.factorspec_qo_lens = None
        t0 = time.perf_counter()
        super()._prepare_for_speculative_decoding(batch)
        if batch.forward_mode.is_target_verify() and self.factorspec_qo_lens is not None:
            batch.spec_info.factorspec_qo_lens = list(self.factorspec_qo_lens)
        _TIMES["prepare_s"] += time.perf_counter() - t0

    def _update_ngram_corpus(self, batch: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return super()._update_ngram_corpus(batch)
        finally:
            _TIMES["corpus_update_s"] += time.perf_counter() - t0

    def _record(self, bs: int, N: int, qo_lens: list[int], res: Any, seconds: float) -> None:
        """One verify forward's shape, from the logits the model returned (not from our plan),
        and its time; written with the step's other timings at the end of the step."""
        if self._factorspec_stats_path is None:
            return
        logits = getattr(getattr(res, "logits_output", None), "next_token_logits", None)
        self._step.update({"bs": bs, "N": N, "qo_lens": qo_lens, "ragged": qo_lens != [N] * bs,
                           "forward_tokens": int(logits.shape[0]) if logits is not None else None,
                           "seconds": round(seconds, 6)})

    def _write_step(self) -> None:
        """One JSON line per verify step: shape; seconds = the verify forward; corpus_s, the NGRAM
        corpus lookup; factorspec_draft_s, FactorSpec's drafts; grammar_mask_s, SGLang's grammar
        mask over the tree (FactorSpec's grammar objects); sample_s, kv_move_s, corpus_update_s,
        prepare_s (``_TIMES``); step_s, the worker's whole step."""
        if self._factorspec_stats_path is None:
            return
        with open(self._factorspec_stats_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(self._step) + "\n")


# seconds this step (one scheduler thread) in: SGLang's grammar-mask build over the tree, its
# sampling + greedy tree verify (``eagle_sample``), the KV move of accepted tokens, the corpus
# update, the whole draft preparation (corpus lookup, FactorSpec's drafts, tree metadata), and
# (per-request widths) unpacking the packed logits to NGRAM's ``[bs * N]`` rows
_TIMES = {"grammar_mask_s": 0.0, "sample_s": 0.0, "kv_move_s": 0.0, "corpus_update_s": 0.0, "prepare_s": 0.0,
          "unpack_s": 0.0}


def _timed(fn: Any, key: str) -> Any:
    """``fn``, timed into ``_TIMES[key]`` (for the step breakdown); same arguments and result."""
    if getattr(fn, "__factorspec_timed__", False):
        return fn

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            _TIMES[key] += time.perf_counter() - t0

    wrapper.__factorspec_timed__ = True  # type: ignore[attr-defined]
    return wrapper


def install_drafter() -> None:
    """Make SGLang's NGRAM algorithm create :class:`FactorSpecNGRAMWorker` in this process (and
    time its grammar-mask build, sampling and KV move: wrappers, same behaviour)."""
    _ngram_worker_module.NGRAMWorker = FactorSpecNGRAMWorker
    for name, key in (("build_grammar_vocab_mask", "grammar_mask_s"), ("eagle_sample", "sample_s"),
                      ("move_accept_tokens_to_target_kvcache", "kv_move_s")):
        setattr(_ngram_worker_module, name, _timed(getattr(_ngram_worker_module, name), key))


def drafter_requested() -> bool:
    return os.environ.get("FACTORSPEC_SGLANG_DRAFTER", "0") not in ("", "0", "false", "no")


def ragged_requested() -> bool:
    """``FACTORSPEC_SGLANG_RAGGED=1``: per-request verify widths (module docstring)."""
    return os.environ.get("FACTORSPEC_SGLANG_RAGGED", "0") not in ("", "0", "false", "no")
