"""Prompt-lookup drafting on free text: proposals are cut at the mask and never change output."""
import json

from factorspec.graph import compile_spec
from factorspec.graph.matcher import Matcher
from factorspec.graph.token_vocab import TokenVocab

PIECES = [bytes([i]) for i in range(256)] + [b'{"', b'": "', b'"}', b"hello", b" world", b"note"]
EOS = len(PIECES)
VOCAB = TokenVocab(PIECES, [EOS], vocab_size=EOS + 1)
SPEC = {"type": "object", "properties": {"note": {"type": "string", "maxLength": 40}},
        "required": ["note"], "additionalProperties": False}


def _ids(text: bytes) -> list[int]:
    return VOCAB.encode(text)


def test_lookup_proposes_prompt_continuation_inside_free_text():
    m = Matcher.for_spec(compile_spec(SPEC), VOCAB)
    m.set_prompt(_ids(b"say hello world now"))
    for t in _ids(b'{"note": "hello'):
        assert m.accept_token(t)
    d = m.draft(8)
    assert d.tokens[:1] == [PIECES.index(b" world")]
    assert d.certain[0] is False
    # drafting leaves the matcher where it was
    assert bytes(m.text).endswith(b"hello")


def test_lookup_proposals_stop_at_the_mask():
    spec = json.loads(json.dumps(SPEC))
    spec["properties"]["note"]["maxLength"] = 6
    m = Matcher.for_spec(compile_spec(spec), VOCAB)
    m.set_prompt(_ids(b"hello world"))
    for t in _ids(b'{"note": "hello'):
        assert m.accept_token(t)
    d = m.draft(8)
    # " world" would exceed maxLength 6: it must not be proposed
    assert PIECES.index(b" world") not in d.tokens
    for t in d.tokens:
        assert m.accept_token(t)
