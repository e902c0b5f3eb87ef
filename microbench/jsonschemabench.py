"""JSONSchemaBench side by side: FactorSpec, xgrammar and llguidance on the same schemas, the same
tokenizer and the same token walks, in one process and one run.

    python -m microbench jsonschemabench [--data DIR] [--sample N --seed S] [--limit N]
        [--subset NAME ...] [--compile-only] [--cap STEPS] [--json OUT] [--md OUT]

Per schema (one JSONL record `{"id", "subset", "schema"}` of DIR/*.jsonl):
- compile: each engine compiles the schema or fails; the first error is kept as a short class
  (FactorSpec: the exception type and the keyword a SpecError names; xgrammar and llguidance: the
  exception type or matcher error with digits and quoted names blanked). Compile time is what an
  engine needs before its first mask: FactorSpec `compile_spec` + `TextMachine` + `initial()`;
  xgrammar `GrammarCompiler.compile_json_schema` (cache off, `--xgrammar-threads`, default 1);
  llguidance `grammar_from_json_schema` + `LLMatcher` (lexer built eagerly, its default).
  FactorSpec's compile is cut at 60 s (a SIGALRM, reported as a timeout); the engines' native
  compiles cannot be cut by a signal, so their full time is recorded, however long.
- joint walk (unless --compile-only): a seeded random walk over the INTERSECTION of the masks of
  the engines that compiled the schema, so every engine computes its mask on the same prefixes of
  the same token sequence (one token picked from the tokens all allow; with probability 0.6 one
  that is not plain string content, so walks through free strings end). Each engine's mask call
  (`Matcher.fill_next_token_bitmask`, `GrammarMatcher.fill_next_token_bitmask`,
  `llguidance.numpy.fill_next_token_bitmask`, each into its own int32 bitmask row) is timed at every
  position, stop token included. The walk ends when the stop token is taken, at `--cap` steps, or
  when the masks share no token ("disagree": an engine-difference, counted, not an error).
- soundness: on each engine's own seeded random walk (its own mask only, same bias and cap), a
  finished record that is not JSON or that the `jsonschema` validator rejects (the schema's
  declared draft, else 2020-12; `format` not asserted) counts as a soundness error of that engine;
  an empty mask before the end is a dead end, an allowed token the engine then rejects an
  inconsistency. Reported on the schemas all three compile (like with like) and on each engine's
  own compiled set.

Whitespace: all three write xgrammar's default separators `", "` and `": "` and nothing else
(FactorSpec's default TextStyle; xgrammar `any_whitespace=False`; llguidance
`item_separator`/`key_separator` with `whitespace_flexible: false`), so their languages coincide.
Timing figures depend on the machine's load: the run records `os.getloadavg()` at start and end.
"""
from __future__ import annotations

import argparse
import collections
import decimal
import functools
import json
import os
import platform
import random
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any, Optional, cast

import numpy as np

REPO = Path(__file__).resolve().parents[1]
TOKENIZER = "qwen2.5-coder-0.5b"
ENGINES = ("factorspec", "xgrammar", "llguidance")
SHORT = {"factorspec": "FS", "xgrammar": "XG", "llguidance": "LLG"}
STEP_CAP = 300
STRUCTURAL_BIAS = 0.6
COMPILE_SECONDS = 60.0  # SIGALRM guard of FactorSpec's compile (the engines' native code cannot be cut)
WALK_SECONDS = 30.0  # SIGALRM guard per walk
SEPARATORS = (", ", ": ")


# -- corpus ----------------------------------------------------------------------------------------
def default_data_dir() -> Path:
    from factorspec.data import shared_data_path
    return shared_data_path("jsonschemabench")


def load_corpus(data_dir: Path) -> list[dict]:
    """Every record of DIR/*.jsonl, files in name order, lines in file order."""
    files = sorted(Path(data_dir).glob("*.jsonl"))
    if not files:
        raise FileNotFoundError(f"no *.jsonl under {data_dir}")
    out = []
    for f in files:
        with f.open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    rec = json.loads(line)
                    rec.setdefault("subset", f.stem)
                    out.append(rec)
    return out


def read_ids(p: Path) -> list[str]:
    """Schema ids from a file: a JSON list of `Subset/id`, or one a line."""
    text = p.read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        return [str(x) for x in json.loads(text)]
    return [ln.strip() for ln in text.splitlines() if ln.strip()]


def select(recs: list[dict], sample: int = 0, seed: int = 0, limit: int = 0,
           subsets: Optional[Sequence[str]] = None) -> list[dict]:
    """The records a run covers: optional subsets, then a seeded sample (kept in corpus order), then
    the first `limit`."""
    if subsets:
        recs = [r for r in recs if r["subset"] in set(subsets)]
    if sample and sample < len(recs):
        keep = set(random.Random(seed).sample(range(len(recs)), sample))
        recs = [r for k, r in enumerate(recs) if k in keep]
    if limit:
        recs = recs[:limit]
    return recs


# -- validation and error classes ------------------------------------------------------------------
INT_DIGITS = 4000  # integral Decimals of fewer digits become ints (exact_numbers)


def exact_numbers(x: Any) -> Any:
    """`x` with every float replaced by the Decimal of its shortest text (the text a schema or an
    instance wrote, for every float that text round-trips) and every integral number by an int.
    Why: with floats, jsonschema's multipleOf divides in binary and calls -32.48 no multiple of
    0.01 (-32.48 / 0.01 = -3247.9999999999995)."""
    if isinstance(x, (float, Decimal)):
        d = Decimal(repr(x)) if isinstance(x, float) else x
        if not d.is_finite():
            return x
        # an integral number is an integer (every draft since 6; Draft 4's "1.0 is no integer" is
        # not applied here, so another engine's "5.0" for an integer is not called unsound); only
        # up to INT_DIGITS digits: a walk may write 1e999999999, whose int would take minutes
        return int(d) if d.adjusted() < INT_DIGITS and d == d.to_integral_value() else d
    if isinstance(x, dict):
        return {k: exact_numbers(v) for k, v in x.items()}
    if isinstance(x, list):
        return [exact_numbers(v) for v in x]
    return x


def _decimal_or_float(text: str) -> Any:
    """A JSON non-integer as Decimal, or as float where its exponent is past even Decimal's range
    (a walk may write 1e99999999999999999999): then inf or 0.0, which compare right with every
    bound a schema can write."""
    try:
        return Decimal(text)
    except decimal.InvalidOperation:
        return float(text)


def load_instance(text: bytes) -> Any:
    """A finished record's text as JSON with its non-integers as Decimal (exactly as written)."""
    return json.loads(text.decode("utf-8"), parse_float=_decimal_or_float)


def validator_errors(schema: Any, instance: Any) -> list[str]:
    """Errors of `instance` under the `jsonschema` package (the schema's own draft, else 2020-12;
    draft 4 where a later draft's validator cannot read a draft-04 keyword form). `format` is not
    asserted (it is an annotation by default in every draft since 2019-09). Numbers are compared
    exactly: the schema's and the instance's non-integers as Decimal (`exact_numbers`), in a decimal
    context wide enough that a remainder of any JSON number the corpus holds is exact."""
    import jsonschema
    from jsonschema.validators import validator_for
    if not isinstance(schema, dict):
        schema = {} if schema is True else {"not": {}}
    schema, instance = exact_numbers(schema), exact_numbers(instance)
    cls = validator_for(schema, default=jsonschema.Draft202012Validator)
    with decimal.localcontext() as ctx:
        # multipleOf's remainder needs the quotient's digits: exact for any quotient under 10^5
        # digits; a larger one raises InvalidOperation (reported as the validator's failure)
        ctx.prec, ctx.Emax, ctx.Emin = 100_000, decimal.MAX_EMAX, decimal.MIN_EMIN
        try:
            return [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:120]}"
                    for e in cls(schema).iter_errors(instance)]
        except Exception:  # noqa: BLE001 - a draft-04 keyword form under a later draft's validator
            v4 = jsonschema.Draft4Validator(schema)
            return [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:120]}" for e in v4.iter_errors(instance)]


_JSON_KEYWORDS = {
    "type", "properties", "required", "additionalProperties", "items", "minItems", "maxItems", "enum",
    "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength",
    "maxLength", "$ref", "$defs", "definitions", "format", "pattern", "anyOf", "oneOf", "allOf", "not",
    "patternProperties", "prefixItems", "uniqueItems", "minProperties", "maxProperties", "dependencies",
    "dependentRequired", "dependentSchemas", "if", "then", "else", "contains", "propertyNames",
    "additionalItems", "unevaluatedProperties", "unevaluatedItems", "minContains", "maxContains",
    "contentEncoding", "contentMediaType", "x-factorspec",
}


def spec_error_keyword(e: Any) -> str:
    """The keyword a SpecError names (quoted in the message, or the pointer's last keyword segment),
    else the first words of its message with names and numbers blanked."""
    m = re.search(r"keyword '([^']+)'", e.message)
    if m:
        return m.group(1)
    segs = [s.replace("~1", "/").replace("~0", "~") for s in e.pointer.strip("/").split("/") if s]
    if segs and segs[-1] in _JSON_KEYWORDS and not (len(segs) > 1 and segs[-2] in ("properties", "$defs",
                                                                                     "definitions")):
        return segs[-1]
    return "(" + message_class(e.message, 6) + ")"


def message_class(msg: str, words: int = 8) -> str:
    """A short, stable class of an error message: timestamps, source locations, quoted names and
    numbers blanked, first `words` words."""
    msg = msg.strip().splitlines()[0] if msg.strip() else ""
    msg = re.sub(r"^\[[\d:]+\]\s*", "", msg)
    msg = re.sub(r"\S+\.(cc|cpp|h|rs):\d+:\s*", "", msg)
    msg = re.sub(r"'[^']*'|\"[^\"]*\"|`[^`]*`|\d+", "_", msg)
    return " ".join(msg.split()[:words])


EMPTY = "EmptySchema"  # FactorSpec's class of a schema that admits no value (errors.EmptySchema)


def proved_empty(status: str) -> bool:
    """Whether a FactorSpec compile status says the schema admits no value at all."""
    return status.startswith(EMPTY + ":")


def error_class(engine: str, e: BaseException) -> str:
    from factorspec.errors import EmptySchema, SpecError
    if engine == "factorspec":
        if isinstance(e, EmptySchema):  # a proof that no instance is valid, not a gap in coverage
            return f"{EMPTY}: {spec_error_keyword(e)}"
        if isinstance(e, SpecError):
            return f"SpecError: {spec_error_keyword(e)}"
        if type(e).__name__ in ("Unsatisfiable", "BudgetExceeded"):
            return type(e).__name__
        return f"crash {type(e).__name__}: {message_class(str(e), 6)}"
    if isinstance(e, _EngineError):
        return message_class(str(e))
    return f"{type(e).__name__}: {message_class(str(e))}"


class _EngineError(Exception):
    """An engine's own refusal reported without an exception (llguidance's matcher error state)."""


class _Timeout(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _Timeout()


def guarded(seconds: float, fn: Callable[[], Any]) -> Any:
    """fn() under a SIGALRM wall-clock guard (main thread only)."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


# -- engines ---------------------------------------------------------------------------------------
class Engines:
    """The three engines on one tokenizer: compile a schema, make a matcher, mask / accept / done."""

    def __init__(self, tokenizer: str = TOKENIZER, xgrammar_threads: int = 1, llguidance_lenient: bool = False,
                 tok: Any = None, xgrammar_grammar_only: bool = False) -> None:
        import llguidance
        import llguidance.hf
        import xgrammar as xgr

        from factorspec.models import load_tokenizer
        from factorspec.models.hf_vocab import vocab_for
        self.tokenizer_name = tokenizer
        self.tok = tok if tok is not None else load_tokenizer(tokenizer)
        self.v = vocab_for(self.tok)
        stops = list(self.v.stop_ids)
        self.xgr_info = xgr.TokenizerInfo.from_huggingface(self.tok, vocab_size=self.v.vocab_size,
                                                           stop_token_ids=stops)
        self.xgr_compiler = xgr.GrammarCompiler(self.xgr_info, max_threads=xgrammar_threads, cache_enabled=False)
        self.xgrammar_threads = xgrammar_threads
        # compile-only counts: xgrammar's schema converter without its token-mask compilation (the
        # converter is where xgrammar refuses; the mask compilation is ~2.5 h of one core here)
        self.xgrammar_grammar_only = xgrammar_grammar_only
        self.llg_tok = llguidance.hf.from_tokenizer(self.tok, n_vocab=self.v.vocab_size, eos_token=stops)
        self.llg_options: dict = {"item_separator": SEPARATORS[0], "key_separator": SEPARATORS[1],
                                  "whitespace_flexible": False}
        if llguidance_lenient:
            self.llg_options["lenient"] = True
        self.stop = set(stops)
        self.words = self.v.words
        # structural tokens (not plain string content), for the walk's bias
        self.structural = np.asarray(self.v.plain_len <= 0)

    # compile: returns an engine handle or raises
    def compile(self, engine: str, schema: Any) -> Any:
        if engine == "factorspec":
            from factorspec.graph import compile_spec
            from factorspec.graph.solver import Budget
            from factorspec.graph.textstate import TextMachine
            cs = compile_spec(schema, budget=Budget(nodes=50_000, seconds=5.0))
            tm = TextMachine(cs)
            tm.initial()
            return (cs, tm)
        if engine == "xgrammar" and self.xgrammar_grammar_only:
            import xgrammar as xgr
            return xgr.Grammar.from_json_schema(json.dumps(schema), any_whitespace=False, separators=SEPARATORS)
        if engine == "xgrammar":
            return self.xgr_compiler.compile_json_schema(json.dumps(schema), any_whitespace=False,
                                                         separators=SEPARATORS)
        if engine == "llguidance":
            from llguidance import LLMatcher
            g = LLMatcher.grammar_from_json_schema(json.dumps(schema), defaults=cast(Any, dict(self.llg_options)))
            m = LLMatcher(self.llg_tok, g, log_level=0)
            if m.is_error():
                raise _EngineError(m.get_error())
            return m
        raise ValueError(engine)

    def matcher(self, engine: str, handle: Any) -> EngineMatcher:
        return EngineMatcher(self, engine, handle)


class EngineMatcher:
    """One request of one engine: `mask()` fills this matcher's int32 bitmask row and returns it."""

    def __init__(self, eng: Engines, engine: str, handle: Any) -> None:
        self.engine = engine
        self.stop = eng.stop
        self.tokens: list[int] = []
        if engine == "factorspec":
            from factorspec.graph.matcher import Matcher
            self.m: Any = Matcher(handle[1], eng.v)
            self.row = np.zeros((1, eng.words), dtype=np.int32)
        elif engine == "xgrammar":
            import xgrammar as xgr
            self.m = xgr.GrammarMatcher(handle)
            self.bm = xgr.allocate_token_bitmask(1, eng.v.vocab_size)
            self.row = self.bm.numpy()  # shares memory with the torch tensor
        else:
            import llguidance.numpy as lnp
            self.m = handle.deep_copy()
            self.row = lnp.allocate_token_bitmask(1, eng.v.vocab_size)

    def mask(self) -> np.ndarray:
        if self.engine == "factorspec":
            self.m.fill_next_token_bitmask(self.row, 0)
        elif self.engine == "xgrammar":
            self.m.fill_next_token_bitmask(self.bm, 0)
        else:
            import llguidance.numpy as lnp
            lnp.fill_next_token_bitmask(self.m, self.row, 0)
        return self.row[0]

    def accept(self, t: int) -> bool:
        if self.engine == "factorspec":
            ok = bool(self.m.accept_token(t))
        elif self.engine == "xgrammar":
            ok = bool(self.m.accept_token(t))
        else:
            ok = bool(self.m.consume_token(t)) and not self.m.is_error()
        if ok:
            self.tokens.append(t)
        return ok

    def done(self) -> bool:
        """A stop token was accepted (llguidance reports `is_stopped()` already when the record is
        complete and only a stop token can follow, so its own flag alone does not say that)."""
        return bool(self.tokens) and self.tokens[-1] in self.stop

    def engine_says_done(self) -> bool:
        if self.engine == "llguidance":
            return bool(self.m.is_stopped())
        return bool(self.m.is_terminated())


def unpack(mask: np.ndarray, vocab_size: int) -> np.ndarray:
    bits = np.unpackbits(np.ascontiguousarray(mask, dtype="<i4").view(np.uint8), bitorder="little")
    return np.nonzero(bits[:vocab_size])[0]


def pick(rng: random.Random, eng: Engines, ids: np.ndarray) -> int:
    if rng.random() < STRUCTURAL_BIAS:
        special = ids[eng.structural[ids]]
        if len(special):
            return int(special[rng.randrange(len(special))])
    return int(ids[rng.randrange(len(ids))])


def record_text(eng: Engines, tokens: Sequence[int]) -> bytes:
    return b"".join(eng.v.token_bytes[t] for t in tokens if t not in eng.stop)


def joint_walk(eng: Engines, handles: dict[str, Any], seed: int, cap: int) -> dict:
    """The shared walk over the intersection of the compiled engines' masks, timing each mask."""
    rng = random.Random(seed)
    ms = {k: eng.matcher(k, h) for k, h in handles.items()}
    times: dict[str, list[float]] = {k: [] for k in ms}
    wider: dict[str, int] = dict.fromkeys(ms, 0)  # steps where this engine allows a token another does not
    out: dict = {"outcome": "cap", "steps": 0}
    n = 0
    while n < cap:
        masks = {}
        for k, m in ms.items():
            t0 = time.perf_counter()
            row = m.mask()
            times[k].append(time.perf_counter() - t0)
            masks[k] = row.copy()
        both = None
        for k, row in masks.items():
            if not len(unpack(row, eng.v.vocab_size)):
                out["outcome"] = f"dead end {SHORT[k]}"
                break
            both = row if both is None else (both & row)
        if out["outcome"].startswith("dead end"):
            break
        assert both is not None
        for k, row in masks.items():
            if (row & ~both).any():
                wider[k] += 1
        ids = unpack(both, eng.v.vocab_size)
        if not len(ids):
            out["outcome"] = "disagree"
            break
        t = pick(rng, eng, ids)
        bad = [k for k, m in ms.items() if not m.accept(t)]
        n += 1
        if bad:
            out["outcome"] = f"reject {','.join(SHORT[k] for k in bad)}"
            break
        if t in eng.stop:
            lost = [SHORT[k] for k, m in ms.items() if not m.engine_says_done()]
            out["outcome"] = f"end mismatch {','.join(lost)}" if lost else "finished"
            break
    out["steps"] = n
    out["times"] = times
    out["wider"] = wider
    if out["outcome"] == "finished":
        out["text"] = record_text(eng, next(iter(ms.values())).tokens)
    return out


def own_walk(eng: Engines, engine: str, handle: Any, seed: int, cap: int) -> dict:
    """A random walk over one engine's own mask: outcome, steps, and the text when it finished."""
    rng = random.Random(seed)
    m = eng.matcher(engine, handle)
    n = 0
    while n < cap:
        ids = unpack(m.mask(), eng.v.vocab_size)
        if not len(ids):
            return {"outcome": "dead end", "steps": n, "text": record_text(eng, m.tokens)}
        t = pick(rng, eng, ids)
        n += 1
        if not m.accept(t):
            return {"outcome": "reject", "steps": n, "text": record_text(eng, m.tokens)}
        if m.done():
            return {"outcome": "finished", "steps": n, "text": record_text(eng, m.tokens)}
    return {"outcome": "cap", "steps": n}


def soundness(schema: Any, text: bytes) -> Optional[str]:
    """None when `text` is a JSON instance the validator accepts, else why not."""
    try:
        inst = load_instance(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        if isinstance(e, UnicodeDecodeError):
            return f"not UTF-8: {e.reason}, bytes {text[e.start:e.start + 4].hex(' ')}"
        return f"not JSON: {e.msg}"
    try:
        errs = validator_errors(schema, inst)
    except Exception as e:  # noqa: BLE001 - an unresolvable remote $ref etc.: the validator's limit
        return f"validator failed: {type(e).__name__}"
    return f"invalid: {errs[0]}" if errs else None


# -- one schema ------------------------------------------------------------------------------------
def run_schema(eng: Engines, rec: dict, seed: int, cap: int, compile_only: bool,
               engines: Sequence[str] = ENGINES) -> dict:
    schema = rec["schema"]
    r: dict = {"id": rec["id"], "subset": rec["subset"], "compile": {}, "compile_ms": {}}
    handles: dict[str, Any] = {}
    for k in engines:
        t0 = time.perf_counter()
        try:
            if k == "factorspec":  # pure Python: a hang is cut (and reported) at COMPILE_SECONDS
                handles[k] = guarded(COMPILE_SECONDS, functools.partial(eng.compile, k, schema))
            else:  # native code cannot be cut by a signal: its full time is recorded
                handles[k] = eng.compile(k, schema)
            r["compile"][k] = "ok"
        except _Timeout:
            r["compile"][k] = f"timeout over {COMPILE_SECONDS:.0f}s"
        except Exception as e:  # noqa: BLE001 - every refusal is recorded by class
            r["compile"][k] = error_class(k, e)
        r["compile_ms"][k] = 1e3 * (time.perf_counter() - t0)
    if compile_only or not handles:
        return r
    try:
        j = guarded(WALK_SECONDS, lambda: joint_walk(eng, handles, seed, cap))
    except _Timeout:
        j = {"outcome": "timeout", "steps": 0, "times": {}, "wider": {}}
    except Exception as e:  # noqa: BLE001
        j = {"outcome": f"crash {type(e).__name__}: {message_class(str(e), 6)}", "steps": 0, "times": {}, "wider": {}}
    r["joint"] = {"outcome": j["outcome"], "steps": j["steps"], "engines": sorted(handles)}
    r["mask_s"] = j["times"]
    r["wider"] = j["wider"]
    if "text" in j:
        r["joint"]["invalid"] = soundness(schema, j["text"])
        if r["joint"]["invalid"]:
            r["joint"]["text"] = j["text"][:300].decode("utf-8", "replace")
    r["own"] = {}
    for k, h in handles.items():
        try:
            w = guarded(WALK_SECONDS, functools.partial(own_walk, eng, k, h, seed + 1, cap))
        except _Timeout:
            w = {"outcome": "timeout", "steps": 0}
        except Exception as e:  # noqa: BLE001
            w = {"outcome": f"crash {type(e).__name__}: {message_class(str(e), 6)}", "steps": 0}
        o = {"outcome": w["outcome"], "steps": w["steps"]}
        if w["outcome"] == "finished":
            o["invalid"] = soundness(schema, w["text"])
            if o["invalid"]:
                o["text"] = w["text"][:300].decode("utf-8", "replace")
        r["own"][k] = o
    return r


# -- aggregation -----------------------------------------------------------------------------------
def _pct(xs: Sequence[float], q: float) -> Optional[float]:
    return float(np.percentile(np.asarray(xs, dtype=float), q)) if len(xs) else None


def _stats(xs: Sequence[float], scale: float, nd: int = 1) -> dict:
    if not len(xs):
        return {"n": 0}
    a = np.asarray(xs, dtype=float) * scale
    return {"n": int(a.size), "p50": round(float(np.percentile(a, 50)), nd),
            "p99": round(float(np.percentile(a, 99)), nd), "max": round(float(a.max()), nd),
            "mean": round(float(a.mean()), nd)}


def summarize(results: list[dict], engines: Sequence[str] = ENGINES) -> dict:
    subsets = sorted({r["subset"] for r in results})
    ok = {k: [r for r in results if r["compile"].get(k) == "ok"] for k in engines}
    all_ok = [r for r in results if all(r["compile"].get(k) == "ok" for k in engines)]
    s: dict = {"schemas": len(results), "engines": list(engines)}
    s["by_subset"] = {sub: {"schemas": sum(1 for r in results if r["subset"] == sub),
                            **{k: sum(1 for r in ok[k] if r["subset"] == sub) for k in engines},
                            "all": sum(1 for r in all_ok if r["subset"] == sub)} for sub in subsets}
    # schemas FactorSpec proved to admit no value (no engine can write a valid instance of them),
    # and of those, how many each other engine compiled anyway
    empty = [r for r in results if proved_empty(r["compile"].get("factorspec", ""))]
    for sub in subsets:
        row = s["by_subset"][sub]
        row["factorspec_proved_empty"] = sum(1 for r in empty if r["subset"] == sub)
        for k in engines:
            row[f"{k}_compiled_where_proved_empty"] = sum(1 for r in empty
                                                          if r["subset"] == sub and r["compile"].get(k) == "ok")
    s["factorspec_proved_empty"] = len(empty)
    s["compiled_where_proved_empty"] = {k: sum(1 for r in empty if r["compile"].get(k) == "ok") for k in engines}
    s["compiled"] = {k: len(ok[k]) for k in engines}
    s["compiled_all"] = len(all_ok)
    s["compile_ms"] = {k: _stats([r["compile_ms"][k] for r in ok[k]], 1.0, 2) for k in engines}
    s["compile_ms_on_all"] = {k: _stats([r["compile_ms"][k] for r in all_ok], 1.0, 2) for k in engines}
    s["compile_s_total_incl_failures"] = {k: round(sum(r["compile_ms"].get(k, 0.0) for r in results) / 1e3, 1)
                                          for k in engines}
    s["errors_top"] = {k: collections.Counter(r["compile"][k] for r in results if r["compile"].get(k) != "ok")
                       .most_common(15) for k in engines}
    walked = [r for r in results if "joint" in r]
    if walked:
        both = [r for r in walked if len(r["joint"]["engines"]) == len(engines)]
        s["walk"] = {
            "schemas_walked": len(walked),
            "joint_outcomes_all_compile": dict(collections.Counter(r["joint"]["outcome"] for r in both)),
            "joint_tokens_all_compile": sum(r["joint"]["steps"] for r in both),
            "mask_us_all_compile": {k: _stats([t for r in both for t in r["mask_s"].get(k, [])], 1e6) for k in engines},
            "first_mask_us_all_compile": {k: _stats([r["mask_s"][k][0] for r in both if r["mask_s"].get(k)], 1e6)
                                          for k in engines},
            "mask_us_own_compiled": {k: _stats([t for r in walked for t in r["mask_s"].get(k, [])], 1e6)
                                     for k in engines},
            "wider_steps_all_compile": {k: sum(r["wider"].get(k, 0) for r in both) for k in engines},
            "joint_invalid_all_compile": sum(1 for r in both if r["joint"].get("invalid")),
            "joint_invalid_examples": [{"id": r["id"], "why": r["joint"]["invalid"][:200],
                                        "text": r["joint"].get("text", "")[:200]}
                                       for r in walked if r["joint"].get("invalid")][:8],
        }
        per: dict = {}
        for k in engines:
            def agg(rs: list[dict], k: str = k) -> dict:
                ws = [r["own"][k] for r in rs if k in r.get("own", {})]
                inv = [w for w in ws if w.get("invalid") and not w["invalid"].startswith("validator failed")]
                return {"walks": len(ws), "finished": sum(1 for w in ws if w["outcome"] == "finished"),
                        "soundness_errors": len(inv),
                        "not_utf8": sum(1 for w in inv if w["invalid"].startswith("not UTF-8")),
                        "dead_ends": sum(1 for w in ws if w["outcome"] == "dead end"),
                        "rejects": sum(1 for w in ws if w["outcome"] == "reject"),
                        "cap": sum(1 for w in ws if w["outcome"] == "cap"),
                        "timeouts": sum(1 for w in ws if w["outcome"] == "timeout"),
                        "crashes": sum(1 for w in ws if w["outcome"].startswith("crash")),
                        "validator_failed": sum(1 for w in ws
                                                if (w.get("invalid") or "").startswith("validator failed"))}
            per[k] = {"on_all_compile": agg(both), "on_own_compiled": agg(walked)}
        s["own_walks"] = per
        s["soundness_examples"] = {k: [{"id": r["id"], "why": r["own"][k]["invalid"][:200],
                                        "text": r["own"][k].get("text", "")[:200]}
                                       for r in walked if r.get("own", {}).get(k, {}).get("invalid")
                                       and not r["own"][k]["invalid"].startswith("validator failed")][:8]
                                   for k in engines}
        s["crashes"] = [{"id": r["id"], "joint": r["joint"]["outcome"],
                         "own": {k: w["outcome"] for k, w in r["own"].items()}} for r in walked
                        if r["joint"]["outcome"].startswith(("crash", "timeout"))
                        or any(w["outcome"].startswith(("crash", "timeout")) for w in r["own"].values())][:20]
    return s


def compact_status(results: list[dict], engines: Sequence[str] = ENGINES) -> dict:
    """Per-schema compile status, small: `classes` lists the error classes, and each schema id maps
    to one index per engine (0 = compiled)."""
    classes = ["ok"]
    index = {"ok": 0}
    per: dict[str, list[int]] = {}
    for r in results:
        row = []
        for k in engines:
            c = r["compile"].get(k, "not run")
            if c not in index:
                index[c] = len(classes)
                classes.append(c)
            row.append(index[c])
        per[f"{r['subset']}/{r['id']}"] = row
    return {"engines": list(engines), "classes": classes, "status": per}


def machine_info() -> dict:
    info: dict[str, Any] = {"python": platform.python_version(), "platform": platform.platform()}
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        for line in out.splitlines():
            k, _, v = line.partition(":")
            if k.strip() in ("Model name", "CPU(s)", "Architecture"):
                info[k.strip()] = v.strip()
    except Exception:  # noqa: BLE001
        pass
    info["usable_cores"] = len(os.sched_getaffinity(0))
    from importlib.metadata import version
    for p in ("xgrammar", "llguidance", "jsonschema"):
        try:
            info[p] = version(p)
        except Exception:  # noqa: BLE001
            info[p] = "?"
    try:
        info["factorspec_commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                                   text=True, cwd=REPO, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "factorspec"], capture_output=True, text=True,
                               cwd=REPO, timeout=10).stdout.strip()
        if dirty:
            info["factorspec_commit"] += " (factorspec/ modified)"
    except Exception:  # noqa: BLE001
        pass
    return info


def _f(x: Any) -> str:
    if x is None:
        return ""
    if isinstance(x, float):
        return f"{x:,.2f}" if x < 10 else f"{x:,.0f}" if x >= 1000 else f"{x:,.1f}"
    return f"{x:,}" if isinstance(x, int) else str(x)


def _row(*cells: Any) -> str:
    return "| " + " | ".join(_f(c) for c in cells) + " |"


def to_markdown(res: dict) -> str:
    s, m, a = res["summary"], res["machine"], res["args"]
    E = s["engines"]
    L = [f"# JSONSchemaBench side by side: {', '.join(E)}", "",
         f"Run {res['started_utc']} to {res['finished_utc']} UTC ({res['seconds']:.0f} s), "
         f"load average (1/5/15 min) at start {res['load_start']}, at end {res['load_end']}. "
         f"{m.get('Model name', '?')}, {m.get('usable_cores')} usable cores shared with other jobs; "
         f"Python {m.get('python')}, xgrammar {m.get('xgrammar')} ({res['xgrammar_threads']} compile thread(s), "
         f"cache off{', schema-to-grammar conversion only, no token-mask compilation' if res.get('xgrammar_grammar_only') else ''}), llguidance {m.get('llguidance')}, jsonschema {m.get('jsonschema')}, "
         f"factorspec {m.get('factorspec_commit', '?')}. Tokenizer {res['tokenizer']} ({res['vocab_size']:,} tokens).",
         "",
         f"Schemas: {s['schemas']:,} of {res['corpus_size']:,} (sample {a['sample'] or 'all'}, seed {a['seed']}, "
         f"limit {a['limit'] or 'none'}, subsets {', '.join(a['subset']) if a['subset'] else 'all'}); " +
         ("compile only" if a["compile_only"] else f"walks capped at {a['cap']} tokens"
          + (f" on a seeded sample of {a['walk_sample']:,}" if a.get("walk_sample") else "")) + "."
         + ("" if res.get("complete", True) else " **Partial: run still in progress or stopped.**"), "",
         "## Compiled schemas per subset", "",
         "| subset | schemas | " + " | ".join(E) + " | all run |",
         "|---|---:|" + "---:|" * len(E) + "---:|"]
    for sub, row in s["by_subset"].items():
        L.append(f"| {sub} | {row['schemas']:,} | " + " | ".join(f"{row[k]:,}" for k in E) + f" | {row['all']:,} |")
    L.append(f"| **total** | **{s['schemas']:,}** | " + " | ".join(f"**{s['compiled'][k]:,}** "
             f"({100 * s['compiled'][k] / max(1, s['schemas']):.1f}%)" for k in E) + f" | **{s['compiled_all']:,}** |")
    if "factorspec" in E and "factorspec_proved_empty" in s:
        others = [k for k in E if k != "factorspec"]
        L += ["", "A schema FactorSpec refuses with `EmptySchema` admits no value by FactorSpec's analysis, so no "
              "engine can write a valid record of it and an engine that compiles it writes only invalid records "
              "(checked independently: `python -m microbench empty_schemas` walks each such schema with the "
              "engines that compile it and validates every finished record). Per subset: FactorSpec compiled, "
              "FactorSpec proved empty, their sum (the schemas FactorSpec decides), and the schemas each other "
              "engine compiled although they admit no value.", "",
              "| subset | factorspec compiled | proved empty | decided (sum) | "
              + " | ".join(f"{k} compiled | {k} compiled, no value exists" for k in others) + " |",
              "|---|---:|---:|---:|" + "---:|---:|" * len(others)]
        total = {"factorspec": s["compiled"]["factorspec"], "factorspec_proved_empty": s["factorspec_proved_empty"],
                 **{k: s["compiled"][k] for k in others},
                 **{f"{k}_compiled_where_proved_empty": s["compiled_where_proved_empty"][k] for k in others}}
        for sub, row in list(s["by_subset"].items()) + [("**total**", total)]:
            fs, em = row["factorspec"], row.get("factorspec_proved_empty", 0)
            L.append(f"| {sub} | {fs:,} | {em:,} | {fs + em:,} | " + " | ".join(
                f"{row[k]:,} | {row.get(f'{k}_compiled_where_proved_empty', 0):,}" for k in others) + " |")
    L += ["", "## Compile time per schema (ms)", "",
          "| engine | compiled | p50 | p99 | max | mean | p50 on all-three | p99 on all-three "
          "| total s, failures included |",
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for k in E:
        c, c3 = s["compile_ms"][k], s["compile_ms_on_all"][k]
        L.append(_row(k, c["n"], c.get("p50"), c.get("p99"), c.get("max"), c.get("mean"), c3.get("p50"), c3.get("p99"),
                      s.get("compile_s_total_incl_failures", {}).get(k)))
    w = s.get("walk")
    if w:
        L += ["", "## Mask time per token (us), same token sequence for all three", "",
              f"Joint walk over the intersection of the masks, on the {s['compiled_all']:,} schemas all three compile: "
              f"{w['joint_tokens_all_compile']:,} positions; outcomes "
              + ", ".join(f"{k} {v:,}" for k, v in sorted(w["joint_outcomes_all_compile"].items())) + ". "
              f"Finished joint records the validator rejects: {w['joint_invalid_all_compile']}.", "",
              "| engine | positions | p50 | p99 | max | mean | first mask p50 | first mask p99 "
              "| steps wider than the others |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for k in E:
            t, f1 = w["mask_us_all_compile"][k], w["first_mask_us_all_compile"][k]
            L.append(_row(k, t["n"], t.get("p50"), t.get("p99"), t.get("max"), t.get("mean"), f1.get("p50"),
                          f1.get("p99"), w["wider_steps_all_compile"][k]))
        L += ["", "Over every schema an engine compiles (joint walk over the engines that compiled it):", "",
              "| engine | positions | p50 | p99 | max |", "|---|---:|---:|---:|---:|"]
        for k in E:
            t = w["mask_us_own_compiled"][k]
            L.append(f"| {k} | {t['n']:,} | {_f(t.get('p50'))} | {_f(t.get('p99'))} | {_f(t.get('max'))} |")
        L += ["", "## Soundness: each engine's own random walk, finished records checked by `jsonschema`", "",
              "| engine | set | walks | finished | soundness errors | of which not UTF-8 | dead ends | rejects "
              "| at cap | timeouts | crashes | validator failed |", "|---|---|" + "---:|" * 10]
        for k in E:
            for setname, key in (("all three compile", "on_all_compile"), ("own compiled", "on_own_compiled")):
                o = s["own_walks"][k][key]
                L.append(_row(k, setname, o["walks"], o["finished"], f"**{o['soundness_errors']}**", o["not_utf8"],
                              o["dead_ends"], o["rejects"], o["cap"], o["timeouts"], o["crashes"],
                              o["validator_failed"]))
        if w.get("joint_invalid_examples"):
            L += ["", "Finished joint-walk records (accepted by every engine that compiled the schema) that the "
                      "validator rejects:", ""]
            L += [f"- `{e['id']}`: {e['why'][:160]} - `{e['text'][:120]}`" for e in w["joint_invalid_examples"]]
        ex = [(k, e) for k in E for e in s["soundness_examples"][k]]
        if ex:
            L += ["", "Soundness error examples (first per engine):", ""]
            for k, e in ex:
                L.append(f"- {k} `{e['id']}`: {e['why'][:160]} - `{e['text'][:120]}`")
        if s.get("crashes"):
            L += ["", "Crashes and timeouts:", ""] + [f"- `{c['id']}`: joint {c['joint']}, own {c['own']}"
                                                     for c in s["crashes"]]
    L += ["", "## First compile error classes (top 15 per engine)", ""]
    for k in E:
        L += [f"**{k}**: " + "; ".join(f"{c} ({n:,})" for c, n in s["errors_top"][k]), ""]
    L += ["## Method", "", __doc__.split("\n\n", 2)[2].strip(), ""]
    return "\n".join(L)


def run(args: argparse.Namespace, eng: Optional[Engines] = None) -> dict:
    data = Path(args.data) if args.data else default_data_dir()
    corpus = load_corpus(data)
    recs = select(corpus, args.sample, args.seed, args.limit, args.subset)
    load_start = " ".join(f"{x:.2f}" for x in os.getloadavg())
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
    t_start = time.time()
    if eng is None:
        eng = Engines(args.tokenizer, args.xgrammar_threads, args.llguidance_lenient,
                      xgrammar_grammar_only=args.xgrammar_grammar_only)
    engines = tuple(args.engines)
    walk_ids: Optional[set] = None
    if args.walk_sample and args.walk_sample < len(recs):
        walk_ids = set(random.Random(args.seed + 1).sample(range(len(recs)), args.walk_sample))
    results: list[dict] = []

    def report(done: bool) -> dict:
        return {"args": {k: getattr(args, k) for k in ("sample", "seed", "limit", "subset", "compile_only", "cap",
                                                       "walk_sample")},
                "complete": done, "data_dir": str(data), "corpus_size": len(corpus), "selected": len(recs),
                "tokenizer": args.tokenizer, "vocab_size": eng.v.vocab_size, "xgrammar_threads": args.xgrammar_threads,
                "xgrammar_grammar_only": args.xgrammar_grammar_only,
                "llguidance_options": eng.llg_options, "started_utc": started,
                "finished_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
                "seconds": round(time.time() - t_start, 1), "load_start": load_start,
                "load_end": " ".join(f"{x:.2f}" for x in os.getloadavg()), "machine": machine_info(),
                "summary": summarize(results, engines), "per_schema": compact_status(results, engines)}

    for n, rec in enumerate(recs):
        no_walk = args.compile_only or (walk_ids is not None and n not in walk_ids)
        results.append(run_schema(eng, rec, args.seed * 1_000_003 + n, args.cap, no_walk, engines))
        if args.progress and (n + 1) % args.progress == 0:
            c = collections.Counter(k for r in results for k, v in r["compile"].items() if v == "ok")
            print(f"{n + 1}/{len(recs)} {time.time() - t_start:.0f}s load {os.getloadavg()[0]:.2f} compiled "
                  + " ".join(f"{SHORT[k]} {c[k]}" for k in engines), file=sys.stderr, flush=True)
            if args.checkpoint:
                write(report(False), args.json, args.md)
    res = report(True)
    res["_results"] = results
    return res


def write(res: dict, json_path: str, md_path: Optional[str]) -> str:
    """The compact JSON (no per-walk data) and the markdown report; returns the markdown."""
    res = {k: v for k, v in res.items() if k != "_results"}
    Path(json_path).parent.mkdir(parents=True, exist_ok=True)
    Path(json_path).write_text(json.dumps(res, separators=(",", ":"), ensure_ascii=False) + "\n", encoding="utf-8")
    md = to_markdown(res)
    Path(md_path or str(Path(json_path).with_suffix(".md"))).write_text(md, encoding="utf-8")
    return md


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m microbench jsonschemabench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=None, help="directory of *.jsonl (default: shared data jsonschemabench/)")
    ap.add_argument("--sample", type=int, default=0, help="a seeded random sample of N schemas (default: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--limit", type=int, default=0, help="only the first N selected schemas")
    ap.add_argument("--subset", action="append", default=[], help="only this subset (repeatable)")
    ap.add_argument("--compile-only", action="store_true", help="compile only: no walks, no mask times")
    ap.add_argument("--cap", type=int, default=STEP_CAP, help="walk step cap")
    ap.add_argument("--tokenizer", default=TOKENIZER)
    ap.add_argument("--engines", nargs="+", default=list(ENGINES), choices=ENGINES)
    ap.add_argument("--xgrammar-threads", type=int, default=1)
    ap.add_argument("--xgrammar-grammar-only", action="store_true",
                    help="with --compile-only: xgrammar converts the schema to its grammar (where it refuses) "
                         "without compiling token masks (counts agree with full compiles on the 637 schemas "
                         "compared in microbench/results/xgrammar_compile/)")
    ap.add_argument("--llguidance-lenient", action="store_true", help="llguidance ignores unknown keywords")
    ap.add_argument("--json", default="microbench/results/jsonschemabench_side_by_side.json")
    ap.add_argument("--md", default=None, help="markdown report (default: the --json path with .md)")
    ap.add_argument("--progress", type=int, default=250, help="a progress line every N schemas (0: none)")
    ap.add_argument("--walk-sample", type=int, default=0,
                    help="walk (mask times, soundness) only a seeded sample of N of the selected schemas; "
                         "the others are compiled only")
    ap.add_argument("--checkpoint", action="store_true", help="rewrite the reports at every progress line")
    args = ap.parse_args(argv)
    if args.xgrammar_grammar_only and not args.compile_only:
        ap.error("--xgrammar-grammar-only needs --compile-only (walks need xgrammar's compiled masks)")
    return args


def main(argv: Optional[list[str]] = None) -> int:
    args = parse_args(argv)
    res = run(args)
    print(write(res, args.json, args.md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
