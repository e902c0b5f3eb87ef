"""FactorSpec bitmask rows of vLLM's grammar bitmask computed by `factorspec.workers.MaskWorkerPool`.

The engine keeps its `VLLMFactorSpecGrammar` objects (vLLM accepts tokens, validates drafts and
rolls back on them, synchronously, in the scheduler). Each of those requests also has a *mirror*
matcher in one worker process. Every scheduler step, `WorkerRows.fill`:

1. brings each mirror up to date with a token delta: the mirror's tokens are diffed against the
   grammar's accepted tokens (`Matcher.tokens`), so the worker applies the tokens vLLM
   committed since the last step (and rolls back, should vLLM ever have rolled back further);
2. submits ONE pool step for all requests: each request's item (`StepItem(tree=True,
   given=...)`) carries its delta and the step's draft tokens up to the first -1 pad, and its
   worker writes the row of the bonus position into the request's first row and the row after
   each given draft token j into first row + j + 1, reporting per row whether the path is
   accepted (`StepResult.valid`). A verify walk leaves the worker's matcher at the root, so the
   mirror's tokens are the grammar's. The workers of different requests run in parallel; a
   request's rows are computed in one go in its worker: one pipe message per worker per
   engine step, whatever the number of draft positions;
3. collects it (one deadline) and copies the rows into vLLM's bitmask. With `valid` the parent
   finds each request's valid prefix (a -1 pad, a rejected token or termination ends it): the
   row after an accepted stop token is the stop-token row (the engine grammar's row once
   terminated; the worker's walk leaves it zero), and rows past the valid prefix repeat the
   row of the last valid position, as vLLM's own loop does. The engine's grammar is not
   touched (no `validate_tokens` in the engine process).

Failure handling: a request whose worker crashed, timed out (the pool kills and replaces the
worker) or failed is logged with the pool's message and served by the in-process batched call
(`FactorSpecBackend.fill_rows`) from then on: its masks stay exact and it continues; no step waits
longer than the timeout. If the pool cannot start at all, the engine logs it and fills rows
in-process.

Settings (environment, read when the engine installs the FactorSpec backend):

  FACTORSPEC_VLLM_MASK_WORKERS=N          worker processes (0 or "off": in-process rows; the
                                          default is 0, see docs/integrations.md)
  FACTORSPEC_VLLM_MASK_WORKERS_TIMEOUT=S  budget of one step's rows (default 30 s; the first
                                          step of a request includes compiling its spec)
  FACTORSPEC_VLLM_MASK_WORKERS_CHECK=1    also compute every row in-process and count rows that
                                          differ (`patches.STATS["worker_check_mismatches"]`);
                                          for tests, doubles the mask work

This module does not import vLLM or torch at import time: worker processes unpickle
`TokenizerVocab` from it.
"""
from __future__ import annotations

import copy
import logging
import os
import time
from dataclasses import dataclass
from typing import Any, Iterable, Optional

import numpy as np

from factorspec.integrations.vllm.rows import fill_rows
from factorspec.workers.protocol import StepItem

ENV_WORKERS = "FACTORSPEC_VLLM_MASK_WORKERS"
ENV_TIMEOUT = "FACTORSPEC_VLLM_MASK_WORKERS_TIMEOUT"
ENV_CHECK = "FACTORSPEC_VLLM_MASK_WORKERS_CHECK"
DEFAULT_WORKERS = 0
DEFAULT_TIMEOUT = 30.0
LOGGER = "vllm.factorspec"  # under "vllm": vLLM's logging configuration prints it

_log = logging.getLogger(__name__)


def default_workers() -> int:
    """Workers when FACTORSPEC_VLLM_MASK_WORKERS is unset ("auto"): 1 when the model runs on an
    accelerator (the CPU is then free while the forward runs, and rows leave the engine core's
    critical path), 0 on a CPU-only vLLM, whose OpenMP threads are bound to every core (measured
    on the 2-core CPU host: a worker there only competes with the forward; docs/integrations.md)."""
    try:
        import torch

        if torch.cuda.is_available():
            return 1
    except Exception:  # noqa: BLE001 - no torch, or a broken CUDA setup: CPU rules
        pass
    return DEFAULT_WORKERS


def configured_workers() -> int:
    """Number of mask worker processes from FACTORSPEC_VLLM_MASK_WORKERS (0 = off; unset or
    "auto": `default_workers()`)."""
    raw = os.environ.get(ENV_WORKERS, "").strip().lower()
    if raw in ("", "default", "auto"):
        return default_workers()
    if raw in ("0", "off", "no", "false", "none"):
        return 0
    try:
        n = int(raw)
    except ValueError:
        raise ValueError(f"{ENV_WORKERS}={raw!r}: expected a number of worker processes, or 0/off") from None
    if n < 0:
        raise ValueError(f"{ENV_WORKERS}={raw!r}: expected a number >= 0")
    return n


def configured_timeout() -> float:
    raw = os.environ.get(ENV_TIMEOUT, "").strip()
    return float(raw) if raw else DEFAULT_TIMEOUT


def check_enabled() -> bool:
    return os.environ.get(ENV_CHECK, "").strip().lower() in ("1", "true", "yes", "on")


@dataclass(frozen=True)
class TokenizerVocab:
    """Picklable recipe for the engine's `TokenVocab` inside a worker: the tokenizer directory
    vLLM loaded (transformers' AutoTokenizer), the logits width and the stop tokens of the
    requests (a shallow stop-token view, exactly as `rows.with_stops` builds it)."""

    path: str
    vocab_size: int
    stop_ids: tuple = ()
    revision: Optional[str] = None
    trust_remote_code: bool = False

    def __call__(self) -> Any:
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        from transformers import AutoTokenizer

        from factorspec.models.hf_vocab import vocab_for

        tok = AutoTokenizer.from_pretrained(self.path, revision=self.revision,
                                            trust_remote_code=self.trust_remote_code)
        v = vocab_for(tok, self.vocab_size)
        ids = sorted({int(t) for t in self.stop_ids if 0 <= int(t) < v.vocab_size})
        if ids and ids != list(v.stop_ids):
            v = copy.copy(v)
            v.stop_ids = ids
        return v


def _common_prefix(a: list, b: list) -> int:
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class _Mirror:
    __slots__ = ("grammar", "tokens")

    def __init__(self, grammar: Any) -> None:
        self.grammar = grammar
        self.tokens: list[int] = []  # what the worker's matcher has accepted


class WorkerRows:
    """The pool and the per-request mirrors of one engine (driven from the engine-core thread)."""

    def __init__(self, num_workers: int, factory: TokenizerVocab, max_rows: int, *,
                 timeout: float = DEFAULT_TIMEOUT, start_timeout: float = 180.0, check: bool = False,
                 stats: Optional[dict] = None, info: Optional[dict] = None) -> None:
        from factorspec.workers import MaskWorkerPool

        self.factory = factory
        self.stop_ids = tuple(sorted(factory.stop_ids))
        self.timeout = timeout
        self.check = check
        self.stats = stats if stats is not None else {}
        self.info = info if info is not None else {}
        self.pool = MaskWorkerPool(num_workers, factory, max_rows, vocab_size=factory.vocab_size,
                                   step_timeout=timeout, start_timeout=start_timeout)
        self.mirrors: dict[Any, _Mirror] = {}
        self.inprocess: dict[Any, Any] = {}  # rid -> grammar served in-process for good
        self._stop: Optional[np.ndarray] = None  # the stop-token row (see _stop_row)
        self.info.update({"workers": num_workers, "worker_pids": self.pool.worker_pids(),
                          "engine_pid": os.getpid(), "stop_ids": list(self.stop_ids)})
        self.info.setdefault("worker_errors", [])

    # -- lifecycle -------------------------------------------------------------------------------
    def close(self) -> None:
        try:
            self.pool.close()
        except Exception:  # noqa: BLE001 - shutting down
            pass

    def serves(self, rid: Any, grammar: Any) -> bool:
        """Whether this pool's workers can mirror `grammar` (it has a spec document and the
        pool's stop tokens; a request with other stop tokens is filled in-process)."""
        if getattr(grammar, "doc", None) is None:
            return False
        if self.inprocess.get(rid) is grammar:
            return False
        return tuple(grammar.matcher.vocab.stop_ids) == self.stop_ids

    def _drop(self, rid: Any) -> None:
        if self.mirrors.pop(rid, None) is not None:
            try:
                self.pool.remove_request(rid)
            except Exception:  # noqa: BLE001 - a closed pool forgets everything anyway
                pass

    def _give_up(self, rid: Any, grammar: Any, why: str) -> None:
        self._drop(rid)
        self.inprocess[rid] = grammar
        self.stats["worker_failures"] = self.stats.get("worker_failures", 0) + 1
        msg = f"FactorSpec mask workers: request {rid!r} is served in-process from now on: {why}"
        errs = self.info.setdefault("worker_errors", [])
        if len(errs) < 20:
            errs.append(msg)
        try:
            from vllm.logger import init_logger

            init_logger(LOGGER).warning(msg)
        except Exception:  # noqa: BLE001 - outside vLLM
            _log.warning(msg)

    def forget_except(self, live: Any) -> None:
        """Drop mirrors of requests that are no longer in the scheduler."""
        for rid in [r for r in self.mirrors if r not in live]:
            self._drop(rid)
        for rid in [r for r in self.inprocess if r not in live]:
            del self.inprocess[rid]

    # -- one scheduler step ----------------------------------------------------------------------
    def fill(self, arr: np.ndarray, items: Iterable[tuple[Any, Any, int, list[int]]]) -> list:
        """Rows of `items` ((request id, grammar, first row, scheduled draft tokens)) into `arr`
        ([rows, words] int32; the pool's rows have the same indices). Returns the items whose
        rows the workers did not deliver (the caller fills those in-process); those requests are
        served in-process from then on.

        One pool step for the whole engine step: each request's item carries its token delta and
        its draft tokens up to the first -1 pad as `given`; its worker writes the root (bonus
        position) row and the row after each given token, and reports per row whether the path
        is accepted (`StepResult.valid`)."""
        t0 = time.perf_counter()
        plan = []  # (rid, grammar, start, scheduled tokens, given tokens)
        step: list = []
        for rid, grammar, start, toks in items:
            mir = self.mirrors.get(rid)
            if mir is not None and mir.grammar is not grammar:  # a new request under an old id
                self._drop(rid)
                mir = None
            if mir is None:
                mir = self.mirrors[rid] = _Mirror(grammar)
                self.pool.add_request(rid, grammar.doc)
            hist = grammar.matcher.tokens
            c = _common_prefix(mir.tokens, hist)
            rollback = len(mir.tokens) - c
            delta = tuple(int(t) for t in hist[c:])
            cut = toks.index(-1) if -1 in toks else len(toks)
            given = tuple(int(t) for t in toks[:cut])
            plan.append((rid, grammar, start, toks, given))
            step.append(StepItem(rid, delta, row=start, rollback=rollback, tree=True, given=given))
            mir.tokens = list(hist)  # a tree step leaves the worker's matcher at the root
        failed: dict[Any, str] = {}
        valid: dict[Any, list] = {}
        if step:
            res = self.pool.collect(self.pool.submit_step(step), timeout=self.timeout)
            for rid, r in res.items():
                if not r.ok:
                    failed[rid] = str(r.error) if r.error is not None else "the worker returned no result"
                elif r.valid is None or len(r.valid) < 1:
                    failed[rid] = "the worker reported no row validity"
                else:
                    valid[rid] = r.valid
        pool_rows = self.pool.bitmask
        width = arr.shape[1]
        w = min(width, pool_rows.shape[1])
        rest = []
        rows = 0
        for rid, grammar, start, toks, given in plan:
            if rid in failed:
                self._give_up(rid, grammar, failed[rid])
                rest.append((grammar, start, toks))
                continue
            ok = valid[rid]
            v = 0  # given tokens accepted in a row (the rows of positions 0..v are the pool's)
            while v < len(given) and v + 1 < len(ok) and ok[v + 1]:
                v += 1
            n = len(toks) + 1
            arr[start:start + v + 1, :w] = pool_rows[start:start + v + 1, :w]
            if v and given[v - 1] in self.stop_ids:
                # accepting a stop token terminates: the worker's tree walk leaves that row zero,
                # the engine's grammar (and vLLM's loop) gives the stop-token row
                stop = self._stop_row(grammar)
                arr[start + v, :w] = 0
                arr[start + v, :min(w, len(stop))] = stop[:w]
            if v + 1 < n:  # after a pad, a rejected token or termination: repeat the last valid row
                arr[start + v + 1:start + n, :w] = arr[start + v, :w]
            if w < width:
                arr[start:start + n, w:] = 0
            rows += n
        st = self.stats
        st["worker_calls"] = st.get("worker_calls", 0) + 1
        st["worker_pool_steps"] = st.get("worker_pool_steps", 0) + (1 if step else 0)
        st["worker_rows"] = st.get("worker_rows", 0) + rows
        st["worker_s"] = st.get("worker_s", 0.0) + time.perf_counter() - t0
        if self.check:
            self._check(arr, [p for p in plan if p[0] not in failed])
        self.info["worker_pids"] = self.pool.worker_pids()
        self.info["worker_restarts"] = self.pool.restarts
        return rest

    def _stop_row(self, grammar: Any) -> np.ndarray:
        """The row of a terminated matcher (its stop tokens), as `Matcher.next_token_mask` has it."""
        row = self._stop
        if row is None:
            v = grammar.matcher.vocab
            row = self._stop = np.asarray(v.mask_from_ids(list(v.stop_ids)), dtype=np.int32)
        return row

    def _check(self, arr: np.ndarray, plan: list) -> None:
        """Compare the workers' rows with the in-process batched call's."""
        st = self.stats
        for rid, grammar, start, toks, _drafts in plan:
            n = len(toks) + 1
            ref = np.zeros((n, arr.shape[1]), dtype=np.int32)
            fill_rows(ref, [(grammar, 0, list(toks))])
            bad = int((ref != arr[start:start + n]).any(axis=1).sum())
            st["worker_check_rows"] = st.get("worker_check_rows", 0) + n
            st["worker_check_mismatches"] = st.get("worker_check_mismatches", 0) + bad
            if bad:
                errs = self.info.setdefault("worker_errors", [])
                if len(errs) < 20:
                    errs.append(f"check: request {rid!r}: {bad} of {n} worker rows differ from in-process rows")
