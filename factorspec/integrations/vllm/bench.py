"""End-to-end NATURAL PLAN runs through vLLM (CPU), one engine configuration per process.

    python -m factorspec.integrations.vllm.bench run --config factorspec_draft --model smollm2-135m \
        --n 3 --out /tmp/fs.json
    python -m factorspec.integrations.vllm.bench all --model qwen2.5-coder-0.5b --n 20 --out-dir bench/vllm

Configurations (greedy, temperature 0, max_tokens 512, records decoded one at a time):
  xgrammar          vLLM structured outputs (xgrammar) with the schema minus x-factorspec: syntax only
  xgrammar_ngram    the same plus vLLM's `ngram` proposer (num_speculative_tokens K)
  factorspec        FactorSpec masks through the plugin, no drafts
  factorspec_draft  FactorSpec masks plus FactorSpec certain drafts (custom_class proposer, K)

Per record: output text and token ids, validity (JSON parse + the task's rules via
`factorspec.natural_plan.check_plan`), output tokens, model forwards (tokens - accepted drafts:
each forward yields one sampled token plus the drafts it accepted; the first is the prefill),
vLLM's spec-decode counters for the record, and seconds; per run: vLLM's spec-decode counters (drafts, draft tokens,
accepted tokens). Engines run in-process (VLLM_ENABLE_V1_MULTIPROCESSING=0) with the plugin
registered by `register()`, so no entry point is needed here.
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


def make_llm(config: str, model_dir: str, k: int, mem: float = 0.25) -> Any:
    from vllm import LLM

    import factorspec.integrations.vllm as fv

    fv.register()
    kw: dict[str, Any] = {}
    if config == "xgrammar_ngram":
        kw["speculative_config"] = {"method": "ngram", "num_speculative_tokens": k,
                                    "prompt_lookup_max": 4, "prompt_lookup_min": 1}
    elif config == "factorspec_draft":
        kw["speculative_config"] = {"method": "custom_class", "model": fv.PROPOSER, "num_speculative_tokens": k}
    return LLM(model_dir, dtype="bfloat16", max_model_len=4096, max_num_seqs=4, enforce_eager=True,
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


def run_one(llm: Any, prompt_ids: list[int], schema: dict, max_tokens: int, rid: str) -> dict[str, Any]:
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt
    from vllm.sampling_params import StructuredOutputsParams

    sp = SamplingParams(temperature=0.0, max_tokens=max_tokens,
                        structured_outputs=StructuredOutputsParams(json=schema))
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


def prompt_ids(tok: Any, content: str) -> list[int]:
    text = tok.apply_chat_template([{"role": "user", "content": content}], tokenize=False,
                                   add_generation_prompt=True)
    return list(tok.encode(text, add_special_tokens=False))


def validate(problem: Any, text: str) -> tuple[bool, str]:
    from factorspec.natural_plan.check import check_plan

    try:
        rec = json.loads(text)
    except ValueError as e:
        return False, f"not JSON: {e}"
    errs = check_plan(problem, rec)
    return (not errs), "; ".join(errs[:3])


def instances(n: Optional[int], skip: int = 0) -> list[Any]:
    from factorspec.data import shared_data_dir
    from factorspec.natural_plan import load_instances

    items = list(load_instances(str(shared_data_dir() / "natural_plan" / "trip_planning_100.json")).values())
    items = items[skip:]
    return items if n is None else items[:n]


def cmd_run(a: argparse.Namespace) -> int:
    from factorspec.integrations.vllm.models import hf_model_dir
    from factorspec.natural_plan import json_prompt, to_spec

    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    model_dir = str(hf_model_dir(a.model))
    t = time.perf_counter()
    llm = make_llm(a.config, model_dir, a.k)
    start_s = time.perf_counter() - t
    tok = llm.get_tokenizer()
    probs = instances(a.n, a.skip)
    deadline = time.monotonic() + a.time_budget if a.time_budget else None
    records = []
    for i, p in enumerate(probs):
        if deadline is not None and time.monotonic() > deadline:
            break
        doc = to_spec(p)
        schema = strip_relations(doc) if a.config.startswith("xgrammar") else doc
        ids = prompt_ids(tok, json_prompt(p))
        before = spec_counters(llm)
        r = run_one(llm, list(ids), schema, a.max_tokens, f"{a.config}-{i}")
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
    from factorspec.integrations.vllm import patches, proposer

    out = {"config": a.config, "model": a.model, "k": a.k, "engine_start_s": start_s, "records": records,
           "spec_decode": spec_counters(llm), "mask_fill": dict(patches.STATS),
           "proposer": dict(proposer.STATS)}
    out["summary"] = summarize(records)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=1))
    print(json.dumps(out["summary"]))
    return 0


def summarize(records: list[dict]) -> dict[str, Any]:
    n = len(records)
    if not n:
        return {"n": 0}
    valid = sum(1 for r in records if r.get("valid"))
    secs = sum(r.get("seconds", 0.0) for r in records)
    toks = sum(r.get("tokens", 0) for r in records)
    steps = sum(r.get("forwards", 0) for r in records)
    drafts = sum(r.get("drafts", 0) for r in records)
    acc = sum(r.get("accepted", 0) for r in records)
    return {"n": n, "valid": valid, "valid_rate": valid / n, "tokens": toks, "forwards": steps,
            "tokens_per_step": toks / steps if steps else 0.0, "draft_steps": drafts,
            "accepted_per_draft_step": acc / drafts if drafts else 0.0, "seconds_per_record": secs / n,
            "valid_records_per_s": valid / secs if secs else 0.0, "seconds": secs}


def cmd_all(a: argparse.Namespace) -> int:
    out_dir = Path(a.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, **cpu_env())
    for cfg in a.configs.split(","):
        cmd = [sys.executable, "-m", "factorspec.integrations.vllm.bench", "run", "--config", cfg,
               "--model", a.model, "--k", str(a.k), "--max-tokens", str(a.max_tokens),
               "--out", str(out_dir / f"{a.model}-{cfg}.json"), "--skip", str(a.skip)]
        if a.n is not None:
            cmd += ["--n", str(a.n)]
        if a.time_budget:
            cmd += ["--time-budget", str(a.time_budget)]
        print("+", " ".join(cmd), flush=True)
        subprocess.run(cmd, env=env, check=False)
    return 0


def cmd_summary(a: argparse.Namespace) -> int:
    """A markdown table of the runs in --out-dir: over each run's own records and over the
    instances every run finished (the common prefix)."""
    runs = {}
    for cfg in CONFIGS:
        f = Path(a.out_dir) / f"{a.model}-{cfg}.json"
        if f.is_file():
            runs[cfg] = json.loads(f.read_text())
    if not runs:
        print("no runs found")
        return 1
    common = min(len(r["records"]) for r in runs.values())
    lines = [f"model {a.model}; greedy; K={next(iter(runs.values()))['k']} speculative tokens; records one at a time", "",
             "| config | instances | valid | valid rate | tokens/forward | accepted/draft step | s/record | valid records/s |",
             "|---|---|---|---|---|---|---|---|"]
    for label, cut in (("all records of the run", None), (f"first {common} instances (common to all runs)", common)):
        lines.append(f"| **{label}** | | | | | | | |")
        for cfg, r in runs.items():
            s = summarize(r["records"][:cut] if cut else r["records"])
            lines.append(f"| {cfg} | {s['n']} | {s['valid']} | {s['valid_rate']:.2f} | {s['tokens_per_step']:.2f} | "
                         f"{s['accepted_per_draft_step']:.2f} | {s['seconds_per_record']:.2f} | "
                         f"{s['valid_records_per_s']:.3f} |")
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
    ap = argparse.ArgumentParser(prog="factorspec.integrations.vllm.bench")
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("run", "all"):
        p = sub.add_parser(name)
        p.add_argument("--model", default="smollm2-135m")
        p.add_argument("--n", type=int, default=None)
        p.add_argument("--skip", type=int, default=0)
        p.add_argument("--k", type=int, default=32)
        p.add_argument("--max-tokens", type=int, default=512)
        p.add_argument("--time-budget", type=float, default=0.0, help="seconds; stop starting records after")
        if name == "run":
            p.add_argument("--config", choices=CONFIGS, required=True)
            p.add_argument("--out", required=True)
        else:
            p.add_argument("--configs", default=",".join(CONFIGS))
            p.add_argument("--out-dir", default="bench/vllm")
    p = sub.add_parser("summary")
    p.add_argument("--model", default="qwen2.5-coder-0.5b")
    p.add_argument("--out-dir", default="bench/vllm")
    p.add_argument("--write", default="")
    a = ap.parse_args(argv)
    return {"run": cmd_run, "all": cmd_all, "summary": cmd_summary}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
