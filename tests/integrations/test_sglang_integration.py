"""FactorSpec inside SGLang 0.5.23 (CPU): grammar-backend contract, registration through SGLang's
own ``create_grammar_backend``, NGRAM-format drafts verified by SGLang's own Triton kernels
(under ``TRITON_INTERPRET=1``), SGLang's own grammar-mask tree traversal, the NGRAM worker
hook, next-step prefetch and the launcher's argument handling.

Skipped, with the reason, when sglang is not importable (see docs/integrations.md)."""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

try:
    from . import sglang_stubs  # type: ignore[no-redef]
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import sglang_stubs  # type: ignore[no-redef]

from sglang_stubs import sglang_env, smol_backend, smol_tok  # noqa: E402,F401 - fixtures

_ok, _why = sglang_stubs.sglang_available()
pytestmark = pytest.mark.skipif(not _ok, reason=_why or "sglang not importable")

REPO = Path(__file__).resolve().parents[2]
V = 49152  # SmolLM2 vocabulary == logits width
TRIP = (REPO / "examples" / "trip_plan.spec.json").read_text(encoding="utf-8")
PLAIN = json.dumps({
    "type": "object",
    "properties": {"size": {"enum": ["small", "medium", "large"]}, "qty": {"type": "integer", "minimum": 1, "maximum": 3}},
    "required": ["size", "qty"], "additionalProperties": False,
})


def _golden_tokens(backend, key):
    """The whole record as FactorSpec drafts it (the trip spec has exactly one valid record)."""
    g = backend.dispatch_json(key)
    d = g.draft(4096)
    assert all(d.certain) and d.parents == list(range(-1, len(d) - 1))
    return d.tokens


def _row_allows(row, t):
    return bool((int(row[t // 32]) >> (t % 32)) & 1)


# -- grammar object contract --------------------------------------------------------------------
def test_grammar_contract_on_a_relational_spec(smol_backend, smol_tok):
    import torch
    from sglang.srt.constrained.base_grammar_backend import BaseGrammarObject

    from factorspec.integrations.sglang import SGLangFactorSpecGrammar

    g = smol_backend.dispatch_json(TRIP)
    assert isinstance(g, SGLangFactorSpecGrammar) and isinstance(g, BaseGrammarObject)
    toks = _golden_tokens(smol_backend, TRIP)
    text = smol_tok.decode(toks)
    rec = json.loads(text)
    assert [s["city"] for s in rec["itinerary"]] == ["Naples", "Vienna", "Vilnius"]

    mask = g.allocate_vocab_mask(V, 2, "cpu")
    assert mask.dtype == torch.int32 and tuple(mask.shape) == (2, V // 32) and bool((mask == -1).all())
    for i, t in enumerate(toks):
        g.fill_vocab_mask(mask, 1)
        assert _row_allows(mask[1], t), f"token {i} not allowed by its own mask"
        # exactly one allowed token: relations force every value of this record
        assert int(sum(bin(int(w) & 0xFFFFFFFF).count("1") for w in mask[1])) == 1
        g.accept_token(t)
    assert not g.is_terminated()
    g.fill_vocab_mask(mask, 0)
    stops = [t for t in range(V) if _row_allows(mask[0], t)]
    assert stops and set(stops) <= {0, 2}
    g.accept_token(stops[0])
    assert g.is_terminated()
    g.accept_token(5)  # ignored after termination (xgrammar object's behaviour)
    g.rollback(1)
    assert not g.is_terminated() and len(g.accepted_tokens) == len(toks)
    g.rollback(len(toks))
    assert g.accepted_tokens == [] and g.matcher.num_accepted() == 0

    # a token the mask forbids: ValueError (SGLang aborts the request), state unchanged
    g.accept_token(toks[0])
    bad = next(t for t in range(100, V) if t != toks[1])
    with pytest.raises(ValueError):
        g.accept_token(bad)
    assert g.accepted_tokens == [toks[0]]

    # copy() = fresh grammar at the initial state, sharing the compiled spec
    c = g.copy()
    assert c is not g and c.accepted_tokens == [] and c.machine is g.machine
    c.accept_token(toks[0])
    assert g.accepted_tokens == [toks[0]]

    # apply_vocab_mask on CPU logits: disallowed -> -inf, allowed untouched
    logits = torch.randn(2, V)
    ref = logits.clone()
    g.fill_vocab_mask(mask, 0)
    SGLangFactorSpecGrammar.apply_vocab_mask(logits, SGLangFactorSpecGrammar.move_vocab_mask(mask, "cpu"))
    assert torch.isinf(logits[0]).sum() == V - 1 and logits[0, toks[1]] == ref[0, toks[1]]

    # jump forward: the certain run as tokens and text
    tokens, s = g.try_jump_forward(smol_tok)
    assert tokens == toks[1:] and s == smol_tok.decode(toks[1:])
    assert g.jump_forward_str_state((tokens, s)) == (s, -1)
    g.jump_and_retokenize([toks[0]], toks[:5], -1)
    assert g.accepted_tokens == toks[:5]


def test_plain_schema_and_invalid_specs(smol_backend, smol_tok):
    from sglang.srt.constrained.base_grammar_backend import InvalidGrammarObject

    g = smol_backend.dispatch_json(PLAIN)
    d = g.draft(64)
    assert smol_tok.decode(d.tokens).startswith('{"size": "')
    assert any(not c for c in d.certain)  # a branch per size value
    for key, needle in [
        ("{not json", "not valid JSON"),
        (json.dumps({"type": "object", "x-factorspec": {"relations": ["a ==="]}}), "relation"),
        (json.dumps({"type": "integer", "minimum": 5, "maximum": 1}), "FactorSpec"),
    ]:
        bad = smol_backend.dispatch_json(key)
        assert isinstance(bad, InvalidGrammarObject), key
        assert needle in bad.error_message
    # regex without the xgrammar fallback: a clear invalid-grammar object, not a crash
    assert "fallback" in smol_backend.dispatch_regex("a+").error_message


def test_registers_and_dispatches_through_create_grammar_backend(sglang_env, smol_tok, tmp_path):
    from sglang.srt.arg_groups.choices import GRAMMAR_BACKEND_CHOICES
    from sglang.srt.constrained.base_grammar_backend import (
        GRAMMAR_BACKEND_REGISTRY,
        InvalidGrammarObject,
        create_grammar_backend,
    )
    from sglang.srt.runtime_context import create_context, use_context
    from sglang.srt.server_args import ServerArgs

    from factorspec.integrations.sglang import SGLangFactorSpecGrammar, FactorSpecGrammarBackend

    assert "factorspec" in GRAMMAR_BACKEND_REGISTRY and "factorspec" in GRAMMAR_BACKEND_CHOICES
    (tmp_path / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": V, "hidden_size": 64,
        "intermediate_size": 128, "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 2,
        "max_position_embeddings": 512, "rms_norm_eps": 1e-5, "bos_token_id": 1, "eos_token_id": 2,
    }))
    sa = ServerArgs(model_path=str(tmp_path), grammar_backend="factorspec", device="cpu")
    with use_context(create_context(sa, role="scheduler")):
        backend = create_grammar_backend(sa, smol_tok, V, {2})
    assert isinstance(backend, FactorSpecGrammarBackend)
    assert 2 in backend.vocab.stop_ids

    # SGLang's grammar manager path: future on first sight, cached copy afterwards
    key = ("json", TRIP)
    fut, hit = backend.get_cached_or_future_value(key, False)
    assert not hit
    g = fut.result(timeout=60)
    assert isinstance(g, SGLangFactorSpecGrammar) and g.grammar_stats.dispatch_type == "json"
    backend.set_cache(key, g)
    g.accept_token(g.draft(1).tokens[0])
    g2, hit = backend.get_cached_or_future_value(key, False)
    assert hit and g2 is not g and g2.accepted_tokens == [] and g2.grammar_stats.is_cache_hit
    # regex / EBNF go to the xgrammar fallback; bad specs to SGLang's invalid-grammar path
    rx = backend.get_cached_or_future_value(("regex", "(yes|no)"), False)[0].result(timeout=60)
    assert type(rx).__name__ == "XGrammarGrammar"
    bad = backend.get_cached_or_future_value(("json", '{"type": "nope"}'), False)[0].result(timeout=60)
    assert isinstance(bad, InvalidGrammarObject) and "FactorSpec" in bad.error_message


# -- drafts -> SGLang's verify step -------------------------------------------------------------
def _batch(backend):
    """Three requests at different states: the trip spec at its start and 10 tokens in (all
    certain), the plain schema at a free choice (tree)."""
    toks = _golden_tokens(backend, TRIP)
    a = backend.dispatch_json(TRIP)
    b = backend.dispatch_json(TRIP)
    for t in toks[:10]:
        b.accept_token(t)
    c = backend.dispatch_json(PLAIN)
    run = c.matcher.certain_run(64)
    for t in run:
        c.accept_token(t)
    return [a, b, c], [1, toks[9], run[-1]]


def test_drafts_verify_through_sglang_triton_kernels(smol_backend):
    import torch
    from sglang.kernels.ops.speculative.reconstruct_tree import reconstruct_indices_from_tree_mask_triton
    from sglang.kernels.ops.speculative.spec_tree import verify_tree_greedy_triton

    from factorspec.integrations.sglang import FactorSpecDrafter, SGLangFactorSpecGrammar

    N = 16
    grammars, roots = _batch(smol_backend)
    widths = [15, 9, 6]  # per-request widths, padded to N by the drafter
    drafter = FactorSpecDrafter(N, width_fn=lambda g, bs: widths[grammars.index(g)], prefetch=False)
    before = [list(g.accepted_tokens) for g in grammars]
    d = drafter.build(grammars, roots)
    bs = len(grammars)
    assert d.draft_tokens.shape == (bs * N,) and d.tree_mask.shape == (bs * N * N,)
    assert d.widths[0] == 15 and d.widths[1] == 9 and 2 <= d.widths[2] <= 6
    assert not all(d.certain[2])  # the plain request drafts a tree

    # SGLang's NGRAM op (Triton, interpreted) rebuilds positions / retrive_* from our mask:
    # identical to FactorSpec's kernel.
    seq_lens = torch.tensor([30, 41, 17])
    out = [torch.empty(bs * N, dtype=torch.int64) for _ in range(4)]
    mask_t = torch.from_numpy(d.tree_mask)
    reconstruct_indices_from_tree_mask_triton(mask_t, seq_lens, out[0], out[1].view(bs, N), out[2].view(bs, N),
                                              out[3].view(bs, N), bs, N)
    vi = drafter.verify_inputs(d, seq_lens.tolist())
    assert torch.equal(out[0], vi.positions)
    assert torch.equal(out[1].view(bs, N), vi.retrive_index)
    assert torch.equal(out[2].view(bs, N), vi.retrive_next_token)
    assert torch.equal(out[3].view(bs, N), vi.retrive_next_sibling)
    # the full (prefix-inclusive) mask SGLang builds for FULL_MASK attention
    full = torch.cat([torch.cat([torch.ones(N, int(seq_lens[b]), dtype=torch.bool),
                                 mask_t.view(bs, N, N)[b]], 1).flatten() for b in range(bs)])
    assert torch.equal(full, vi.tree_mask)

    # Grammar mask rows for every verify position: SGLang's own traversal over our grammars
    # equals FactorSpec's, and leaves the grammars where they were.
    from sglang.srt.speculative.spec_utils import generate_token_bitmask

    reqs = [SimpleNamespace(grammar=g) for g in grammars]
    cand = torch.from_numpy(d.draft_tokens).view(bs, N)
    sgl_mask, _ = generate_token_bitmask(reqs, vi.retrive_next_token, vi.retrive_next_sibling, cand, V)
    ours = drafter.tree_bitmask(grammars, d, V)
    assert torch.equal(sgl_mask, ours)
    assert [list(g.accepted_tokens) for g in grammars] == before

    # A fake target: random logits, masked with those rows; greedy verification by SGLang's
    # Triton kernel accepts exactly the path FactorSpec predicts.
    rng = torch.Generator().manual_seed(0)
    logits = torch.randn(bs * N, V, generator=rng)
    SGLangFactorSpecGrammar.apply_vocab_mask(logits, ours)
    target = logits.argmax(-1).view(bs, N)
    predicts = torch.full((bs * N,), -1, dtype=torch.int32)
    accept_index = torch.full((bs, N), -1, dtype=torch.int32)
    accept_num = torch.zeros(bs, dtype=torch.int32)
    verify_tree_greedy_triton(predicts, accept_index, accept_num, cand, vi.retrive_index,
                              vi.retrive_next_token, vi.retrive_next_sibling, target)
    for b in range(bs):
        # oracle: walk the tree following the target's (masked greedy) choice
        par = d.parents[b]
        node, path = 0, [0]
        while True:
            want = int(target[b, node])
            kids = [j for j in range(1, N) if par[j] == node and int(cand[b, j]) == want]
            if not kids:
                break
            node = kids[0]
            path.append(node)
        assert int(accept_num[b]) == len(path) - 1
        assert accept_index[b, : len(path)].tolist() == [b * N + j for j in path]
        if all(d.certain[b][: d.widths[b] + 1]):
            assert int(accept_num[b]) == d.widths[b], "a certain run is accepted in full"
        # the accepted tokens plus the bonus are what masked greedy decoding gives, token by token
        g = grammars[b].copy()
        for t in grammars[b].accepted_tokens:
            g.accept_token(t)
        row = torch.full((1, V // 32), -1, dtype=torch.int32)
        for k, node in enumerate(path):
            g.fill_vocab_mask(row, 0)
            lg = logits[b * N + node].clone()[None]
            SGLangFactorSpecGrammar.apply_vocab_mask(lg, row)
            tok = int(lg.argmax())
            if k + 1 < len(path):
                assert tok == int(cand[b, path[k + 1]])
            else:
                assert tok == int(predicts[b * N + node])  # the bonus token
            g.accept_token(tok)


def test_pads_never_beat_real_nodes_and_stay_exact(smol_backend):
    from factorspec.integrations.sglang import FactorSpecDrafter

    grammars, roots = _batch(smol_backend)
    d = FactorSpecDrafter(8, width_fn=lambda g, bs: 2, prefetch=False).build(grammars[:2], roots[:2])
    for b in range(2):
        par, toks = d.parents[b], d.draft_tokens[b * 8:(b + 1) * 8]
        first_child = min(j for j in range(1, 8) if par[j] == 0)
        pads = [j for j in range(1, 8) if not d.certain[b][j]]
        assert pads and all(par[j] == 0 and toks[j] == toks[first_child] and j > first_child for j in pads)


def test_prefetch_matches_fresh_drafts(smol_backend):
    from factorspec.integrations.sglang import FactorSpecDrafter

    toks = _golden_tokens(smol_backend, TRIP)
    g = smol_backend.dispatch_json(TRIP)
    drafter = FactorSpecDrafter(8, prefetch=True)
    d = drafter.build([g], [1])
    drafter.prefetch([g], d)
    drafter.wait()
    # the target accepts the 7 certain drafts and emits the (forced) bonus token
    for t in toks[:8]:
        g.accept_token(t)
    fresh = g.matcher.draft(7)
    got = drafter.draft(g, 7)
    assert drafter.stats["prefetch_hits"] == 1
    assert (got.tokens, got.parents, got.certain) == (fresh.tokens, fresh.parents, fresh.certain)
    g.rollback(1)  # a state nobody prefetched: computed on demand, still right
    assert drafter.draft(g, 7).tokens == g.matcher.draft(7).tokens
    drafter.close()


def test_ngram_worker_hook_rewrites_only_factorspec_rows(smol_backend):
    import numpy as np

    pytest.importorskip("sglang.srt.speculative.ngram_worker", reason="sglang's NGRAM worker does not import here")
    from sglang.srt.speculative import ngram_worker

    from factorspec.integrations.sglang import FactorSpecDrafter
    from factorspec.integrations.sglang.ngram_worker import FactorSpecNGRAMWorker, install_drafter, overwrite_with_factorspec

    N = 8
    grammars, roots = _batch(smol_backend)
    reqs = [SimpleNamespace(grammar=grammars[0]), SimpleNamespace(grammar=None), SimpleNamespace(grammar=grammars[1])]
    corpus = np.arange(3 * N, dtype=np.int64)
    corpus[[0, N, 2 * N]] = [roots[0], 99, roots[1]]
    cmask = np.zeros(3 * N * N, dtype=bool)
    drafts, mask, d = overwrite_with_factorspec(FactorSpecDrafter(N, prefetch=False), reqs, corpus.copy(), cmask.copy())
    ref = FactorSpecDrafter(N, prefetch=False).build([grammars[0], grammars[1]], roots[:2])
    assert drafts[:N].tolist() == ref.draft_tokens[:N].tolist()
    assert drafts[2 * N:].tolist() == ref.draft_tokens[N:].tolist()
    assert drafts[N:2 * N].tolist() == corpus[N:2 * N].tolist() and not mask[N * N:2 * N * N].any()
    assert mask[:N * N].tolist() == ref.tree_mask[:N * N].tolist()

    original = ngram_worker.NGRAMWorker
    try:
        install_drafter()
        assert ngram_worker.NGRAMWorker is FactorSpecNGRAMWorker and issubclass(FactorSpecNGRAMWorker, original)
    finally:
        ngram_worker.NGRAMWorker = original


def test_launcher_arguments_and_plugin_entry_point(sglang_env, tmp_path, monkeypatch):
    import importlib.metadata as md

    from factorspec.integrations.sglang import launch_server as ls

    ns, rest = ls.split_args(["--model-path", "m", "--factorspec-draft-tokens", "24", "--port", "3000"])
    assert ls.sglang_argv(ns, rest) == ["--model-path", "m", "--port", "3000", "--grammar-backend", "factorspec",
                                        "--speculative-algorithm", "NGRAM", "--speculative-num-draft-tokens", "24"]
    ns, rest = ls.split_args(["--model-path", "m", "--no-factorspec-drafter", "--grammar-backend=xgrammar"])
    assert ls.sglang_argv(ns, rest) == ["--model-path", "m", "--grammar-backend=xgrammar"]
    ns, rest = ls.split_args(["--model-path", "m", "--device", "cpu", "--no-factorspec-drafter"])
    monkeypatch.setenv("FACTORSPEC_DTYPE", "float32")
    from factorspec.models import dtype as fdtype
    fdtype.cpu_dtype_name.cache_clear()
    try:
        assert ls.sglang_argv(ns, rest) == ["--model-path", "m", "--device", "cpu", "--attention-backend",
                                            "torch_native", "--disable-overlap-schedule", "--disable-cuda-graph",
                                            "--max-total-tokens", "8192", "--dtype", "float32",
                                            "--grammar-backend", "factorspec"]
        assert "bfloat16" in ls.sglang_argv(*ls.split_args(["--device=cpu", "--dtype", "bfloat16"]))
    finally:
        fdtype.cpu_dtype_name.cache_clear()
    root = ls.write_plugin_dist(str(tmp_path))
    monkeypatch.syspath_prepend(root)
    eps = [ep for ep in md.entry_points(group="sglang.srt.plugins") if ep.name == "factorspec"]
    assert eps and eps[0].load() is sglang_env.plugin
    # SGLang's own argument parser accepts the backend name once the module is imported
    from sglang.srt.server_args import prepare_server_args

    sa = prepare_server_args(["--model-path", "m", "--grammar-backend", "factorspec"])
    assert sa.grammar_backend == "factorspec"
