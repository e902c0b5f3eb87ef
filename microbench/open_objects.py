"""Mask time per token inside open objects (additionalProperties), Qwen2.5-Coder's vocabulary.

    python -m microbench open_objects [--steps 80] [--seeds 3] [--json OUT.json]

Seeded random token walks (a bias towards structural tokens, so keys close and new members start)
over a few open-object schemas; every `Matcher.next_token_mask` call made while some configuration is
inside an open object's extra members (an extra key, or an extra value) is timed, split into the
first request of a spec ("cold": fresh TextMachine) and a second request over the same machine
("warm": the shared per-state caches of `SpecCompiler` reuse). Prints p50/p99 in milliseconds;
the per-vocabulary token classes (`factorspec.graph.masks`, built once per process) are built
first and timed apart, then `gc.freeze()` moves the long-lived vocabulary out of the cyclic GC
(`--no-gc-freeze` keeps it in: a full collection over the tries pauses 1-2 s, at any position).
Works on trees where open objects are off by default (the open template is swapped in), so the
same script measures before and after.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from typing import Any, Optional

SCHEMAS: dict[str, dict] = {
    "ap_true": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"],
                "additionalProperties": True},
    "ap_string": {"type": "object", "properties": {"name": {"type": "string"}, "tag": {"type": "string"}},
                  "additionalProperties": {"type": "string"}},
    "nested_map": {"type": "object", "properties": {"meta": {
        "type": "object", "additionalProperties": {"type": "integer"}}}, "required": ["meta"]},
}


def _compile(doc: dict) -> Any:
    from factorspec.errors import SpecError
    from factorspec.graph.schema import SchemaCompiler
    from factorspec.graph.spec import compile_spec
    try:
        return compile_spec(doc)
    except SpecError:  # a tree where open objects are off by default: swap the open template in
        cs = compile_spec({"type": "object", "properties": {}})
        cs.template = SchemaCompiler(doc, open_objects=True).compile()
        return cs


def _inside_extra(configs: Any) -> bool:
    return any(any(t[0] in ("E", "X") for t in stack) for stack, _ in configs)


def walk(tm: Any, v: Any, seed: int, steps: int, times: list[float]) -> None:
    from factorspec.graph.matcher import Matcher
    rng = random.Random(seed)
    m = Matcher(tm, v)
    for _ in range(steps):
        if m.is_terminated():
            break
        inside = _inside_extra(m.configs)
        t0 = time.perf_counter()
        m._mask = None
        m.next_token_mask()
        dt = time.perf_counter() - t0
        if inside:
            times.append(dt)
        ids = m.allowed_tokens()
        special = ids[v.plain_len[ids] <= 0]
        pool = special if len(special) and rng.random() < 0.5 else ids
        assert m.accept_token(int(pool[rng.randrange(len(pool))]))


def pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))] * 1e3


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=80)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--json", default="")
    ap.add_argument("--no-gc-freeze", action="store_true",
                    help="leave the vocabulary's tries to the cyclic GC (a full collection over them pauses "
                         "about 1-2 s on Qwen's vocabulary, whatever the schema)")
    args = ap.parse_args(argv)
    from factorspec.graph.textstate import TextMachine
    from factorspec.models import load_tokenizer
    from factorspec.models.hf_vocab import vocab_for
    v = vocab_for(load_tokenizer("qwen2.5-coder-0.5b"))
    out: dict = {}
    try:  # the per-vocabulary token classes (once per process and vocabulary), timed apart
        from factorspec.graph import masks
        t0 = time.perf_counter()
        masks.quote_trie(v)
        for esc, pend in [(0, 0), (1, 0), (2, 0), (3, 0), (4, 0), (5, 0), (0, 1), (0, 2), (0, 3), (0, 12),
                          (0, 22), (0, 33), (0, 43)]:
            masks.body_mask(v, esc, pend)
        out["vocab_classes_s"] = round(time.perf_counter() - t0, 3)
        print("vocab_classes_s", out["vocab_classes_s"], flush=True)
    except (ImportError, AttributeError):
        pass
    if not args.no_gc_freeze:
        import gc
        gc.collect()
        gc.freeze()  # the long-lived vocabulary out of the GC's reach, as a serving process would
    out["gc_freeze"] = not args.no_gc_freeze
    for name, doc in SCHEMAS.items():
        row = {}
        for phase in ("cold", "warm"):
            times: list[float] = []
            for seed in range(args.seeds):
                tm = TextMachine(_compile(doc)) if phase == "cold" else row.setdefault("_tm", {}).get(seed)
                if tm is None:
                    tm = TextMachine(_compile(doc))
                row.setdefault("_tm", {})[seed] = tm
                walk(tm, v, seed, args.steps, times)
            row[phase] = {"n": len(times), "p50_ms": round(pct(times, 0.5), 3), "p99_ms": round(pct(times, 0.99), 3)}
        row.pop("_tm")
        out[name] = row
        print(name, json.dumps(row), flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
