"""Compact text summaries of the GPU check's result files (used by gpu_all.sh and gpu_check.sh).

    python3 microbench/gpu_summary.py bench OUT/bench.json
    python3 microbench/gpu_summary.py correctness OUT/correctness.txt
    python3 microbench/gpu_summary.py engine OUT/engine.json

Each prints a few lines and never raises on a missing or partial file (it says what is missing).
"""
from __future__ import annotations

import json
import sys


def bench(path: str) -> None:
    try:
        d = json.load(open(path))
    except (OSError, ValueError) as e:
        print(f"bench: no results ({e}); see bench.txt")
        return
    med = {b["name"]: b["stats"]["median"] * 1e6 for b in d.get("benchmarks", [])}
    dev = (d.get("machine_info") or {}).get("cpu", {}).get("brand_raw", "")
    print(f"bench: {len(med)} benchmarks (median us; 'ours' = the dispatcher: Triton on CUDA, torch on CPU "
          f"unless FACTORSPEC_KERNEL_BACKEND says otherwise) {dev}")
    groups: dict[str, dict[str, float]] = {}
    for name, v in med.items():
        test, _, params = name.partition("[")
        batch, _, impl = params.rstrip("]").partition("-")
        groups.setdefault(f"{test} b{batch}", {})[impl] = v
    for key in sorted(groups, key=lambda k: (k.split(" b")[0], int(k.split(" b")[1] or 0))):
        g = groups[key]
        cells = "  ".join(f"{impl} {g[impl]:10.1f}" for impl in ("ours", "torch", "xgrammar") if impl in g)
        ratio = f"  ours/xgrammar {g['ours'] / g['xgrammar']:.3f}" if "ours" in g and "xgrammar" in g else ""
        print(f"  {key:32s} {cells}{ratio}")
    for b in (1, 64, 512):
        o, x = med.get(f"test_bitmask[{b}-ours]"), med.get(f"test_bitmask[{b}-xgrammar]")
        if o and x:
            print(f"  kernel 1 batch {b}: ours / xgrammar = {o / x:.3f} (goal at 512: <= 1.1)")
    for k in ("test_tree_verify_inputs", "test_assemble_drafts", "test_verify_tree_greedy"):
        v = med.get(f"{k}[64-ours]")
        if v:
            print(f"  {k} batch 64 width 16: {v:.1f} us (goal < 20 us)")


def correctness(path: str) -> None:
    try:
        lines = open(path).read().splitlines()
    except OSError as e:
        print(f"correctness: no output ({e})")
        return
    ok = sum(line.startswith("ok ") for line in lines)
    fails = [line for line in lines if line.startswith("FAIL")]
    end = next((line for line in reversed(lines) if line.endswith("failures")), None)
    print(f"correctness: {ok} ok, {len(fails)} FAIL" + ("" if end else "  (INCOMPLETE: no final line; timed out "
                                                                          "or crashed, see correctness.txt)"))
    for line in fails[:12]:
        print(f"  {line}")
    if not end and lines:
        print(f"  last line: {lines[-1][:200]}")


def engine(path: str) -> None:
    try:
        d = json.load(open(path))
    except (OSError, ValueError) as e:
        print(f"engine: no results ({e}); see engine.log")
        return
    m = d.get("model", {})
    print(f"engine: {d.get('label', '')}")
    if d.get("fatal"):
        print(f"  FATAL: {d['fatal']}")
        print("  " + d.get("traceback", "")[-600:].replace("\n", "\n  "))
        return
    print(f"  model {m.get('architecture')} {m.get('params', 0) / 1e6:.0f}M params {m.get('dtype')} "
          f"on {d.get('env', {}).get('gpu') or d.get('env', {}).get('device')}; "
          f"{len(d.get('instances', []))} instances, max_width {d.get('max_width')}, workers {d.get('workers')}")
    print(f"  setup {d.get('setup_seconds')}s, warm-up {d.get('warmup_seconds')}s, total {d.get('total_seconds')}s")
    print(f"  {'config':14s} {'b':>2s} {'valid*':>6s} {'tok/step':>8s} {'fwd/rec':>8s} {'decode s/rec':>12s} "
          f"{'prefill s/rec':>13s} {'steps':>5s}  ms/step (drafts forward masks verify)")
    for s in d.get("runs", []):
        ms = s.get("ms_per_engine_step", {})
        print(f"  {s['name']:14s} {s['batch']:2d} {s['valid_rate']:6.2f} {s['tokens_per_verify_step']:8.2f} "
              f"{s['forward_passes_per_record']:8.1f} {s['decode_seconds_per_record']:12.4f} "
              f"{s['prefill_seconds_per_record']:13.4f} {s.get('engine_steps', 0):5d}  "
              + " ".join(f"{ms.get(k, 0):.2f}" for k in ("drafts", "forward", "masks", "verify"))
              + f"  {s.get('finish_reasons')}")
        for odd in s.get("odd_finishes", [])[:2]:
            print(f"      {odd[:160]}")
    print("  * valid/exact/acceptance: random-init model, not the real model's figures")
    disp = d.get("dispatch")
    if disp:
        print(f"  kernel dispatch ok={disp['ok']} (expected {disp['expected']!r}, never {disp['not_expected']!r})"
              + (f" bad: {disp['bad_runs']}" if disp["bad_runs"] else ""))
    runs = d.get("runs", [])
    if runs:
        print(f"  kernels seen in the first run: {runs[0].get('kernel_calls')}")
    if d.get("exactness"):
        print(f"  exactness (same tokens): {d['exactness']}")
    for e in d.get("errors", []):
        print(f"  ERROR {e['config']} b{e['batch']}: {e['error']}")
    for s in d.get("skipped", []):
        print(f"  skipped {s['config']} b{s['batch']}: {s['why']}")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("bench", "correctness", "engine"):
        sys.exit(__doc__)
    {"bench": bench, "correctness": correctness, "engine": engine}[sys.argv[1]](sys.argv[2])
