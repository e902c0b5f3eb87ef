"""CI performance regression gate on hardware-independent figures.

Runs a small benchmark (a few NATURAL PLAN instances, a small embedded model) and fails when
valid rate, tokens per verify step or forward passes per record cross the thresholds checked in
at bench/thresholds.json, or when drafting changes the output (exactness)."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile


def check(summary: dict, thresholds: dict) -> list[str]:
    """Every threshold the summary breaks, as readable lines."""
    bad = []
    by_name = {(s["name"], s["batch"]): s for s in summary["configs"]}
    for rule in thresholds["rules"]:
        s = by_name.get((rule["config"], rule.get("batch", 1)))
        if s is None:
            bad.append(f"{rule['config']} (batch {rule.get('batch', 1)}) was not run")
            continue
        v = s[rule["metric"]]
        if "min" in rule and v < rule["min"]:
            bad.append(f"{rule['config']}.{rule['metric']} = {v:.3f} < min {rule['min']}")
        if "max" in rule and v > rule["max"]:
            bad.append(f"{rule['config']}.{rule['metric']} = {v:.3f} > max {rule['max']}")
    for k, v in summary.get("exactness", {}).items():
        same, total = map(int, v.split("/"))
        if same != total:
            bad.append(f"exactness {k}: only {v} identical to masked greedy decoding")
    return bad


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--thresholds", default=os.path.join(os.path.dirname(__file__), "..", "bench", "thresholds.json"))
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    with open(args.thresholds) as fh:
        th = json.load(fh)
    out = args.out or tempfile.mkdtemp(prefix="factorspec-gate-")
    cmd = [sys.executable, "-m", "factorspec.cli", "bench", "--model", th["model"], "--limit", str(th["limit"]),
           "--configs", ",".join(th["configs"]), "--out", out]
    cmd += ["--workers", str(th.get("workers", 1))]
    for b in th.get("batches", [1]):
        cmd += ["--batch", str(b)]
    print("gate:", " ".join(cmd), flush=True)
    rc = subprocess.call(cmd)
    if rc != 0:
        print(f"gate: bench failed with exit code {rc}")
        return 1
    with open(os.path.join(out, "summary.json")) as fh:
        summary = json.load(fh)
    bad = check(summary, th)
    for s in summary["configs"]:
        print(f"gate: {s['name']} b{s['batch']}: valid {s['valid_rate']:.2f}, tokens/step "
              f"{s['tokens_per_verify_step']:.2f}, forwards/record {s['forward_passes_per_record']:.1f}")
    if bad:
        print("gate: FAILED\n  " + "\n  ".join(bad))
        return 1
    print(f"gate: {len(th['rules'])} passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
