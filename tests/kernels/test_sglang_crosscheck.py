"""Cross-check kernels 2 and 4 against SGLang's own implementations when ``sglang`` is importable.

- kernel 4 vs SGLang's greedy tree verification (``verify_tree_greedy_triton``; under the Triton
  interpreter on CPU, on the GPU on CUDA), fed with the retrieval arrays built by kernel 2;
- kernel 2 vs SGLang's NGRAM op ``reconstruct_indices_from_tree_mask`` (its Triton port
  ``reconstruct_indices_from_tree_mask_triton`` on CPU, ``sgl_kernel``'s CUDA op on CUDA), fed with
  kernel 2's q-length-only mask in NGRAM's ``[bs * N * N]`` layout.
SGLang handles equal widths only (``bs * N`` draft tokens), so these use uniform N.

On CPU, ``sgl_kernel`` (CUDA only) is replaced by a stub before SGLang's modules load: its tree
reconstruction module imports ``sgl_kernel.speculative`` at load time.
"""
import importlib
import random
import sys
import types

import pytest
import torch

sglang = pytest.importorskip(
    "sglang", reason="sglang is not installed: SGLang cross-checks of kernels 2 and 4 are skipped"
)

from factorspec.kernels import build_tree_verify_inputs, flatten_parents, verify_tree_greedy  # noqa: E402
from kernel_cases import random_tree  # noqa: E402

# Where SGLang versions keep their Triton ports (newest first).
_VERIFY_MODULES = [
    "sglang.kernels.ops.speculative.spec_tree",
    "sglang.srt.speculative.eagle_utils",
    "sglang.srt.speculative.spec_utils",
]
_RECONSTRUCT_MODULES = [
    "sglang.kernels.ops.speculative.reconstruct_tree",
    "sglang.srt.speculative.ngram_utils",
]


def _stub_sgl_kernel() -> bool:
    """Install the stub if the real package does not import; True if installed."""
    try:
        import sgl_kernel.speculative  # noqa: F401
        return False
    except Exception:  # noqa: BLE001 - CUDA-only package
        pass

    def _cuda_only(*args, **kwargs):
        raise RuntimeError("sgl_kernel stub: CUDA op called in a CPU test")

    pkg = types.ModuleType("sgl_kernel")
    spec = types.ModuleType("sgl_kernel.speculative")
    spec.reconstruct_indices_from_tree_mask = _cuda_only
    pkg.speculative = spec
    pkg.__path__ = []
    sys.modules["sgl_kernel"] = pkg
    sys.modules["sgl_kernel.speculative"] = spec
    return True


def _find(modules, name):
    stubbed = not torch.cuda.is_available() and _stub_sgl_kernel()
    errors = []
    try:
        for mod in modules:
            try:
                fn = getattr(importlib.import_module(mod), name, None)
            except Exception as e:  # noqa: BLE001 - optional dependency chain
                errors.append(f"{mod}: {type(e).__name__}: {e}")
                continue
            if fn is not None:
                return fn
    finally:
        if stubbed:  # keep the stub out of other tests in the same session
            sys.modules.pop("sgl_kernel.speculative", None)
            sys.modules.pop("sgl_kernel", None)
    pytest.skip(f"this sglang has no importable {name} ({'; '.join(errors) or 'not found'})")


def _uniform_batch(bs, n, seed, device):
    rng = random.Random(seed)
    trees = [rng.choice([[-1] + list(range(n - 1)), [-1] + [0] * (n - 1), random_tree(n - 1, rng)]) for _ in range(bs)]
    par, cu = flatten_parents(trees, device)
    toks = torch.tensor([rng.randrange(3) for _ in range(bs * n)], device=device)
    pred = torch.tensor([rng.randrange(3) for _ in range(bs * n)], device=device)
    for b in range(bs):
        for i in range(1, n):
            if rng.random() < 0.7:
                pred[b * n + trees[b][i]] = toks[b * n + i]
    prefix = torch.tensor([rng.randrange(50) for _ in range(bs)], device=device)
    return par, cu, toks, pred, prefix


@pytest.mark.parametrize("bs,n", [(1, 1), (3, 8), (5, 17), (2, 65)])
def test_greedy_verify_matches_sglang(bs, n):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    sgl_verify = _find(_VERIFY_MODULES, "verify_tree_greedy_triton")
    par, cu, toks, pred, prefix = _uniform_batch(bs, n, bs * 100 + n, device)
    inp = build_tree_verify_inputs(par, cu, prefix)
    predicts = torch.full((bs * n,), -1, dtype=torch.int32, device=device)
    accept_index = torch.full((bs, n), -1, dtype=torch.int32, device=device)
    accept_num = torch.zeros(bs, dtype=torch.int32, device=device)
    sgl_verify(
        predicts, accept_index, accept_num, toks.view(bs, n), inp.retrive_index,
        inp.retrive_next_token, inp.retrive_next_sibling, pred.view(bs, n),
    )
    ours = verify_tree_greedy(toks, pred, par, cu)
    assert accept_num.long().tolist() == ours.accept_length.tolist()
    assert accept_index.long().tolist() == ours.accept_index.tolist()
    for b in range(bs):
        path = ours.accept_index[b, : ours.accept_length[b] + 1]
        assert predicts[path].long().tolist() == ours.output_tokens[b, : len(path)].tolist()


@pytest.mark.parametrize("bs,n", [(1, 1), (4, 8), (7, 17), (3, 33)])
def test_tree_inputs_match_sglang_reconstruct(bs, n):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        try:
            from sgl_kernel.speculative import reconstruct_indices_from_tree_mask as reconstruct
        except Exception:  # noqa: BLE001
            reconstruct = _find(_RECONSTRUCT_MODULES, "reconstruct_indices_from_tree_mask_triton")
    else:
        reconstruct = _find(_RECONSTRUCT_MODULES, "reconstruct_indices_from_tree_mask_triton")
    par, cu, _, _, prefix = _uniform_batch(bs, n, bs + n, device)
    inp = build_tree_verify_inputs(par, cu, prefix)
    positions = torch.empty(bs * n, dtype=torch.int64, device=device)
    retr = torch.empty(3, bs, n, dtype=torch.int64, device=device)
    reconstruct(inp.tree_mask_qlen, prefix.long(), positions, retr[0], retr[1], retr[2], bs, n)
    assert torch.equal(positions, inp.positions)
    assert torch.equal(retr[0], inp.retrive_index)
    assert torch.equal(retr[1], inp.retrive_next_token)
    assert torch.equal(retr[2], inp.retrive_next_sibling)
