"""Run NATURAL PLAN instances through the reference engine under one decoding configuration.

Configurations (same model, same prompts):
  unconstrained   greedy, no mask
  syntax          xgrammar mask of the schema without relations
  syntax_retry    syntax, plus up to 3 retries whose prompt names the violated relation
  syntax_ngram_W  syntax plus prompt-lookup drafts of width W (4, 8, 16)
  fs_mask         FactorSpec masks, no drafts
  fs_chain        FactorSpec certain chains at a fixed width (16)
  fs_full         FactorSpec trees, per-request width from the cost model
"""
from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

from benchmarks.baselines import NgramXGrammarConstraint, XGrammarCompilerCache, XGrammarConstraint
from benchmarks.natural_plan import TripProblem, golden_record, json_prompt, to_spec
from factorspec.draft.width import CertainWidth, CostModel
from factorspec.errors import FactorSpecError
from factorspec.graph.compiler import SpecCompiler
from factorspec.graph.matcher import Matcher
from factorspec.graph.textstate import TextMachine

BASE_CONFIGS = ("unconstrained", "syntax", "syntax_retry", "syntax_ngram_4", "syntax_ngram_8",
                "syntax_ngram_16", "fs_mask", "fs_chain", "fs_full")
FS_CHAIN_WIDTH = 16


@dataclass
class Context:
    """Model, tokenizer and per-spec caches shared by every configuration of one run."""

    model: Any
    tok: Any
    vocab_size: int
    max_width: int = 64
    cost: CostModel = field(default_factory=CostModel)
    model_name: Optional[str] = None
    workers: int = 0  # FactorSpec configurations: CPU mask worker processes (0: in-process matchers)
    _pool: Any = None
    _vocab: Any = None
    _xgr: Any = None
    compiler: SpecCompiler = field(default_factory=lambda: SpecCompiler(cache_limit=1024))

    @property
    def vocab(self) -> Any:
        if self._vocab is None:
            from factorspec.models.hf_vocab import vocab_for

            self._vocab = vocab_for(self.tok, self.vocab_size)
        return self._vocab

    @property
    def xgr(self) -> XGrammarCompilerCache:
        if self._xgr is None:
            self._xgr = XGrammarCompilerCache(self.tok, self.vocab_size)
        return self._xgr

    def pool(self, batch: int) -> Any:
        """The mask worker pool (grown when a larger batch needs more rows)."""
        from factorspec.models.registry import DEFAULT_MODEL
        from factorspec.workers import MaskWorkerPool

        rows = batch * (self.max_width + 1)
        if self._pool is not None and self._pool.max_rows < rows:
            self._pool.close()
            self._pool = None
        if self._pool is None:
            self._pool = MaskWorkerPool(self.workers, self.model_name or DEFAULT_MODEL, max_rows=rows,
                                        vocab_size=self.vocab_size, step_timeout=120.0)
        return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def spec(self, p: TripProblem) -> Any:
        return self.compiler.compile(to_spec(p)).spec

    def machine(self, p: TripProblem) -> TextMachine:
        return self.compiler.compile(to_spec(p)).machine


def load_context(model_name: Optional[str], max_width: int = 64, workers: int = 0) -> Context:
    """Model and tokenizer by name or path; `workers` > 0 serves the FactorSpec configurations
    from that many CPU mask worker processes (masks of every draft node computed during the
    forward), 0 from matchers in this process."""
    from factorspec.models import load_model, load_tokenizer
    from factorspec.models.tokens import logits_vocab_size

    tok = load_tokenizer(model_name)
    model = load_model(model_name)
    return Context(model, tok, logits_vocab_size(model), max_width, model_name=model_name, workers=workers)


def _constraint(ctx: Context, config: str, p: TripProblem, prompt_ids: Sequence[int]) -> Any:
    from factorspec.models.tokens import stop_token_ids

    stops = stop_token_ids(ctx.tok)
    if config == "unconstrained":
        return None
    if config.startswith("syntax"):
        g = ctx.xgr.compile(to_spec(p))
        if config.startswith("syntax_ngram"):
            return NgramXGrammarConstraint(g, stops, prompt_ids)
        return XGrammarConstraint(g, stops)
    m = Matcher(ctx.machine(p), ctx.vocab)
    m.set_prompt(prompt_ids)
    return m


def _mode_width(ctx: Context, config: str) -> tuple[str, Any]:
    if config.startswith("syntax_ngram"):
        return "chain", int(config.rsplit("_", 1)[1])
    if config == "fs_chain":
        return "chain", FS_CHAIN_WIDTH
    if config == "fs_full":
        return "spec", CertainWidth(ctx.cost)
    return "greedy", 0


def evaluate(ctx: Context, p: TripProblem, text: str) -> tuple[Optional[dict], bool, bool, list[str]]:
    """(record, valid per `factorspec check`, NATURAL PLAN exact match, violations)."""
    try:
        rec = json.loads(text)
    except (json.JSONDecodeError, ValueError):
        return None, False, False, ["output is not JSON"]
    viol = [str(v) for v in ctx.spec(p).check(rec)]
    gold = [(leg["city"], leg["end_day"] - leg["start_day"] + 1) for leg in golden_record(p)["itinerary"]]
    try:
        got = [(leg["city"], leg["end_day"] - leg["start_day"] + 1) for leg in rec["itinerary"]]
    except (KeyError, TypeError):
        got = None
    return rec, not viol, got == gold, viol


def run_config(ctx: Context, config: str, problems: Sequence[TripProblem], batch: int,
               max_new_tokens: int = 400, progress: bool = True, temperature: float = 0.0,
               seed: int = 0) -> tuple[list[dict], float]:
    """Decode every problem under `config`; returns per-instance rows and the total wall time.

    `temperature` > 0 samples (instance k with seed `seed + k` in every configuration, so that
    drafted and undrafted configurations sample the same tokens: see factorspec.engine.sampling)."""
    from factorspec.engine.sampling import GREEDY, SamplingParams

    from factorspec.engine import Engine, Request
    from factorspec.models import build_prompt_ids

    sampling = {p.id: (SamplingParams(temperature, seed=seed + k) if temperature > 0 else GREEDY)
                for k, p in enumerate(problems)}
    mode, width = _mode_width(ctx, config)
    pooled = ctx.workers > 0 and config.startswith("fs_")
    engine = Engine(ctx.model, ctx.tok, width=width if width else 1, max_width=ctx.max_width,
                    vocab_size=ctx.vocab_size, pool=ctx.pool(batch) if pooled else None)
    prompts = {p.id: build_prompt_ids(ctx.tok, json_prompt(p)) for p in problems}
    rows: dict[str, dict] = {p.id: {"id": p.id, "config": config, "tokens": 0, "verify_steps": 0,
                                    "forward_passes": 0, "attempts": 0, "token_ids": []} for p in problems}
    todo = list(problems)
    extra_prompt: dict[str, str] = {}
    load0 = _loadavg()
    t0 = time.perf_counter()
    attempts = 4 if config == "syntax_retry" else 1
    for attempt in range(attempts):
        if not todo:
            break
        reqs, ok = [], []
        for p in todo:
            ids = prompts[p.id] if p.id not in extra_prompt else build_prompt_ids(ctx.tok, json_prompt(p) + extra_prompt[p.id])
            if pooled:  # compiled in a worker (errors end the request with constraint_error)
                reqs.append(Request(ids, None, max_new_tokens=max_new_tokens, id=p.id, spec=to_spec(p),
                                    sampling=sampling[p.id]))
                ok.append(p)
                continue
            try:
                c = _constraint(ctx, config, p, ids)
            except FactorSpecError as e:  # e.g. a search budget hit while compiling: this instance fails
                rows[p.id].update(valid=False, exact_match=False, record=None, text="",
                                  finish_reason=f"constraint_error: {type(e).__name__}: {e}")
                continue
            reqs.append(Request(ids, c, max_new_tokens=max_new_tokens, id=p.id, sampling=sampling[p.id]))
            ok.append(p)
        results = engine.generate(reqs, batch_size=batch, mode=mode)
        retry = []
        for p, res in zip(ok, results):
            r = rows[p.id]
            text = ctx.tok.decode([t for t in res.tokens if t not in engine.stop_token_ids], skip_special_tokens=True)
            rec, valid, exact, viol = evaluate(ctx, p, text)
            r.update(record=rec, text=text, valid=valid, exact_match=exact, finish_reason=res.finish_reason,
                     violations=viol[:5], token_ids=res.tokens)
            r["tokens"] += res.stats.tokens
            r["verify_steps"] += res.stats.verify_steps
            r["forward_passes"] += res.stats.forward_passes
            r["attempts"] += 1
            r["seconds"] = r.get("seconds", 0.0) + res.stats.seconds
            r["prefill_seconds"] = r.get("prefill_seconds", 0.0) + res.stats.prefill_seconds
            if not valid and attempt + 1 < attempts:
                extra_prompt[p.id] = (f"\n\nYour previous answer was:\n{text}\nIt is wrong: "
                                      f"{'; '.join(viol[:3])}. Answer again with a corrected JSON object.")
                retry.append(p)
            if progress:
                print(f"[{config}] {p.id}: valid={valid} tokens={res.stats.tokens} "
                      f"steps={res.stats.verify_steps}", file=sys.stderr, flush=True)
        todo = retry
    wall = time.perf_counter() - t0
    out = [rows[p.id] for p in problems]
    if out:  # the engine's phase timings and the host's load, on the first row (summaries read them)
        out[0]["engine_timings"] = dict(engine.timings)
        out[0]["load_avg"] = [load0, _loadavg()]
    return out, wall


def summarize(config: str, rows: list[dict], wall: float) -> dict:
    n = max(1, len(rows))
    toks = sum(r["tokens"] for r in rows)
    steps = sum(r["verify_steps"] for r in rows)
    valid = sum(bool(r.get("valid")) for r in rows)
    prefill = sum(r.get("prefill_seconds", 0.0) for r in rows)
    timings = next((r["engine_timings"] for r in rows if "engine_timings" in r), {})
    load = next((r["load_avg"] for r in rows if "load_avg" in r), None)
    return {
        "name": config,
        "instances": len(rows),
        "valid_rate": valid / n,
        "exact_match_rate": sum(bool(r.get("exact_match")) for r in rows) / n,
        "tokens_per_verify_step": toks / max(1, steps),
        "forward_passes_per_record": sum(r["forward_passes"] for r in rows) / n,
        "seconds_per_record": wall / n,
        "valid_records_per_second": valid / wall if wall > 0 else 0.0,
        "wall_seconds": wall,
        # decoding alone: the wall time minus the prefill forwards (the same prompts in every
        # configuration); the engine admits requests one at a time, so prefills do not overlap
        "decode_seconds_per_record": max(0.0, wall - prefill) / n,
        "prefill_seconds_per_record": prefill / n,
        "engine_seconds": {k: round(v, 3) for k, v in timings.items()},
        # 1-minute load average of the host at the start and end of the run: seconds from runs
        # under different load do not compare
        "load_avg": load,
    }


def _loadavg() -> Optional[float]:
    try:
        import os

        return round(os.getloadavg()[0], 2)
    except OSError:
        return None
