"""Compile every Triton kernel for an sm_90 target without a GPU (run as a script).

Why a subprocess: the interpreter accepts code the compiler rejects, but with TRITON_INTERPRET=1
set (as the kernel tests need) triton's own ``@jit`` library functions (tl.max, tl.sum, ...) are
interpreter objects and cannot be compiled. ``test_compile_gpu.py`` runs this file with the
variable removed; it prints one JSON object {case: "ok" | error}.
"""
from __future__ import annotations

import json
import os
import sys

I64 = "*i64"


def _cases():
    cases = {}
    for dtype in ("fp32", "fp16", "bf16"):
        for has_map in (False, True):
            cases[f"bitmask_apply-{dtype}-map{int(has_map)}"] = (
                "bitmask_triton", "bitmask_apply_kernel",
                {"logits_ptr": f"*{dtype}", "bitmask_ptr": "*i32", "row_map_ptr": "*i32", "vocab_size": "i32",
                 "logits_stride": "i64", "bitmask_stride": "i32"},
                {"HAS_MAP": has_map, "BLOCK": 4096}, {"num_warps": 8})
            cases[f"bitmask_argmax-{dtype}-map{int(has_map)}"] = (
                "bitmask_triton", "bitmask_argmax_kernel",
                {"logits_ptr": f"*{dtype}", "bitmask_ptr": "*i32", "inv_map_ptr": "*i32", "out_ptr": I64,
                 "vocab_size": "i32", "num_cols": "i32", "logits_stride": "i32", "bitmask_stride": "i32"},
                {"HAS_MAP": has_map, "BLOCK": 8192}, {"num_warps": 16})
    for idx in ("i64", "i32"):
        # BLOCK_N 128 (widths 64..127) is the slow compile (~6 s): once, with int64 indices.
        configs = ((True, 16), (False, 32), (True, 128)) if idx == "i64" else ((True, 16),)
        for full, block_n in configs:
            cases[f"tree_verify_inputs-{idx}-full{int(full)}-n{block_n}"] = (
                "tree_mask_triton", "tree_verify_inputs_kernel",
                {"parents_ptr": f"*{idx}", "cu_ptr": f"*{idx}", "prefix_ptr": f"*{idx}", "pos_ptr": I64,
                 "cu_full_ptr": I64, "full_ptr": "*i1", "qlen_ptr": "*i1", "packed_ptr": "*i32", "ridx_ptr": I64,
                 "rnext_ptr": I64, "rsib_ptr": I64, "max_nodes": "i32", "nwords": "i32"},
                {"BUILD_FULL": full, "BLOCK_N": block_n, "BLOCK_P": max(2048 // block_n, 16), "BLOCK_B": 128,
                 "NWORDS_MAX": (block_n + 31) // 32},
                {"num_warps": 8 if block_n >= 64 else 4})
        sig = {n: f"*{idx}" for n in ("root_ptr", "run_ptr", "cu_run_ptr", "tree_tok_ptr", "tree_par_ptr", "cu_tree_ptr")}
        sig.update({n: I64 for n in ("tokens_ptr", "parents_ptr", "cu_nodes_ptr", "ndraft_ptr", "cu_ndraft_ptr",
                                     "draft_ids_ptr", "target_idx_ptr", "bonus_idx_ptr")})
        cases[f"assemble_drafts-{idx}"] = ("assemble_triton", "assemble_drafts_kernel", sig, {"BLOCK": 64}, {"num_warps": 2})
        for block_n in (16, 128):
            cases[f"verify_tree_greedy-{idx}-n{block_n}"] = (
                "verify_triton", "verify_tree_greedy_kernel",
                {"tokens_ptr": f"*{idx}", "predict_ptr": I64, "parents_ptr": f"*{idx}", "cu_ptr": f"*{idx}",
                 "accept_ptr": I64, "length_ptr": I64, "bonus_ptr": I64, "out_ptr": I64, "max_nodes": "i32"},
                {"BLOCK_N": block_n}, {"num_warps": 1})
    return cases


CASES = _cases()


def main() -> None:
    assert not os.environ.get("TRITON_INTERPRET") or os.environ["TRITON_INTERPRET"] == "0"
    import importlib

    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    target = GPUTarget("cuda", 90, 32)
    results = {}
    for name, (mod, fn, sig, constexprs, *opts) in CASES.items():
        try:
            kernel = getattr(importlib.import_module(f"factorspec.kernels.{mod}"), fn)
            full_sig = dict(sig)
            full_sig.update({k: "constexpr" for k in constexprs})
            compiled = triton.compile(
                ASTSource(kernel, full_sig, constexprs=constexprs), target=target, options=opts[0] if opts else None
            )
            results[name] = "ok" if "ptx" in compiled.asm else "no ptx"
        except Exception as e:  # report, do not stop: one line per case
            results[name] = f"{type(e).__name__}: {str(e)[-2000:]}"
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
