"""The reference engine over NATURAL PLAN instances with a RANDOM-INIT Qwen2.5-0.5B-shaped model
and the default model's real tokenizer: decode timings, tokens per verify step, forwards per
record, and the kernels the engine actually dispatched (on CUDA: the Triton bitmask kernel).

Why random weights: the embedded model is a 491 MB GGUF that cannot travel to the GPU machine
(64 MiB per call). A forward's cost does not depend on the weights, so decode seconds, forward
time and kernel time are meaningful; validity, exact match and draft acceptance are NOT the real
model's (FactorSpec's masks still make every finished record valid; the tokens per step of its
certain drafts are a property of the constraints, but where a record has real choices a random
model chooses differently). Every output says so.

Configurations (names as in `benchmarks.runner`): `syntax` (xgrammar, relations ignored),
`fs_mask` (FactorSpec masks, no drafts), `fs_full` (certain runs + trees, per-request width),
each with in-process matchers; a `+pool` suffix serves the FactorSpec configuration from
`--workers` CPU mask worker processes (`Engine(..., pool=MaskWorkerPool(...))`).

    python3 microbench/gpu_engine.py --out OUT/engine.json                 # GPU defaults
    python3 microbench/gpu_engine.py --device cpu --tiny --limit 1 --batches 1 --out x.json

On CUDA the run fails (exit 3, after writing its JSON) unless every constrained configuration
dispatched the Triton bitmask kernel and never its torch fallback. Exit 2: a run errored.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
CARRY = Path(os.environ.get("FACTORSPEC_GPU_CARRY", ROOT / ".gpu_carry"))

LABEL = ("RANDOM-INIT model with the Qwen2.5-0.5B architecture and the real Qwen2.5-Coder tokenizer: "
         "timings are meaningful (forward cost does not depend on weights); valid/exact-match/"
         "acceptance figures are NOT the real model's")

# Qwen2.5-0.5B (Qwen2.5-Coder-0.5B-Instruct has the same shapes; its GGUF conversion here has an
# untied output matrix, which costs the same FLOPs)
QWEN25_05B = dict(vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                  num_attention_heads=14, num_key_value_heads=2, hidden_act="silu",
                  max_position_embeddings=32768, rms_norm_eps=1e-6, tie_word_embeddings=True,
                  use_sliding_window=False, bos_token_id=151643, eos_token_id=151645,
                  pad_token_id=151643)
TINY = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2)
CONFIGS = ("syntax", "fs_mask", "fs_full", "fs_mask+pool", "fs_full+pool")


def build_model(device: str, dtype_name: str, seed: int, overrides: dict) -> Any:
    import torch
    from transformers import AutoModelForCausalLM, Qwen2Config

    kw = {**QWEN25_05B, **overrides}
    try:
        cfg = Qwen2Config(**kw, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0})
    except TypeError:  # older transformers
        cfg = Qwen2Config(**kw, rope_theta=1000000.0)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[dtype_name]
    torch.manual_seed(seed)
    with torch.device(device):  # initialised where it runs (fast on a GPU)
        try:
            model = AutoModelForCausalLM.from_config(cfg, dtype=dtype)
        except TypeError:
            model = AutoModelForCausalLM.from_config(cfg, torch_dtype=dtype)
    model = model.to(device=device, dtype=dtype).eval()
    return model, cfg


def default_tokenizer() -> str:
    """The carried tokenizer folder (GPU machine) or the registered default model's name."""
    d = CARRY / "tokenizer"
    if (d / "tokenizer_config.json").is_file():
        return str(d)
    from factorspec.models import DEFAULT_MODEL

    return DEFAULT_MODEL


def default_data() -> str:
    f = CARRY / "data" / "natural_plan" / "trip_planning_100.json"
    if f.is_file():
        return str(f)
    from benchmarks.commands import _default_data

    return _default_data()


# ---------------------------------------------------------------- which kernels ran
class KernelCounter:
    """Counts the calls of the engine's kernel calls (`factorspec.engine.engine`'s masked_argmax,
    tree_batch and verify_batch, which call factorspec.kernels) by the
    implementation behind them, and which side of `factorspec.kernels.apply_bitmask` ran."""

    def __init__(self) -> None:
        self.calls: Counter = Counter()
        self._installed = False

    def install(self) -> None:
        if self._installed:
            return
        from factorspec.engine import engine as eng
        import factorspec.kernels.bitmask as kb

        for name in ("masked_argmax", "tree_batch", "verify_batch"):
            fn = getattr(eng, name)
            setattr(eng, name, self._wrap(f"engine.{name} -> {fn.__module__}.{fn.__name__}", fn))
        kb.apply_bitmask_torch = self._wrap("kernels.apply_bitmask: torch", kb.apply_bitmask_torch)
        try:  # the dispatcher imports this function from its module at each call
            import factorspec.kernels.bitmask_triton as kt

            kt.apply_bitmask_triton = self._wrap("kernels.apply_bitmask: triton", kt.apply_bitmask_triton)
        except ImportError:
            self.calls["triton not importable"] = 0
        self._installed = True

    def _wrap(self, key: str, fn: Any) -> Any:
        calls = self.calls

        def counted(*a: Any, **k: Any) -> Any:
            calls[key] += 1
            return fn(*a, **k)

        counted.__name__ = getattr(fn, "__name__", key)
        counted.__module__ = getattr(fn, "__module__", "")
        return counted

    def take(self) -> dict:
        out = {k: v for k, v in sorted(self.calls.items())}
        self.calls.clear()
        return out


# ---------------------------------------------------------------- runs
def _env(device: str) -> dict:
    import torch

    env: dict[str, Any] = {"python": platform.python_version(), "torch": torch.__version__,
                           "cpu_count": os.cpu_count(), "device": device}
    import importlib.metadata as md

    for mod in ("triton", "transformers", "xgrammar", "tokenizers"):
        try:
            __import__(mod)
            env[mod] = md.version(mod)
        except Exception as e:  # noqa: BLE001 - report, do not fail
            env[mod] = f"unavailable: {type(e).__name__}: {e}"
    if device.startswith("cuda"):
        env["gpu"] = torch.cuda.get_device_name(0)
        env["triton_interpret"] = os.environ.get("TRITON_INTERPRET", "")
    return env


def _timings(rows: list[dict]) -> dict:
    return next((r["engine_timings"] for r in rows if "engine_timings" in r), {})


def _finish_reasons(rows: list[dict]) -> dict:
    c = Counter(str(r.get("finish_reason", "?")).split(":")[0] for r in rows)
    return dict(sorted(c.items()))


def _odd_finishes(rows: list[dict], n: int = 3) -> list[str]:
    """The first few finish reasons other than stop/length, with their instance (diagnosis)."""
    odd = [f"{r['id']}: {r.get('finish_reason')}" for r in rows
           if str(r.get("finish_reason")) not in ("stop", "length")]
    return [s[:300] for s in odd[:n]]


def run_all(args: argparse.Namespace) -> tuple[dict, int]:
    import torch

    from benchmarks.commands import _problems
    from benchmarks.runner import Context, run_config, summarize
    from factorspec.models import load_tokenizer
    from factorspec.models.tokens import logits_vocab_size

    t_start = time.perf_counter()
    overrides = dict(TINY) if args.tiny else {}
    if args.layers:
        overrides["num_hidden_layers"] = args.layers
    model, cfg = build_model(args.device, args.dtype, args.seed, overrides)
    tok_name = args.tokenizer or default_tokenizer()
    tok = load_tokenizer(tok_name)
    data = args.natural_plan or default_data()
    problems = _problems(data, args.limit)
    ctx = Context(model, tok, logits_vocab_size(model), args.max_width, model_name=tok_name, workers=0)
    counter = KernelCounter()
    counter.install()
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        raise SystemExit(f"unknown configurations {unknown}; known: {', '.join(CONFIGS)}")
    batches = [int(b) for b in args.batches.split(",") if b.strip()]
    params = sum(p.numel() for p in model.parameters())
    result: dict[str, Any] = {
        "label": LABEL,
        "model": {"architecture": "Qwen2ForCausalLM (random init, seed %d)" % args.seed, "params": params,
                  "dtype": args.dtype, "config": {k: getattr(cfg, k) for k in
                                                  ("hidden_size", "num_hidden_layers", "num_attention_heads",
                                                   "num_key_value_heads", "intermediate_size", "vocab_size",
                                                   "tie_word_embeddings")},
                  "tokenizer": tok_name},
        "env": _env(args.device),
        "data": data, "instances": [p.id for p in problems], "batches": batches, "configs": configs,
        "max_new_tokens": args.max_new_tokens, "max_width": args.max_width, "workers": args.workers,
        "runs": [], "skipped": [], "errors": [], "exactness": {},
    }
    rc = 0
    setup_s = time.perf_counter() - t_start
    try:
        # warm-up (not timed): CUDA/cuBLAS init, Triton compiles, spec compiles, the worker pool
        t0 = time.perf_counter()
        try:
            pooled = any(c.endswith("+pool") for c in configs)
            if pooled:
                ctx.workers = args.workers
                ctx.pool(max(batches))  # sized once for the largest batch
            for c in configs if args.warmup_tokens > 0 else ():
                base = c.split("+")[0]
                ctx.workers = args.workers if c.endswith("+pool") else 0
                for b in sorted({1, max(batches)}):
                    run_config(ctx, base, problems[:b], b, max_new_tokens=args.warmup_tokens, progress=False)
            ctx.workers = 0
            if args.device.startswith("cuda"):
                torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001 - the timed runs report their own failures
            result["errors"].append({"config": "warm-up", "batch": 0, "error": f"{type(e).__name__}: {e}",
                                     "traceback": traceback.format_exc()[-2000:]})
            rc = 2
        result["warmup_kernel_calls"] = counter.take()
        result["setup_seconds"] = round(setup_s, 2)
        result["warmup_seconds"] = round(time.perf_counter() - t0, 2)
        tokens: dict[tuple, dict] = {}
        for c, batch in run_order(configs, batches):
            elapsed = time.perf_counter() - t_start
            if args.budget_s and elapsed > args.budget_s:
                result["skipped"].append({"config": c, "batch": batch,
                                          "why": f"time budget {args.budget_s}s spent ({elapsed:.0f}s)"})
                continue
            base = c.split("+")[0]
            ctx.workers = args.workers if c.endswith("+pool") else 0
            try:
                rows, wall = run_config(ctx, base, problems, batch, max_new_tokens=args.max_new_tokens,
                                        progress=args.progress)
            except Exception as e:  # noqa: BLE001 - one failing run does not end the others
                result["errors"].append({"config": c, "batch": batch, "error": f"{type(e).__name__}: {e}",
                                         "traceback": traceback.format_exc()[-2000:]})
                counter.take()
                rc = 2
                continue
            s = summarize(base, rows, wall)
            calls = counter.take()
            # one build_tree_verify_inputs call per engine step (one verify forward, whole batch)
            steps = sum(v for k, v in calls.items() if k.startswith("engine.tree_batch"))
            s.update(name=c, batch=batch, kernel_calls=calls, finish_reasons=_finish_reasons(rows),
                     odd_finishes=_odd_finishes(rows),
                     tokens_per_record=sum(r["tokens"] for r in rows) / max(1, len(rows)),
                     engine_steps=steps,
                     ms_per_engine_step={k: round(1e3 * v / max(1, steps), 3)
                                         for k, v in _timings(rows).items() if k != "prefill"},
                     label="random-init model: validity/acceptance are not the real model's")
            result["runs"].append(s)
            tokens[(c, batch)] = {r["id"]: r["token_ids"] for r in rows}
            print(_line(s), flush=True)
            _write(args.out, result)
        # same tokens as fs_mask (drafts change nothing but speed) and pooled = in-process
        for batch in batches:
            for c in configs:
                ref_c = c.split("+")[0] if c.endswith("+pool") else "fs_mask"
                if c != ref_c and c.startswith("fs_") and (c, batch) in tokens and (ref_c, batch) in tokens:
                    ref, got = tokens[(ref_c, batch)], tokens[(c, batch)]
                    same = sum(got[k] == ref[k] for k in ref)
                    result["exactness"][f"{c}_vs_{ref_c}_batch{batch}"] = f"{same}/{len(ref)}"
    finally:
        ctx.close()
    result["dispatch"] = check_dispatch(result, args.device)
    if args.device.startswith("cuda") and not result["dispatch"]["ok"] and rc == 0:
        rc = 3
    result["total_seconds"] = round(time.perf_counter() - t_start, 2)
    _write(args.out, result)
    return result, rc


def run_order(configs: list[str], batches: list[int]) -> list[tuple[str, int]]:
    """What a time budget cuts last: fs_full (in-process, then pooled) at every batch first, then
    the token-by-token configurations, larger batches first (fewer forwards per record)."""
    first = [(c, b) for b in batches for c in configs if c.startswith("fs_full")]
    rest = [(c, b) for b in sorted(batches, reverse=True) for c in configs if not c.startswith("fs_full")]
    return first + rest


def check_dispatch(result: dict, device: str) -> dict:
    """On CUDA every constrained run must have used the Triton bitmask kernel, never its torch
    fallback; on CPU the torch side is expected."""
    want, avoid = (("kernels.apply_bitmask: triton", "kernels.apply_bitmask: torch") if device.startswith("cuda")
                   else ("kernels.apply_bitmask: torch", "kernels.apply_bitmask: triton"))
    bad = []
    for s in result["runs"]:
        k = s["kernel_calls"]
        if k.get(want, 0) == 0 or k.get(avoid, 0) > 0:
            bad.append(f"{s['name']} b{s['batch']}: {k}")
    return {"ok": not bad and bool(result["runs"]), "expected": want, "not_expected": avoid, "bad_runs": bad}


def _line(s: dict) -> str:
    return (f"{s['name']:14s} b{s['batch']:<2d} valid {s['valid_rate']:.2f}  tok/step "
            f"{s['tokens_per_verify_step']:6.2f}  fwd/rec {s['forward_passes_per_record']:7.1f}  "
            f"decode s/rec {s['decode_seconds_per_record']:8.3f}  prefill s/rec {s['prefill_seconds_per_record']:.3f}  "
            f"steps {s['engine_steps']}  ms/step {s['ms_per_engine_step']}")


def _write(path: str, result: dict) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    tmp = f"{path}.tmp"
    with open(tmp, "w") as fh:
        json.dump(result, fh, indent=1, default=str)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="JSON results (rewritten after every run)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", default=None, choices=["bf16", "fp16", "fp32"],
                    help="default bf16 on CUDA, fp32 on CPU")
    ap.add_argument("--limit", type=int, default=8, help="first N NATURAL PLAN instances")
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--configs", default="syntax,fs_mask,fs_full,fs_full+pool")
    ap.add_argument("--workers", type=int, default=4, help="mask worker processes for the +pool configurations")
    ap.add_argument("--max-width", type=int, default=64)
    ap.add_argument("--max-new-tokens", type=int, default=400)
    ap.add_argument("--warmup-tokens", type=int, default=6, help="0: no warm-up (first run then pays compiles)")
    ap.add_argument("--layers", type=int, default=None, help="override the layer count (24)")
    ap.add_argument("--tiny", action="store_true", help="hidden 64, 2 layers (CPU plumbing tests)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tokenizer", default=None, help="tokenizer folder or model name (default: .gpu_carry/tokenizer "
                                                      "if present, else the default model)")
    ap.add_argument("--natural-plan", default=None)
    ap.add_argument("--budget-s", type=float, default=0.0, help="start no new run after this many seconds (0: none)")
    ap.add_argument("--progress", action="store_true", help="one stderr line per record")
    args = ap.parse_args(argv)
    if args.dtype is None:
        args.dtype = "bf16" if args.device.startswith("cuda") else "fp32"
    if args.device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            print("no CUDA device (use --device cpu for a plumbing run)", file=sys.stderr)
            return 4
    print(f"# {LABEL}", flush=True)
    try:
        result, rc = run_all(args)
    except Exception as e:  # noqa: BLE001 - leave a JSON that says why
        traceback.print_exc()
        _write(args.out, {"label": LABEL, "fatal": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc(),
                          "runs": [], "errors": [], "skipped": []})
        return 2
    print(f"# dispatch: {json.dumps(result['dispatch'])}")
    print(f"# exactness: {json.dumps(result['exactness'])}  skipped: {len(result['skipped'])}  "
          f"errors: {len(result['errors'])}  total {result['total_seconds']}s  rc={rc}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
