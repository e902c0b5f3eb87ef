"""End-to-end NATURAL PLAN runs through vLLM (CPU), one engine configuration per process.

    python -m benchmarks.vllm_e2e run --config factorspec_draft --model smollm2-135m \
        --n 3 --out /tmp/fs.json
    python -m benchmarks.vllm_e2e all --model qwen2.5-coder-0.5b --n 20 --out-dir bench/vllm

Configurations (greedy by default, or sampled with --temperature T --seed S; max_tokens 512; records one at a time, or with
``--batch B`` all records submitted at once to an engine with max_num_seqs B):
  xgrammar          vLLM structured outputs (xgrammar) with the schema minus x-factorspec: syntax only
  xgrammar_ngram    the same plus vLLM's `ngram` proposer (num_speculative_tokens K)
  factorspec        FactorSpec masks through the plugin, no drafts
  factorspec_draft  FactorSpec masks plus FactorSpec certain drafts (custom_class proposer, K)

Per record: output text and token ids, validity (JSON parse + the task's rules via
`benchmarks.natural_plan.check_plan`), output tokens, model forwards (tokens - accepted drafts:
each forward yields one sampled token plus the drafts it accepted; the first is the prefill),
vLLM's spec-decode counters for the record, and seconds; per run: vLLM's spec-decode counters (drafts, draft tokens,
accepted tokens). Engines run in-process (VLLM_ENABLE_V1_MULTIPROCESSING=0) with the plugin
registered by `register()`, so no entry point is needed here.

Batched runs (``--batch B``, B > 1): every record is added to the engine before the first step
(as `LLM.generate` does; the bench drives `LLMEngine.step` itself to see each step's outputs)
and vLLM schedules up to B at a time. Definitions, chosen so that they mean the same as in
one-at-a-time runs:

- a record's *forwards* are its verify steps: the engine steps in which it got tokens, counted
  in the output stream (``steps_seen``; its prefill step counts once, chunked-prefill steps that
  yield no token do not). Each such step yields one sampled token plus the drafts it accepted
  (``accepted``: vLLM's per-request spec-decode metrics, ``per_request_spec_decode_metrics=
  "summary"``), except that tokens after the stop token are dropped, so tokens - accepted
  (kept as ``tokens_minus_accepted``; the one-at-a-time runs' definition of forwards) is one less
  than the verify steps when a step's accepted drafts end with the stop token.
  ``tokens_per_step`` = all tokens / all records' forwards: tokens per verify step *per request*,
  independent of how many requests share a step;
- ``engine_steps`` counts the engine steps that executed the model (one batched forward each,
  shared by up to B records, prefill chunks included; idle steps, e.g. while a grammar
  compiles, are not counted) and ``tokens_per_engine_step`` = all tokens / engine steps:
  throughput per forward;
- seconds: ``seconds_per_record`` = batch wall time / records and ``valid_records_per_s`` =
  valid records / batch wall time; each record keeps its own latency (``seconds``: from the
  batch start to its last token) and vLLM's per-request timings (``metrics``), which overlap.

The output JSON is rewritten after every finished record (``"partial": true`` until the end).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Optional

CONFIGS = ("xgrammar", "xgrammar_ngram", "factorspec", "factorspec_draft")


def cpu_env() -> dict[str, str]:
    """Environment for vLLM on these 2-core CPU machines (docs: shared notes, "vLLM on CPU")."""
    env = {"VLLM_CPU_OMP_THREADS_BIND": os.environ.get("VLLM_CPU_OMP_THREADS_BIND", "0-1"),
           "VLLM_CPU_NUM_OF_RESERVED_CPU": os.environ.get("VLLM_CPU_NUM_OF_RESERVED_CPU", "0"),
           "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    iomp = Path(sys.prefix) / "lib" / "libiomp5.so"
    if iomp.is_file() and "libiomp5" not in os.environ.get("LD_PRELOAD", ""):
        env["LD_PRELOAD"] = (str(iomp) + " " + os.environ.get("LD_PRELOAD", "")).strip()
    return env


def strip_relations(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k != "x-factorspec"}


def make_llm(config: str, model_dir: str, k: int, mem: float = 0.25, max_num_seqs: int = 4) -> Any:
    from vllm import LLM

    import factorspec.integrations.vllm as fv

    fv.register()
    kw: dict[str, Any] = {}
    if config == "xgrammar_ngram":
        kw["speculative_config"] = {"method": "ngram", "num_speculative_tokens": k,
                                    "prompt_lookup_max": 4, "prompt_lookup_min": 1}
    elif config == "factorspec_draft":
        kw["speculative_config"] = {"method": "custom_class", "model": fv.PROPOSER, "num_speculative_tokens": k}
    if "speculative_config" in kw:
        kw["per_request_spec_decode_metrics"] = "summary"
    return LLM(model_dir, dtype="bfloat16", max_model_len=4096, max_num_seqs=max_num_seqs, enforce_eager=True,
               gpu_memory_utilization=mem, disable_log_stats=False, seed=0, **kw)


def spec_counters(llm: Any) -> dict[str, float]:
    out: dict[str, float] = {}
    try:
        for m in llm.get_metrics():
            if "spec_decode" in m.name and hasattr(m, "value"):
                out[m.name.replace("vllm:", "")] = float(m.value)
    except Exception:  # noqa: BLE001 - counters are informative only
        pass
    return out


def sampling_params(schema: dict, max_tokens: int, temperature: float = 0.0, seed: Optional[int] = None) -> Any:
    """vLLM's SamplingParams of a record: greedy, or sampled at `temperature` with a seed (vLLM's
    rejection sampler verifies FactorSpec's deterministic drafts losslessly: a draft token x is
    accepted with probability p(x) under the masked target distribution)."""
    from vllm import SamplingParams
    from vllm.sampling_params import StructuredOutputsParams

    kw: dict[str, Any] = {"temperature": temperature, "max_tokens": max_tokens,
                          "structured_outputs": StructuredOutputsParams(json=schema)}
    if temperature > 0 and seed is not None:
        kw["seed"] = seed
    return SamplingParams(**kw)


def run_one(llm: Any, prompt_ids: list[int], schema: dict, max_tokens: int, rid: str,
            temperature: float = 0.0, seed: Optional[int] = None) -> dict[str, Any]:
    from vllm.inputs import TokensPrompt

    sp = sampling_params(schema, max_tokens, temperature, seed)
    eng = llm.llm_engine
    t0 = time.perf_counter()
    eng.add_request(rid, TokensPrompt(prompt_token_ids=prompt_ids), sp)
    steps, final = 0, None
    while final is None and eng.has_unfinished_requests():
        outs = eng.step()
        steps += 1
        for o in outs:
            if o.request_id == rid and o.finished:
                final = o
    dt = time.perf_counter() - t0
    while eng.has_unfinished_requests():
        eng.step()
    if final is None:
        return {"ok": False, "error": "no output", "seconds": dt, "steps": steps}
    c = final.outputs[0]
    return {"ok": True, "text": c.text, "tokens": len(c.token_ids), "engine_steps": steps, "seconds": dt,
            "finish_reason": c.finish_reason, "token_ids": list(c.token_ids)}


def _spec_metrics(completion: Any) -> Optional[dict]:
    m = getattr(completion, "spec_decode_metrics", None)
    if m is None:
        return None
    try:
        return m.to_dict() if hasattr(m, "to_dict") else dict(m)
    except Exception:  # noqa: BLE001 - informative only
        return None


def _timings(metrics: Any) -> dict[str, float]:
    """vLLM's per-request timings (engine-core monotonic timestamps), where it reports them."""
    if metrics is None:
        return {}
    out: dict[str, float] = {}
    g = lambda k: float(getattr(metrics, k, 0.0) or 0.0)  # noqa: E731
    if g("first_token_latency"):
        out["first_token_latency_s"] = g("first_token_latency")
    if g("scheduled_ts") and g("queued_ts"):
        out["queued_s"] = g("scheduled_ts") - g("queued_ts")
    if g("first_token_ts") and g("scheduled_ts"):
        out["prefill_s"] = g("first_token_ts") - g("scheduled_ts")
    if g("last_token_ts") and g("first_token_ts"):
        out["decode_s"] = g("last_token_ts") - g("first_token_ts")
    if g("last_token_ts") and g("scheduled_ts"):
        out["inference_s"] = g("last_token_ts") - g("scheduled_ts")
    n = getattr(metrics, "num_generation_tokens", None)
    if n is not None:
        out["num_generation_tokens"] = int(n)
    return out


def run_batch(llm: Any, jobs: list[tuple[str, list[int], dict]], max_tokens: int,
              on_done: Any = None, temperature: float = 0.0,
              seed: Optional[int] = None) -> tuple[dict[str, dict], dict[str, Any]]:
    """Add every job (request id, prompt ids, schema) to the engine, then step until all finish.
    Per request: the output, the steps in which it got tokens, vLLM's spec-decode metrics and
    timings, its latency from the start. `on_done(rid, record)` runs as each one finishes."""
    from vllm.inputs import TokensPrompt

    eng = llm.llm_engine
    forwards = _count_forwards(eng)
    t0 = time.perf_counter()
    for k, (rid, ids, schema) in enumerate(jobs):
        sp = sampling_params(schema, max_tokens, temperature, None if seed is None else seed + k)
        eng.add_request(rid, TokensPrompt(prompt_token_ids=ids), sp)
    seen = {rid: 0 for rid, _, _ in jobs}
    steps = {rid: 0 for rid, _, _ in jobs}
    first = {}
    done: dict[str, dict] = {}
    token_steps = 0
    while eng.has_unfinished_requests():
        outs = eng.step()
        now = time.perf_counter() - t0
        got = False
        for o in outs:
            rid = o.request_id
            if rid not in seen or rid in done:
                continue
            c = o.outputs[0]
            if len(c.token_ids) > seen[rid]:
                got = True
                steps[rid] += 1
                seen[rid] = len(c.token_ids)
                first.setdefault(rid, now)
            if o.finished:
                r = {"ok": True, "text": c.text, "tokens": len(c.token_ids), "steps_seen": steps[rid],
                     "seconds": now, "first_token_s": first.get(rid), "finish_reason": c.finish_reason,
                     "token_ids": list(c.token_ids), "spec_decode_metrics": _spec_metrics(c),
                     "metrics": _timings(getattr(o, "metrics", None))}
                done[rid] = r
                if on_done is not None:
                    on_done(rid, r)
        token_steps += got
    wall = time.perf_counter() - t0
    for rid, _, _ in jobs:
        if rid not in done:
            done[rid] = {"ok": False, "error": "no output", "seconds": wall, "steps_seen": steps[rid]}
    run = {"wall_s": wall, "token_steps": token_steps}
    if forwards is not None:
        run["engine_steps"] = forwards[0] - forwards[1]
    else:  # no in-process engine core to count model executions: steps that yielded tokens
        run["engine_steps"] = token_steps
    return done, run


def _count_forwards(eng: Any) -> Optional[list]:
    """Count the engine steps that executed the model ([count, count at start]) by wrapping the
    in-process engine core's step function (VLLM_ENABLE_V1_MULTIPROCESSING=0); None otherwise.
    Idle steps (e.g. while a grammar compiles) are not forwards."""
    core = getattr(getattr(eng, "engine_core", None), "engine_core", None)
    if core is None or not hasattr(core, "step_fn"):
        return None
    box = getattr(core, "_fs_bench_forwards", None)
    if box is None:
        box = core._fs_bench_forwards = [0, 0]
        orig = core.step_fn

        def step_fn() -> Any:
            outputs, executed = orig()
            box[0] += bool(executed)
            return outputs, executed

        core.step_fn = step_fn
    box[1] = box[0]
    return box


def prompt_ids(tok: Any, content: str) -> list[int]:
    text = tok.apply_chat_template([{"role": "user", "content": content}], tokenize=False,
                                   add_generation_prompt=True)
    return list(tok.encode(text, add_special_tokens=False))


def validate(problem: Any, text: str) -> tuple[bool, str]:
    from benchmarks.natural_plan.check import check_plan

    try:
        rec = json.loads(text)
    except ValueError as e:
        return False, f"not JSON: {e}"
    errs = check_plan(problem, rec)
    return (not errs), "; ".join(errs[:3])


def instances(n: Optional[int], skip: int = 0) -> list[Any]:
    from benchmarks.natural_plan import load_instances
    from factorspec.data import shared_data_dir

    items = list(load_instances(str(shared_data_dir() / "natural_plan" / "trip_planning_100.json")).values())
    items = items[skip:]
    return items if n is None else items[:n]


def cmd_run(a: argparse.Namespace) -> int:
    from benchmarks.natural_plan import json_prompt, to_spec
    from factorspec.integrations.vllm.models import hf_model_dir

    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    if a.batch > 1 and a.time_budget:
        raise SystemExit("--time-budget applies to one-at-a-time runs; a batched run submits every record at once")
    model_dir = str(hf_model_dir(a.model))
    t = time.perf_counter()
    llm = make_llm(a.config, model_dir, a.k, max_num_seqs=max(4, a.batch))
    start_s = time.perf_counter() - t
    tok = llm.get_tokenizer()
    probs = instances(a.n, a.skip)
    if a.batch > 1:
        return _run_batched(a, llm, tok, probs, start_s)
    deadline = time.monotonic() + a.time_budget if a.time_budget else None
    records = []
    for i, p in enumerate(probs):
        if deadline is not None and time.monotonic() > deadline:
            break
        doc = to_spec(p)
        schema = strip_relations(doc) if a.config.startswith("xgrammar") else doc
        ids = prompt_ids(tok, json_prompt(p))
        before = spec_counters(llm)
        r = run_one(llm, list(ids), schema, a.max_tokens, f"{a.config}-{i}", a.temperature,
                    None if a.seed is None else a.seed + i)
        after = spec_counters(llm)
        acc = after.get("spec_decode_num_accepted_tokens", 0.0) - before.get("spec_decode_num_accepted_tokens", 0.0)
        r["accepted"] = int(acc)
        r["drafts"] = int(after.get("spec_decode_num_drafts", 0.0) - before.get("spec_decode_num_drafts", 0.0))
        r["draft_tokens"] = int(after.get("spec_decode_num_draft_tokens", 0.0)
                                - before.get("spec_decode_num_draft_tokens", 0.0))
        if r.get("ok"):
            # one forward per step yields exactly one sampled (or bonus) token plus the accepted
            # drafts, so for one request at a time: forwards = tokens - accepted
            r["forwards"] = max(1, r["tokens"] - r["accepted"])
        r["id"] = p.id
        r["cities"] = p.n
        if r.get("ok"):
            r["valid"], r["why"] = validate(p, r["text"])
        else:
            r["valid"] = False
        records.append(r)
        print(json.dumps({k: r.get(k) for k in ("id", "valid", "tokens", "forwards", "accepted", "seconds")}), flush=True)
    out = _run_info(a, llm, start_s)
    out["records"] = records
    out["summary"] = summarize(records)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=1))
    print(json.dumps(out["summary"]))
    return 0


def _run_info(a: argparse.Namespace, llm: Any, start_s: float) -> dict[str, Any]:
    from factorspec.integrations.vllm import maskpool, patches, proposer

    workers = dict(patches.WORKERS)
    if "workers" not in workers:  # no FactorSpec request reached the engine's bitmask hook
        try:
            workers["workers"] = maskpool.configured_workers()
        except ValueError as e:
            workers["workers"], workers["setting_error"] = 0, str(e)
    # the setting the run used: FACTORSPEC_VLLM_MASK_WORKERS as set (None: unset, the default)
    workers["setting"] = os.environ.get(maskpool.ENV_WORKERS)
    workers["default"] = maskpool.default_workers()
    return {"config": a.config, "model": a.model, "k": a.k, "batch": a.batch, "max_tokens": a.max_tokens,
            "temperature": a.temperature, "seed": a.seed,
            "engine_start_s": start_s, "spec_decode": spec_counters(llm), "mask_fill": dict(patches.STATS),
            "mask_workers": workers, "proposer": dict(proposer.STATS)}


def _run_batched(a: argparse.Namespace, llm: Any, tok: Any, probs: list, start_s: float) -> int:
    from benchmarks.natural_plan import json_prompt, to_spec

    jobs, by_rid = [], {}
    for i, p in enumerate(probs):
        doc = to_spec(p)
        schema = strip_relations(doc) if a.config.startswith("xgrammar") else doc
        rid = f"{a.config}-{i}"
        jobs.append((rid, list(prompt_ids(tok, json_prompt(p))), schema))
        by_rid[rid] = (i, p)
    before = spec_counters(llm)
    finished: dict[int, dict] = {}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)

    def record(rid: str, r: dict) -> dict:
        i, p = by_rid[rid]
        r = dict(r, id=p.id, cities=p.n)
        sd = r.get("spec_decode_metrics") or {}
        r["accepted"] = int(sd.get("num_accepted_draft_tokens", 0))
        r["drafts"] = int(sd.get("num_spec_steps", 0))
        r["draft_tokens"] = int(sd.get("num_draft_tokens", 0))
        if r.get("ok"):
            r["forwards"] = max(1, r["steps_seen"])
            r["tokens_minus_accepted"] = r["tokens"] - r["accepted"]
            r["valid"], r["why"] = validate(p, r["text"])
        else:
            r["valid"] = False
        return r

    def on_done(rid: str, r: dict) -> None:
        i = by_rid[rid][0]
        finished[i] = rec = record(rid, r)
        print(json.dumps({k: rec.get(k) for k in ("id", "valid", "tokens", "forwards", "steps_seen", "accepted",
                                                  "seconds")}), flush=True)
        out = _run_info(a, llm, start_s)
        out.update(partial=True, records=[finished[k] for k in sorted(finished)])
        Path(a.out).write_text(json.dumps(out, indent=1))

    done, run = run_batch(llm, jobs, a.max_tokens, on_done, a.temperature, a.seed)
    records = [finished.get(by_rid[rid][0]) or record(rid, done[rid]) for rid, _, _ in jobs]
    after = spec_counters(llm)
    out = _run_info(a, llm, start_s)
    out.update(run)
    out["spec_decode_run"] = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in after}
    out["records"] = records
    out["summary"] = summarize(records, wall=run["wall_s"], engine_steps=run["engine_steps"])
    Path(a.out).write_text(json.dumps(out, indent=1))
    print(json.dumps(out["summary"]))
    return 0


def summarize(records: list[dict], wall: Optional[float] = None, engine_steps: Optional[int] = None) -> dict[str, Any]:
    """Totals of a run. One at a time, seconds are the records' own seconds summed; batched
    (`wall` given), the batch's wall time: seconds_per_record = wall / n."""
    n = len(records)
    if not n:
        return {"n": 0}
    valid = sum(1 for r in records if r.get("valid"))
    secs = wall if wall is not None else sum(r.get("seconds", 0.0) for r in records)
    toks = sum(r.get("tokens", 0) for r in records)
    steps = sum(r.get("forwards", 0) for r in records)
    drafts = sum(r.get("drafts", 0) for r in records)
    acc = sum(r.get("accepted", 0) for r in records)
    out = {"n": n, "valid": valid, "valid_rate": valid / n, "tokens": toks, "forwards": steps,
           "tokens_per_step": toks / steps if steps else 0.0, "draft_steps": drafts,
           "accepted_per_draft_step": acc / drafts if drafts else 0.0, "seconds_per_record": secs / n,
           "valid_records_per_s": valid / secs if secs else 0.0, "seconds": secs}
    if engine_steps is not None:
        out["engine_steps"] = engine_steps
        out["tokens_per_engine_step"] = toks / engine_steps if engine_steps else 0.0
    return out


def _tag(tag: str) -> str:
    return f"-{tag}" if tag else ""


def cmd_all(a: argparse.Namespace) -> int:
    out_dir = Path(a.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, **cpu_env())
    for cfg in a.configs.split(","):
        cmd = [sys.executable, "-m", "benchmarks.vllm_e2e", "run", "--config", cfg,
               "--model", a.model, "--k", str(a.k), "--max-tokens", str(a.max_tokens),
               "--out", str(out_dir / f"{a.model}-{cfg}{_tag(a.tag)}.json"), "--skip", str(a.skip),
               "--batch", str(a.batch)]
        if a.n is not None:
            cmd += ["--n", str(a.n)]
        if a.time_budget:
            cmd += ["--time-budget", str(a.time_budget)]
        print("+", " ".join(cmd), flush=True)
        subprocess.run(cmd, env=env, check=False)
    return 0


def _summary_of(run: dict, cut: Optional[int] = None) -> Optional[dict]:
    """summarize() of a stored run (its first `cut` records); None when a batched run is cut
    (its wall time covers all its records and cannot be split)."""
    recs = run["records"][:cut] if cut else run["records"]
    if run.get("batch", 1) > 1:
        if len(recs) != len(run["records"]) or "wall_s" not in run:
            return None
        return summarize(recs, wall=run["wall_s"], engine_steps=run.get("engine_steps"))
    return summarize(recs)


def cmd_summary(a: argparse.Namespace) -> int:
    """A markdown table of the runs in --out-dir: over each run's own records and over the
    instances every run finished (the common prefix)."""
    runs = {}
    for cfg in CONFIGS:
        f = Path(a.out_dir) / f"{a.model}-{cfg}{_tag(a.tag)}.json"
        if f.is_file():
            runs[cfg] = json.loads(f.read_text())
    if not runs:
        print("no runs found")
        return 1
    first = next(iter(runs.values()))
    batch = first.get("batch", 1)
    how = "records one at a time" if batch <= 1 else f"all records submitted at once, max_num_seqs {batch}"
    common = min(len(r["records"]) for r in runs.values())
    lines = [f"model {a.model}; greedy; K={first['k']} speculative tokens; {how}", "",
             "| config | instances | valid | valid rate | tokens/forward | accepted/draft step | s/record | valid records/s |",
             "|---|---|---|---|---|---|---|---|"]
    cuts = [("all records of the run", None)]
    if any(len(r["records"]) != common for r in runs.values()):
        cuts.append((f"first {common} instances (common to all runs)", common))
    for label, cut in cuts:
        lines.append(f"| **{label}** | | | | | | | |")
        for cfg, r in runs.items():
            s = _summary_of(r, cut)
            if s is None:
                lines.append(f"| {cfg} | {common} | | | | | (batched run: not split) | |")
                continue
            lines.append(f"| {cfg} | {s['n']} | {s['valid']} | {s['valid_rate']:.2f} | {s['tokens_per_step']:.2f} | "
                         f"{s['accepted_per_draft_step']:.2f} | {s['seconds_per_record']:.2f} | "
                         f"{s['valid_records_per_s']:.3f} |")
    if batch > 1:
        lines += ["", "tokens per engine step (one batched forward, shared by the records it serves): "
                  + ", ".join(f"{cfg} {(_summary_of(r) or {}).get('tokens_per_engine_step', 0.0):.2f}"
                              for cfg, r in runs.items())]
    fs, pl = runs.get("factorspec_draft"), runs.get("factorspec")
    if fs and pl:
        n = min(len(fs["records"]), len(pl["records"]))
        same = sum(1 for x, y in zip(fs["records"][:n], pl["records"][:n]) if x.get("token_ids") == y.get("token_ids"))
        lines += ["", f"factorspec_draft vs factorspec (same masks, no drafts): identical output tokens on "
                  f"{same} of {n} instances"]
    text = "\n".join(lines)
    print(text)
    if a.write:
        Path(a.write).write_text(text + "\n")
    return 0


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="benchmarks.vllm_e2e")
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("run", "all"):
        p = sub.add_parser(name)
        p.add_argument("--model", default="smollm2-135m")
        p.add_argument("--n", type=int, default=None)
        p.add_argument("--skip", type=int, default=0)
        p.add_argument("--k", type=int, default=32)
        p.add_argument("--max-tokens", type=int, default=512)
        p.add_argument("--temperature", type=float, default=0.0, help="0 (default): greedy")
        p.add_argument("--seed", type=int, default=None, help="with --temperature: record k gets seed SEED + k")
        p.add_argument("--time-budget", type=float, default=0.0, help="seconds; stop starting records after")
        p.add_argument("--batch", type=int, default=1,
                       help="submit all records at once to an engine with max_num_seqs BATCH (1: one at a time)")
        if name == "run":
            p.add_argument("--config", choices=CONFIGS, required=True)
            p.add_argument("--out", required=True)
        else:
            p.add_argument("--configs", default=",".join(CONFIGS))
            p.add_argument("--out-dir", default="bench/vllm")
            p.add_argument("--tag", default="", help="output files <model>-<config>-TAG.json (e.g. b8)")
    p = sub.add_parser("summary")
    p.add_argument("--model", default="qwen2.5-coder-0.5b")
    p.add_argument("--out-dir", default="bench/vllm")
    p.add_argument("--tag", default="", help="the runs' files are <model>-<config>-TAG.json")
    p.add_argument("--write", default="")
    a = ap.parse_args(argv)
    return {"run": cmd_run, "all": cmd_all, "summary": cmd_summary}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
