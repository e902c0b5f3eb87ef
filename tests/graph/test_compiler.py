"""SpecCompiler: one compiled spec (and one shared TextMachine) per canonical spec text, in a
bounded, thread-safe LRU cache; Matcher.clone gives an independent matcher at the same state."""
from __future__ import annotations

import json
import threading

import pytest

from factorspec.errors import SpecError, Unsatisfiable
from factorspec.graph.compiler import SpecCompiler, canonical_spec_text, machine_of
from factorspec.graph.matcher import Matcher
from factorspec.graph.token_vocab import TokenVocab

PIECES = [bytes([i]) for i in range(256)] + [b'{"', b'": ', b'"}', b"true", b"false"]
EOS = len(PIECES)
VOCAB = TokenVocab(PIECES, [EOS], vocab_size=EOS + 1)


def _spec(k: int) -> dict:
    return {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": k}},
            "required": ["n"], "additionalProperties": False}


def test_cache_hit_returns_the_same_compiled_object():
    c = SpecCompiler(cache_enabled=True, cache_limit=8)
    a = c.compile(_spec(5))
    assert c.compile(_spec(5)) is a
    # the same spec as JSON text with other whitespace: the same canonical text, the same object
    assert c.compile(json.dumps(_spec(5), indent=2)) is a
    assert c.compile(_spec(6)) is not a
    assert (c.hits, c.misses) == (2, 2)


def test_property_order_is_part_of_the_key():
    a = {"type": "object", "properties": {"x": {"type": "boolean"}, "y": {"type": "boolean"}}}
    b = {"type": "object", "properties": {"y": {"type": "boolean"}, "x": {"type": "boolean"}}}
    assert canonical_spec_text(a) != canonical_spec_text(b)
    c = SpecCompiler()
    assert c.compile(a) is not c.compile(b)


def test_lru_bound_holds_and_evicts_least_recently_used():
    c = SpecCompiler(cache_limit=3)
    first = [c.compile(_spec(k)) for k in range(3)]
    assert c.cache_size() == 3
    assert c.compile(_spec(0)) is first[0]  # 0 is now the most recent; 1 is the oldest
    c.compile(_spec(3))
    assert c.cache_size() == 3
    assert c.compile(_spec(0)) is first[0]
    assert c.compile(_spec(2)) is first[2]
    assert c.compile(_spec(1)) is not first[1]  # evicted, compiled afresh
    for k in range(10, 30):
        c.compile(_spec(k))
        assert c.cache_size() <= 3


def test_cache_disabled_compiles_every_time():
    c = SpecCompiler(cache_enabled=False)
    assert c.compile(_spec(4)) is not c.compile(_spec(4))
    assert c.cache_size() == 0


def test_two_matchers_of_a_spec_share_one_text_machine():
    cc = SpecCompiler().compile(_spec(7))
    m1, m2 = cc.matcher(VOCAB), cc.matcher(VOCAB)
    assert m1 is not m2 and m1.m is m2.m is cc.machine
    # Matcher.for_spec on the compiled spec finds the same machine (built once per spec)
    assert Matcher.for_spec(cc.spec, VOCAB).m is cc.machine
    assert machine_of(cc.spec) is cc.machine
    # and the matchers are independent
    for t in VOCAB.encode(b'{"n": 3'):
        assert m1.accept_token(t)
    assert m2.num_accepted() == 0 and len(m2.text) == 0


def test_errors_are_raised_and_not_cached():
    c = SpecCompiler()
    with pytest.raises(SpecError):
        c.compile("{oops")
    with pytest.raises(SpecError):
        c.compile([1, 2])
    assert c.cache_size() == 0
    unsat = dict(_spec(3), **{"x-factorspec": {"relations": ["n > 5"]}})
    cc = c.compile(unsat)  # compiling does not search; check() does
    with pytest.raises(Unsatisfiable):
        c.compile(unsat, check=True)
    with pytest.raises(Unsatisfiable):
        cc.check()


def test_concurrent_compiles_of_one_spec_give_one_object():
    c = SpecCompiler(cache_limit=4)
    got: list = []
    barrier = threading.Barrier(4)

    def work() -> None:
        barrier.wait()
        got.append(c.compile(_spec(9)))

    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(got) == 4 and all(g is got[0] for g in got)
    assert c.compile(_spec(9)) is got[0]


def test_clone_is_independent_and_at_the_same_state():
    cc = SpecCompiler().compile(_spec(50))
    m = cc.matcher(VOCAB)
    m.set_prompt([1, 2, 3])
    for t in VOCAB.encode(b'{"n": 1'):
        assert m.accept_token(t)
    c = m.clone()
    assert (c.m, c.vocab, c.configs, bytes(c.text), c.tokens, c.prompt) == \
        (m.m, m.vocab, m.configs, bytes(m.text), m.tokens, m.prompt)
    assert (c.next_token_mask() == m.next_token_mask()).all()
    assert c.draft(8) == m.draft(8)
    t = VOCAB.encode(b"2")[0]
    assert c.accept_token(t)
    assert bytes(m.text) == b'{"n": 1' and m.num_accepted() == c.num_accepted() - 1
    c.rollback(c.num_accepted())
    assert bytes(m.text) == b'{"n": 1' and len(c.text) == 0 and m.tokens and not c.tokens
