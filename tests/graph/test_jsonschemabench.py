"""JSONSchemaBench (7,645 real-world schemas, shared data) in CI: a fixed seeded sample of 300.

Every schema of the sample either compiles in FactorSpec or fails with a clean FactorSpec error
(SpecError naming the keyword and a JSON Pointer that resolves in the schema, Unsatisfiable,
BudgetExceeded) - never another exception or a hang. The ones listed in MUST_COMPILE (those that
compiled on main when the list was written) must still compile: a schema leaving the list is a
coverage regression (a schema that starts compiling is welcome, and checked like the others).

Each compiled schema gets a seeded random token walk on Qwen's tokenizer: for the first
XGRAMMAR_STEPS tokens FactorSpec's mask must be a subset of xgrammar's (documented exceptions
only: `xgrammar_exceptions`, and escapes inside length-bounded strings), after that FactorSpec
walks alone with a stronger bias to structural tokens until the record ends. A second walk,
FactorSpec alone, takes one of the longest allowed tokens at half of its steps, so strings reach
their maxLength and numbers get long (where an off-by-one bound shows; random walks rarely get
there). No mask may be empty (no dead end); every finished record must pass `cs.check` and the
`jsonschema` validator; and most walks must finish, so the validator really sees records.

The side-by-side benchmark against xgrammar and llguidance (compile share, compile and mask time,
soundness of all three) is `python -m microbench jsonschemabench` (microbench/jsonschemabench.py).
"""
from __future__ import annotations

import contextlib
import random
import re
import signal
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from factorspec.data import shared_data_path
from factorspec.errors import BudgetExceeded, SpecError, Unsatisfiable
from factorspec.graph import compile_spec
from factorspec.graph.solver import Budget
from factorspec.graph.textstate import TextMachine
from factorspec.graph.token_vocab import unpack_mask
from microbench.jsonschemabench import load_corpus, load_instance, validator_errors

from .conftest import Walker, _escape_in_bounded_string, load_tok, load_vocab, load_xgr_info

QWEN = "qwen2.5-coder-0.5b"
SAMPLE, SAMPLE_SEED = 300, 2026
XGRAMMAR_STEPS = 120  # walk steps compared with xgrammar's mask
FINISH_CAP = 600  # total step cap of a walk
MIN_FINISHED_SHARE = 0.9
SECONDS_PER_SCHEMA = 60.0  # wall-clock guard (SIGALRM) against hangs, each of compile and walk
EDGE_CAP = 300  # step cap of the longest-token walk
STEP_CAP = XGRAMMAR_STEPS  # (name kept for callers)

# Compiled on main at 3547706 (221 of the sample); keep sorted, add ids as coverage grows.
MUST_COMPILE = frozenset("""
    book_flight_05dcf13f calculate_area_0f50c849 calculate_area_11accd5b calculate_area_1957c96e
    calculate_area_1bc05895 calculate_area_20d3aedf calculate_area_295f0061 calculate_area_306b0d1e
    calculate_area_39e6c1c8 calculate_area_3d71020d calculate_area_6158d076 calculate_area_640a7b20
    calculate_area_75a4a605 calculate_area_939a796c calculate_area_a5ac6157 calculate_area_b5cc66de
    calculate_area_bcc08b54 calculate_area_be52a9a0 calculate_area_c040f289 calculate_area_cdde5279
    calculate_area_ecbc77c4 calculate_area_f4e198c9 calculate_discounted_price_ac4734a9
    calculate_distance_2d0b1e10 calculate_distance_3cc26a6f calculate_distance_444a6c19
    calculate_distance_97630804 calculate_rental_cost_6fa0b6ce convert_temperature_33a6db10
    create_calendar_event_1ac25f9d create_calendar_event_a2233073 create_calendar_event_c2876547
    create_calendar_event_d21ed730 create_invoice_29d1f29d create_invoice_c1b64ef0 find_hotels_5e748096
    generate_invoice_0f79d75c generate_invoice_5263c45e generate_invoice_53d2d452 generate_invoice_794f5a1e
    generate_invoice_7953d15f generate_invoice_b635face generate_invoice_d89c2b04 generate_invoice_f7f02d56
    generate_password_7cc4d82d kb_105_Normalized kb_1069_Normalized kb_1084_Normalized kb_117_Normalized
    kb_175_Normalized kb_206_Normalized kb_223_Normalized kb_224_Normalized kb_225_Normalized kb_258_Normalized
    kb_279_Normalized kb_27_Normalized kb_319_Normalized kb_346_Normalized kb_371_Normalized kb_384_Normalized
    kb_457_Normalized kb_517_Normalized kb_522_Normalized kb_539_Normalized kb_564_Normalized kb_624_Normalized
    kb_626_Normalized kb_642_Normalized kb_678_Normalized kb_693_Normalized kb_756_Normalized kb_787_Normalized
    kb_793_Normalized kb_859_Normalized kb_863_Normalized kb_941_Normalized kb_948_Normalized kb_955_Normalized
    lefthook npm-badges o10526 o12182 o12279 o12345 o12970 o13934 o13985 o14426 o16062 o17139 o17393 o19062
    o19070 o19342 o20453 o20526 o22453 o2256 o23148 o26589 o27826 o27832 o28139 o28265 o29942 o30769 o30804
    o30940 o31089 o31994 o33939 o34361 o36464 o36469 o37060 o38732 o39423 o41241 o41653 o42290 o43293 o44264
    o44288 o44455 o45201 o45401 o46358 o46906 o48873 o51221 o51227 o51260 o5187 o5233 o54575 o54618 o54993
    o56027 o57437 o57453 o59284 o5966 o60103 o60288 o60292 o60844 o61344 o6245 o6259 o6266 o6322 o6330 o6361
    o6374 o63985 o64544 o64726 o65921 o66170 o66715 o67056 o67500 o67501 o68301 o69910 o69961 o73409 o7384
    o73952 o7495 o77233 o77402 o78460 o78729 o79490 o79714 o80803 o83170 o83357 o85175 o85195 o85252 o90179
    o90610 o90675 o90796 o90812 o90822 o90823 o90958 o9361 o9541 o9703 o9777 schedule_meeting_849f069e
    search_hotel_0d2b9430 search_hotels_7d83ff70 search_hotels_8bb53403 search_hotels_d2c27c8f
    search_jobs_f078e469 search_news_a9d61a9a search_restaurants_0160bc0b sp_101_Normalized sp_124_Normalized
    sp_126_Normalized sp_127_Normalized sp_140_Normalized sp_150_Normalized sp_15_Normalized sp_187_Normalized
    sp_223_Normalized sp_406_Normalized sp_416_Normalized sp_55_Normalized sp_5_Normalized wp_104_Normalized
    wp_34_Normalized wp_62_Normalized wp_64_Normalized wp_89_Normalized
""".split())

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
    if not list(d.glob("*.jsonl")):
        pytest.fail(f"JSONSchemaBench not found under {d} (set FACTORSPEC_SHARED_DATA)", pytrace=False)
    return load_corpus(d)


def the_sample() -> list[dict]:
    allrecs = load_all()
    assert len(allrecs) == 7645, len(allrecs)
    return random.Random(SAMPLE_SEED).sample(allrecs, SAMPLE)


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
    in_names = len(segs) > 1 and segs[-2] in ("properties", "$defs", "definitions")
    if segs and segs[-1] in _JSON_KEYWORDS and not in_names:
        if segs[-1] == "type" and "list of types" in e.message:
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
    no exponent, FactorSpec any decimal within the bound), a `pattern` or patternProperties key
    not anchored at both ends (xgrammar matches the whole string; JSON Schema searches, so
    `[a-z]+` admits "1a/"), `properties`/`required`/`items` beside `anyOf`/`oneOf` (xgrammar
    compiles the branches alone and drops the siblings, so its records can miss a required name:
    Github_medium/o65914). On those schemas the walk is checked by the jsonschema validator alone."""
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
        pats = ([x["pattern"]] if isinstance(x.get("pattern"), str) else []) + \
            (list(x["patternProperties"]) if isinstance(x.get("patternProperties"), dict) else [])
        if any(not (p.startswith("^") and p.endswith("$")) for p in pats):
            out.add("unanchored pattern")
        if ("anyOf" in x or "oneOf" in x) and any(k in x for k in _BESIDE_BRANCHES):
            out.add("keywords beside anyOf/oneOf")
        for y in x.values():
            visit(y)
    visit(schema)
    return sorted(out)


def compiled_exceptions(cs: Any) -> list[str]:
    """Documented exceptions that FactorSpec's compile report names: a `oneOf` whose alternatives,
    read by their closed layouts, leave no value matching exactly one, compiles them as written
    (objects open: Github_trivial/o41582 `{"pets": {"cat": true}}` matches only the first of
    `{properties: {dog: string}}`, `{properties: {cat: string}}`). xgrammar closes those objects,
    so it admits `{"cat": "x"}` (both alternatives: invalid) and refuses `{"cat": true}`."""
    return sorted({"oneOf read as written" for (p, k, _n) in cs.schema_report
                   if k == "additionalProperties" and p.endswith("/oneOf/additionalProperties")})


_BESIDE_BRANCHES = ("properties", "required", "patternProperties", "additionalProperties", "items",
                    "prefixItems", "minItems", "maxItems", "minProperties", "maxProperties")


class _Timeout(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _Timeout()


_LENS: dict[int, np.ndarray] = {}


def _longest(rng: random.Random, v: Any, ids: np.ndarray) -> int:
    """One of the longest allowed tokens: fills strings up to their maxLength, writes long numbers
    (the edges where a bound is off by one)."""
    lens = _LENS.get(id(v))
    if lens is None:
        pad = [0] * (v.vocab_size - len(v.token_bytes))
        lens = _LENS[id(v)] = np.array([len(b) for b in v.token_bytes] + pad)
    ln = lens[ids]
    top = ids[ln == ln.max()]
    return int(top[rng.randrange(len(top))])


def walk(cs: Any, tm: TextMachine, v: Any, compiled: Any, seed: int, cap: int, xgr_steps: int,
         longest: float = 0.0) -> dict:
    """One seeded random token walk over FactorSpec's mask: compared with xgrammar's mask for the
    first `xgr_steps` steps (when `compiled` is given), then FactorSpec alone up to `cap` steps;
    with probability `longest` a step takes one of the longest allowed tokens.
    Raises AssertionError on an empty mask, a token outside xgrammar's mask (beyond the documented
    escape difference), or an allowed token the matcher rejects."""
    import xgrammar as xgr

    from factorspec.graph.matcher import Matcher
    rng = random.Random(seed)
    m = Matcher(tm, v)
    gm = xgr.GrammarMatcher(compiled) if compiled is not None else None
    bm = xgr.allocate_token_bitmask(1, v.vocab_size) if gm is not None else None
    n = escape_diffs = 0
    while not m.is_terminated() and n < cap:
        ours = m.next_token_mask()
        assert ours.any(), f"dead end: empty mask after {bytes(m.text)!r}"
        pool = ours
        if gm is not None and n < xgr_steps:
            gm.fill_next_token_bitmask(bm, 0)
            theirs = bm[0].numpy()[: len(ours)]
            extra = ours & ~theirs
            if extra.any():
                bad = [int(t) for t in unpack_mask(extra, v.vocab_size)
                       if not _escape_in_bounded_string(tm, m.configs, v.token_bytes[t])]
                escape_diffs += 1
                assert not bad, (f"tokens allowed by FactorSpec but not xgrammar after {bytes(m.text)!r}: "
                                 f"{[(t, v.token_bytes[t]) for t in bad[:8]]}")
            pool = ours & theirs
        elif gm is not None:
            gm = None  # past the compared prefix: FactorSpec alone
        ids = unpack_mask(pool, v.vocab_size)
        assert len(ids), f"no token allowed by both after {bytes(m.text)!r}"
        if longest and rng.random() < longest:
            t = _longest(rng, v, ids)
        else:
            t = Walker.pick(rng, v, ids, 0.6 if n < xgr_steps else 0.9)
        assert m.accept_token(t), f"allowed token {t} {v.token_bytes[t]!r} rejected after {bytes(m.text)!r}"
        if gm is not None:
            assert gm.accept_token(t), f"xgrammar rejects token {t} {v.token_bytes[t]!r} after {bytes(m.text)!r}"
        n += 1
    if m.is_terminated() and gm is not None:
        assert gm.is_terminated()
    return {"steps": n, "finished": m.is_terminated(), "text": bytes(m.text), "escape_diffs": escape_diffs}


@contextlib.contextmanager
def _guard(seconds: float) -> Iterator[None]:
    """A SIGALRM wall-clock guard around FactorSpec's own work (xgrammar's compile is left out:
    its time is not ours, and native code cannot be cut anyway)."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def run_one(rec: dict, seed: int, xgr_compiler: Any, cap: int = FINISH_CAP, compile_only: bool = False,
            xgr_steps: int = XGRAMMAR_STEPS, edge: bool = True) -> dict:
    """One schema: compile (or a clean error), then a seeded walk checked against xgrammar and (with
    `edge`) a FactorSpec walk that favours the longest tokens; each finished record is checked by
    `cs.check` and the jsonschema validator. `result` is "passed", "spec_error",
    "unsatisfiable", "budget", "timeout" or "failure" (with `detail`)."""
    import json
    schema = rec["schema"]
    out: dict = {"id": rec["id"], "subset": rec["subset"]}
    t0 = time.perf_counter()
    try:
        try:
            with _guard(SECONDS_PER_SCHEMA):
                cs = compile_spec(schema, budget=Budget(nodes=50_000, seconds=5.0))
                tm = TextMachine(cs)
                tm.initial()
        except SpecError as e:
            out.update(result="spec_error", keyword=keyword_of(e), pointer=e.pointer,
                       pointer_resolves=resolve_pointer(schema, e.pointer))
            return out
        except Unsatisfiable as e:
            out.update(result="unsatisfiable", detail=str(e)[:200])
            return out
        except BudgetExceeded as e:
            out.update(result="budget", detail=str(e)[:200])
            return out
        out["compiled"] = True
        if compile_only:
            out["result"] = "passed"
            return out
        exc = sorted(set(xgrammar_exceptions(schema)) | set(compiled_exceptions(cs)))
        compiled = None
        if exc:
            out["xgrammar_exceptions"] = exc
        else:
            try:
                compiled = xgr_compiler.compile_json_schema(json.dumps(schema), any_whitespace=False)
            except Exception as e:  # noqa: BLE001 - xgrammar's own failure is recorded, not ours
                out["xgrammar_error"] = f"{type(e).__name__}: {str(e)[:200]}"
        with _guard(SECONDS_PER_SCHEMA):
            w = walk(cs, tm, load_vocab(QWEN), compiled, seed, cap, xgr_steps)
            # a second walk, FactorSpec alone, half of its steps on the longest allowed token
            w2 = walk(cs, tm, load_vocab(QWEN), None, seed + 7919, EDGE_CAP, 0, longest=0.5) if edge else None
        out.update(result="passed", steps=w["steps"], finished=w["finished"], escape_diff_steps=w["escape_diffs"])
        if w2 is not None:
            out.update(edge_steps=w2["steps"], edge_finished=w2["finished"])
        for x in (w, w2):
            if x is not None and x["finished"]:
                inst = json.loads(x["text"].decode("utf-8"))
                bad = cs.check(inst)
                assert not bad, f"finished record fails the spec: {[str(b) for b in bad][:3]}"
                errs = validator_errors(schema, load_instance(x["text"]))
                assert not errs, f"finished instance {x['text'][:200]!r} fails jsonschema: {errs[:3]}"
        return out
    except _Timeout:
        out.update(result="timeout", detail=f"over {SECONDS_PER_SCHEMA}s")
        return out
    except Exception as e:  # noqa: BLE001 - every other exception is a failure to report
        out.update(result="failure", detail=f"{type(e).__name__}: {str(e)[:400]}",
                   trace=traceback.format_exc(limit=4)[-1200:])
        return out
    finally:
        out["seconds"] = round(time.perf_counter() - t0, 4)


def _compiler() -> Any:
    import xgrammar as xgr
    return xgr.GrammarCompiler(load_xgr_info(QWEN))


def test_must_compile_ids_are_in_the_sample() -> None:
    """The pinned list names schemas of the sample (a typo or a changed sample would make the
    coverage check below vacuous)."""
    ids = {r["id"] for r in the_sample()}
    assert MUST_COMPILE <= ids, sorted(MUST_COMPILE - ids)[:5]
    assert len(MUST_COMPILE) >= 200


def test_validator_oracle_rejects_bad_instances() -> None:
    """The oracle of the walks is not vacuous: it rejects what the schema forbids, in the draft the
    schema declares."""
    s = {"type": "object", "properties": {"a": {"type": "string", "maxLength": 2}}, "required": ["a"],
         "additionalProperties": False}
    assert validator_errors(s, {"a": "ab"}) == []
    assert validator_errors(s, {"a": "abc"}) and validator_errors(s, {}) and validator_errors(s, {"a": "a", "b": 1})
    d4 = {"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer", "maximum": 3,
          "exclusiveMaximum": True}
    assert validator_errors(d4, 2) == [] and validator_errors(d4, 3)


def test_validator_oracle_computes_multiple_of_exactly() -> None:
    """multipleOf in decimal, as JSON Schema means it: float division calls -32.48 no multiple of
    0.01 (a record of Github_easy/o46416 that FactorSpec wrote, valid); -32.485 is none, nor 10 of 3,
    and numbers past a float's range are compared exactly."""
    s = {"type": "object", "properties": {"amount": {"type": "number", "multipleOf": 0.01},
                                          "n": {"type": "integer", "multipleOf": 3, "maximum": 1e308}}}
    assert validator_errors(s, load_instance(b'{"amount": -32.48, "n": 9}')) == []
    assert validator_errors(s, {"amount": -32.48}) == []  # a float instance is read by its text
    assert validator_errors(s, load_instance(b'{"amount": -32.485}'))
    assert validator_errors(s, load_instance(b'{"n": 10}'))
    assert validator_errors(s, load_instance(b'{"amount": 1e400, "n": 999}')) == []
    assert validator_errors(s, load_instance(b'{"n": 3e308}'))
    assert validator_errors({"type": "number"}, load_instance(b"1e999999999")) == []  # at once, no giant int
    assert validator_errors({"maximum": 5}, load_instance(b"1e99999999999999999999"))  # past Decimal's range
    assert validator_errors({"minimum": 0}, load_instance(b"1e-99999999999999999999")) == []


def test_xgrammar_drops_keywords_beside_one_of() -> None:
    """The evidence for the 'keywords beside anyOf/oneOf' exception (Github_medium/o65914): xgrammar
    rejects a valid record and accepts one that misses a required name. When xgrammar changes,
    this fails and the exception goes."""
    import json

    import xgrammar as xgr
    s = {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}},
         "oneOf": [{"required": ["a"], "properties": {"a": {"type": "integer"}}},
                   {"required": ["b"], "properties": {"b": {"type": "boolean"}}}]}
    assert xgrammar_exceptions(s) == ["keywords beside anyOf/oneOf"]
    good, bad = {"name": "x", "a": 1}, {"a": 1}
    assert validator_errors(s, good) == [] and validator_errors(s, bad)
    g = xgr.Grammar.from_json_schema(json.dumps(s), any_whitespace=False)
    accepts = xgr.testing._is_grammar_accept_string
    assert not accepts(g, json.dumps(good)) and accepts(g, json.dumps(bad))


def test_xgrammar_closes_open_one_of_alternatives() -> None:
    """The evidence for the 'oneOf read as written' exception (Github_trivial/o41582): FactorSpec's
    report names it, the record FactorSpec allows is valid, and xgrammar refuses it but accepts an
    invalid one. When xgrammar changes, this fails and the exception goes."""
    import json

    import xgrammar as xgr
    s = {"type": "object", "properties": {"pets": {"oneOf": [
        {"type": "object", "properties": {"dog": {"type": "string"}}},
        {"type": "object", "properties": {"cat": {"type": "string"}}}]}}}
    cs = compile_spec(s)
    assert compiled_exceptions(cs) == ["oneOf read as written"]
    assert compiled_exceptions(compile_spec({"oneOf": [{"type": "string"}, {"type": "integer"}]})) == []
    good, bad = {"pets": {"cat": True}}, {"pets": {"cat": "x"}}
    assert validator_errors(s, good) == [] and validator_errors(s, bad)
    assert not cs.check(good) and cs.check(bad)
    g = xgr.Grammar.from_json_schema(json.dumps(s), any_whitespace=False)
    accepts = xgr.testing._is_grammar_accept_string
    assert not accepts(g, json.dumps(good)) and accepts(g, json.dumps(bad))


def test_jsonschemabench_sample() -> None:
    """The seeded sample of 300: a clean outcome for each schema, the pinned ones compile, and every
    compiled one walks without a dead end to records the validator accepts."""
    load_tok(QWEN)
    sample = the_sample()
    gc = _compiler()
    results = [run_one(r, k, gc) for k, r in enumerate(sample)]
    failures = [{k: r.get(k) for k in ("id", "result", "detail")} for r in results
                if r["result"] in ("failure", "timeout")]
    assert not failures, failures
    unresolved = [r["id"] for r in results if r["result"] == "spec_error" and not r["pointer_resolves"]]
    assert not unresolved, unresolved
    compiled = [r for r in results if r.get("compiled")]
    lost = sorted(MUST_COMPILE - {r["id"] for r in compiled})
    assert not lost, ("schemas that compiled on main no longer do",
                      [(r["id"], r.get("result"), r.get("keyword")) for r in results if r["id"] in lost])
    assert all(r["result"] == "passed" for r in compiled)
    finished = sum(1 for r in compiled if r["finished"])
    assert finished >= MIN_FINISHED_SHARE * len(compiled), (finished, len(compiled))
    edge_finished = sum(1 for r in compiled if r["edge_finished"])
    assert edge_finished >= 0.75 * len(compiled), (edge_finished, len(compiled))
    compared = sum(1 for r in compiled if "xgrammar_exceptions" not in r and "xgrammar_error" not in r)
    assert compared >= 0.5 * len(compiled), compared  # the xgrammar subset check covers most walks
    print(f"compiled {len(compiled)}/{len(results)}, finished {finished} (edge walks {edge_finished}), "
          f"compared with xgrammar {compared}, "
          f"steps {sum(r['steps'] for r in compiled)}")


def test_side_by_side_harness_smoke(tmp_path: Path) -> None:
    """The side-by-side benchmark runs end to end on a few small schemas (all three engines, one
    llguidance refusal among them) and writes consistent reports."""
    import json

    from microbench import jsonschemabench as jb
    ids = {"o10526", "calculate_area_0f50c849", "kb_105_Normalized", "o9777"}
    d = tmp_path / "data"
    d.mkdir()
    recs = [r for r in load_all() if r["id"] in ids]
    (d / "mini.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    out = tmp_path / "r.json"
    args = jb.parse_args(["--data", str(d), "--json", str(out), "--cap", "60", "--progress", "0"])
    jb.write(jb.run(args, jb.Engines(tok=load_tok(QWEN))), args.json, args.md)
    res = json.loads(out.read_text(encoding="utf-8"))
    s = res["summary"]
    assert s["schemas"] == len(recs) == 4
    assert s["compiled"]["factorspec"] == 4 and s["compiled"]["xgrammar"] == 4
    assert s["compiled"]["llguidance"] == 3 and s["compiled_all"] == 3  # kb_105: format 'byte' unknown to llguidance
    st = res["per_schema"]["status"]
    assert set(st) == {f"{r['subset']}/{r['id']}" for r in recs}
    assert res["per_schema"]["classes"][st["Kubernetes/kb_105_Normalized"][2]].startswith("Unknown format")
    fs = s["own_walks"]["factorspec"]["on_own_compiled"]
    assert fs["walks"] == 4 and fs["soundness_errors"] == 0 and fs["dead_ends"] == 0 and fs["finished"] >= 3
    for k in jb.ENGINES:
        assert s["walk"]["mask_us_all_compile"][k]["n"] == s["walk"]["joint_tokens_all_compile"] > 0
    md = (tmp_path / "r.md").read_text(encoding="utf-8")
    assert "| **total** |" in md and "Soundness" in md


def test_schemas_that_admit_no_value_are_counted_as_proved_empty() -> None:
    """A schema FactorSpec refuses with EmptySchema (here: `dimensions` requires all five keys,
    so every alternative of its oneOf matches and none matches alone) is reported as proved
    empty, apart from coverage gaps, with the other engines that compiled it anyway."""
    from microbench import jsonschemabench as jb
    rec = next(r for r in load_all() if r["id"] == "calculate_area_2f92f3ea")
    with pytest.raises(SpecError) as info:
        jb.Engines.compile(None, "factorspec", rec["schema"])  # type: ignore[arg-type]
    status = jb.error_class("factorspec", info.value)
    assert jb.proved_empty(status) and status == "EmptySchema: oneOf"
    gap = jb.error_class("factorspec", SpecError("/pattern", "unsupported keyword 'pattern'"))
    assert not jb.proved_empty(gap)
    ms = {"factorspec": 1.0, "xgrammar": 1.0}
    results = [{"subset": "S", "id": "a", "compile": {"factorspec": status, "xgrammar": "ok"}, "compile_ms": ms},
               {"subset": "S", "id": "b", "compile": {"factorspec": "ok", "xgrammar": "ok"}, "compile_ms": ms},
               {"subset": "T", "id": "c", "compile": {"factorspec": gap, "xgrammar": "ok"}, "compile_ms": ms}]
    s = jb.summarize(results, ("factorspec", "xgrammar"))
    assert s["factorspec_proved_empty"] == 1 and s["compiled_where_proved_empty"] == {"factorspec": 0, "xgrammar": 1}
    assert s["by_subset"]["S"]["factorspec_proved_empty"] == 1 and s["by_subset"]["T"]["factorspec_proved_empty"] == 0
    assert s["by_subset"]["S"]["xgrammar_compiled_where_proved_empty"] == 1
