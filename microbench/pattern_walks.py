"""Soundness walks on the JSONSchemaBench schemas that `pattern`/`patternProperties`/`propertyNames`
newly compiled: a seeded sample of the ids a compile-only run lists under `newly_compiled`
(microbench/jsonschemabench_compile.py --compare), each through
tests.graph.test_jsonschemabench.run_one: random Qwen token walks, each mask checked to be a
subset of xgrammar's (documented exceptions: escapes in length-bounded and pattern strings), every
finished instance validated with the `jsonschema` package, no empty mask, 30 s per schema.

    python microbench/pattern_walks.py --compile-run microbench/results/jsonschemabench_compile_only.json
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, os.getcwd())

from tests.graph.test_jsonschemabench import _compiler, load_all, run_one  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--compile-run", required=True, help="output of jsonschemabench_compile.py --compare")
    ap.add_argument("--n", type=int, default=120)
    ap.add_argument("--cap", type=int, default=120)
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("--out", default="microbench/results/pattern_walks.json")
    args = ap.parse_args(argv)
    new = set(json.loads(Path(args.compile_run).read_text())["newly_compiled"])
    recs = [r for r in load_all() if r["id"] in new]
    sample = random.Random(args.seed).sample(recs, min(args.n, len(recs)))
    gc = _compiler()
    t0 = time.time()
    results = []
    for k, r in enumerate(sample):
        results.append(run_one(r, k, gc, cap=args.cap))
    c = collections.Counter(r["result"] for r in results)
    s = {
        "newly_compiled": len(new), "sampled": len(sample), "results": dict(c),
        "finished_instances_valid": sum(1 for r in results if r.get("finished")),
        "walk_steps_total": sum(r.get("steps", 0) for r in results),
        "steps_with_escape_difference": sum(r.get("escape_diff_steps", 0) for r in results),
        "xgrammar_errors": sum(1 for r in results if "xgrammar_error" in r),
        "failures": [{k: r.get(k) for k in ("id", "subset", "result", "detail")} for r in results
                     if r["result"] not in ("passed",)],
        "slowest": sorted(((r["seconds"], r["id"]) for r in results), reverse=True)[:10],
        "seconds": round(time.time() - t0, 1), "load": os.getloadavg(), "cap": args.cap, "seed": args.seed,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(s, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps({k: s[k] for k in ("sampled", "results", "finished_instances_valid", "walk_steps_total",
                                        "failures", "seconds")}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
