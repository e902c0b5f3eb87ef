"""A user's own requests through the reference engine: any spec, any prompt, greedy or sampled.

`RecordGenerator` holds one model, its tokenizer, a `SpecCompiler` and (with `workers` > 0) a mask
worker pool, and serves `factorspec.requests_file.UserRequest`s: FactorSpec masks at every verify
position, certain runs and draft trees verified in one forward, a per-request width from the cost
model (the `fs_full` configuration of the benchmarks). Each output row says whether the record is
valid by the spec's own `check`, with the violated relations when it is not.

A request whose spec does not compile ends alone with its error (the message names the JSON
Pointer or relation); the others are generated."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from factorspec.draft.width import CertainWidth, CostModel
from factorspec.engine import Engine, Request
from factorspec.engine.sampling import SamplingParams
from factorspec.errors import FactorSpecError
from factorspec.graph.compiler import CompiledConstraint, SpecCompiler
from factorspec.requests_file import UserRequest


@dataclass
class GeneratedRecord:
    """One request's outcome (what `factorspec run --requests` writes as a JSON line)."""

    id: str
    record: Any = None
    text: str = ""
    valid: bool = False
    violations: list[str] = field(default_factory=list)
    finish_reason: str = ""
    tokens: int = 0
    verify_steps: int = 0
    forward_passes: int = 0
    drafted_tokens: int = 0
    accepted_draft_tokens: int = 0
    seconds: float = 0.0
    seed: Optional[int] = None
    error: Optional[str] = None

    def as_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if not (k == "error" and v is None)}


class RecordGenerator:
    """Model, tokenizer, compiler and engine for serving user requests (see module docstring).

    `workers`: CPU mask worker processes (0: matchers in this process). `batch`: requests decoded
    together. `max_width`: the most draft nodes a request verifies in one forward."""

    def __init__(self, model: Optional[str] = None, *, workers: int = 1, batch: int = 8, max_width: int = 64,
                 cost: Optional[CostModel] = None) -> None:
        from factorspec.models import load_model, load_tokenizer, logits_vocab_size
        from factorspec.models.hf_vocab import vocab_for
        from factorspec.models.registry import DEFAULT_MODEL

        if batch < 1 or max_width < 0 or workers < 0:
            raise ValueError("batch must be >= 1, max_width and workers >= 0")
        self.model_name = model or DEFAULT_MODEL
        self.tok = load_tokenizer(model)
        self.model = load_model(model)
        self.vocab_size = logits_vocab_size(self.model)
        self.batch, self.max_width = batch, max_width
        self.compiler = SpecCompiler()
        self.wall_seconds = 0.0  # of the last generate()
        self.pool: Any = None
        self._vocab: Any = None
        if workers > 0:
            from factorspec.workers import MaskWorkerPool

            self.pool = MaskWorkerPool(workers, self.model_name, max_rows=batch * (max_width + 1),
                                       vocab_size=self.vocab_size, step_timeout=120.0)
        else:
            self._vocab = vocab_for(self.tok, self.vocab_size)
        self.engine = Engine(self.model, self.tok, width=CertainWidth(cost or CostModel()), max_width=max_width,
                             vocab_size=self.vocab_size, pool=self.pool)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
            self.pool = None

    def __enter__(self) -> "RecordGenerator":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def prompt_ids(self, r: UserRequest) -> list[int]:
        from factorspec.models import chat_prompt_ids

        messages = list(r.messages) if r.messages is not None else [("user", r.prompt or "")]
        return chat_prompt_ids(self.tok, messages)

    def generate(self, requests: Sequence[UserRequest],
                 on_done: Optional[Callable[[GeneratedRecord], None]] = None) -> list[GeneratedRecord]:
        """Every request's record, in request order (`on_done` is called as each is finished)."""
        out: dict[int, GeneratedRecord] = {}
        compiled: dict[int, CompiledConstraint] = {}
        reqs: list[Request] = []
        index: list[int] = []
        for i, r in enumerate(requests):
            try:
                cc = self.compiler.compile(r.spec, check=True)
            except FactorSpecError as e:  # this request alone fails, with the spec's own message
                out[i] = GeneratedRecord(r.id, finish_reason="spec_error", error=f"{type(e).__name__}: {e}")
                if on_done:
                    on_done(out[i])
                continue
            compiled[i] = cc
            ids = self.prompt_ids(r)
            sampling = SamplingParams(r.temperature, r.top_p, r.top_k, r.seed)
            if self.pool is not None:
                reqs.append(Request(ids, None, max_new_tokens=r.max_tokens, id=r.id, spec=r.spec, sampling=sampling))
            else:
                m = cc.matcher(self._vocab)
                m.set_prompt(ids)
                reqs.append(Request(ids, m, max_new_tokens=r.max_tokens, id=r.id, sampling=sampling))
            index.append(i)
        t0 = time.perf_counter()
        results = self.engine.generate(reqs, batch_size=self.batch, mode="spec") if reqs else []
        for i, res in zip(index, results):
            out[i] = self._row(requests[i], compiled[i], res)
            if on_done:
                on_done(out[i])
        self.wall_seconds = time.perf_counter() - t0
        return [out[i] for i in range(len(requests))]

    def _row(self, r: UserRequest, cc: CompiledConstraint, res: Any) -> GeneratedRecord:
        stops = self.engine.stop_token_ids
        text = self.tok.decode([t for t in res.tokens if t not in stops], skip_special_tokens=True)
        g = GeneratedRecord(r.id, text=text, finish_reason=res.finish_reason, tokens=res.stats.tokens,
                            verify_steps=res.stats.verify_steps, forward_passes=res.stats.forward_passes,
                            drafted_tokens=res.stats.drafted_tokens,
                            accepted_draft_tokens=res.stats.accepted_draft_tokens,
                            seconds=round(res.stats.seconds, 3), seed=res.seed)
        try:
            g.record = json.loads(text)
        except ValueError:
            g.violations = ["the output is not JSON"]
            return g
        g.violations = [str(v) for v in cc.spec.check(g.record)]
        g.valid = not g.violations
        return g


def summarize(rows: Sequence[GeneratedRecord], wall_seconds: float) -> dict[str, Any]:
    """Counts of a run: valid records, tokens per verify step, forwards per record, time."""
    n = max(1, len(rows))
    steps = sum(r.verify_steps for r in rows)
    return {
        "requests": len(rows),
        "valid": sum(r.valid for r in rows),
        "valid_rate": sum(r.valid for r in rows) / n,
        "spec_errors": sum(r.error is not None for r in rows),
        "tokens_per_verify_step": sum(r.tokens for r in rows) / max(1, steps),
        "forward_passes_per_record": sum(r.forward_passes for r in rows) / n,
        "wall_seconds": round(wall_seconds, 3),
        "seconds_per_record": round(wall_seconds / n, 3),
    }
