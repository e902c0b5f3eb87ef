"""Token-level exactness of the Matcher on real tokenizers.

- random walks (random allowed token, several seeds) over every NATURAL PLAN spec and every
  examples/*.spec.json: never an empty mask, every finished record passes the spec, and at random
  positions the feasibility oracle confirms the mask (allowed tokens step the byte automaton and
  complete to valid records; sampled disallowed tokens are infeasible at boundaries, not the plan
  token at forced positions);
- completeness: on small enumerable specs every valid record (brute force over cs.check) is
  reachable token by token, ending with exactly its canonical text;
- drafting: greedy masked decoding with draft trees of width 1/4/16/64 gives exactly the tokens of
  one-token-at-a-time decoding, and `certain` nodes are always accepted;
- without relations, FactorSpec's mask is a subset of xgrammar's at every step, and golden texts are
  accepted by both.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import random
from typing import Any, Iterator

import numpy as np
import pytest

from factorspec.graph import compile_spec
from factorspec.graph.matcher import Matcher
from factorspec.graph.textstate import TextMachine
from factorspec.graph.token_vocab import TOKEN_END, unpack_mask

from .conftest import REPO, TOKENIZERS, Walker, example_specs, natural_plan_specs, strip_relations, subset_walk

QWEN = TOKENIZERS[0]
NP = natural_plan_specs()
EX = example_specs()
_MACHINES: dict[str, tuple] = {}


def machine(key: str, doc: dict) -> tuple:
    if key not in _MACHINES:
        cs = compile_spec(doc)
        _MACHINES[key] = (cs, TextMachine(cs))
    return _MACHINES[key]


# -- random walks + oracle ---------------------------------------------------------------------------
def test_corpora_present() -> None:
    assert len(NP) == 75, f"expected the 75 shared NATURAL PLAN instances, found {len(NP)}"
    assert EX, "examples/ holds no *.spec.json"


@pytest.mark.parametrize("seeds", [pytest.param((0,), id="seed0"), pytest.param((1, 2), id="seeds12", marks=pytest.mark.slow)])
@pytest.mark.parametrize("idx", range(0, 75, 5))
def test_walk_natural_plan_qwen(idx: int, seeds: tuple, vocab_of: Any, walker: Any) -> None:
    """All 75 NATURAL PLAN specs on Qwen (5 per test), oracle at 2 random positions per walk."""
    v = vocab_of(QWEN)
    for key, doc in NP[idx: idx + 5]:
        cs, tm = machine(key, doc)
        for seed in seeds:
            walker.walk(cs, tm, v, seed, oracle_steps=2, complete=1, disallowed=32)


@pytest.mark.parametrize("tok", TOKENIZERS[1:])
def test_walk_natural_plan_subset(tok: str, vocab_of: Any, walker: Any) -> None:
    """A spread subset of NATURAL PLAN specs on SmolLM2 and Gemma 3."""
    v = vocab_of(tok)
    for key, doc in NP[::15]:
        cs, tm = machine(key, doc)
        walker.walk(cs, tm, v, 7, oracle_steps=2, complete=1, disallowed=32)


@pytest.mark.slow
@pytest.mark.parametrize("tok", TOKENIZERS[1:])
def test_walk_natural_plan_all(tok: str, vocab_of: Any, walker: Any) -> None:
    v = vocab_of(tok)
    for key, doc in NP:
        cs, tm = machine(key, doc)
        walker.walk(cs, tm, v, 11, oracle_steps=1, complete=1, disallowed=16)


@pytest.mark.parametrize("tok", TOKENIZERS)
@pytest.mark.parametrize("name", [n for n, _ in EX])
def test_walk_examples(tok: str, name: str, vocab_of: Any, walker: Any) -> None:
    """Every example spec, all three tokenizers, uniform and structure-biased walks."""
    v = vocab_of(tok)
    doc = dict(EX)[name]
    cs, tm = machine("ex:" + name, doc)
    for seed in range(3):
        walker.walk(cs, tm, v, seed, oracle_steps=3, structural_bias=0.0 if seed == 0 else 0.6,
                    complete=2, disallowed=48)


@pytest.mark.slow
@pytest.mark.parametrize("tok", TOKENIZERS)
def test_walk_examples_many_seeds(tok: str, vocab_of: Any, walker: Any) -> None:
    v = vocab_of(tok)
    for name, doc in EX:
        cs, tm = machine("ex:" + name, doc)
        for seed in range(100, 112):
            walker.walk(cs, tm, v, seed, oracle_steps=4, structural_bias=(seed % 3) * 0.4,
                        complete=2, disallowed=64)


# -- small enumerable specs: completeness --------------------------------------------------------------
def _obj(props: dict, required: Any = None, rel: Any = None, tables: Any = None) -> dict:
    d = {"type": "object", "properties": props, "required": list(props) if required is None else required,
         "additionalProperties": False}
    if rel:
        d["x-factorspec"] = {"tables": tables or {}, "relations": rel}
    return d


def _int(lo: int, hi: int, **kw: Any) -> dict:
    return {"type": "integer", "minimum": lo, "maximum": hi, **kw}


SMALL: dict[str, tuple[dict, Any]] = {}


def _small(name: str, doc: dict):
    def deco(fn):
        SMALL[name] = (doc, fn)
        return fn
    return deco


@_small("enum_int_relations", _obj(
    {"a": {"type": "string", "enum": ["x", "y", "zz"]}, "b": _int(0, 12), "c": _int(1, 3),
     "flag": {"type": "boolean"}, "note": {"const": "ok"}},
    required=["a", "b", "c", "flag"],
    rel=["b == c * 2 or b > 9", 'a == "y" implies c == 2', "flag implies b % 2 == 1"]))
def _gen_a() -> Iterator[dict]:
    for a, b, c, f, note in itertools.product(["x", "y", "zz"], range(13), range(1, 4), [False, True], [None, "ok"]):
        r = {"a": a, "b": b, "c": c, "flag": f}
        if note:
            r["note"] = note
        yield r


@_small("var_array_sum", _obj(
    {"items": {"type": "array", "minItems": 0, "maxItems": 3,
               "items": _obj({"v": _int(0, 2), "t": {"type": "string", "enum": ["p", "q"]}})},
     "total": _int(0, 6)},
    rel=["total == sum(items[*].v)", "all_different(items[*].v)",
         "forall i: items[i].t == \"q\" implies items[i].v > 0"]))
def _gen_b() -> Iterator[dict]:
    for n in range(4):
        for vals in itertools.product(itertools.product(range(3), ["p", "q"]), repeat=n):
            for total in range(7):
                yield {"items": [{"v": v, "t": t} for v, t in vals], "total": total}


@_small("fixed_point", _obj(
    {"price": {"type": "number", "minimum": 0, "maximum": 3, "multipleOf": 0.5},
     "qty": _int(1, 3),
     "amount": {"type": "number", "minimum": 0, "maximum": 9, "multipleOf": 0.5},
     "neg": _int(-12, 3)},
    rel=["amount == qty * price", "neg == -qty or neg == qty"]))
def _gen_c() -> Iterator[dict]:
    halves = [x / 2 for x in range(0, 19)]
    for p, q, a, n in itertools.product([x / 2 for x in range(7)], range(1, 4), halves, range(-12, 4)):
        yield {"price": int(p) if p == int(p) else p, "qty": q, "amount": int(a) if a == int(a) else a, "neg": n}


def _reach(m: Matcher, target: bytes, path: Any = None) -> bool:
    """Is `target` reachable token by token (Matcher.token_path)? Tokens taken go to `path`."""
    got = m.token_path(target)
    if got is None:
        return False
    if path is not None:
        path.extend(got)
    return True


@pytest.mark.parametrize("tok", TOKENIZERS)
@pytest.mark.parametrize("name", list(SMALL))
def test_every_valid_record_is_reachable(name: str, tok: str, vocab_of: Any) -> None:
    doc, gen = SMALL[name]
    cs = compile_spec(doc)
    valid = [r for r in gen() if cs.check(r) == []]
    assert valid, "the small spec has no valid record"
    tm = TextMachine(cs)
    v = vocab_of(tok)
    texts = set(cs.canonical_text(r).encode() for r in valid)
    assert len(texts) == len(valid)
    # every record on Qwen; a seeded sample of 30 on the other tokenizers (time)
    todo = valid if tok == QWEN or len(valid) <= 30 else random.Random(1).sample(valid, 30)
    for r in todo:
        text = cs.canonical_text(r).encode()
        m = Matcher(tm, v)
        assert _reach(m, text), f"valid record not reachable: {text!r}"
        assert m.is_terminated() and bytes(m.text) == text
    # and the other way round: records from random walks are among the enumerated ones
    rng = random.Random(5)
    for _ in range(20):
        m = Matcher(tm, v)
        while not m.is_terminated():
            ids = m.allowed_tokens()
            assert len(ids)
            assert m.accept_token(int(ids[rng.randrange(len(ids))]))
        assert bytes(m.text) in texts


def test_small_spec_counts() -> None:
    """The brute-force enumeration agrees with the solver's count (no free text in these specs)."""
    for name, (doc, gen) in SMALL.items():
        cs = compile_spec(doc)
        n = sum(1 for r in gen() if cs.check(r) == [])
        # the optional `note` appears in no relation, so the solver does not count its presence
        assert cs.count() * (2 if name == "enum_int_relations" else 1) == n, name


# -- drafting: greedy decoding with and without draft trees --------------------------------------------
class Logits:
    """A fixed, seeded pseudo-model: logits are a deterministic function of the token prefix."""

    def __init__(self, vocab_size: int, seed: int) -> None:
        self.V, self.seed = vocab_size, seed
        self.calls = 0

    def __call__(self, prefix: list[int]) -> np.ndarray:
        self.calls += 1
        h = hashlib.blake2b(np.asarray([self.seed] + list(prefix), dtype=np.int64).tobytes(), digest_size=8)
        return np.random.default_rng(int.from_bytes(h.digest(), "little")).standard_normal(self.V, dtype=np.float32)


def _masked_argmax(m: Matcher, logits: np.ndarray) -> int:
    allowed = np.zeros(len(logits), dtype=bool)
    ids = m.allowed_tokens()
    assert len(ids), f"empty mask after {bytes(m.text)!r}"
    allowed[ids] = True
    return int(np.where(allowed, logits, -np.inf).argmax())


def decode_plain(tm: TextMachine, v: Any, model: Logits, cap: int = 2000) -> list[int]:
    m = Matcher(tm, v)
    out: list[int] = []
    while not m.is_terminated():
        t = _masked_argmax(m, model(out))
        assert m.accept_token(t)
        out.append(t)
        assert len(out) < cap
    return out


def decode_drafted(tm: TextMachine, v: Any, model: Logits, width: int, cap: int = 2000) -> tuple[list[int], int]:
    """Decode with draft trees verified greedily; returns the tokens and the number of 'forwards'."""
    m = Matcher(tm, v)
    out: list[int] = []
    forwards = 0
    while not m.is_terminated():
        before = (bytes(m.text), m.num_accepted())
        tree = m.draft(width)
        assert (bytes(m.text), m.num_accepted()) == before, "draft changed the matcher state"
        assert len(tree) <= width
        assert len(tree.tokens) == len(tree.parents) == len(tree.certain)
        # every tree path is a valid continuation; targets are the masked argmax at each node
        target: dict[int, int] = {}  # node (-1 = root) -> masked argmax at the position after it
        children: dict[int, list[int]] = {}
        path_of: dict[int, list[int]] = {-1: []}
        for k, (t, p) in enumerate(zip(tree.tokens, tree.parents)):
            assert -1 <= p < k, "parents must come first"
            children.setdefault(p, []).append(k)
            path_of[k] = path_of[p] + [k]
        forwards += 1
        for node, path in path_of.items():
            for k in path:
                assert m.accept_token(tree.tokens[k]), f"draft token {tree.tokens[k]} not allowed"
            if not m.is_terminated():
                target[node] = _masked_argmax(m, model(out + [tree.tokens[k] for k in path]))
            m.rollback(len(path))
        # greedy verification
        node = -1
        while True:
            if node not in target:  # the drafted path reached a stop token
                break
            want = target[node]
            nxt = None
            for k in children.get(node, []):
                if tree.tokens[k] == want:
                    nxt = k
                elif tree.certain[k]:
                    raise AssertionError(f"certain draft token {tree.tokens[k]} rejected (argmax {want})")
            if nxt is None:  # bonus token
                assert m.accept_token(want)
                out.append(want)
                break
            assert m.accept_token(want)
            out.append(want)
            node = nxt
        assert len(out) < cap
    return out, forwards


def _random_small_spec(rng: random.Random) -> dict:
    """A random spec with real free choices: enums, ints, a variable array, a few relations."""
    names = ["Oslo", "Rome", "Nice", "Bern", "Lyon"]
    props = {
        "city": {"type": "string", "enum": rng.sample(names, rng.randint(2, 5))},
        "n": _int(0, rng.choice([9, 40, 300])),
        "m": _int(-5, rng.choice([5, 99])),
        "xs": {"type": "array", "minItems": rng.randint(0, 1), "maxItems": rng.randint(2, 4),
               "items": _obj({"k": _int(0, 20), "c": {"type": "string", "enum": ["a", "bb", "ccc"]}})},
        "ok": {"type": "boolean"},
    }
    rel_pool = ["n + m >= 3", "n != m", "sum(xs[*].k) <= n", "all_different(xs[*].k)",
                "forall i: xs[i].k < xs[i+1].k", 'ok implies city != "Rome"', "len(xs) >= 1 implies m >= 0",
                "count(xs[i].c == \"a\" for i) <= 1"]
    return _obj(props, rel=rng.sample(rel_pool, rng.randint(1, 4)))


DRAFT_SPECS = [("ex:" + n, d) for n, d in EX] + [(f"rand{s}", _random_small_spec(random.Random(s))) for s in range(4)] \
    + [NP[0], NP[40]]


@pytest.mark.parametrize("seeds", [pytest.param((0,), id="seed0"), pytest.param((1, 2), id="seeds12", marks=pytest.mark.slow)])
@pytest.mark.parametrize("key", [k for k, _ in DRAFT_SPECS])
def test_drafts_do_not_change_greedy_tokens_qwen(key: str, seeds: tuple, vocab_of: Any) -> None:
    doc = dict(DRAFT_SPECS)[key]
    cs, tm = machine(key, doc)
    v = vocab_of(QWEN)
    for seed in seeds:
        model = Logits(v.vocab_size, seed)
        ref = decode_plain(tm, v, model)
        rec = json.loads(b"".join(v.token_bytes[t] for t in ref if t not in v.stop_ids).decode("utf-8"))
        assert cs.check(rec) == []
        fw = {}
        for width in (1, 4, 16, 64):
            got, fw[width] = decode_drafted(tm, v, model, width)
            assert got == ref, f"width {width}: drafted decoding diverged"
        assert fw[64] <= fw[16] <= fw[4] <= fw[1] <= len(ref)


@pytest.mark.parametrize("tok", TOKENIZERS[1:])
def test_drafts_do_not_change_greedy_tokens_other_tokenizers(tok: str, vocab_of: Any) -> None:
    v = vocab_of(tok)
    for key, doc in DRAFT_SPECS[::2]:
        cs, tm = machine(key, doc)
        model = Logits(v.vocab_size, 3)
        ref = decode_plain(tm, v, model)
        for width in (4, 64):
            got, _ = decode_drafted(tm, v, model, width)
            assert got == ref, f"{key} width {width}: drafted decoding diverged"


def test_drafts_save_forwards_on_natural_plan(vocab_of: Any) -> None:
    """On a NATURAL PLAN spec most tokens are certain: width-64 drafts need few verify steps."""
    v = vocab_of(QWEN)
    key, doc = NP[3]
    cs, tm = machine(key, doc)
    model = Logits(v.vocab_size, 0)
    ref = decode_plain(tm, v, model)
    got, fw = decode_drafted(tm, v, model, 64)
    assert got == ref
    assert fw * 5 <= len(ref), (fw, len(ref))


# -- subset of xgrammar's mask on specs without relations -----------------------------------------------
_XG: dict = {}


def xgr_compiled(tok: str, doc: dict, info: Any) -> Any:
    import xgrammar as xgr
    key = (tok, json.dumps(doc, sort_keys=True))
    if key not in _XG:
        gc = _XG.setdefault(("gc", tok), xgr.GrammarCompiler(info))
        _XG[key] = gc.compile_json_schema(json.dumps(doc), any_whitespace=False)
    return _XG[key]


def golden_tokens(tm: TextMachine, v: Any, text: bytes) -> list[int]:
    """The token path of `text` through the matcher (DFS guided by the text), stop token included."""
    m = Matcher(tm, v)
    path: list[int] = []
    assert _reach(m, text, path), f"golden text not reachable: {text!r}"
    return path


XGR_SPECS = [("ex:" + n, d) for n, d in EX] + [(f"rand{s}", _random_small_spec(random.Random(s))) for s in range(3)] \
    + NP[::15]


@pytest.mark.parametrize("tok", TOKENIZERS)
@pytest.mark.parametrize("key", [k for k, _ in XGR_SPECS])
def test_mask_subset_of_xgrammar_without_relations(key: str, tok: str, vocab_of: Any, xgr_info_of: Any) -> None:
    doc = strip_relations(dict(XGR_SPECS)[key])
    cs, tm = machine("norel:" + key, doc)
    v = vocab_of(tok)
    compiled = xgr_compiled(tok, doc, xgr_info_of(tok))
    for seed in range(2):
        subset_walk(cs, tm, v, compiled, seed, structural_bias=0.3 * seed)


@pytest.mark.parametrize("tok", TOKENIZERS)
def test_golden_texts_accepted_by_both(tok: str, vocab_of: Any, xgr_info_of: Any) -> None:
    """Golden records (example records, NATURAL PLAN golden plans) pass both engines, on the
    spec's own tokens; with relations FactorSpec accepts them too."""
    from benchmarks.natural_plan import golden_record, load_instances
    from factorspec.data import natural_plan_file
    v = vocab_of(tok)
    probs = load_instances(str(natural_plan_file()))
    cases = []
    for name, doc in EX:
        rec = json.loads((REPO / "examples" / f"{name}.record.json").read_text(encoding="utf-8"))
        cases.append(("ex:" + name, doc, rec))
    for key, doc in NP[::10]:
        cases.append((key, doc, golden_record(probs[key])))
    for key, doc, rec in cases:
        cs, tm = machine(key, doc)
        assert cs.check(rec) == []
        text = cs.canonical_text(rec).encode()
        toks = golden_tokens(tm, v, text)
        plain = strip_relations(doc)
        cs0, tm0 = machine("norel:" + key, plain)
        subset_walk(cs0, tm0, v, xgr_compiled(tok, plain, xgr_info_of(tok)), 0, tokens=toks, cap=len(toks))
