"""NATURAL PLAN trip records through SGLang on one GPU: three configurations, one engine each.

    syntax    xgrammar, the spec's plain JSON schema (no relations), no speculation
    ngram     NGRAM speculation (corpus drafts) + xgrammar, plain schema
    factorspec  FactorSpec grammar backend (relations) + NGRAM worker with FactorSpec drafts

Per configuration: valid rate (benchmarks.natural_plan.check_plan), accepted tokens per verify
step (SGLang's meta_info: completion_tokens / spec_verify_ct), decode throughput (completion
tokens / wall second of the batch) and valid records per GPU-second (one GPU). Writes a JSON
line per configuration to --out and prints a table.

Model: SGLang reads a Hugging Face folder; the embedded GGUF is converted once to bf16
safetensors (factorspec.models.load_model + save_pretrained) into --model-dir.

Usage: python microbench/gpu_sglang_bench.py --out DIR [--n 48] [--configs syntax,ngram,factorspec]
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

# Registers the "factorspec" grammar backend here and, because spawn re-imports this file as
# __mp_main__, in SGLang's scheduler process too.
import factorspec.integrations.sglang as fs_sglang  # noqa: E402
from factorspec.integrations.sglang.launch_server import write_plugin_dist  # noqa: E402


def convert_model(name: str, out: Path) -> Path:
    if (out / "config.json").exists():
        return out
    import torch

    from factorspec.models import load_model, load_tokenizer

    t = time.time()
    model = load_model(name, dtype=torch.bfloat16)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out))
    load_tokenizer(name).save_pretrained(str(out))
    print(f"converted {name} -> {out} in {time.time() - t:.0f} s", flush=True)
    return out


def load_problems(n: int):
    from factorspec.data import natural_plan_file
    from benchmarks.natural_plan import load_instances

    p = natural_plan_file()
    if p.exists():
        probs = list(load_instances(str(p)).values())
        src = str(p)
    else:  # generated instances with the same rules (the data file is not on this machine)
        from benchmarks.natural_plan.generate import generate_file
        from benchmarks.natural_plan.problem import parse_instance

        probs = []
        for cities in range(3, 11):
            probs += [parse_instance(iid, raw) for iid, raw in generate_file(cities, 7, max(1, n // 8 + 1)).items()]
        src = "generated"
    probs.sort(key=lambda q: (q.n, q.id))
    step = max(1, len(probs) // n)
    return probs[::step][:n], src


def plain_schema(spec: dict) -> dict:
    s = copy.deepcopy(spec)
    s.pop("x-factorspec", None)
    return s


def run_config(name: str, model_dir: Path, problems, args) -> dict:
    import sglang as sgl
    from transformers import AutoTokenizer

    from benchmarks.natural_plan import to_spec
    from benchmarks.natural_plan.check import check_plan
    from benchmarks.natural_plan.problem import json_prompt

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    prompts = [tok.apply_chat_template([{"role": "user", "content": json_prompt(p)}], tokenize=False,
                                       add_generation_prompt=True) for p in problems]
    specs = [to_spec(p) for p in problems]
    kw = dict(model_path=str(model_dir), mem_fraction_static=0.6, log_level="warning",
              cuda_graph_max_bs=max(8, len(problems)), max_running_requests=max(8, len(problems)))
    if name == "syntax":
        kw.update(grammar_backend="xgrammar")
        keys = [json.dumps(plain_schema(s)) for s in specs]
    elif name == "ngram":
        kw.update(grammar_backend="xgrammar", speculative_algorithm="NGRAM",
                  speculative_num_draft_tokens=args.draft_tokens)
        keys = [json.dumps(plain_schema(s)) for s in specs]
    else:
        os.environ["FACTORSPEC_SGLANG_DRAFTER"] = "1"
        fs_sglang.install_drafter()
        kw.update(grammar_backend="factorspec", speculative_algorithm="NGRAM",
                  speculative_num_draft_tokens=args.draft_tokens)
        keys = [json.dumps(s) for s in specs]
    t0 = time.time()
    eng = sgl.Engine(**kw)
    start_s = time.time() - t0
    sps = [{"json_schema": k, "max_new_tokens": args.max_new_tokens, "temperature": 0.0} for k in keys]
    # warm-up on two requests (compiles grammars, Triton kernels), then the timed batch
    eng.generate(prompts[:2], sps[:2])
    t0 = time.time()
    outs = eng.generate(prompts, sps)
    wall = time.time() - t0
    eng.shutdown()
    valid, toks, verify = 0, 0, 0
    errors = {}
    for p, o in zip(problems, outs):
        mi = o.get("meta_info", {})
        toks += int(mi.get("completion_tokens", 0))
        verify += int(mi.get("spec_verify_ct", 0) or 0)
        try:
            errs = check_plan(p, json.loads(o["text"]))
        except ValueError as e:
            errs = [f"not JSON: {e}"]
        if not errs:
            valid += 1
        else:
            errors[p.id] = [str(e) for e in errs[:2]]
    res = {
        "config": name, "requests": len(problems), "valid": valid, "valid_rate": valid / len(problems),
        "completion_tokens": toks, "verify_steps": verify,
        "accepted_per_verify": (toks / verify) if verify else None,
        "decode_tok_per_s": toks / wall, "valid_per_gpu_s": valid / wall, "wall_s": wall, "engine_start_s": start_s,
        "draft_tokens": args.draft_tokens if name != "syntax" else None,
        "some_errors": dict(list(errors.items())[:3]),
    }
    print(json.dumps(res), flush=True)
    return res


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="microbench/out")
    ap.add_argument("--model", default="qwen2.5-coder-0.5b")
    ap.add_argument("--model-dir", default=None)
    ap.add_argument("--n", type=int, default=48)
    ap.add_argument("--draft-tokens", type=int, default=16)
    ap.add_argument("--max-new-tokens", type=int, default=400)
    ap.add_argument("--configs", default="syntax,ngram,factorspec")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    os.environ["PYTHONPATH"] = write_plugin_dist(str(out / "plugin")) + os.pathsep + str(REPO) + \
        (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")
    model_dir = convert_model(args.model, Path(args.model_dir or (out / f"{args.model}-bf16")))
    problems, src = load_problems(args.n)
    print(f"{len(problems)} instances from {src}", flush=True)
    results = []
    for name in args.configs.split(","):
        try:
            results.append(run_config(name.strip(), model_dir, problems, args))
        except Exception as e:  # noqa: BLE001 - report and go on with the next configuration
            import traceback

            traceback.print_exc()
            results.append({"config": name, "error": f"{type(e).__name__}: {e}"})
    with open(out / "sglang_natural_plan.jsonl", "w", encoding="utf-8") as f:
        for r in results:
            f.write(json.dumps(r) + "\n")
    print(f"\n{'config':12s} {'valid':>7s} {'acc/verify':>10s} {'tok/s':>8s} {'valid/GPU-s':>11s}")
    for r in results:
        if "error" in r:
            print(f"{r['config']:12s} ERROR {r['error']}")
            continue
        apv = f"{r['accepted_per_verify']:.2f}" if r["accepted_per_verify"] else "-"
        print(f"{r['config']:12s} {r['valid_rate']:7.2%} {apv:>10s} {r['decode_tok_per_s']:8.1f} {r['valid_per_gpu_s']:11.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
