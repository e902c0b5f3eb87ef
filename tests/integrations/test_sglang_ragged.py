"""Per-request verify widths in SGLang 0.5.23 (CPU): FactorSpec's ragged NGRAM layout (each request
``1 + w_b`` real nodes, the rest of its ``N`` slots inert) checked against SGLang's own Triton
tree reconstruction, grammar traversal and greedy verify (``TRITON_INTERPRET=1``); the packed
verify forward of :class:`FactorSpecNGRAMWorker` (only the real nodes go through the model, logits
scattered back).

The slow test (``FACTORSPEC_RUN_SLOW=1``, three engine starts) runs SGLang's real scheduler:
``sglang.Engine`` with NGRAM + ``--grammar-backend factorspec`` + FactorSpec drafts on a batch of
NATURAL PLAN requests whose certain runs differ, per-request widths vs fixed width vs no
speculation: token-identical, and every ragged verify forward ran exactly ``sum_b (1 + w_b)``
tokens (the logits rows the model returned), fewer than ``bs * N`` where widths differ.

Skipped, with the reason, when sglang is not importable (see docs/integrations.md)."""
from __future__ import annotations

import json
import os
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
V = 49152
TRIP = (REPO / "examples" / "trip_plan.spec.json").read_text(encoding="utf-8")
PLAIN = json.dumps({
    "type": "object",
    "properties": {"size": {"enum": ["small", "medium", "large"]}, "qty": {"type": "integer", "minimum": 1, "maximum": 3}},
    "required": ["size", "qty"], "additionalProperties": False,
})


def _batch(backend):
    """The trip spec at its start and 10 tokens in (all certain), the plain schema at a free choice."""
    g0 = backend.dispatch_json(TRIP)
    toks = g0.draft(4096).tokens
    a = backend.dispatch_json(TRIP)
    b = backend.dispatch_json(TRIP)
    for t in toks[:10]:
        b.accept_token(t)
    c = backend.dispatch_json(PLAIN)
    run = c.matcher.certain_run(64)
    for t in run:
        c.accept_token(t)
    return [a, b, c], [1, toks[9], run[-1]]


def test_ragged_layout_through_sglang_triton_kernels(smol_backend):
    import torch
    from sglang.kernels.ops.speculative.reconstruct_tree import reconstruct_indices_from_tree_mask_triton
    from sglang.kernels.ops.speculative.spec_tree import verify_tree_greedy_triton
    from sglang.srt.speculative.spec_utils import generate_token_bitmask

    from factorspec.integrations.sglang import FactorSpecDrafter, SGLangFactorSpecGrammar
    from factorspec.kernels import build_tree_verify_inputs

    N = 16
    grammars, roots = _batch(smol_backend)
    widths = [15, 4, 6]
    drafter = FactorSpecDrafter(N, width_fn=lambda g, bs: widths[grammars.index(g)], prefetch=False)
    d = drafter.build(grammars, roots, ragged=True)
    bs = len(grammars)
    assert d.ragged and d.draft_tokens.shape == (bs * N,) and d.tree_mask.shape == (bs * N * N,)
    assert d.qo_lens == [1 + w for w in d.widths] and d.widths[:2] == [15, 4] and 2 <= d.widths[2] <= 6
    # the same trees, fixed width: identical real nodes, pads instead of inert slots
    fixed = drafter.build(grammars, roots, trees=d.trees)
    for b, n in enumerate(d.qo_lens):
        assert d.draft_tokens[b * N:b * N + n].tolist() == fixed.draft_tokens[b * N:b * N + n].tolist()

    # SGLang's NGRAM reconstruction (Triton, interpreted) over the ragged mask: the real nodes get
    # exactly the links and positions of FactorSpec's ragged kernel; inert slots are unreachable.
    seq_lens = torch.tensor([30, 41, 17])
    pos, ri, nt, ns = (torch.empty(bs * N, dtype=torch.int64) for _ in range(4))
    reconstruct_indices_from_tree_mask_triton(torch.from_numpy(d.tree_mask), seq_lens, pos, ri.view(bs, N),
                                              nt.view(bs, N), ns.view(bs, N), bs, N)
    vi = build_tree_verify_inputs(d.parents, None, seq_lens.tolist(), build_full_mask=False, backend="torch")
    cu = 0
    for b, n in enumerate(d.qo_lens):
        assert pos[b * N:b * N + n].tolist() == vi.positions[cu:cu + n].tolist()
        assert nt.view(bs, N)[b, :n].tolist() == vi.retrive_next_token[b, :n].tolist()
        assert ns.view(bs, N)[b, :n].tolist() == vi.retrive_next_sibling[b, :n].tolist()
        links = nt.view(bs, N)[b].tolist() + ns.view(bs, N)[b].tolist()
        assert all(x < n for x in links), "an inert slot is reachable"
        assert nt.view(bs, N)[b, n:].tolist() == [-1] * (N - n) and ns.view(bs, N)[b, n:].tolist() == [-1] * (N - n)
        cu += n

    # grammar rows: SGLang's own traversal equals FactorSpec's on every real node
    reqs = [SimpleNamespace(grammar=g) for g in grammars]
    cand = torch.from_numpy(d.draft_tokens).view(bs, N)
    sgl_mask, _ = generate_token_bitmask(reqs, nt.view(bs, N), ns.view(bs, N), cand, V)
    ours = drafter.tree_bitmask(grammars, d, V)
    for b, n in enumerate(d.qo_lens):
        assert torch.equal(sgl_mask[b * N:b * N + n], ours[b * N:b * N + n])

    # greedy verify with logits only on the real nodes (inert rows zero, as the packed forward
    # leaves them): the accepted path equals the one over the fixed layout with the same logits
    rng = torch.Generator().manual_seed(1)
    logits = torch.zeros(bs * N, V)
    keep = torch.cat([torch.arange(b * N, b * N + n) for b, n in enumerate(d.qo_lens)])
    logits[keep] = torch.randn(keep.numel(), V, generator=rng)
    SGLangFactorSpecGrammar.apply_vocab_mask(logits, ours)
    target = logits.argmax(-1).view(bs, N)

    def verify(nt_, ns_, ri_):
        pred = torch.full((bs * N,), -1, dtype=torch.int32)
        acc = torch.full((bs, N), -1, dtype=torch.int32)
        num = torch.zeros(bs, dtype=torch.int32)
        verify_tree_greedy_triton(pred, acc, num, cand, ri_, nt_, ns_, target)
        return pred, acc, num

    pred, acc, num = verify(nt.view(bs, N), ns.view(bs, N), ri.view(bs, N))
    fpos, fri, fnt, fns = (torch.empty(bs * N, dtype=torch.int64) for _ in range(4))
    reconstruct_indices_from_tree_mask_triton(torch.from_numpy(fixed.tree_mask), seq_lens, fpos, fri.view(bs, N),
                                              fnt.view(bs, N), fns.view(bs, N), bs, N)
    fpred, facc, fnum = verify(fnt.view(bs, N), fns.view(bs, N), fri.view(bs, N))
    assert torch.equal(num, fnum) and torch.equal(acc, facc)
    for b, n in enumerate(d.qo_lens):
        real = [int(i) for i in acc[b].tolist() if i >= 0]
        assert all(b * N <= i < b * N + n for i in real)
        assert int(pred[real[-1]]) == int(fpred[real[-1]])  # the bonus token
    assert int(num[0]) == 15 and int(num[1]) == 4, "certain runs are accepted in full"


def test_packed_verify_forward_runs_only_real_nodes(smol_backend):
    """The worker's target proxy: the model sees ``sum_b n_b`` tokens in order, the logits come
    back at ``b * N + j``, and the batch is restored for SGLang's sampling and KV move."""
    import torch

    from factorspec.integrations.sglang.ngram_worker import _PackedVerifyTarget

    N, qo = 8, [8, 3, 1]
    bs = len(qo)
    seen = {}

    class Target:
        def forward_batch_generation(self, batch, is_verify=False, **kw):
            seen["ids"] = batch.input_ids.tolist()
            seen["loc"] = batch.out_cache_loc.tolist()
            seen["pos"] = batch.spec_info.positions.tolist()
            logits = batch.input_ids.to(torch.float32)[:, None].repeat(1, 5)
            return SimpleNamespace(logits_output=SimpleNamespace(next_token_logits=logits, hidden_states=None))

    recorded = []
    owner = SimpleNamespace(_record=lambda *a: recorded.append(a))
    proxy = _PackedVerifyTarget(Target(), owner)
    ids = torch.arange(100, 100 + bs * N)
    batch = SimpleNamespace(input_ids=ids, out_cache_loc=torch.arange(bs * N) + 1000,
                            spec_info=SimpleNamespace(draft_token_num=N, positions=torch.arange(bs * N) + 50,
                                                      factorspec_qo_lens=qo))
    res = proxy.forward_batch_generation(batch, is_verify=True)
    keep = [b * N + j for b, n in enumerate(qo) for j in range(n)]
    assert seen["ids"] == [100 + k for k in keep] and seen["loc"] == [1000 + k for k in keep]
    assert seen["pos"] == [50 + k for k in keep]
    full = res.logits_output.next_token_logits
    assert full.shape == (bs * N, 5)
    for k in range(bs * N):
        assert full[k].tolist() == ([100.0 + k] * 5 if k in keep else [0.0] * 5)
    assert batch.input_ids is ids and batch.out_cache_loc.numel() == bs * N and batch.spec_info.positions.numel() == bs * N
    assert recorded and recorded[0][2] == qo


def test_packed_verify_reused_logits_rows_are_rewritten_each_step(smol_backend):
    """The unpacked ``[bs * N, V]`` logits tensor is reused across steps: a step with other widths
    (and rows SGLang edited in place) still gives exactly its own logits, zeros elsewhere."""
    import torch

    from factorspec.integrations.sglang.ngram_worker import _PackedVerifyTarget

    N = 6

    class Target:
        def forward_batch_generation(self, batch, is_verify=False, **kw):
            logits = batch.input_ids.to(torch.float32)[:, None].repeat(1, 4)
            return SimpleNamespace(logits_output=SimpleNamespace(next_token_logits=logits, hidden_states=None))

    proxy = _PackedVerifyTarget(Target(), SimpleNamespace(_record=lambda *a: None))
    proxy.reserve(2 * N, 4)  # room for batch 2: batch 3 reallocates, batch 3 again reuses
    first = None
    for step, qo in enumerate(([2, 5], [6, 1, 3], [2, 6, 1], [1, 1, 1])):
        bs = len(qo)
        ids = torch.arange(bs * N) + 100 * (step + 1)
        batch = SimpleNamespace(input_ids=ids, out_cache_loc=torch.arange(bs * N),
                                spec_info=SimpleNamespace(draft_token_num=N, positions=torch.arange(bs * N),
                                                          factorspec_qo_lens=qo))
        full = proxy.forward_batch_generation(batch, is_verify=True).logits_output.next_token_logits
        first = full if first is None and bs == 3 else first
        for b in range(bs):
            for j in range(N):
                want = [float(100 * (step + 1) + b * N + j)] * 4 if j < qo[b] else [0.0] * 4
                assert full[b * N + j].tolist() == want, (step, b, j)
        assert full.shape == (bs * N, 4)
        full.fill_(float("-inf"))  # SGLang's grammar mask edits the logits in place
    assert first.data_ptr() == full.data_ptr()  # the same storage, rewritten


# -- SGLang's real scheduler ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def engine_runs():
    if os.environ.get("FACTORSPEC_RUN_SLOW", "0") in ("", "0"):
        pytest.skip("slow: three SGLang engine starts (FACTORSPEC_RUN_SLOW=1)")
    import sglang_engine_runs

    part = sglang_engine_runs.WIDTHS
    probs = sglang_engine_runs.width_problems()
    runs = {m: sglang_engine_runs.engine_run(m) for m in sglang_engine_runs.MODES}
    return {m: {**r, "outs": r["outs"][part], "probs": probs} for m, r in runs.items()}


@pytest.mark.slow
def test_sglang_engine_per_request_widths_token_identical(engine_runs):
    from benchmarks.natural_plan import check_plan

    r, f, n = engine_runs["ragged"], engine_runs["fixed"], engine_runs["none"]
    for a, b, c, p in zip(r["outs"], f["outs"], n["outs"], r["probs"]):
        assert a["output_ids"] == b["output_ids"] == c["output_ids"]
        assert check_plan(p, json.loads(a["text"])) == [], a["text"]
        assert a["meta_info"]["spec_verify_ct"] >= 1 and not c["meta_info"].get("spec_verify_ct")
    # every verify forward ran exactly the planned tokens (rows the model returned)
    assert r["steps"] and f["steps"]
    for s in r["steps"] + f["steps"]:
        assert s["forward_tokens"] == sum(s["qo_lens"]), s
    assert all(s["qo_lens"] == [s["N"]] * s["bs"] for s in f["steps"])
    ragged = [s for s in r["steps"] if s["bs"] > 1 and len(set(s["qo_lens"])) > 1]
    assert ragged, r["steps"]  # a batch whose requests verified different widths
    assert all(s["forward_tokens"] < s["bs"] * s["N"] for s in ragged)
    tok = lambda run: sum(s["forward_tokens"] for s in run["steps"])  # noqa: E731
    print(f"\nsglang per-request widths: {len(r['steps'])} verify forwards, {tok(r)} tokens forwarded "
          f"(fixed width: {len(f['steps'])} forwards, {tok(f)} tokens); gen {r['gen_s']:.1f} s vs {f['gen_s']:.1f} s "
          f"(no speculation {n['gen_s']:.1f} s); widths per step: {[s['qo_lens'] for s in r['steps']]}")
