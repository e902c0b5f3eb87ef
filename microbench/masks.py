"""Mask time per token and draft coverage, FactorSpec vs xgrammar, on the same schema and tokenizer.

    python -m microbench masks --json OUT.json [--md OUT.md] [--per-family 3]

Per spec family and city count (NATURAL PLAN at 3, 5, 10 cities from the shared data, 20 and 50
generated; every examples/*.spec.json by name), along the golden record's token path (Qwen2.5-Coder):
- factorspec_*: Matcher.next_token_mask + fill into a numpy row, per token. "cold" = a fresh
  TextMachine and Matcher and an empty encode cache (the first request of a spec); "warm" = a second
  fresh Matcher on the same TextMachine (later requests of that spec).
- xgrammar_*: GrammarMatcher.fill_next_token_bitmask on the same schema WITHOUT relations
  (x-factorspec stripped), along the same tokens; compile time reported separately.
- certain_share: share of the record's tokens (stop token excluded) that FactorSpec drafts as
  certain (Matcher.certain_run from the start and again at every boundary).
- jump_forward_share: share of the same tokens whose bytes lie inside xgrammar's jump-forward
  string (find_jump_forward_string at each position; a token counts when the concatenated golden
  tokens from there are a prefix of that string).
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Optional

import numpy as np

REPO = Path(__file__).resolve().parents[1]
TOKENIZER = "qwen2.5-coder-0.5b"


def machine_info() -> dict:
    info: dict[str, Any] = {"python": platform.python_version(), "platform": platform.platform()}
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        for line in out.splitlines():
            k, _, v = line.partition(":")
            if k.strip() in ("Model name", "CPU(s)", "Thread(s) per core", "Architecture", "Flags") and k.strip() != "Flags":
                info[k.strip()] = v.strip()
    except Exception:  # noqa: BLE001
        pass
    info["usable_cores"] = len(os.sched_getaffinity(0))
    try:
        from importlib.metadata import version
        info["xgrammar"] = version("xgrammar")
        info["factorspec_commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                                   text=True, cwd=REPO, timeout=10).stdout.strip()
    except Exception:  # noqa: BLE001
        pass
    info["note"] = "2 cores shared with other jobs; numbers are medians/p99 over tokens of one run"
    return info


def _token_path(tm: Any, v: Any, text: bytes) -> list[int]:
    """The golden text's token path through the Matcher, stop token included."""
    from factorspec.graph.matcher import Matcher
    path = Matcher(tm, v).token_path(text)
    if path is None:
        raise RuntimeError(f"golden text not reachable: {text[:80]!r}")
    return path


def _fs_times(cs: Any, v: Any, tokens: list[int], cold: bool) -> list[float]:
    from factorspec.graph.matcher import Matcher
    from factorspec.graph.textstate import TextMachine
    if cold:
        v._encode_cache.clear()
        tm = TextMachine(cs)
        _fs_times.tm = tm  # type: ignore[attr-defined]
    else:
        tm = _fs_times.tm  # type: ignore[attr-defined]
    row = np.zeros((1, v.words), dtype=np.int32)
    m = Matcher(tm, v)
    out = []
    for t in tokens:
        t0 = time.perf_counter()
        m.next_token_mask()
        m.fill_next_token_bitmask(row, 0)
        out.append(time.perf_counter() - t0)
        if not m.accept_token(t):
            raise RuntimeError("golden token rejected")
    return out


def _xgr_times(compiled: Any, v: Any, tokens: list[int]) -> tuple[list[float], int]:
    import xgrammar as xgr
    gm = xgr.GrammarMatcher(compiled)
    bm = xgr.allocate_token_bitmask(1, v.vocab_size)
    out = []
    for t in tokens:
        t0 = time.perf_counter()
        gm.fill_next_token_bitmask(bm, 0)
        out.append(time.perf_counter() - t0)
        if not gm.accept_token(t):
            raise RuntimeError(f"xgrammar rejects golden token {t} {v.token_bytes[t]!r}")
    return out, 0


def _certain_count(cs: Any, v: Any, tokens: list[int]) -> int:
    from factorspec.graph.matcher import Matcher
    from factorspec.graph.textstate import TextMachine
    m = Matcher(TextMachine(cs), v)
    body = tokens[:-1]  # the stop token is not record text
    i = certain = 0
    while i < len(body):
        run = m.certain_run(len(body) - i)
        if run:
            assert run == body[i:i + len(run)], "certain run differs from the golden tokens"
            for t in run:
                m.accept_token(t)
            certain += len(run)
            i += len(run)
        else:
            m.accept_token(body[i])
            i += 1
    return certain


def _jump_forward_count(compiled: Any, v: Any, tokens: list[int]) -> int:
    import xgrammar as xgr
    gm = xgr.GrammarMatcher(compiled)
    body = tokens[:-1]
    i = covered = 0
    while i < len(body):
        s = gm.find_jump_forward_string().encode("utf-8")
        k, acc = 0, b""
        while s and i + k < len(body):
            nxt = acc + v.token_bytes[body[i + k]]
            if not s.startswith(nxt):
                break
            acc = nxt
            k += 1
        if k:
            covered += k
            for t in body[i:i + k]:
                gm.accept_token(t)
            i += k
        else:
            gm.accept_token(body[i])
            i += 1
    return covered


def _pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs) * 1e6, q)) if xs else float("nan")


def cases(per_family: int) -> list[tuple[str, Optional[int], str, dict, dict]]:
    """(family, cities, id, spec, golden record)."""
    from factorspec.data import natural_plan_file
    from benchmarks.natural_plan import generate, golden_record, load_instances, parse_instance, to_spec
    out = []
    probs = load_instances(str(natural_plan_file()))
    for n in (3, 5, 10):
        sel = [p for p in probs.values() if p.n == n][:per_family]
        out += [("natural_plan", n, p.id, to_spec(p), golden_record(p)) for p in sel]
    for n in (20, 50):
        for k, raw in enumerate(generate(n, 0, per_family)):
            p = parse_instance(f"generated_n{n}_s0_{k}", raw)
            out.append(("natural_plan_generated", n, p.id, to_spec(p), golden_record(p)))
    for f in sorted(glob.glob(str(REPO / "examples" / "*.spec.json"))):
        name = Path(f).name[: -len(".spec.json")]
        spec = json.loads(Path(f).read_text(encoding="utf-8"))
        rf = Path(f[: -len(".spec.json")] + ".record.json")
        rec = json.loads(rf.read_text(encoding="utf-8")) if rf.is_file() else None
        out.append(("example:" + name, None, name, spec, rec))
    return out


def run(per_family: int, budget_s: float = 60.0) -> dict:
    import xgrammar as xgr
    from factorspec.errors import FactorSpecError
    from factorspec.graph.solver import Budget
    from factorspec.graph import compile_spec
    from factorspec.graph.textstate import TextMachine
    from factorspec.models import load_tokenizer
    from factorspec.models.hf_vocab import vocab_for

    tok = load_tokenizer(TOKENIZER)
    v = vocab_for(tok)
    info = xgr.TokenizerInfo.from_huggingface(tok, vocab_size=v.vocab_size, stop_token_ids=list(v.stop_ids))
    gc = xgr.GrammarCompiler(info)
    groups: dict[tuple, dict] = {}
    for family, cities, cid, spec, rec in cases(per_family):
        g = groups.setdefault((family, cities), {"ids": [], "fs_cold": [], "fs_warm": [], "xg": [], "tokens": 0,
                                                 "certain": 0, "jf": 0, "fs_compile": [], "xg_compile": [],
                                                 "errors": []})
        try:
            t0 = time.perf_counter()
            cs = compile_spec(spec, budget=Budget(seconds=budget_s))
            if rec is None:
                rec = cs.solve()
            assert cs.check(rec) == [], cid
            tm = TextMachine(cs)
            tm.initial()
            fs_compile = time.perf_counter() - t0
            text = cs.canonical_text(rec).encode()
            tokens = _token_path(tm, v, text)
            plain = {k: val for k, val in spec.items() if k != "x-factorspec"}
            t0 = time.perf_counter()
            compiled = gc.compile_json_schema(json.dumps(plain), any_whitespace=False)
            xg_compile = time.perf_counter() - t0
            g["ids"].append(cid)
            g["fs_cold"] += _fs_times(cs, v, tokens, cold=True)
            g["fs_warm"] += _fs_times(cs, v, tokens, cold=False)
            g["xg"] += _xgr_times(compiled, v, tokens)[0]
            g["tokens"] += len(tokens) - 1
            g["certain"] += _certain_count(cs, v, tokens)
            g["jf"] += _jump_forward_count(compiled, v, tokens)
            g["fs_compile"].append(fs_compile)
            g["xg_compile"].append(xg_compile)
            print(f"{family} {cities} {cid}: {len(tokens)} tokens", file=sys.stderr, flush=True)
        except FactorSpecError as e:  # e.g. the solver's budget on a large spec: reported, not hidden
            g["errors"].append({"id": cid, "error": f"{type(e).__name__}: {e}"})
            print(f"{family} {cities} {cid}: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
    rows = []
    for (family, cities), g in groups.items():
        if not g["ids"]:
            rows.append({"family": family, "cities": cities, "instances": 0, "errors": g["errors"]})
            continue
        rows.append({"errors": g["errors"],
            "family": family, "cities": cities, "instances": len(g["ids"]), "ids": g["ids"],
            "record_tokens": g["tokens"],
            "factorspec_p50_us": round(_pct(g["fs_cold"], 50), 1),
            "factorspec_p99_us": round(_pct(g["fs_cold"], 99), 1),
            "factorspec_mean_us": round(float(np.mean(g["fs_cold"])) * 1e6, 1),
            "factorspec_warm_p50_us": round(_pct(g["fs_warm"], 50), 1),
            "factorspec_warm_p99_us": round(_pct(g["fs_warm"], 99), 1),
            "xgrammar_p50_us": round(_pct(g["xg"], 50), 1),
            "xgrammar_p99_us": round(_pct(g["xg"], 99), 1),
            "xgrammar_mean_us": round(float(np.mean(g["xg"])) * 1e6, 1),
            "certain_share": round(g["certain"] / g["tokens"], 4),
            "jump_forward_share": round(g["jf"] / g["tokens"], 4),
            "factorspec_compile_ms": round(1e3 * float(np.mean(g["fs_compile"])), 1),
            "xgrammar_compile_ms": round(1e3 * float(np.mean(g["xg_compile"])), 1),
        })
    return {"machine": machine_info(), "tokenizer": TOKENIZER, "vocab_size": v.vocab_size,
            "method": __doc__.strip().split("\n\n", 1)[1], "rows": rows}


def to_markdown(res: dict) -> str:
    m = res["machine"]
    lines = [
        "# Mask microbenchmark (FactorSpec vs xgrammar)", "",
        f"Machine: {m.get('Model name', '?')}, {m.get('CPU(s)', '?')} CPUs ({m.get('usable_cores')} usable, shared), "
        f"Python {m.get('python')}, xgrammar {m.get('xgrammar', '?')}. Tokenizer: {res['tokenizer']} "
        f"({res['vocab_size']} tokens).", "",
        "Times in microseconds per token (mask + fill one bitmask row). FactorSpec cold = fresh TextMachine "
        "(first request of a spec), warm = later requests; xgrammar on the schema without relations.", "",
        "| family | cities | n | tokens | FS p50 | FS p99 | FS warm p50 | FS warm p99 | XG p50 | XG p99 "
        "| certain | jump-fwd | FS compile ms | XG compile ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in res["rows"]:
        if not r["instances"]:
            lines.append(f"| {r['family']} | {r['cities']} | 0 | | failed: {r['errors'][0]['error'][:90]} |||||||||")
            continue
        lines.append(
            f"| {r['family']} | {r['cities'] if r['cities'] is not None else ''} | {r['instances']} | {r['record_tokens']} "
            f"| {r['factorspec_p50_us']} | {r['factorspec_p99_us']} | {r['factorspec_warm_p50_us']} "
            f"| {r['factorspec_warm_p99_us']} | {r['xgrammar_p50_us']} | {r['xgrammar_p99_us']} "
            f"| {100 * r['certain_share']:.1f}% | {100 * r['jump_forward_share']:.1f}% "
            f"| {r['factorspec_compile_ms']} | {r['xgrammar_compile_ms']} |")
    lines += ["", "Method:", "", res["method"], ""]
    errs = [e for r in res["rows"] for e in r.get("errors", [])]
    if errs:
        lines += ["Errors:", ""] + [f"- {e['id']}: {e['error']}" for e in errs] + [""]
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m microbench masks", description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", default="microbench/results/masks.json")
    ap.add_argument("--md", default=None, help="markdown table (default: the --json path with .md)")
    ap.add_argument("--per-family", type=int, default=3, help="instances per (family, city count)")
    ap.add_argument("--budget-s", type=float, default=60.0, help="solver time budget per spec")
    args = ap.parse_args(argv)
    res = run(args.per_family, args.budget_s)
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    md = args.md or str(Path(args.json).with_suffix(".md"))
    Path(md).write_text(to_markdown(res), encoding="utf-8")
    print(to_markdown(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
