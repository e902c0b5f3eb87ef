"""Digests of token-level decodes (masks, drafts, records, tokens per verify step, counts) at
3/5/10 cities under own and auto, teacher and two uniform seeds: run from two trees and compare
the JSON files (equal files: the decoder saw the same thing in both).

    python -m microbench.natural_plan_compare OUT.json
"""
from __future__ import annotations

import json
import sys

from microbench import natural_plan_backends as NB

KEYS = ("tokens", "verify_steps", "tokens_per_verify_step", "drafted", "drafted_certain", "accepted",
        "accepted_certain", "text_sha", "mask_trace", "draft_trace", "budget_hit", "valid")


def main() -> None:
    vocab = NB._vocab()
    out = {}
    for n in (3, 5, 10):
        got = NB.instances(n, 3)
        have = {p.id for _, p in got}
        got += [("shared", p) for _, p in NB.instances(n, 10**6)
                if p.id in NB.MULTI.get(n, ()) and p.id not in have]
        for _, p in got:
            for be in ("own", "auto"):
                for mdl, v in NB.decode_instance(p, vocab, be, (1, 2), 60.0).items():
                    out[f"{n}/{p.id}/{be}/{mdl}"] = {k: v.get(k) for k in KEYS}
                    print(n, p.id, be, mdl, v.get("draft_trace"), v.get("cpu_s"), flush=True)
    with open(sys.argv[1], "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
