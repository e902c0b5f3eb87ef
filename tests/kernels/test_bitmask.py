"""Kernel 1: Triton (interpreter) vs torch reference vs xgrammar, compared exactly."""
import pytest
import torch

from factorspec.kernels import apply_bitmask, apply_bitmask_torch, unpack_bitmask
from kernel_cases import random_bitmask

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
VOCABS = [151936, 49152, 262144, 32000, 1000, 33, 31, 1]


def _logits(rows, vocab, dtype, gen, pad=0, ties=False):
    if ties:  # small integers: many tied maxima, exercises argmax tie-breaking across blocks
        full = torch.randint(0, 4, (rows, vocab + pad), generator=gen).to(dtype)
    else:
        full = torch.randn(rows, vocab + pad, generator=gen).to(dtype)
    return full[:, :vocab] if pad else full


def _both(logits, bitmask, row_map=None, **kw):
    a, b = logits.clone(), logits.clone()
    ra = apply_bitmask(a, bitmask, row_map, backend="triton", **kw)
    rb = apply_bitmask(b, bitmask, row_map, backend="torch", **kw)
    return a, b, ra, rb


@pytest.mark.parametrize("return_argmax", [False, True])
@pytest.mark.parametrize("batch", [1, 5])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("vocab", VOCABS)
def test_matches_reference(vocab, dtype, batch, return_argmax):
    gen = torch.Generator().manual_seed(vocab * 7 + batch)
    logits = _logits(batch, vocab, dtype, gen)
    bm = random_bitmask(batch, vocab, 0, gen)
    a, b, ra, rb = _both(logits, bm, return_argmax=return_argmax)
    assert torch.equal(a, b)
    if return_argmax:
        assert torch.equal(ra, rb)
        assert torch.equal(rb, b.argmax(-1))
    else:
        assert ra is None and rb is None


def test_reference_semantics_bit_order():
    # Independent check of the layout: token j is bit j % 32 of word j // 32, LSB first, 1 = allowed.
    vocab = 70
    allowed = [0, 1, 31, 32, 63, 64, 69]
    words = [0, 0, 0]
    for j in allowed:
        words[j // 32] |= 1 << (j % 32)
    bm = torch.tensor([[w - (1 << 32) if w >= 1 << 31 else w for w in words]], dtype=torch.int32)
    assert unpack_bitmask(bm, vocab)[0].nonzero().flatten().tolist() == allowed
    logits = torch.zeros(1, vocab)
    apply_bitmask_torch(logits, bm)
    assert (logits[0] == 0).nonzero().flatten().tolist() == allowed
    assert torch.isinf(logits[0]).sum() == vocab - len(allowed)


@pytest.mark.parametrize("return_argmax", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_row_map_strided_padded(dtype, return_argmax):
    # 9 logits rows (verify positions), 5 masks, row stride != vocab, bitmask 3 words wider.
    gen = torch.Generator().manual_seed(11)
    vocab = 49157  # not a multiple of 32
    logits = _logits(9, vocab, dtype, gen, pad=13)
    assert logits.stride(0) != vocab
    bm = random_bitmask(5, vocab, 3, gen)
    row_map = torch.tensor([8, 0, -1, 3, 5])
    a, b, ra, rb = _both(logits, bm, row_map, return_argmax=return_argmax)
    assert torch.equal(a, b)
    untouched = [1, 2, 4, 6, 7]
    assert torch.equal(a[untouched], logits[untouched])
    if return_argmax:
        assert torch.equal(ra, rb)


@pytest.mark.parametrize("vocab_size", [None, 40000, 1])
def test_explicit_vocab_size_and_ties(vocab_size):
    gen = torch.Generator().manual_seed(5)
    logits = _logits(3, 151936, torch.float32, gen, ties=True)
    bm = random_bitmask(3, 151936, 0, gen)
    a, b, ra, rb = _both(logits, bm, vocab_size=vocab_size, return_argmax=True)
    assert torch.equal(a, b) and torch.equal(ra, rb)
    if vocab_size:
        assert torch.equal(a[:, vocab_size:], logits[:, vocab_size:])


def test_all_blocked_and_no_masks():
    logits = torch.randn(3, 100)
    bm = torch.zeros(3, 4, dtype=torch.int32)
    a, b, ra, rb = _both(logits, bm, return_argmax=True)
    assert torch.equal(a, b) and torch.isinf(a).all() and ra.tolist() == rb.tolist() == [0, 0, 0]
    # no mask rows: argmax of untouched logits
    a, b, ra, rb = _both(logits, torch.zeros(0, 4, dtype=torch.int32), return_argmax=True)
    assert torch.equal(a, logits) and torch.equal(ra, logits.argmax(-1)) and torch.equal(ra, rb)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("vocab", [151936, 1000, 33])
def test_against_xgrammar_cpu(vocab, dtype):
    xgr = pytest.importorskip("xgrammar")
    gen = torch.Generator().manual_seed(vocab)
    logits = _logits(7, vocab, dtype, gen)
    bm = random_bitmask(7, vocab, 1, gen)
    indices = [0, 3, 6]
    ref = logits.clone()
    xgr.apply_token_bitmask_inplace(ref, bm, indices=indices)
    ours = logits.clone()
    idx = torch.tensor(indices)
    apply_bitmask(ours, bm[idx], idx, backend="triton")
    assert torch.equal(ours, ref)


@pytest.mark.parametrize("vocab", [151936, 262144, 1001])
def test_against_xgrammar_triton_kernel_interpreted(vocab):
    xk = pytest.importorskip("xgrammar.kernels.apply_token_bitmask_inplace_triton")
    gen = torch.Generator().manual_seed(vocab + 1)
    logits = _logits(5, vocab, torch.float32, gen)
    bm = random_bitmask(5, vocab, 0, gen)
    ref = logits.clone()
    # The raw jit kernel (its wrapper needs CUDA): a persistent grid of 2 programs, big blocks.
    xk.apply_token_bitmask_inplace_kernel[(2,)](
        ref, bm, None, 5, vocab, ref.stride(0), bm.stride(0), NUM_SMS=2, BLOCK_SIZE=65536
    )
    ours = logits.clone()
    apply_bitmask(ours, bm, backend="triton")
    assert torch.equal(ours, ref)


def test_dispatch_cpu_defaults_to_torch(monkeypatch):
    from factorspec.kernels import use_triton

    monkeypatch.delenv("FACTORSPEC_KERNEL_BACKEND", raising=False)
    assert not use_triton(torch.zeros(1))
    assert use_triton(torch.zeros(1), "triton")
    monkeypatch.setenv("FACTORSPEC_KERNEL_BACKEND", "triton")
    assert use_triton(torch.zeros(1))
