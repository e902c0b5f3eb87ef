"""The plugin's pieces without an engine: validation (400s), backend routing, batched rows.
Needs vLLM importable (skips otherwise); about 15 s (builds the SmolLM2 vocabulary once)."""
from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from vllm_helpers import MODEL, require_vllm, trip_instances

require_vllm()

import factorspec.integrations.vllm as fv  # noqa: E402
from factorspec.integrations.vllm.backend import (FactorSpecBackend, FactorSpecGrammar,  # noqa: E402
                                                  compile_checked, is_factorspec_schema, with_stops)


@pytest.fixture(scope="module")
def vocab():
    from factorspec.models import load_tokenizer
    from factorspec.models.vocab import vocab_for

    tok = load_tokenizer(MODEL)
    return vocab_for(tok, 49152 if MODEL == "smollm2-135m" else None)


@pytest.fixture(scope="module")
def doc():
    from factorspec.natural_plan import to_spec

    return to_spec(trip_instances(1)[0])


def _params(schema):
    from vllm import SamplingParams
    from vllm.sampling_params import StructuredOutputsParams

    return SamplingParams(temperature=0, structured_outputs=StructuredOutputsParams(json=schema))


def _validate(sp, backend="auto"):
    from vllm.config import StructuredOutputsConfig

    fv.register()
    sp._validate_structured_outputs(object(), StructuredOutputsConfig(backend=backend), tokenizer=object())


def test_routing_by_schema_content(doc):
    assert is_factorspec_schema(doc) and is_factorspec_schema(json.dumps(doc))
    plain = {k: v for k, v in doc.items() if k != "x-factorspec"}
    assert not is_factorspec_schema(plain) and not is_factorspec_schema("not json")
    sp = _params(doc)
    _validate(sp)
    assert sp.structured_outputs._backend == "factorspec"


def test_malformed_relation_is_a_validation_error(doc):
    from vllm.exceptions import VLLMValidationError

    bad = copy.deepcopy(doc)
    bad["x-factorspec"]["relations"].append({"name": "broken", "expr": "itinerary[0].start_day =="})
    with pytest.raises(VLLMValidationError, match=r"/x-factorspec/relations.*broken"):
        _validate(_params(bad))


def test_unsatisfiable_spec_names_the_relations(doc):
    from vllm.exceptions import VLLMValidationError

    bad = copy.deepcopy(doc)
    bad["x-factorspec"]["relations"].append({"name": "start_late", "expr": "itinerary[0].start_day == 2"})
    with pytest.raises(VLLMValidationError, match=r"unsatisfiable.*start_late"):
        _validate(_params(bad))


def test_other_backends_refuse_factorspec_schemas(doc):
    from vllm.exceptions import VLLMValidationError

    with pytest.raises(VLLMValidationError, match="x-factorspec"):
        _validate(_params(doc), backend="guidance")


def _serial_rows(grammar, tokens, words):
    """vLLM's per-token loop (fill, accept, ..., fill bonus, rollback) as the reference."""
    import torch

    bm = torch.zeros((len(tokens) + 1, words), dtype=torch.int32)
    adv = 0
    failed = None
    for i, t in enumerate(tokens):
        if failed is not None:
            bm[i].copy_(bm[failed])
            continue
        grammar.fill_bitmask(bm, i)
        if grammar.accept_tokens("r", [t]):
            adv += 1
        else:
            failed = i
    if failed is not None:
        bm[len(tokens)].copy_(bm[failed])
    else:
        grammar.fill_bitmask(bm, len(tokens))
    grammar.rollback(adv)
    return bm.numpy()


def test_batched_rows_equal_vllm_serial_loop(doc, vocab):
    import torch

    spec = compile_checked(doc)
    g1, g2 = FactorSpecGrammar(spec, vocab), FactorSpecGrammar(spec, vocab)
    draft = g1.matcher.certain_run(40)
    assert len(draft) > 5
    prefix, chain = draft[:3], draft[3:]
    assert g1.accept_tokens("a", prefix) and g2.accept_tokens("b", prefix)
    wrong = list(chain[:4]) + [chain[4] + 1] + list(chain[5:9])  # a rejected draft token mid-chain
    items = [(g1, 0, list(chain)), (g2, len(chain) + 1, wrong)]
    bm = torch.full((len(chain) + len(wrong) + 2, vocab.words), -1, dtype=torch.int32)
    FactorSpecBackend.fill_rows(bm, items)
    ref = np.concatenate([_serial_rows(g1, list(chain), vocab.words), _serial_rows(g2, wrong, vocab.words)])
    assert np.array_equal(bm.numpy(), ref)
    # rows of certain positions allow exactly the drafted token; grammars are left unchanged
    for j, t in enumerate(chain):
        row = bm[j].numpy().view(np.uint32)
        assert int(np.unpackbits(row.view(np.uint8), bitorder="little").sum()) == 1
        assert (row[t // 32] >> (t % 32)) & 1
    assert g1.matcher.num_accepted() == 3 and g2.matcher.num_accepted() == 3


def test_grammar_interface_and_request_stop_tokens(doc, vocab):
    spec = compile_checked(doc)
    stop = vocab.stop_ids[0]
    g = FactorSpecGrammar(spec, with_stops(vocab, {stop}))
    run = g.matcher.certain_run(10_000)
    # with a single stop token the certain run ends with it: the whole record is one draft
    assert run[-1] == stop
    assert g.validate_tokens(run + [stop]) == run
    assert g.accept_tokens("r", run) and g.is_terminated()
    assert not g.accept_tokens("r", [stop])
    g.rollback(1)
    assert not g.is_terminated()
    g.reset()
    assert g.matcher.num_accepted() == 0
