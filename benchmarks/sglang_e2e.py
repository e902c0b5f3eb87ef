"""End-to-end NATURAL PLAN runs through SGLang's real scheduler on CPU, one engine per process.

    python -m benchmarks.sglang_e2e run --config factorspec_draft --model smollm2-135m --n 3 --out /tmp/fs.json
    python -m benchmarks.sglang_e2e all --model smollm2-135m --n 3 --out-dir bench/sglang
    python -m benchmarks.sglang_e2e table bench/sglang/*.json

``sglang.Engine`` (sglang 0.5.23, ``factorspec.integrations.sglang.cpu.cpu_engine``: ``--device
cpu``, ``torch_native`` attention with tree verify, no overlap schedule), greedy, chat prompt
``json_prompt(problem)``. Configurations:

  xgrammar                 ``--grammar-backend xgrammar``, the spec's schema minus ``x-factorspec``
                           (syntax only: xgrammar cannot express the relations), no speculation
  xgrammar_ngram           the same plus ``--speculative-algorithm NGRAM`` (K draft tokens)
  factorspec               ``--grammar-backend factorspec`` (FactorSpec masks), no speculation
  factorspec_draft         FactorSpec masks + NGRAM with FactorSpec's drafts, fixed width K
  factorspec_draft_ragged  the same with per-request verify widths (FACTORSPEC_SGLANG_RAGGED)

Per record: text, token ids, validity by the independent checker
(``benchmarks.natural_plan.check_plan``) and by the spec's own check (``compile_spec(spec).check``),
output tokens, SGLang's ``spec_verify_ct``, forwards (no speculation: one per output token, the
first being the prefill; NGRAM: the prefill plus the verify steps), seconds. Per speculative run,
every verify forward as the worker recorded it (``FACTORSPEC_SGLANG_STATS``; FactorSpec's worker
only): tokens the model actually ran. ``--batch B``: the records are submitted B at a time in one
``generate`` call (seconds per record = wall time / records).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

CONFIGS = ("xgrammar", "xgrammar_ngram", "factorspec", "factorspec_draft", "factorspec_draft_ragged")


def instances(n: Optional[int], skip: int = 0, max_cities: int = 0) -> list[Any]:
    """The shared NATURAL PLAN trip instances in file order (``max_cities``: only those with at
    most that many cities; on this CPU a 9-city record takes minutes without speculation)."""
    from benchmarks.natural_plan import load_instances
    from factorspec.data import shared_data_dir

    items = list(load_instances(str(shared_data_dir() / "natural_plan" / "trip_planning_100.json")).values())
    if max_cities:
        items = [p for p in items if len(p.cities) <= max_cities]
    items = items[skip:]
    return items if n is None else items[:n]


def strip_relations(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k != "x-factorspec"}


def make_engine(config: str, model_dir: str, k: int, stats: Optional[str], batch: int) -> Any:
    from factorspec.integrations.sglang.cpu import cpu_engine

    kw: dict[str, Any] = {"log_level": "error", "max_running_requests": max(1, batch)}
    if config.startswith("xgrammar"):
        kw["grammar_backend"] = "xgrammar"
    if config == "xgrammar_ngram":
        kw.update(speculative_algorithm="NGRAM", speculative_num_draft_tokens=k)
    drafter = config.startswith("factorspec_draft")
    return cpu_engine(model_dir, drafter=drafter, ragged=config.endswith("_ragged"), draft_tokens=k,
                      stats_path=stats if drafter else None, **kw)


def validate(problem: Any, spec: dict, text: str) -> tuple[bool, bool, str]:
    """(independent checker says valid, the spec's own check says valid, first errors)."""
    from benchmarks.natural_plan.check import check_plan
    from factorspec.graph import compile_spec

    try:
        rec = json.loads(text)
    except ValueError as e:
        return False, False, f"not JSON: {e}"
    errs = check_plan(problem, rec)
    spec_errs = compile_spec(spec).check(rec)
    return not errs, not spec_errs, "; ".join([str(e) for e in list(errs)[:2] + list(spec_errs)[:2]])


def cmd_run(a: argparse.Namespace) -> int:
    from transformers import AutoTokenizer

    from benchmarks.natural_plan import json_prompt, to_spec
    from factorspec.integrations.vllm.models import hf_model_dir

    md = str(hf_model_dir(a.model))
    tok = AutoTokenizer.from_pretrained(md)
    probs = instances(a.n, a.skip, a.max_cities)
    stats = tempfile.mktemp(prefix="factorspec-sglang-stats-", suffix=".jsonl")
    t0 = time.perf_counter()
    eng = make_engine(a.config, md, a.k, stats, a.batch)
    start_s = time.perf_counter() - t0
    records: list[dict] = []
    out: dict[str, Any] = {"config": a.config, "model": a.model, "k": a.k, "batch": a.batch,
                           "max_tokens": a.max_tokens, "engine_start_s": start_s, "machine": machine(),
                           "partial": True, "records": records}

    def save() -> None:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(json.dumps(out, indent=1), encoding="utf-8")

    try:
        t_all = time.perf_counter()
        for i in range(0, len(probs), a.batch):
            if a.budget_s and time.perf_counter() - t_all > a.budget_s:
                break
            chunk = probs[i:i + a.batch]
            specs = [to_spec(p) for p in chunk]
            sent = [strip_relations(s) if a.config.startswith("xgrammar") else s for s in specs]
            ids = [tok.apply_chat_template([{"role": "user", "content": json_prompt(p)}], tokenize=True,
                                           add_generation_prompt=True) for p in chunk]
            ids = [list(x["input_ids"]) if isinstance(x, dict) or hasattr(x, "keys") else list(x) for x in ids]
            t1 = time.perf_counter()
            res = eng.generate(input_ids=ids, sampling_params=[
                {"temperature": 0, "max_new_tokens": a.max_tokens, "json_schema": json.dumps(s)} for s in sent])
            wall = time.perf_counter() - t1
            for p, s, r in zip(chunk, specs, res):
                meta = r["meta_info"]
                valid, spec_valid, why = validate(p, s, r["text"])
                n_tok = int(meta["completion_tokens"])
                verify = int(meta.get("spec_verify_ct") or 0)
                records.append({"id": p.id if hasattr(p, "id") else None, "text": r["text"],
                                "token_ids": list(r["output_ids"]), "tokens": n_tok, "valid": valid,
                                "spec_valid": spec_valid, "errors": why, "spec_verify_ct": verify,
                                "forwards": 1 + verify if verify else n_tok,
                                "finish_reason": (meta.get("finish_reason") or {}).get("type"),
                                "seconds": wall / len(chunk), "batch_wall_s": wall})
            save()
    finally:
        eng.shutdown()
    steps = [json.loads(x) for x in Path(stats).read_text().splitlines()] if os.path.exists(stats) else []
    out["verify_forwards"] = steps
    out["summary"] = summarize(records, steps)
    out["partial"] = False
    save()
    print(json.dumps({"config": a.config, **out["summary"]}))
    return 0


def machine() -> dict[str, Any]:
    try:
        load = os.getloadavg()
    except OSError:
        load = None
    return {"host": platform.node(), "cpus": os.cpu_count(), "processor": platform.processor() or platform.machine(),
            "loadavg_at_start": load, "omp_threads": os.environ.get("OMP_NUM_THREADS")}


def summarize(records: list[dict], steps: Optional[list] = None) -> dict[str, Any]:
    n = len(records)
    if not n:
        return {"n": 0}
    toks = sum(r["tokens"] for r in records)
    fwd = sum(r["forwards"] for r in records)
    verify = sum(r["spec_verify_ct"] for r in records)
    secs = sum(r["seconds"] for r in records)
    valid = sum(1 for r in records if r["valid"])
    out = {"n": n, "valid": valid, "valid_rate": valid / n, "spec_valid": sum(1 for r in records if r["spec_valid"]),
           "tokens": toks, "forwards": fwd, "tokens_per_forward": toks / fwd if fwd else 0.0,
           "verify_steps": verify, "tokens_per_verify_step": (toks - n) / verify if verify else None,
           "forwards_per_record": fwd / n, "seconds_per_record": secs / n,
           "valid_records_per_s": valid / secs if secs else 0.0}
    if steps:
        out["verify_forward_tokens"] = sum(s["forward_tokens"] or 0 for s in steps)
        out["verify_forward_slots"] = sum(s["bs"] * s["N"] for s in steps)
        t = {k: sum(float(s.get(k) or 0.0) for s in steps)
             for k in ("seconds", "corpus_s", "factorspec_draft_s", "grammar_mask_s", "step_s")}
        out["verify_step_seconds"] = t
        if t["step_s"]:
            # item 3: the share of the worker's verify step spent on constraint work (FactorSpec's
            # drafts + the grammar mask over the tree), all on the scheduler thread here
            out["constraint_share_of_step"] = (t["factorspec_draft_s"] + t["grammar_mask_s"]) / t["step_s"]
            out["forward_share_of_step"] = t["seconds"] / t["step_s"]
    return out


def cmd_all(a: argparse.Namespace) -> int:
    out_dir = Path(a.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rc = 0
    for cfg in a.configs.split(","):
        out = out_dir / f"{a.model}-{cfg}-b{a.batch}.json"
        cmd = [sys.executable, "-m", "benchmarks.sglang_e2e", "run", "--config", cfg, "--model", a.model,
               "--n", str(a.n), "--skip", str(a.skip), "--k", str(a.k), "--batch", str(a.batch),
               "--max-tokens", str(a.max_tokens), "--budget-s", str(a.budget_s), "--max-cities", str(a.max_cities),
               "--out", str(out)]
        print("+", " ".join(cmd), flush=True)
        rc |= subprocess.call(cmd, timeout=a.timeout_s)
    return rc


def cmd_table(a: argparse.Namespace) -> int:
    rows = []
    for f in a.files:
        d = json.loads(Path(f).read_text(encoding="utf-8"))
        s = d.get("summary") or summarize(d["records"])
        rows.append((d, s))
    print("| model | config | batch | K | records | valid (checker) | valid (spec) | tokens/forward | "
          "tokens/verify step | forwards/record | verify tokens run / slots | s/record | valid records/s | "
          "constraint work / verify step |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for d, s in rows:
        if not s.get("n"):
            continue
        tv = s.get("tokens_per_verify_step")
        vt = f"{s['verify_forward_tokens']} / {s['verify_forward_slots']}" if "verify_forward_tokens" in s else "-"
        k = d["k"] if ("ngram" in d["config"] or "draft" in d["config"]) else "-"
        print(f"| {d['model']} | {d['config']} | {d['batch']} | {k} | {s['n']} | {s['valid']}/{s['n']} | "
              f"{s['spec_valid']}/{s['n']} | {s['tokens_per_forward']:.2f} | {'-' if tv is None else f'{tv:.2f}'} | "
              f"{s['forwards_per_record']:.1f} | {vt} | {s['seconds_per_record']:.1f} | {s['valid_records_per_s']:.3f} | "
              + (f"{100 * s['constraint_share_of_step']:.1f}% |" if "constraint_share_of_step" in s else "- |"))
    return 0


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("run", "all"):
        q = sub.add_parser(name)
        q.add_argument("--model", default="smollm2-135m")
        q.add_argument("--n", type=int, default=3)
        q.add_argument("--skip", type=int, default=0)
        q.add_argument("--k", type=int, default=16, help="--speculative-num-draft-tokens (root included)")
        q.add_argument("--batch", type=int, default=1)
        q.add_argument("--max-tokens", type=int, default=320)
        q.add_argument("--budget-s", type=float, default=0.0, help="stop starting new batches after this")
        q.add_argument("--max-cities", type=int, default=0, help="only instances with at most this many cities")
        if name == "run":
            q.add_argument("--config", choices=CONFIGS, required=True)
            q.add_argument("--out", required=True)
        else:
            q.add_argument("--configs", default=",".join(CONFIGS))
            q.add_argument("--out-dir", default="bench/sglang")
            q.add_argument("--timeout-s", type=float, default=1800)
    t = sub.add_parser("table")
    t.add_argument("files", nargs="+")
    a = p.parse_args(argv)
    return {"run": cmd_run, "all": cmd_all, "table": cmd_table}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
