"""The CPU path's torch ops (``factorspec.integrations.sglang.cpu``) against SGLang's own Triton
kernels for the same contracts, run under ``TRITON_INTERPRET=1`` on CPU tensors, at awkward sizes
(batch 1 and odd batches, one draft token and many, vocabularies that are not a multiple of 32);
and the ``torch_native`` speculative-verify backend against SGLang's own extend path and a
per-node reference.

Skipped, with the reason, when sglang is not importable (see docs/integrations.md)."""
from __future__ import annotations

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

_ok, _why = sglang_stubs.sglang_available()
pytestmark = pytest.mark.skipif(not _ok, reason=_why or "sglang not importable")

import torch

if _ok:
    from sglang.srt.utils import next_power_of_2

    from factorspec.integrations.sglang import cpu

BATCHES = [1, 3, 5]


def _random_tree(rng: random.Random, n: int) -> list[int]:
    """Parents of an n-node tree in topological order (node 0 the root, parent -1)."""
    par = [-1]
    for j in range(1, n):
        par.append(rng.randrange(j) if rng.random() < 0.6 else j - 1)
    return par


def _ancestor_mask(par: list[int]) -> torch.Tensor:
    n = len(par)
    m = torch.zeros(n, n, dtype=torch.bool)
    for i in range(n):
        j = i
        while j >= 0:
            m[i, j] = True
            j = par[j]
    return m


def _batch_trees(rng, bs, n):
    pars = [_random_tree(rng, n) for _ in range(bs)]
    return pars, torch.stack([_ancestor_mask(p) for p in pars]).reshape(-1)


# -- cache locations ------------------------------------------------------------------------------
def _pool(rng, bs, pool_len, n_reqs=9):
    table = torch.randint(0, 10_000, (n_reqs, pool_len), dtype=torch.int32)
    reqs = torch.tensor(rng.sample(range(n_reqs), bs), dtype=torch.int64)
    return table, reqs


@pytest.mark.parametrize("bs", BATCHES)
@pytest.mark.parametrize("width", [1, 7, 70])
def test_assign_extend_cache_locs_matches_sglang_triton(bs, width):
    from sglang.kernels.ops.speculative.cache_locs import assign_extend_cache_locs

    rng = random.Random(bs * 100 + width)
    pool_len = 200
    table, reqs = _pool(rng, bs, pool_len)
    start = torch.tensor([rng.randrange(0, pool_len - width) for _ in range(bs)], dtype=torch.int64)
    # ragged ends too (the kernel takes any end <= start + width); one empty run when bs > 1
    end = torch.tensor([s + (width if b % 2 == 0 else rng.randrange(0, width + 1)) for b, s in enumerate(start.tolist())])
    if bs > 1:
        end[1] = start[1]
    total = int((end - start).sum())
    ref = torch.full((bs * width,), -7, dtype=torch.int64)
    assign_extend_cache_locs[(bs,)](reqs, table, start, end, ref, pool_len, next_power_of_2(bs))
    out = torch.full((bs * width,), -7, dtype=torch.int64)
    cpu.assign_extend_cache_locs_cpu(reqs, table, start, end, out, pool_len)
    assert torch.equal(out, ref)
    assert torch.equal(out[:total], torch.cat([table[r, s:e].long() for r, s, e in zip(reqs, start, end)]))


@pytest.mark.parametrize("bs", BATCHES)
@pytest.mark.parametrize("width", [1, 9, 40])
def test_assign_req_to_token_pool_matches_sglang_triton(bs, width):
    from sglang.srt.mem_cache.allocation import assign_req_to_token_pool

    rng = random.Random(7 + bs * 31 + width)
    pool_len = 130
    table, reqs = _pool(rng, bs, pool_len)
    start = torch.tensor([rng.randrange(0, pool_len - width) for _ in range(bs)], dtype=torch.int64)
    end = start + torch.tensor([rng.randrange(0, width + 1) for _ in range(bs)])
    locs = torch.randint(0, 50_000, (int((end - start).sum()),), dtype=torch.int64)
    ref = table.clone()
    assign_req_to_token_pool[(bs,)](reqs, ref, start, end, locs, pool_len, next_power_of_2(bs))
    out = table.clone()
    cpu.assign_req_to_token_pool_cpu(reqs, out, start, end, locs, pool_len)
    assert torch.equal(out, ref)
    assert not torch.equal(out, table) or locs.numel() == 0


@pytest.mark.parametrize("bs", BATCHES)
@pytest.mark.parametrize("topk,cols", [(1, 1), (1, 5), (4, 3), (8, 17)])
def test_assign_draft_cache_locs_contiguous_matches_sglang_triton(bs, topk, cols):
    from sglang.kernels.ops.speculative.cache_locs import (
        assign_draft_cache_locs_contiguous,
    )

    rng = random.Random(bs * 13 + topk * 7 + cols)
    pool_len = 300
    table, reqs = _pool(rng, bs, pool_len)
    seq = torch.tensor([rng.randrange(0, pool_len - topk * cols) for _ in range(bs)], dtype=torch.int64)
    ref = torch.full((bs * topk * cols,), -1, dtype=torch.int64)
    assign_draft_cache_locs_contiguous[(bs,)](reqs, table, seq, ref, pool_len, topk, cols, BS=bs)
    out = torch.full_like(ref, -1)
    cpu.assign_draft_cache_locs_contiguous_cpu(reqs, table, seq, out, pool_len, topk, cols)
    assert torch.equal(out, ref) and bool((out >= 0).all())


# -- accept / bonus ---------------------------------------------------------------------------------
@pytest.mark.parametrize("bs", BATCHES)
@pytest.mark.parametrize("depth", [1, 4, 33])
def test_fill_accept_out_cache_loc_matches_sglang_triton(bs, depth):
    from sglang.kernels.ops.speculative.eagle import fill_accept_out_cache_loc

    rng = random.Random(bs * 5 + depth)
    n_tok = bs * depth
    acc = torch.full((bs, depth), -1, dtype=torch.int32)
    for b in range(bs):
        k = rng.randrange(1, depth + 1)
        acc[b, :k] = torch.tensor(sorted(rng.sample(range(b * depth, (b + 1) * depth), k)), dtype=torch.int32)
    out_cache_loc = torch.randint(0, 9_999, (n_tok,), dtype=torch.int64)
    size = acc.numel()
    ref = torch.zeros(size, dtype=torch.int64)
    fill_accept_out_cache_loc[(size,)](acc, out_cache_loc, ref, next_power_of_2(size))
    out = torch.zeros(size, dtype=torch.int64)
    cpu.fill_accept_out_cache_loc_cpu(acc, out_cache_loc, out)
    assert torch.equal(out, ref)


@pytest.mark.parametrize("bs", BATCHES)
@pytest.mark.parametrize("stride", [1, 6, 64])
@pytest.mark.parametrize("vocab", [1003, 49_155])
def test_fill_bonus_tokens_matches_sglang_triton(bs, stride, vocab):
    from sglang.kernels.ops.speculative.eagle import fill_bonus_tokens

    g = torch.Generator().manual_seed(bs * 1000 + stride + vocab)
    tokens = torch.randint(0, vocab, (bs, stride), generator=g, dtype=torch.int32)
    lens = torch.randint(1, stride + 1, (bs,), generator=g, dtype=torch.int32)
    ref = torch.full((bs,), -1, dtype=torch.int32)
    fill_bonus_tokens[(bs,)](tokens, lens, ref, stride)
    out = torch.full((bs,), -1, dtype=torch.int32)
    cpu.fill_bonus_tokens_cpu(tokens, lens, out, stride)
    assert torch.equal(out, ref)


# -- trees ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bs", BATCHES)
@pytest.mark.parametrize("n", [1, 2, 16, 65])
def test_reconstruct_indices_from_tree_mask_matches_sglang_triton(bs, n):
    from sglang.kernels.ops.speculative.reconstruct_tree import (
        reconstruct_indices_from_tree_mask_triton,
    )

    rng = random.Random(bs * 97 + n)
    pars, mask = _batch_trees(rng, bs, n)
    seq = torch.tensor([rng.randrange(1, 500) for _ in range(bs)], dtype=torch.int64)

    def run(fn):
        outs = [torch.full((bs * n,), -9, dtype=torch.int64) for _ in range(4)]
        fn(mask, seq, *outs, bs, n)
        return outs

    ref = run(reconstruct_indices_from_tree_mask_triton)
    out = run(cpu.reconstruct_indices_from_tree_mask)
    for a, b in zip(out, ref):
        assert torch.equal(a, b)
    # and what the arrays mean: first child and depth, per node
    pos, _, nxt, _ = out
    for b, par in enumerate(pars):
        for i in range(n):
            kids = [k for k in range(n) if par[k] == i]
            assert int(nxt[b * n + i]) == (kids[0] if kids else -1)
            d, j = 0, par[i]
            while j >= 0:
                d, j = d + 1, par[j]
            assert int(pos[b * n + i]) == int(seq[b]) + d


def _verify_case(rng, bs, n, vocab, depth_cap):
    """A batch of random trees (siblings may repeat a token), retrieval arrays from the mask, and a
    target that follows some drafted path, then diverges."""
    pars, mask = _batch_trees(rng, bs, n)
    outs = [torch.full((bs * n,), -1, dtype=torch.int64) for _ in range(4)]
    cpu.reconstruct_indices_from_tree_mask(mask, torch.zeros(bs, dtype=torch.int64), *outs, bs, n)
    _, ri, nt, ns = (o.view(bs, n) for o in outs)
    small = max(2, min(vocab, 6))
    cand = torch.tensor([[rng.randrange(vocab - small, vocab) for _ in range(n)] for _ in range(bs)], dtype=torch.int64)
    target = torch.tensor([[rng.randrange(vocab - small, vocab) for _ in range(n)] for _ in range(bs)], dtype=torch.int64)
    for b in range(bs):  # make the target follow a random child with probability 0.8
        for i in range(n):
            kids = [k for k in range(n) if pars[b][k] == i]
            if kids and rng.random() < 0.8:
                target[b, i] = cand[b, rng.choice(kids)]
    return cand, ri, nt, ns, target, depth_cap


@pytest.mark.parametrize("bs", BATCHES)
@pytest.mark.parametrize("n", [1, 2, 16, 48])
@pytest.mark.parametrize("vocab", [7, 49_155])
def test_verify_tree_greedy_matches_sglang_triton(bs, n, vocab):
    from sglang.kernels.ops.speculative.spec_tree import verify_tree_greedy_triton

    rng = random.Random(bs * 7 + n * 3 + vocab)
    for trial in range(3):
        cand, ri, nt, ns, target, S = _verify_case(rng, bs, n, vocab, n if trial != 1 else max(1, n // 3))

        def run(fn, case=(cand, ri, nt, ns, target, S), **names):
            cand, ri, nt, ns, target, S = case
            pred = torch.zeros(bs * n, dtype=torch.int32)
            acc = torch.full((bs, S), -1, dtype=torch.int32)
            num = torch.full((bs,), -5, dtype=torch.int32)
            fn(predicts=pred, accept_index=acc, accept_token_num=num, candidates=cand, target_predict=target,
               **{names["i"]: ri, names["t"]: nt, names["s"]: ns})
            return pred, acc, num

        ref = run(verify_tree_greedy_triton, i="retrieve_index", t="retrieve_next_token", s="retrieve_next_sibling")
        out = run(cpu.verify_tree_greedy_cpu, i="retrive_index", t="retrive_next_token", s="retrive_next_sibling")
        for a, b in zip(out, ref):
            assert torch.equal(a, b), (trial, a, b)
        if n > 1 and trial == 0:
            assert int(out[2].sum()) > 0  # the cases do accept drafts


def _eagle_case(rng, bs, topk, depth, n):
    """EAGLE-shaped inputs: ``selected_index`` sorted picks among the topk + (depth-1) * topk^2
    scored candidates, ``parent_list`` naming earlier picks (some not picked: no parent found)."""
    n_cand = topk + (depth - 1) * topk * topk
    width = (depth - 1) * topk + 1
    sel, par = [], []
    for _ in range(bs):
        s = sorted(rng.sample(range(n_cand), n - 1))
        sel.append(s)
        p = [-1] + [rng.choice(s) if rng.random() < 0.85 else rng.randrange(n_cand) for _ in range(width - 1)]
        par.append(p)
    return torch.tensor(par, dtype=torch.int64), torch.tensor(sel, dtype=torch.int64)


@pytest.mark.parametrize("bs", [1, 3])  # EAGLE's op (NGRAM does not call it); the interpreter is slow here
@pytest.mark.parametrize("topk,depth,n", [(1, 1, 2), (1, 3, 4), (4, 4, 8), (3, 4, 13)])
@pytest.mark.parametrize("mode", [0, 1])
def test_build_tree_kernel_efficient_matches_sglang_triton(bs, topk, depth, n, mode):
    from sglang.kernels.ops.speculative.spec_tree import (
        TreeMaskMode,
        sgl_build_tree_kernel_triton,
    )

    rng = random.Random(bs * 11 + topk * 5 + depth + n + mode)
    parent_list, selected = _eagle_case(rng, bs, topk, depth, n)
    seq = torch.tensor([rng.randrange(1, 40) for _ in range(bs)], dtype=torch.int64)

    def run(fn, mode_arg):
        size = int(seq.sum()) * n + n * n * bs if mode == 0 else bs * n * n
        mask = torch.ones(size, dtype=torch.bool)
        pos = torch.full((bs * n,), -3, dtype=torch.int64)
        r = torch.full((3, bs, n), -1, dtype=torch.int64)
        fn(parent_list, selected, seq, mask, pos, r[0], r[1], r[2], topk, depth, n, mode_arg)
        return mask, pos, r

    ref = run(sgl_build_tree_kernel_triton, TreeMaskMode(mode))
    out = run(cpu.build_tree_kernel_efficient_cpu, mode)
    for a, b in zip(out, ref):
        assert torch.equal(a, b)


# -- KV copy (raw pointers) --------------------------------------------------------------------------
@pytest.mark.parametrize("num_locs", [1, 3, 37])
def test_copy_all_layer_kv_cache_matches_sglang_triton(num_locs):
    from sglang.kernels.ops.kvcache.cache_move import copy_all_layer_kv_cache_tiled

    g = torch.Generator().manual_seed(num_locs)
    rows = 2 * num_locs + 5
    shapes = [((rows, 3, 8), torch.float32), ((rows, 3, 8), torch.float32), ((rows, 5), torch.bfloat16),
              ((rows, 1, 7), torch.float16)]
    base = [torch.randn(s, generator=g).to(d) for s, d in shapes]
    perm = torch.randperm(rows, generator=g)
    tgt, src = perm[:num_locs].clone(), perm[num_locs:2 * num_locs].clone()
    if num_locs >= 3:  # a swap and a chain: every source is read before it is overwritten
        src[0], tgt[1] = tgt[1], src[0]

    def run(fn):
        bufs = [b.clone() for b in base]
        ptrs = torch.tensor([b.data_ptr() for b in bufs], dtype=torch.uint64)
        strides = torch.tensor([b.stride(0) * b.dtype.itemsize for b in bufs])
        fn(ptrs, strides, tgt, src)
        return bufs

    def triton_copy(ptrs, strides, t, s):
        bpt = 128
        grid = (ptrs.numel(), (int(strides.max()) + bpt - 1) // bpt)
        copy_all_layer_kv_cache_tiled[grid](ptrs, strides, t, s, t.numel(), next_power_of_2(t.numel()),
                                            BYTES_PER_TILE=bpt)

    ref = run(triton_copy)
    out = run(cpu.copy_all_layer_kv_cache_cpu)
    for a, b, orig in zip(out, ref, base):
        assert torch.equal(a, b)
        expect = orig.clone()
        expect[tgt] = orig[src]
        assert torch.equal(a, expect)


# -- install -----------------------------------------------------------------------------------------
def test_install_provides_every_name_sglang_imports_on_cpu():
    import sgl_kernel
    import sgl_kernel.speculative

    state = cpu.install()
    for name in cpu.CPU_OPS:
        assert callable(getattr(sgl_kernel, name))
    assert callable(sgl_kernel.speculative.reconstruct_indices_from_tree_mask)
    if getattr(sgl_kernel, "__factorspec_stub__", False):
        assert sgl_kernel.verify_tree_greedy_cpu is cpu.verify_tree_greedy_cpu
        assert "verify_tree_greedy_cpu" in state["ops"]
        with pytest.raises(ImportError):  # the stub is not a CUDA sgl_kernel in disguise
            from sgl_kernel import silu_and_mul  # noqa: F401
    from sglang.srt.layers.attention.attention_registry import ATTENTION_BACKENDS

    assert ATTENTION_BACKENDS["torch_native"] is cpu.create_torch_native_verify_backend


# -- torch_native with target verify -----------------------------------------------------------------
class _Pool:
    """The two pools the backend reads: a req->token table and per-layer K/V buffers."""

    def __init__(self, size, kv_heads, dim):
        self.k = torch.zeros(size, kv_heads, dim)
        self.v = torch.zeros(size, kv_heads, dim)

    def set_kv_buffer(self, layer, loc, k, v):
        idx = loc.loc if hasattr(loc, "loc") else loc[0]
        self.k[idx] = k.view(-1, *self.k.shape[1:])
        self.v[idx] = v.view(-1, *self.v.shape[1:])

    def get_key_buffer(self, layer_id):
        return self.k

    def get_value_buffer(self, layer_id):
        return self.v


def _backend(pool, req_to_token):
    runner = SimpleNamespace(device="cpu", req_to_token_pool=SimpleNamespace(req_to_token=req_to_token),
                             token_to_kv_pool=pool)
    be = cpu.verify_backend_class()(runner)
    be.swa_out_cache_loc = None
    return be


@pytest.mark.parametrize("bs", [1, 3])
@pytest.mark.parametrize("n", [1, 5, 12])
def test_verify_attention_matches_per_node_reference_and_sglang_extend(bs, n):
    from sglang.srt.layers.radix_attention import AttentionType
    from sglang.srt.model_executor.forward_batch_info import ForwardMode

    g = torch.Generator().manual_seed(bs * 10 + n)
    rng = random.Random(bs * 10 + n)
    H, KVH, D = 4, 2, 8
    size, pool_len = 400, 120
    pool = _Pool(size, KVH, D)
    slots = torch.randperm(size - 1, generator=g) + 1
    req_to_token = torch.zeros(6, pool_len, dtype=torch.int32)
    req_ids = rng.sample(range(6), bs)
    seq = [rng.randrange(1, 50) for _ in range(bs)]
    used = 0
    for r, L in zip(req_ids, seq):
        req_to_token[r, :L + n] = slots[used:used + L + n].to(torch.int32)
        used += L + n
    for r, L in zip(req_ids, seq):  # committed prefix KV
        loc = req_to_token[r, :L].long()
        pool.k[loc] = torch.randn(L, KVH, D, generator=g)
        pool.v[loc] = torch.randn(L, KVH, D, generator=g)
    pars, mask = _batch_trees(rng, bs, n)
    out_cache_loc = torch.cat([req_to_token[r, L:L + n].long() for r, L in zip(req_ids, seq)])
    q = torch.randn(bs * n, H * D, generator=g)
    k = torch.randn(bs * n, KVH * D, generator=g)
    v = torch.randn(bs * n, KVH * D, generator=g)
    layer = SimpleNamespace(tp_q_head_num=H, tp_k_head_num=KVH, qk_head_dim=D, v_head_dim=D, layer_id=0,
                            scaling=D ** -0.5, sliding_window_size=-1, is_cross_attention=False,
                            attn_type=AttentionType.DECODER)
    fb = SimpleNamespace(forward_mode=ForwardMode.TARGET_VERIFY, out_cache_loc=out_cache_loc,
                         seq_lens=torch.tensor(seq), seq_lens_cpu=torch.tensor(seq),
                         req_pool_indices=torch.tensor(req_ids), encoder_lens=None,
                         spec_info=SimpleNamespace(draft_token_num=n, custom_mask=mask))
    be = _backend(pool, req_to_token)
    o = be.forward_extend(q, k, v, layer, fb).view(bs * n, H, D)
    # reference: node i of request b attends to the prefix and to its own root path only
    for b, (r, L) in enumerate(zip(req_ids, seq)):
        for i in range(n):
            path, j = [], i
            while j >= 0:
                path.append(j)
                j = pars[b][j]
            locs = torch.cat([req_to_token[r, :L].long(), out_cache_loc[b * n + torch.tensor(sorted(path))]])
            kk = pool.k[locs].repeat_interleave(H // KVH, dim=1).movedim(0, 1)
            vv = pool.v[locs].repeat_interleave(H // KVH, dim=1).movedim(0, 1)
            qq = q[b * n + i].view(H, 1, D)
            ref = torch.nn.functional.scaled_dot_product_attention(qq, kk, vv, scale=layer.scaling)
            assert torch.allclose(o[b * n + i], ref.squeeze(1), atol=1e-5, rtol=1e-4)
    # a chain tree is plain causal extend: SGLang's own torch_native extend path must agree
    chain = torch.stack([torch.tril(torch.ones(n, n, dtype=torch.bool))] * bs).reshape(-1)
    fb.spec_info.custom_mask = chain
    o_chain = be.forward_extend(q, k, v, layer, fb)
    ext = SimpleNamespace(forward_mode=ForwardMode.EXTEND, out_cache_loc=out_cache_loc,
                          seq_lens=torch.tensor(seq) + n, req_pool_indices=torch.tensor(req_ids),
                          extend_prefix_lens=torch.tensor(seq), extend_seq_lens=torch.full((bs,), n),
                          encoder_lens=None)
    o_ext = be.forward_extend(q, k, v, layer, ext)
    assert torch.allclose(o_chain, o_ext, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("preferred", ["bfloat16", "float32"])
def test_cpu_engine_runs_in_the_dtype_models_load_in(monkeypatch, preferred):
    """The CPU engine's dtype is factorspec.models' choice for this CPU (bf16 matmuls run 19x
    slower than fp32 on the CI host), and an explicit dtype wins."""
    from factorspec.integrations.sglang.cpu import cpu_engine_kwargs
    from factorspec.models import dtype as fdtype

    monkeypatch.setenv("FACTORSPEC_DTYPE", preferred)
    fdtype.cpu_dtype_name.cache_clear()  # the choice is made once per process
    try:
        assert cpu_engine_kwargs(model_path="m")["dtype"] == preferred
        assert cpu_engine_kwargs(model_path="m", dtype="float16")["dtype"] == "float16"
    finally:
        fdtype.cpu_dtype_name.cache_clear()
