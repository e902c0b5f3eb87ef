"""Compile-only count over JSONSchemaBench: every schema in <data>/jsonschemabench/*.jsonl through
`factorspec.graph.compile_spec` (and the text machine's first state), each under a wall-clock
limit (tests.graph.test_jsonschemabench.run_one, SIGALRM). Counts compiled vs refused, the
refusals by first error keyword, per subset, and lists the compiled ids (so two runs, e.g. main
and a branch, can be compared: `--compare OTHER.json` prints the ids compiled here only).

    python microbench/jsonschemabench_compile.py [--out microbench/results/jsonschemabench_compile_only.json]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, os.getcwd())  # the checkout being measured (run from its root)

from tests.graph.test_jsonschemabench import load_all, machine_info, run_one, summarize  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="microbench/results/jsonschemabench_compile_only.json")
    ap.add_argument("--compare", default="", help="an earlier output: report the ids compiled here only")
    args = ap.parse_args(argv)
    recs = load_all()
    t0 = time.time()
    results = [run_one(r, k, None, compile_only=True) for k, r in enumerate(recs)]
    s = summarize(results)
    s["seconds"] = round(time.time() - t0, 1)
    s["compile_only"] = True
    s["load"] = os.getloadavg()
    s["machine"] = machine_info()
    s["compiled_ids"] = sorted(r["id"] for r in results if r.get("compiled"))
    if args.compare:
        before = set(json.loads(Path(args.compare).read_text())["compiled_ids"])
        s["newly_compiled"] = sorted(set(s["compiled_ids"]) - before)
        s["no_longer_compiled"] = sorted(before - set(s["compiled_ids"]))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(s, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps({k: s.get(k) for k in ("schemas", "results", "compiled", "compiled_by_subset",
                                            "spec_error_keywords_top10", "seconds", "load")}, indent=1))
    if args.compare:
        print(f"newly compiled: {len(s['newly_compiled'])}, no longer compiled: {len(s['no_longer_compiled'])}")
    return 0 if not s["failures"] else 1


if __name__ == "__main__":
    sys.exit(main())
