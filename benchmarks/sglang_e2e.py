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
    """One engine for ``config``; ``k`` is its ``--speculative-num-draft-tokens`` (NGRAM's or
    FactorSpec's), ``batch`` the most requests it runs at once."""
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


def config_k(config: str, a: argparse.Namespace) -> Optional[int]:
    """The verify width a configuration runs with: NGRAM's own (``--ngram-k``) for xgrammar_ngram,
    FactorSpec's (``--k``) for the draft configurations, none without speculation."""
    if config == "xgrammar_ngram":
        return int(a.ngram_k or a.k)
    return int(a.k) if config.startswith("factorspec_draft") else None


def out_path(out_dir: str | Path, model: str, config: str, batch: int, k: Optional[int] = None,
             prefix: str = "") -> Path:
    """``{prefix}{model}-{config}[-k{K}]-b{batch}.json`` (K in the name for NGRAM only: its sweep)."""
    kk = f"-k{k}" if config == "xgrammar_ngram" and k else ""
    return Path(out_dir) / f"{prefix}{model}-{config}{kk}-b{batch}.json"


def cmd_run(a: argparse.Namespace) -> int:
    """One engine for one configuration; the same instances run at each batch size of
    ``--batches`` in turn (one engine start for all of them), one JSON file per batch size."""
    from transformers import AutoTokenizer

    from benchmarks.natural_plan import json_prompt, to_spec
    from factorspec.integrations.vllm.models import hf_model_dir

    batches = [int(x) for x in str(a.batches or a.batch).split(",")]
    k = config_k(a.config, a)
    md = str(hf_model_dir(a.model))
    tok = AutoTokenizer.from_pretrained(md)
    probs = instances(a.n, a.skip, a.max_cities)
    stats = tempfile.mktemp(prefix="factorspec-sglang-stats-", suffix=".jsonl")
    mach = machine()
    t0 = time.perf_counter()
    eng = make_engine(a.config, md, k or a.k, stats, max(batches))
    start_s = time.perf_counter() - t0
    rc = 0
    try:
        for batch in batches:
            out_file = Path(a.out) if a.out and len(batches) == 1 else \
                out_path(a.out_dir, a.model, a.config, batch, k, a.prefix)
            n_before = len(Path(stats).read_text().splitlines()) if os.path.exists(stats) else 0
            records: list[dict] = []
            out: dict[str, Any] = {"config": a.config, "model": a.model, "k": k, "batch": batch,
                                   "max_tokens": a.max_tokens, "engine_start_s": start_s, "machine": mach,
                                   "commit": commit(), "started_utc": utc_now(), "load_before": load_now(),
                                   "partial": True, "records": records}

            def save(out: dict = out, out_file: Path = out_file) -> None:
                out_file.parent.mkdir(parents=True, exist_ok=True)
                out_file.write_text(json.dumps(out, indent=1), encoding="utf-8")

            t_all = time.perf_counter()
            for i in range(0, len(probs), batch):
                if a.budget_s and time.perf_counter() - t_all > a.budget_s:
                    out["stopped_by_budget"] = True
                    break
                chunk = probs[i:i + batch]
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
                    records.append(record_of(p, s, r, wall, len(chunk)))
                save()
            lines = Path(stats).read_text().splitlines() if os.path.exists(stats) else []
            steps = [json.loads(x) for x in lines[n_before:]]
            out["verify_forwards"] = steps
            out["summary"] = summarize(records, steps)
            out["load_after"] = load_now()
            out["finished_utc"] = utc_now()
            out["partial"] = False
            save()
            print(json.dumps({"config": a.config, "batch": batch, "k": k, **out["summary"]}), flush=True)
    finally:
        eng.shutdown()
    return rc


def record_of(p: Any, spec: dict, r: dict, wall: float, n_chunk: int) -> dict[str, Any]:
    """One record's entry: text, tokens, validity (checker and spec), verify steps, forwards."""
    meta = r["meta_info"]
    valid, spec_valid, why = validate(p, spec, r["text"])
    n_tok = int(meta["completion_tokens"])
    verify = int(meta.get("spec_verify_ct") or 0)
    return {"id": p.id if hasattr(p, "id") else None, "text": r["text"],
            "token_ids": list(r["output_ids"]), "tokens": n_tok, "valid": valid,
            "spec_valid": spec_valid, "errors": why, "spec_verify_ct": verify,
            "forwards": 1 + verify if verify else n_tok,
            "finish_reason": (meta.get("finish_reason") or {}).get("type"),
            "seconds": wall / n_chunk, "batch_wall_s": wall}


def utc_now() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())


def load_now() -> Optional[list[float]]:
    """The 1/5/15-minute load averages now (the machine is shared: every figure carries its load)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def commit() -> Optional[str]:
    try:
        return subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True, text=True,
                              timeout=10, cwd=Path(__file__).resolve().parent).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def machine() -> dict[str, Any]:
    try:
        load = os.getloadavg()
    except OSError:
        load = None
    cpu = ""
    try:
        cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                    if ln.startswith("model name")), "")
    except OSError:
        pass
    return {"host": platform.node(), "cpus": os.cpu_count(), "processor": platform.processor() or platform.machine(),
            "cpu_model": cpu, "loadavg_at_start": load, "omp_threads": os.environ.get("OMP_NUM_THREADS"),
            "python": platform.python_version()}


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
             for k in ("seconds", "corpus_s", "factorspec_draft_s", "grammar_mask_s", "sample_s", "kv_move_s",
                       "corpus_update_s", "prepare_s", "step_s")}
        out["verify_step_seconds"] = t
        if t["step_s"]:
            # item 3: the share of the worker's verify step spent on constraint work (FactorSpec's
            # drafts + the grammar mask over the tree), all on the scheduler thread here
            out["constraint_share_of_step"] = (t["factorspec_draft_s"] + t["grammar_mask_s"]) / t["step_s"]
            out["forward_share_of_step"] = t["seconds"] / t["step_s"]
    return out


def _run_cmd(a: argparse.Namespace, cfg: str, n: int, batches: str, ngram_k: Optional[int],
             prefix: str = "") -> list[str]:
    cmd = [sys.executable, "-m", "benchmarks.sglang_e2e", "run", "--config", cfg, "--model", a.model,
           "--n", str(n), "--skip", str(a.skip), "--k", str(a.k), "--batches", batches,
           "--max-tokens", str(a.max_tokens), "--budget-s", str(a.budget_s), "--max-cities", str(a.max_cities),
           "--out-dir", str(a.out_dir), "--prefix", prefix]
    return cmd + (["--ngram-k", str(ngram_k)] if ngram_k else [])


def best_ngram_k(summaries: dict[int, dict]) -> Optional[int]:
    """NGRAM's best width in a sweep: the fewest seconds per record (ties: more tokens per verify
    step, then the smaller K); widths whose run produced no record are out."""
    ok = {k: s for k, s in summaries.items() if s.get("n")}
    if not ok:
        return None
    return min(ok, key=lambda k: (ok[k]["seconds_per_record"], -(ok[k].get("tokens_per_verify_step") or 0.0), k))


def cmd_all(a: argparse.Namespace) -> int:
    """The sweep of NGRAM widths (``--ngram-sweep``, on the first ``--sweep-n`` instances at batch
    1), then every configuration once, each in its own process (one engine, all ``--batches``),
    xgrammar_ngram at the sweep's best width."""
    out_dir = Path(a.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rc = 0
    ngram_k = a.ngram_k
    if a.ngram_sweep:
        sums: dict[int, dict] = {}
        for kk in [int(x) for x in a.ngram_sweep.split(",")]:
            cmd = _run_cmd(a, "xgrammar_ngram", a.sweep_n, "1", kk, prefix="sweep-")
            print("+", " ".join(cmd), flush=True)
            rc |= subprocess.call(cmd, timeout=a.timeout_s)
            f = out_path(out_dir, a.model, "xgrammar_ngram", 1, kk, prefix="sweep-")
            if f.exists():
                d = json.loads(f.read_text(encoding="utf-8"))
                sums[kk] = d.get("summary") or summarize(d["records"])
        ngram_k = best_ngram_k(sums) or ngram_k
        print(json.dumps({"ngram_sweep": {k: v.get("seconds_per_record") for k, v in sums.items()},
                          "best_ngram_k": ngram_k}), flush=True)
    batches = a.batches or str(a.batch)
    # --engine-per-batch: each batch size on a fresh engine, so no configuration starts a batch with
    # the prompts in its radix cache or, for NGRAM, with its own earlier outputs of the same prompts
    # in its n-gram corpus (one engine for all batch sizes replays batch 1's records at batch 8)
    groups = batches.split(",") if a.engine_per_batch else [batches]
    for group in groups:
        for cfg in a.configs.split(","):
            cmd = _run_cmd(a, cfg, a.n, group, ngram_k if cfg == "xgrammar_ngram" else None)
            print("+", " ".join(cmd), flush=True)
            try:
                rc |= subprocess.call(cmd, timeout=a.timeout_s)
            except subprocess.TimeoutExpired:
                print(f"timeout: {cfg}", flush=True)
                rc |= 1
    return rc


COLUMNS = ("model", "config", "batch", "K", "records", "valid (checker)", "valid (spec)", "tokens/forward",
           "tokens/verify step", "forwards/record", "verify tokens run / slots", "s/record", "valid records/s",
           "constraint work / verify step", "load before -> after")


def _fmt_load(x: Any) -> str:
    return "-" if not x else f"{x[0]:.1f}"


def table_rows(docs: list[dict]) -> list[list[str]]:
    """One markdown row per result file (``COLUMNS``), in the order given; files without records
    are left out."""
    rows = []
    for d in docs:
        s = d.get("summary") or summarize(d["records"])
        if not s.get("n"):
            continue
        tv = s.get("tokens_per_verify_step")
        vt = f"{s['verify_forward_tokens']} / {s['verify_forward_slots']}" if "verify_forward_tokens" in s else "-"
        k = d.get("k") if ("ngram" in d["config"] or "draft" in d["config"]) else None
        cfg = d["config"] + (" (partial)" if d.get("partial") else "")
        rows.append([d["model"], cfg, str(d["batch"]), "-" if not k else str(k), str(s["n"]),
                     f"{s['valid']}/{s['n']}", f"{s['spec_valid']}/{s['n']}", f"{s['tokens_per_forward']:.2f}",
                     "-" if tv is None else f"{tv:.2f}", f"{s['forwards_per_record']:.1f}", vt,
                     f"{s['seconds_per_record']:.2f}", f"{s['valid_records_per_s']:.3f}",
                     f"{100 * s['constraint_share_of_step']:.1f}%" if "constraint_share_of_step" in s else "-",
                     f"{_fmt_load(d.get('load_before') or (d.get('machine') or {}).get('loadavg_at_start'))} -> "
                     f"{_fmt_load(d.get('load_after'))}"])
    return rows


def markdown_table(docs: list[dict]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(r) + " |" for r in table_rows(docs)]
    return "\n".join(lines)


def must_show(docs: list[dict]) -> list[dict[str, Any]]:
    """Per (model, batch): issue #15's three claims, from the files at hand. FactorSpec drafts =
    the better of fixed and per-request widths by seconds per record; NGRAM = the xgrammar_ngram
    file with the fewest seconds per record (its best width in this run). ``tps_ratio`` =
    FactorSpec's tokens per verify step / NGRAM's (>= 10 asked); ``all_valid``: every FactorSpec
    record valid by the checker; ``ahead``: FactorSpec's seconds per record below NGRAM's."""
    by: dict[tuple[str, int], dict[str, list[tuple[dict, dict]]]] = {}
    for d in docs:
        s = d.get("summary") or summarize(d["records"])
        if not s.get("n"):
            continue
        by.setdefault((d["model"], int(d["batch"])), {}).setdefault(d["config"], []).append((d, s))
    out = []
    for (model, batch), cf in sorted(by.items()):
        fs = cf.get("factorspec_draft", []) + cf.get("factorspec_draft_ragged", [])
        ng = cf.get("xgrammar_ngram", [])
        if not fs or not ng:
            continue
        fd, fsum = min(fs, key=lambda x: x[1]["seconds_per_record"])
        nd, nsum = min(ng, key=lambda x: x[1]["seconds_per_record"])
        ftv, ntv = fsum.get("tokens_per_verify_step"), nsum.get("tokens_per_verify_step")
        out.append({"model": model, "batch": batch, "factorspec": fd["config"], "k": fd.get("k"),
                    "ngram_k": nd.get("k"), "factorspec_tpv": ftv, "ngram_tpv": ntv,
                    "tps_ratio": (ftv / ntv) if ftv and ntv else None,
                    "all_valid": all(x[1]["valid"] == x[1]["n"] for x in fs),
                    "factorspec_s": fsum["seconds_per_record"], "ngram_s": nsum["seconds_per_record"],
                    "ahead": fsum["seconds_per_record"] < nsum["seconds_per_record"]})
    return out


def must_show_markdown(docs: list[dict]) -> str:
    lines = ["| model | batch | FactorSpec (K) | tokens/verify step | NGRAM best K | NGRAM tokens/verify step | "
             "ratio | FactorSpec all valid | s/record FactorSpec vs NGRAM | ahead |", "|" + "---|" * 10]
    for m in must_show(docs):
        ratio = "-" if m["tps_ratio"] is None else f"{m['tps_ratio']:.1f}x"
        ftv = "-" if m["factorspec_tpv"] is None else f"{m['factorspec_tpv']:.2f}"
        ntv = "-" if m["ngram_tpv"] is None else f"{m['ngram_tpv']:.2f}"
        lines.append(f"| {m['model']} | {m['batch']} | {m['factorspec']} ({m['k']}) | {ftv} | {m['ngram_k']} | "
                     f"{ntv} | {ratio} | {'yes' if m['all_valid'] else 'no'} | "
                     f"{m['factorspec_s']:.2f} vs {m['ngram_s']:.2f} | {'yes' if m['ahead'] else 'no'} |")
    return "\n".join(lines)


def cmd_table(a: argparse.Namespace) -> int:
    docs = [json.loads(Path(f).read_text(encoding="utf-8")) for f in a.files]
    text = markdown_table(docs) + "\n\n" + must_show_markdown(docs) + "\n"
    if a.out:
        Path(a.out).write_text(text, encoding="utf-8")
    print(text, end="")
    return 0


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("run", "all"):
        q = sub.add_parser(name)
        q.add_argument("--model", default="smollm2-135m")
        q.add_argument("--n", type=int, default=3)
        q.add_argument("--skip", type=int, default=0)
        q.add_argument("--k", type=int, default=16, help="FactorSpec's --speculative-num-draft-tokens (root included)")
        q.add_argument("--ngram-k", type=int, default=0, help="NGRAM's width (default: --k)")
        q.add_argument("--batch", type=int, default=1)
        q.add_argument("--batches", default="", help="e.g. 1,8: each batch size in turn on one engine")
        q.add_argument("--max-tokens", type=int, default=320)
        q.add_argument("--budget-s", type=float, default=0.0, help="stop starting new batches after this")
        q.add_argument("--max-cities", type=int, default=0, help="only instances with at most this many cities")
        q.add_argument("--out-dir", default="bench/sglang")
        q.add_argument("--prefix", default="")
        if name == "run":
            q.add_argument("--config", choices=CONFIGS, required=True)
            q.add_argument("--out", default="", help="the output file (one batch size only)")
        else:
            q.add_argument("--configs", default=",".join(CONFIGS))
            q.add_argument("--ngram-sweep", default="", help="e.g. 2,4,8: NGRAM widths tried first")
            q.add_argument("--sweep-n", type=int, default=2)
            q.add_argument("--engine-per-batch", action="store_true",
                           help="a fresh engine for each batch size (no radix or n-gram state carried over)")
            q.add_argument("--timeout-s", type=float, default=1800)
    t = sub.add_parser("table")
    t.add_argument("files", nargs="+")
    t.add_argument("--out", default="")
    a = p.parse_args(argv)
    return {"run": cmd_run, "all": cmd_all, "table": cmd_table}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
