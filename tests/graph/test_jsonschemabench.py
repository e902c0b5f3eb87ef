"""JSONSchemaBench (7,645 real-world schemas, shared data): every schema either compiles in FactorSpec
(then a random walk with a step cap, checked against xgrammar's mask on Qwen's tokenizer) or fails
with a clean FactorSpec error (SpecError naming the keyword and a JSON Pointer that resolves in the
schema, Unsatisfiable, BudgetExceeded) - never another exception or a hang.

pytest runs a seeded sample of 300 schemas. Script mode runs them all and writes the counts:

    python -m tests.graph.test_jsonschemabench --all [--out microbench/results/jsonschemabench.json]
"""
from __future__ import annotations

import argparse
import collections
import json
import platform
import random
import re
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Optional

import pytest

from factorspec.data import shared_data_path
from factorspec.errors import BudgetExceeded, SpecError, Unsatisfiable
from factorspec.graph import compile_spec
from factorspec.graph.solver import Budget
from factorspec.graph.textstate import TextMachine

from .conftest import load_tok, load_vocab, load_xgr_info, subset_walk

QWEN = "qwen2.5-coder-0.5b"
SAMPLE = 300
STEP_CAP = 120
SECONDS_PER_SCHEMA = 30.0  # hard wall-clock guard (SIGALRM) against hangs
_JSON_KEYWORDS = {
    "type", "properties", "required", "additionalProperties", "items", "minItems", "maxItems", "enum",
    "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength",
    "maxLength", "$ref", "$defs", "definitions", "format", "pattern", "anyOf", "oneOf", "allOf", "not",
    "patternProperties", "prefixItems", "uniqueItems", "minProperties", "maxProperties", "dependencies",
    "dependentRequired", "dependentSchemas", "if", "then", "else", "contains", "propertyNames",
    "additionalItems", "unevaluatedProperties", "unevaluatedItems", "minContains", "maxContains",
    "contentEncoding", "contentMediaType", "x-factorspec",
}


def bench_dir() -> Path:
    return shared_data_path("jsonschemabench")


def load_all() -> list[dict]:
    d = bench_dir()
    files = sorted(d.glob("*.jsonl"))
    if not files:
        pytest.fail(f"JSONSchemaBench not found under {d} (set FACTORSPEC_SHARED_DATA)", pytrace=False)
    out = []
    for f in files:
        with f.open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    out.append(json.loads(line))
    return out


def resolve_pointer(doc: Any, ptr: str) -> bool:
    if ptr in ("", "/"):
        return True
    x = doc
    for raw in ptr.lstrip("/").split("/"):
        seg = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(x, dict) and seg in x:
            x = x[seg]
        elif isinstance(x, list) and seg.isdigit() and int(seg) < len(x):
            x = x[int(seg)]
        else:
            return False
    return True


def keyword_of(e: SpecError) -> str:
    """The keyword a SpecError names (quoted in the message, or the pointer's last keyword segment),
    else a short category of the message."""
    m = re.search(r"keyword '([^']+)'", e.message)
    if m:
        return m.group(1)
    segs = [s.replace("~1", "/").replace("~0", "~") for s in e.pointer.strip("/").split("/") if s]
    if segs and segs[-1] in _JSON_KEYWORDS and not (len(segs) > 1 and segs[-2] in ("properties", "$defs", "definitions")):
        msg = e.message
        if segs[-1] == "type" and "list of types" in msg:
            return "type (list)"
        if segs[-1] == "additionalProperties":
            return "additionalProperties (not false)"
        return segs[-1]
    msg = re.sub(r"'[^']*'|\"[^\"]*\"|\d+", "_", e.message)
    return "(" + " ".join(msg.split()[:6]) + ")"


def xgrammar_exceptions(schema: Any) -> list[str]:
    """Documented places where xgrammar's mask is narrower than the schema (so FactorSpec's, which
    follows the schema, is not a subset of it): `format` (xgrammar asserts it; FactorSpec treats it
    as the annotation it is by default), an array without `items` (xgrammar allows only `[]`), a
    `required` name missing from `properties` (xgrammar never writes it, so its instances are
    invalid), a `number` with a bound (xgrammar's range grammar allows at most 6 fraction digits and
    no exponent, FactorSpec any decimal within the bound). On those schemas the walk is checked by the jsonschema validator alone."""
    out: set[str] = set()

    def visit(x: Any) -> None:
        if isinstance(x, list):
            for y in x:
                visit(y)
            return
        if not isinstance(x, dict):
            return
        if isinstance(x.get("format"), str):
            out.add("format")
        t = x.get("type")
        if (t == "array" or (isinstance(t, list) and "array" in t)) and x.get("items") in (None, True, {}) \
                and "prefixItems" not in x:
            out.add("array without items")
        req, props = x.get("required"), x.get("properties")
        if isinstance(req, list) and any(r not in (props if isinstance(props, dict) else {}) for r in req):
            out.add("required not in properties")
        if (t == "number" or (isinstance(t, list) and "number" in t)) and "multipleOf" not in x and any(
                k in x for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")):
            out.add("bounded number")
        for y in x.values():
            visit(y)
    visit(schema)
    return sorted(out)


def validator_errors(schema: dict, instance: Any) -> list[str]:
    """Errors of `instance` under the `jsonschema` package (the schema's own draft, else 2020-12;
    a draft-04 schema that omits `$schema` falls back to Draft 4). `format` is not asserted."""
    import jsonschema
    from jsonschema.validators import validator_for
    cls = validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        return [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:120]}" for e in cls(schema).iter_errors(instance)]
    except Exception:  # noqa: BLE001 - a draft-04 keyword form under a later draft's validator
        v4 = jsonschema.Draft4Validator(schema)
        return [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:120]}" for e in v4.iter_errors(instance)]


class _Timeout(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _Timeout()


def run_one(rec: dict, seed: int, xgr_compiler: Any, cap: int = STEP_CAP, compile_only: bool = False) -> dict:
    """One schema: compile (or a clean error), then a capped random walk checked against xgrammar."""
    schema = rec["schema"]
    out: dict = {"id": rec["id"], "subset": rec["subset"]}
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, SECONDS_PER_SCHEMA)
    t0 = time.perf_counter()
    try:
        try:
            cs = compile_spec(schema, budget=Budget(nodes=50_000, seconds=5.0))
            tm = TextMachine(cs)
            tm.initial()
        except SpecError as e:
            out["result"] = "spec_error"
            out["keyword"] = keyword_of(e)
            out["pointer"] = e.pointer
            out["pointer_resolves"] = resolve_pointer(schema, e.pointer)
            return out
        except Unsatisfiable as e:
            out["result"] = "unsatisfiable"
            out["detail"] = str(e)[:200]
            return out
        except BudgetExceeded as e:
            out["result"] = "budget"
            out["detail"] = str(e)[:200]
            return out
        out["compiled"] = True
        compiled = None
        if compile_only:
            out["result"] = "passed"
            return out
        exc = xgrammar_exceptions(schema)
        if exc:
            out["xgrammar_exceptions"] = exc
        try:
            compiled = xgr_compiler.compile_json_schema(json.dumps(schema), any_whitespace=False)
            if exc:
                compiled = None
        except Exception as e:  # noqa: BLE001 - xgrammar's own failure is recorded, not ours
            out["xgrammar_error"] = f"{type(e).__name__}: {str(e)[:200]}"
        v = load_vocab(QWEN)
        if compiled is not None:
            stats: dict = {}
            out["steps"] = subset_walk(cs, tm, v, compiled, seed, structural_bias=0.6, cap=cap, stats=stats)
            out["escape_diff_steps"] = stats.get("escape_diffs", 0)
            finished, text = stats["finished"], stats["text"]
        if compiled is None:
            from factorspec.graph.matcher import Matcher
            rng = random.Random(seed)
            m = Matcher(tm, v)
            n = 0
            while not m.is_terminated() and n < cap:
                ids = m.allowed_tokens()
                assert len(ids), f"empty mask after {bytes(m.text)!r}"
                special = ids[v.plain_len[ids] <= 0]
                pool = special if len(special) and rng.random() < 0.6 else ids
                assert m.accept_token(int(pool[rng.randrange(len(pool))]))
                n += 1
            out["steps"] = n
            finished = m.is_terminated()
            text = bytes(m.text)
        out["result"] = "passed"
        out["finished"] = bool(finished)
        if finished:
            rec_ = json.loads(text.decode("utf-8"))
            bad = cs.check(rec_)
            if bad:
                raise AssertionError(f"finished record fails the spec: {[str(b) for b in bad][:3]}")
            errs = validator_errors(schema, rec_)
            if errs:
                raise AssertionError(f"finished instance {text[:200]!r} fails jsonschema: {errs[:3]}")
        return out
    except _Timeout:
        out["result"] = "timeout"
        out["detail"] = f"over {SECONDS_PER_SCHEMA}s"
        return out
    except Exception as e:  # noqa: BLE001 - every other exception is a failure to report
        out["result"] = "failure"
        out["detail"] = f"{type(e).__name__}: {str(e)[:400]}"
        out["trace"] = traceback.format_exc(limit=4)[-1200:]
        return out
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        out["seconds"] = round(time.perf_counter() - t0, 4)


def summarize(results: list[dict]) -> dict:
    c = collections.Counter(r["result"] for r in results)
    kw = collections.Counter(r["keyword"] for r in results if r["result"] == "spec_error")
    compiled = [r for r in results if r.get("compiled")]
    return {
        "schemas": len(results),
        "results": dict(c),
        "compiled": len(compiled),
        "compiled_passed": sum(1 for r in compiled if r["result"] == "passed"),
        "finished_instances_valid": sum(1 for r in compiled if r.get("finished")),
        "compiled_by_subset": {s: sum(1 for r in compiled if r["subset"] == s)
                               for s in sorted({r["subset"] for r in results})},
        "xgrammar_failed_on_compiled": sum(1 for r in compiled if "xgrammar_error" in r),
        "xgrammar_subset_exceptions": dict(collections.Counter(e for r in compiled
                                                               for e in r.get("xgrammar_exceptions", []))),
        "walk_steps_total": sum(r.get("steps", 0) for r in compiled),
        "steps_with_escape_difference": sum(r.get("escape_diff_steps", 0) for r in compiled),
        "spec_error_keywords_top10": kw.most_common(10),
        "spec_error_keywords": dict(kw.most_common()),
        "spec_error_pointer_unresolved": [r["id"] for r in results
                                          if r["result"] == "spec_error" and not r["pointer_resolves"]],
        "by_subset": {s: dict(collections.Counter(r["result"] for r in results if r["subset"] == s))
                      for s in sorted({r["subset"] for r in results})},
        "failures": [{k: r.get(k) for k in ("id", "subset", "result", "detail")} for r in results
                     if r["result"] in ("failure", "timeout")],
        "xgrammar_errors": [{"id": r["id"], "error": r["xgrammar_error"]} for r in compiled if "xgrammar_error" in r],
        "slowest": sorted(((r["seconds"], r["id"]) for r in results), reverse=True)[:10],
    }


def _compiler() -> Any:
    import xgrammar as xgr
    return xgr.GrammarCompiler(load_xgr_info(QWEN))


def test_jsonschemabench_sample() -> None:
    """A seeded sample of 300 schemas: clean outcome for each, and every compiled one passes."""
    load_tok(QWEN)
    allrecs = load_all()
    assert len(allrecs) == 7645, len(allrecs)
    sample = random.Random(2026).sample(allrecs, SAMPLE)
    gc = _compiler()
    results = [run_one(r, k, gc) for k, r in enumerate(sample)]
    s = summarize(results)
    print(json.dumps({k: s[k] for k in ("results", "compiled", "compiled_passed", "spec_error_keywords_top10")}))
    assert not s["failures"], s["failures"]
    assert not s["spec_error_pointer_unresolved"], s["spec_error_pointer_unresolved"]
    assert s["compiled"] >= 30, "suspiciously few schemas compiled"
    assert s["compiled_passed"] == s["compiled"]


def machine_info() -> dict:
    info = {"python": platform.python_version(), "platform": platform.platform()}
    try:
        import subprocess
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        for line in out.splitlines():
            k, _, v = line.partition(":")
            if k.strip() in ("Model name", "CPU(s)", "Thread(s) per core", "Architecture"):
                info[k.strip()] = v.strip()
    except Exception:  # noqa: BLE001
        pass
    import os
    info["usable_cores"] = len(os.sched_getaffinity(0))
    return info


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--all", action="store_true", help="run all 7,645 schemas (default: the 300 sample)")
    ap.add_argument("--out", default="microbench/results/jsonschemabench.json")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--cap", type=int, default=STEP_CAP, help="walk step cap per schema")
    ap.add_argument("--compile-only", action="store_true", help="compile (and build the automaton) only: no walk")
    args = ap.parse_args(argv)
    allrecs = load_all()
    recs = allrecs if args.all else random.Random(2026).sample(allrecs, SAMPLE)
    if args.limit:
        recs = recs[: args.limit]
    gc = _compiler()
    t0 = time.time()
    results = []
    for k, r in enumerate(recs):
        results.append(run_one(r, k, gc, cap=args.cap, compile_only=args.compile_only))
        if (k + 1) % 500 == 0:
            print(f"{k + 1}/{len(recs)} {time.time() - t0:.0f}s", file=sys.stderr, flush=True)
    s = summarize(results)
    s["seconds"] = round(time.time() - t0, 1)
    s["step_cap"] = args.cap
    s["compile_only"] = args.compile_only
    s["tokenizer"] = QWEN
    s["machine"] = machine_info()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(s, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps({k: s[k] for k in ("schemas", "results", "compiled", "compiled_passed",
                                        "xgrammar_failed_on_compiled", "spec_error_keywords_top10", "seconds")}, indent=1))
    return 0 if not s["failures"] else 1


if __name__ == "__main__":
    sys.exit(main())
