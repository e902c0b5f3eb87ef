"""`factorspec run`'s NATURAL PLAN main job and `factorspec bench` (all configurations side by side)."""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from typing import Any


def _default_data() -> str:
    from factorspec.data import shared_data_dir

    return os.path.join(str(shared_data_dir()), "natural_plan", "trip_planning_100.json")


def _problems(path: str, limit: int | None) -> list:
    from benchmarks.natural_plan import load_instances

    probs = list(load_instances(path).values())
    return probs[:limit] if limit else probs


def _machine() -> dict:
    model = ""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    import torch

    from factorspec.models.dtype import cpu_dtype_name

    return {"cpu": model, "cores": os.cpu_count(), "torch_threads": torch.get_num_threads(),
            "cpu_dtype": cpu_dtype_name(),
            "python": platform.python_version(), "torch": torch.__version__,
            "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}


def register(sub: Any) -> None:
    """`factorspec bench` (`factorspec run` is defined in factorspec.cli and calls `cmd_run`
    for the NATURAL PLAN main job)."""
    b = sub.add_parser("bench", help="all decoding configurations side by side on the same prompts")
    b.add_argument("--natural-plan", default=None)
    b.add_argument("--limit", type=int, default=None)
    b.add_argument("--model", default=None)
    b.add_argument("--batch", type=int, action="append", default=None, help="batch size (repeatable; default 1 and 8)")
    b.add_argument("--configs", default=None, help="comma-separated subset of configurations")
    b.add_argument("--max-width", type=int, default=64)
    b.add_argument("--max-new-tokens", type=int, default=400)
    b.add_argument("--temperature", type=float, default=0.0,
                   help="0 (default): greedy; > 0: every configuration samples, instance k with seed SEED + k")
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--workers", type=int, default=1,
                   help="CPU mask worker processes for the FactorSpec configurations; 0: in-process")
    b.add_argument("--out", required=True, help="output directory")
    b.set_defaults(func=cmd_bench)


def cmd_run(args: argparse.Namespace) -> int:
    """The main job: FactorSpec (`fs_full`) on the shared NATURAL PLAN instances."""
    from benchmarks.runner import load_context, run_config, summarize

    probs = _problems(args.natural_plan or _default_data(), args.limit)
    ctx = load_context(args.model, args.max_width, args.workers)
    try:
        rows, wall = run_config(ctx, "fs_full", probs, args.batch)
    finally:
        ctx.close()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps({k: v for k, v in r.items() if k not in ("token_ids", "engine_timings", "load_avg")},
                                ensure_ascii=False) + "\n")
    s = summarize("fs_full", rows, wall)
    print(json.dumps(s, indent=2))
    return 0 if s["valid_rate"] == 1.0 else 1


def cmd_bench(args: argparse.Namespace) -> int:
    from benchmarks.runner import BASE_CONFIGS, load_context

    probs = _problems(args.natural_plan or _default_data(), args.limit)
    configs = args.configs.split(",") if args.configs else list(BASE_CONFIGS)
    unknown = [c for c in configs if c not in BASE_CONFIGS]
    if unknown:
        print(f"unknown configurations {unknown}; known: {', '.join(BASE_CONFIGS)}", file=sys.stderr)
        return 2
    batches = args.batch or [1, 8]
    ctx = load_context(args.model, args.max_width, args.workers)
    try:
        return _bench(args, ctx, probs, configs, batches)
    finally:
        ctx.close()


def _bench(args: argparse.Namespace, ctx: Any, probs: list, configs: list, batches: list) -> int:
    from benchmarks.runner import run_config, summarize

    os.makedirs(args.out, exist_ok=True)
    summary: dict = {"machine": _machine(), "model": args.model or "qwen2.5-coder-0.5b", "workers": args.workers,
                     "instances": [p.id for p in probs], "started": time.strftime("%Y-%m-%d %H:%M:%S"),
                     "temperature": args.temperature, "seed": args.seed, "configs": [], "exactness": {}}
    with open(os.path.join(args.out, "rows.jsonl"), "w", encoding="utf-8") as fh:
        for batch in batches:
            tokens_of: dict[str, dict[str, list]] = {}
            ngram: list[dict] = []
            for config in configs:
                rows, wall = run_config(ctx, config, probs, batch, args.max_new_tokens,
                                        temperature=args.temperature, seed=args.seed)
                for r in rows:
                    fh.write(json.dumps({**{k: v for k, v in r.items() if k not in ("token_ids", "engine_timings", "load_avg")},
                                         "batch": batch},
                                        ensure_ascii=False) + "\n")
                tokens_of[config] = {r["id"]: r["token_ids"] for r in rows}
                s = summarize(config, rows, wall)
                s["batch"] = batch
                summary["configs"].append(s)
                if config.startswith("syntax_ngram"):
                    ngram.append(s)
                with open(os.path.join(args.out, "summary.json"), "w") as sf:  # partial results survive
                    json.dump(summary, sf, indent=2)
            if ngram:  # the n-gram drafter at its best width on this load
                best = min(ngram, key=lambda s: s["seconds_per_record"])
                summary["configs"].append({**best, "name": "syntax_ngram_best", "best_of": best["name"]})
            if "fs_mask" in tokens_of:
                for other in ("fs_chain", "fs_full"):
                    if other in tokens_of:
                        same = sum(tokens_of[other][k] == tokens_of["fs_mask"][k] for k in tokens_of["fs_mask"])
                        summary["exactness"][f"{other}_vs_fs_mask_batch{batch}"] = f"{same}/{len(tokens_of['fs_mask'])}"
            with open(os.path.join(args.out, "summary.json"), "w") as sf:
                json.dump(summary, sf, indent=2)
    _write_md(summary, os.path.join(args.out, "summary.md"))
    _plot(summary, os.path.join(args.out, "summary.png"))
    print(open(os.path.join(args.out, "summary.md")).read())
    return 0


def _write_md(summary: dict, path: str) -> None:
    cols = ["name", "batch", "valid_rate", "exact_match_rate", "tokens_per_verify_step",
            "forward_passes_per_record", "seconds_per_record", "decode_seconds_per_record",
            "valid_records_per_second", "load_avg"]
    t = summary.get("temperature", 0.0)
    mode = f"sampled at temperature {t}, instance k with seed {summary.get('seed', 0)} + k" if t else "greedy"
    lines = [f"# FactorSpec bench ({summary['model']}, {len(summary['instances'])} instances, {mode})", "",
             f"Machine: {json.dumps(summary['machine'])}", "",
             "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for s in summary["configs"]:
        cells = []
        for c in cols:
            v = s.get(c, "")
            cells.append(f"{v:.3f}" if isinstance(v, float) else str(v))
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Exactness (identical tokens to fs_mask): " + json.dumps(summary["exactness"])]
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")


def _plot(summary: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cs = summary["configs"]
    names = [f"{s['name']}\nb{s['batch']}" for s in cs]
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.5))
    for ax, key, title in zip(axes, ["seconds_per_record", "tokens_per_verify_step", "valid_records_per_second"],
                              ["seconds per record", "tokens per verify step", "valid records per second"]):
        ax.bar(range(len(cs)), [s[key] for s in cs])
        ax.set_xticks(range(len(cs)))
        ax.set_xticklabels(names, rotation=70, fontsize=7)
        ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
