"""Shared fixtures of the token-engine tests: real tokenizers (loaded once per session), their
TokenVocabs and xgrammar TokenizerInfos, the spec corpora (NATURAL PLAN, examples/), and the
random-walk / feasibility-oracle helpers (exposed as the `walker` fixture).

A tokenizer that cannot be loaded FAILS the test that needs it (with the loader's message):
CI installs all three, so a missing one is a broken environment, not a reason to skip."""
from __future__ import annotations

import glob
import json
import random
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pytest

from factorspec.graph.spec import CompiledSpec
from factorspec.graph.textstate import TextMachine

REPO = Path(__file__).resolve().parents[2]
TOKENIZERS = ("qwen2.5-coder-0.5b", "smollm2-135m", "gemma3-270m")

_TOK: dict[str, Any] = {}
_VOCAB: dict[str, Any] = {}
_XGR: dict[str, Any] = {}


def load_tok(name: str) -> Any:
    if name not in _TOK:
        from factorspec.models import load_tokenizer
        try:
            _TOK[name] = load_tokenizer(name)
        except Exception as e:  # noqa: BLE001 - report whatever the loader says
            pytest.fail(f"tokenizer {name!r} is not available ({type(e).__name__}: {e}); "
                        f"CI installs it (.ci/run): install the model packages", pytrace=False)
    return _TOK[name]


def load_vocab(name: str) -> Any:
    if name not in _VOCAB:
        from factorspec.models.hf_vocab import vocab_for
        _VOCAB[name] = vocab_for(load_tok(name))
    return _VOCAB[name]


def load_xgr_info(name: str) -> Any:
    """xgrammar TokenizerInfo with the same vocab size and stop tokens as the TokenVocab."""
    if name not in _XGR:
        import xgrammar as xgr
        v = load_vocab(name)
        _XGR[name] = xgr.TokenizerInfo.from_huggingface(load_tok(name), vocab_size=v.vocab_size,
                                                        stop_token_ids=list(v.stop_ids))
    return _XGR[name]


@pytest.fixture(scope="session")
def vocab_of():
    """vocab_of(name) -> TokenVocab (cached for the session)."""
    return load_vocab


@pytest.fixture(scope="session")
def xgr_info_of():
    return load_xgr_info


# -- spec corpora ----------------------------------------------------------------------------------
def example_specs() -> list[tuple[str, dict]]:
    """Every examples/*.spec.json that exists now (another engineer adds to the folder)."""
    out = []
    for f in sorted(glob.glob(str(REPO / "examples" / "*.spec.json"))):
        out.append((Path(f).name[: -len(".spec.json")], json.loads(Path(f).read_text(encoding="utf-8"))))
    return out


def natural_plan_specs() -> list[tuple[str, dict]]:
    from factorspec.data import natural_plan_file
    from benchmarks.natural_plan import load_instances, to_spec
    p = natural_plan_file()
    if not p.is_file():
        pytest.fail(f"NATURAL PLAN data not found at {p} (set FACTORSPEC_SHARED_DATA)", pytrace=False)
    return [(k, to_spec(pr)) for k, pr in load_instances(str(p)).items()]


def strip_relations(doc: dict) -> dict:
    d = dict(doc)
    d.pop("x-factorspec", None)
    return d


# -- walks and the feasibility oracle --------------------------------------------------------------
class Walker:
    """Random walks over a Matcher, with the feasibility oracle checks of the issue."""

    def __init__(self) -> None:
        self.stats = {"walks": 0, "tokens": 0, "allowed_checked": 0, "completed": 0, "disallowed_checked": 0}

    @staticmethod
    def pick(rng: random.Random, vocab: Any, ids: np.ndarray, structural_bias: float) -> int:
        """A random allowed token; with probability `structural_bias` one that is not plain string
        content (so walks through unbounded strings still end)."""
        if structural_bias and rng.random() < structural_bias:
            special = ids[vocab.plain_len[ids] <= 0]
            if len(special):
                return int(special[rng.randrange(len(special))])
        return int(ids[rng.randrange(len(ids))])

    def finish(self, m: Any, rng: random.Random, cap: int = 5000, structural_bias: float = 0.5) -> Optional[bytes]:
        """Random walk to termination (never an empty mask); the record text, or None at the cap."""
        n = 0
        while not m.is_terminated():
            ids = m.allowed_tokens()
            assert len(ids), f"empty mask after {bytes(m.text)!r}"
            t = self.pick(rng, m.vocab, ids, structural_bias)
            assert m.accept_token(t), f"allowed token {t} rejected after {bytes(m.text)!r}"
            n += 1
            if n >= cap:
                return None
        return bytes(m.text)

    def check_position(self, m: Any, cs: CompiledSpec, rng: random.Random, max_step_check: int = 3000,
                       complete: int = 4, disallowed: int = 64) -> None:
        """Oracle checks of the allowed/disallowed tokens at the matcher's current position."""
        v, tm = m.vocab, m.m
        ids = m.allowed_tokens()
        assert len(ids), f"empty mask after {bytes(m.text)!r}"
        stop = set(v.stop_ids)
        final = tm.is_final(m.configs)
        sample = ids if len(ids) <= max_step_check else np.array(rng.sample(list(ids), max_step_check))
        # (1) every allowed token keeps the text a prefix of a valid record (byte automaton)
        for t in sample:
            t = int(t)
            if t in stop:
                assert final, f"stop token allowed before the record is complete: {bytes(m.text)!r}"
                continue
            cfg = m.configs
            for b in v.token_bytes[t]:
                cfg = tm.step(cfg, b)
                assert cfg, f"allowed token {t} {v.token_bytes[t]!r} is infeasible after {bytes(m.text)!r}"
            self.stats["allowed_checked"] += 1
        # (2) ... and really completes to a valid record
        for t in rng.sample(list(ids), min(complete, len(ids))):
            t = int(t)
            n0 = m.num_accepted()
            assert m.accept_token(t)
            text = self.finish(m, rng, structural_bias=0.7)
            assert text is not None, "completion walk hit its cap"
            rec = json.loads(text.decode("utf-8"))
            assert cs.check(rec) == [], (text, [str(x) for x in cs.check(rec)])
            if b"\\" not in text:  # string escapes may be spelled several ways (all valid JSON)
                assert cs.canonical_text(rec).encode() == text, "completed text is not canonical"
            m.rollback(m.num_accepted() - n0)
            self.stats["completed"] += 1
        # (3) a sample of disallowed tokens is infeasible
        allowed = set(int(i) for i in ids)
        plan = m.forced_tokens()
        boundary = not plan  # forced runs allow only their canonical token; elsewhere every feasible one
        tried = 0
        while tried < disallowed:
            t = rng.randrange(len(v.token_bytes))
            if t in allowed or not v.token_bytes[t] or t in stop:
                continue
            tried += 1
            if boundary:
                cfg = m.configs
                for b in v.token_bytes[t]:
                    cfg = tm.step(cfg, b)
                    if not cfg:
                        break
                assert not cfg, (f"feasible token {t} {v.token_bytes[t]!r} is not allowed at a boundary "
                                 f"after {bytes(m.text)!r}")
            else:
                assert t != plan[0]
            assert not m.accept_token(t)
            self.stats["disallowed_checked"] += 1
        # near-misses: every stop token is allowed exactly when the record can end here
        if not final:
            assert not (allowed & stop)
        if plan:
            assert list(ids) == [plan[0]]

    def walk(self, cs: CompiledSpec, tm: TextMachine, vocab: Any, seed: int, oracle_steps: int = 3,
             structural_bias: float = 0.0, cap: int = 5000, **kw: Any) -> bytes:
        """One random walk with oracle checks at `oracle_steps` random positions; returns the text."""
        from factorspec.graph.matcher import Matcher
        rng = random.Random(seed)
        # a first walk fixes the length, so the oracle positions are spread over it
        m = Matcher(tm, vocab)
        steps: list[int] = []
        while not m.is_terminated():
            ids = m.allowed_tokens()
            assert len(ids), f"empty mask after {bytes(m.text)!r}"
            t = self.pick(rng, vocab, ids, structural_bias)
            assert m.accept_token(t)
            steps.append(t)
            assert len(steps) < cap, "walk did not terminate"
        text = bytes(m.text)
        rec = json.loads(text.decode("utf-8"))
        assert cs.check(rec) == [], (text, [str(x) for x in cs.check(rec)])
        if b"\\" not in text:
            assert cs.canonical_text(rec).encode() == text
        # replay with oracle checks at random positions (including the start)
        at = {0} | set(rng.sample(range(len(steps)), min(oracle_steps, len(steps))))
        m2 = Matcher(tm, vocab)
        for k, t in enumerate(steps):
            if k in at:
                self.check_position(m2, cs, rng, **kw)
            assert m2.accept_token(t)
        assert m2.is_terminated() and bytes(m2.text) == text
        self.stats["walks"] += 1
        self.stats["tokens"] += len(steps)
        return text


@pytest.fixture(scope="session")
def walker() -> Walker:
    return Walker()


def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", "slow: heavier token-engine checks (all tokenizers, more seeds); "
                                       "deselect with -m 'not slow'")


# -- xgrammar comparison ---------------------------------------------------------------------------
def _escape_in_bounded_string(tm: TextMachine, configs: Any, data: bytes) -> bool:
    """Does `data` write a backslash escape inside a string with minLength/maxLength? xgrammar's
    length-bounded string rule is `[^"\\\r\n]{lo,hi}`: no escapes at all (FactorSpec allows them, as
    JSON does), so those tokens are a known, documented difference. Likewise any token written inside
a string with a `pattern` or a key under patternProperties/propertyNames: there FactorSpec follows
JSON Schema (an unanchored search on the decoded value, ECMA-262/Python classes such as Unicode
\\s) where xgrammar anchors the regex, matches the raw text and reads classes as ASCII; those
tokens are checked by the jsonschema validation of finished instances instead."""
    cfg = configs
    for b in data:
        if any(stack and stack[-1][0] in ("R", "K") for stack, _sol in cfg):
            return True  # inside a pattern string or patterned key (see above)
        if b == 0x5C:
            for stack, _sol in cfg:
                if stack and stack[-1][0] == "T" and stack[-1][3] == 0:
                    node = tm.node_at(stack[-1][1])
                    if node.max_len is not None or node.min_len > 0:
                        return True

        cfg = tm.step(cfg, b)
        if not cfg:
            return False
    return False


def subset_walk(cs: Any, tm: TextMachine, v: Any, compiled: Any, seed: int, structural_bias: float = 0.5,
                cap: int = 400, tokens: Any = None, stats: Any = None) -> int:
    """Walk FactorSpec's mask (random, or along `tokens`) checking it is a subset of xgrammar's.
    Returns the number of steps taken."""
    import xgrammar as xgr
    from factorspec.graph.matcher import Matcher
    from factorspec.graph.token_vocab import unpack_mask
    rng = random.Random(seed)
    m = Matcher(tm, v)
    gm = xgr.GrammarMatcher(compiled)
    bm = xgr.allocate_token_bitmask(1, v.vocab_size)
    n = 0
    while not m.is_terminated() and n < cap:
        ours = m.next_token_mask()
        gm.fill_next_token_bitmask(bm, 0)
        theirs = bm[0].numpy()[: len(ours)]
        extra = ours & ~theirs
        if extra.any():
            bad = [int(t) for t in unpack_mask(extra, v.vocab_size)
                   if not _escape_in_bounded_string(tm, m.configs, v.token_bytes[t])]
            if stats is not None:
                stats["escape_diffs"] = stats.get("escape_diffs", 0) + 1
            if bad:
                raise AssertionError(f"tokens allowed by FactorSpec but not xgrammar after {bytes(m.text)!r}: "
                                     f"{[(t, v.token_bytes[t]) for t in bad[:8]]}")
        if tokens is not None:
            t = tokens[n]
        else:
            both = unpack_mask(ours & theirs, v.vocab_size)
            assert len(both), f"no token allowed by both after {bytes(m.text)!r}"
            t = Walker.pick(rng, v, both, structural_bias)
        assert m.accept_token(t)
        assert gm.accept_token(t), f"xgrammar rejects token {t} {v.token_bytes[t]!r} after {bytes(m.text)!r}"
        n += 1
    if m.is_terminated():
        assert gm.is_terminated()
    if stats is not None:  # the walked text, for validation by the caller
        stats["text"], stats["finished"] = bytes(m.text), m.is_terminated()
    return n
