"""An independent check of FactorSpec's "admits no value" proofs on JSONSchemaBench (issue #12):
every schema FactorSpec refuses with `EmptySchema` that another engine compiles is walked with that
engine's masks, and every record it finishes is checked by the `jsonschema` validator. A single
valid record would refute FactorSpec's proof; none may be valid.

    python -m microbench empty_schemas --from microbench/results/jsonschemabench_compile_all.json \
        [--walks 5] [--cap 300] [--engines xgrammar,llguidance] [--json OUT.json]

`--from`: a compile-all result of `python -m microbench jsonschemabench` (its per-schema status
names the schemas FactorSpec proved empty). Each schema is compiled again here by FactorSpec (the
error must still be EmptySchema) and by each engine (xgrammar: its full token-mask compile)."""
from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from pathlib import Path
from typing import Any, Optional

from microbench import jsonschemabench as jb


def proved_empty_ids(result: dict) -> list[str]:
    """The "subset/id" of every schema whose FactorSpec status in `result` is EmptySchema."""
    ps = result["per_schema"]
    k = ps["engines"].index("factorspec")
    return sorted(sid for sid, row in ps["status"].items() if jb.proved_empty(ps["classes"][row[k]]))


def check_schema(eng: jb.Engines, rec: dict, engines: list[str], walks: int, cap: int) -> dict:
    """FactorSpec's verdict again, then `walks` seeded walks per engine that compiles the schema."""
    out: dict[str, Any] = {"id": f"{rec['subset']}/{rec['id']}"}
    try:
        eng.compile("factorspec", rec["schema"])
        out["factorspec"] = "ok"
    except Exception as e:  # noqa: BLE001 - the class is the verdict
        out["factorspec"] = jb.error_class("factorspec", e)
    for k in engines:
        try:
            handle = jb.guarded(120.0, functools.partial(eng.compile, k, rec["schema"]))
        except Exception as e:  # noqa: BLE001
            out[k] = {"compile": jb.error_class(k, e)}
            continue
        res: dict[str, Any] = {"compile": "ok", "outcomes": {}, "valid": 0, "invalid": 0, "why": []}
        for seed in range(walks):
            w = jb.own_walk(eng, k, handle, seed, cap)
            res["outcomes"][w["outcome"]] = res["outcomes"].get(w["outcome"], 0) + 1
            if w["outcome"] == "finished":
                why = jb.soundness(rec["schema"], w["text"])
                if why is None:
                    res["valid"] += 1
                    res.setdefault("valid_records", []).append(w["text"].decode("utf-8", "replace")[:2000])
                else:
                    res["invalid"] += 1
                    if len(res["why"]) < 2:
                        res["why"].append(why[:300])
        out[k] = res
    return out


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--from", dest="source", required=True, help="a compile-all result JSON")
    ap.add_argument("--data", default=None, help="JSONSchemaBench directory (default: the shared data)")
    ap.add_argument("--engines", default="xgrammar,llguidance")
    ap.add_argument("--walks", type=int, default=5)
    ap.add_argument("--cap", type=int, default=300)
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    ids = set(proved_empty_ids(json.loads(Path(a.source).read_text(encoding="utf-8"))))
    data = jb.default_data_dir() if a.data is None else Path(a.data)
    recs = [r for r in jb.load_corpus(data) if f"{r['subset']}/{r['id']}" in ids]
    engines = [k for k in a.engines.split(",") if k]
    eng = jb.Engines()
    t0 = time.time()
    rows = [check_schema(eng, r, engines, a.walks, a.cap) for r in recs]
    refuted = [r["id"] for r in rows if any(isinstance(r.get(k), dict) and r[k].get("valid") for k in engines)]
    still = sum(1 for r in rows if jb.proved_empty(r["factorspec"]))
    print(f"{len(rows)} schemas FactorSpec proved empty ({still} still so now); {time.time() - t0:.0f} s")
    for k in engines:
        comp = [r[k] for r in rows if r[k].get("compile") == "ok"]
        fin = sum(c["valid"] + c["invalid"] for c in comp)
        print(f"  {k}: compiled {len(comp)}; {len(comp) * a.walks} walks, {fin} finished records, "
              f"{sum(c['valid'] for c in comp)} valid, {sum(c['invalid'] for c in comp)} invalid")
    print(f"proofs refuted (a valid record found): {len(refuted)} {refuted[:10]}")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump({"source": a.source, "walks": a.walks, "cap": a.cap, "rows": rows, "refuted": refuted}, f,
                      indent=1)
    return 1 if refuted else 0


if __name__ == "__main__":
    sys.exit(main())
