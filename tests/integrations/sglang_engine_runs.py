"""SGLang engine runs shared by the scheduler test and the per-request-width test: one engine start
per mode (per-request widths, fixed width, no speculation) over the union of their requests, so
the slow suite starts three engines instead of five. Each run is made once per test process, on
first use, one engine at a time.

Requests: the scheduler test's two (a NATURAL PLAN instance with two valid plans, so token identity
depends on the verify forward; examples/trip_plan, exactly one plan) and the width test's three
generated instances of 3, 4 and 5 cities (certain runs of different lengths)."""
from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
MODEL = "smollm2-135m"
MAX_NEW = 256  # a 3-city trip record is ~80 tokens with SmolLM2's tokenizer
MODES = ("ragged", "fixed", "none")
SCHEDULER = slice(0, 2)  # the scheduler test's requests in every run
WIDTHS = slice(2, 5)  # the per-request-width test's

_RUNS: dict[str, dict[str, Any]] = {}


def scheduler_problems():
    """(choice, trip spec): a generated 3-city instance with at least two valid plans, and the
    examples/trip_plan spec."""
    from benchmarks.natural_plan import generate, iter_plans, parse_instance

    choice = None
    for k, raw in enumerate(generate(3, 0, 20)):
        p = parse_instance(f"synthetic_3_0_{k}", raw)
        if len(list(iter_plans(p, limit=3))) >= 2:
            choice = p
            break
    assert choice is not None
    spec = json.loads((REPO / "examples" / "trip_plan.spec.json").read_text(encoding="utf-8"))
    return choice, spec


def width_problems():
    from benchmarks.natural_plan import generate, parse_instance

    return [parse_instance(f"synthetic_{n}_0_0", generate(n, 0, 1)[0]) for n in (3, 4, 5)]


def _requests() -> tuple[list[str], list[str]]:
    from benchmarks.natural_plan import json_prompt, to_spec

    choice, trip = scheduler_problems()
    prompts = [json_prompt(choice), "Plan the trip as JSON: " + trip["description"]]
    schemas = [json.dumps(to_spec(choice)), json.dumps(trip)]
    for p in width_problems():
        prompts.append(json_prompt(p))
        schemas.append(json.dumps(to_spec(p)))
    return prompts, schemas


def engine_run(mode: str) -> dict[str, Any]:
    """outs (SGLang's outputs, in request order), schemas, steps (one dict per verify forward,
    FACTORSPEC_SGLANG_STATS; empty without speculation), start_s, gen_s."""
    if mode in _RUNS:
        return _RUNS[mode]
    from factorspec.integrations.sglang.cpu import cpu_engine
    from factorspec.integrations.vllm.models import hf_model_dir

    prompts, schemas = _requests()
    stats = os.path.join(tempfile.mkdtemp(prefix="factorspec-sglang-runs-"), f"{mode}.jsonl")
    t0 = time.time()
    eng = cpu_engine(str(hf_model_dir(MODEL)), drafter=mode != "none", ragged=mode == "ragged", draft_tokens=16,
                     stats_path=stats if mode != "none" else None, log_level="error")
    t1 = time.time()
    try:
        outs = eng.generate(prompt=prompts, sampling_params=[
            {"temperature": 0, "max_new_tokens": MAX_NEW, "json_schema": s} for s in schemas])
    finally:
        eng.shutdown()
    steps = [json.loads(x) for x in Path(stats).read_text().splitlines()] if mode != "none" else []
    _RUNS[mode] = {"outs": outs, "schemas": schemas, "steps": steps, "start_s": t1 - t0, "gen_s": time.time() - t1}
    return _RUNS[mode]
