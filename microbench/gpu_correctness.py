"""GPU correctness pass: every kernel's Triton path on CUDA against its torch reference on CPU
(and kernel 1 against xgrammar's CUDA path), over awkward sizes. Run by gpu_check.sh; prints one
line per case and exits non-zero on any mismatch. Needs a CUDA device; no TRITON_INTERPRET."""
from __future__ import annotations

import os
import random
import sys

SMOKE = os.environ.get("FACTORSPEC_SMOKE") == "1"  # CPU dry run of this script (interpreter)
if SMOKE:
    os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from factorspec.kernels import (  # noqa: E402
    apply_bitmask,
    assemble_drafts,
    build_tree_verify_inputs,
    flatten_parents,
    verify_tree_greedy,
)

FAILS = []
DEV = "cpu" if SMOKE else "cuda"
BK = "triton"  # the Triton path on CUDA; forced (interpreted) in the CPU smoke run
VOCABS = (1000, 33) if SMOKE else (151936, 49152, 262144, 32000, 1000, 33)
BATCHES = (1, 7) if SMOKE else (1, 7, 512)
TREE_BATCHES = (1, 7) if SMOKE else (1, 7, 64, 512)


def check(name: str, ok: bool) -> None:
    print(("ok   " if ok else "FAIL ") + name, flush=True)
    if not ok:
        FAILS.append(name)


def same(a, b) -> bool:
    return all(torch.equal(x.cpu(), y.cpu()) for x, y in zip(a, b))


def bitmask_cases() -> None:
    try:
        import xgrammar as xgr
    except ImportError:
        xgr = None
    gen = torch.Generator().manual_seed(0)
    for vocab in VOCABS:
        for dtype in (torch.float32, torch.float16, torch.bfloat16):
            for batch in BATCHES:
                logits = torch.randn(batch, vocab + 5, generator=gen).to(dtype)[:, :vocab]
                bm = torch.randint(-(2**31), 2**31 - 1, (batch, (vocab + 31) // 32 + 1), dtype=torch.int32, generator=gen)
                for argmax in (False, True):
                    ref = logits.clone()
                    ra = apply_bitmask(ref, bm, return_argmax=argmax, backend="torch")
                    got = logits.to(DEV)
                    ga = apply_bitmask(got, bm.to(DEV), return_argmax=argmax, backend=BK)
                    ok = torch.equal(got.cpu(), ref) and (not argmax or torch.equal(ga.cpu(), ra))
                    check(f"bitmask V{vocab} {dtype} b{batch} argmax={argmax}", ok)
                if xgr is not None and dtype != torch.float16 and not SMOKE:
                    x = logits.contiguous().to(DEV)
                    xgr.apply_token_bitmask_inplace(x, bm.to(DEV))
                    ours = logits.contiguous().to(DEV)
                    apply_bitmask(ours, bm.to(DEV), backend=BK)
                    check(f"bitmask vs xgrammar V{vocab} {dtype} b{batch}", torch.equal(x, ours))
    # row map with skipped rows
    logits = torch.randn(9, 151936 // (64 if SMOKE else 1), generator=gen)
    bm = torch.randint(-(2**31), 2**31 - 1, (4, logits.shape[1] // 32), dtype=torch.int32, generator=gen)
    rm = torch.tensor([8, -1, 0, 5])
    for argmax in (False, True):
        ref = logits.clone()
        ra = apply_bitmask(ref, bm, rm, return_argmax=argmax, backend="torch")
        got = logits.to(DEV)
        ga = apply_bitmask(got, bm.to(DEV), rm.to(DEV), return_argmax=argmax, backend=BK)
        check(f"bitmask row_map argmax={argmax}", torch.equal(got.cpu(), ref) and (not argmax or torch.equal(ga.cpu(), ra)))


def tree_cases() -> None:
    rng = random.Random(0)
    for bs in TREE_BATCHES:
        for maxw in (0, 1, 16, 64):
            trees = []
            for _ in range(bs):
                w = rng.randint(0, maxw)
                kind = rng.choice(["chain", "star", "random"])
                trees.append({"chain": [-1] + list(range(w)), "star": [-1] + [0] * w,
                              "random": [-1] + [rng.randrange(i) for i in range(1, w + 1)]}[kind])
            par, cu = flatten_parents(trees)
            prefix = torch.tensor([rng.randrange(0, 3000) for _ in range(bs)])
            ref = build_tree_verify_inputs(par, cu, prefix, backend="torch")
            got = build_tree_verify_inputs(par.to(DEV), cu.to(DEV), prefix.to(DEV), backend=BK)
            check(f"tree inputs bs{bs} maxw{maxw}", same(got, ref))
            toks = torch.tensor([rng.randrange(3) for _ in range(par.numel())])
            pred = torch.tensor([rng.randrange(3) for _ in range(par.numel())])
            vr = verify_tree_greedy(toks, pred, par, cu, backend="torch")
            vg = verify_tree_greedy(toks.to(DEV), pred.to(DEV), par.to(DEV), cu.to(DEV), backend=BK)
            check(f"greedy verify bs{bs} maxw{maxw}", same(vg, vr))
            runs = [[rng.randrange(1000) for _ in range(rng.randint(0, maxw))] for _ in range(bs)]
            tl_ = [rng.randint(0, maxw) for _ in range(bs)]
            roots = torch.tensor([rng.randrange(1000) for _ in range(bs)])
            rf = torch.tensor([x for r in runs for x in r], dtype=torch.int64)
            cr = torch.tensor([0] + [len(r) for r in runs]).cumsum(0)
            tt = torch.tensor([rng.randrange(1000) for t in tl_ for _ in range(t)], dtype=torch.int64)
            tp = torch.tensor([rng.randrange(-1, i) for t in tl_ for i in range(t)], dtype=torch.int64)
            ct = torch.tensor([0] + tl_).cumsum(0)
            ar = assemble_drafts(roots, rf, cr, tt, tp, ct, backend="torch")
            ag = assemble_drafts(roots.to(DEV), rf.to(DEV), cr.to(DEV), tt.to(DEV), tp.to(DEV), ct.to(DEV), backend=BK)
            check(f"assemble bs{bs} maxw{maxw}", same(ag, ar))


if __name__ == "__main__":
    if not SMOKE and not torch.cuda.is_available():
        sys.exit("no CUDA device (FACTORSPEC_SMOKE=1 runs a small CPU dry run)")
    bitmask_cases()
    tree_cases()
    print(f"{len(FAILS)} failures")
    sys.exit(1 if FAILS else 0)
