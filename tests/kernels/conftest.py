"""Kernel tests run the Triton kernels on CPU through the Triton interpreter.

TRITON_INTERPRET must be set before any ``@triton.jit`` decorator runs (it is read then), so it
is set here, before the test modules import triton or factorspec.kernels.*_triton.
"""
import os
import sys

# An explicit TRITON_INTERPRET=0 (gpu_check.sh running the sglang cross-checks on CUDA) is kept.
os.environ.setdefault("TRITON_INTERPRET", "1")
os.environ.setdefault("SGLANG_CACHE_DIR", "/tmp/factorspec-sglang-cache")

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)
_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import torch  # noqa: E402

# Shared 2-core machines: OpenMP spinning with 2 intra-op threads makes tiny ops 100x slower.
torch.set_num_threads(1)
