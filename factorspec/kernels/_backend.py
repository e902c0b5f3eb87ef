"""Backend selection shared by every kernel dispatcher.

Why: each kernel has one plain torch reference (always available, used on CPU) and one Triton
implementation (used on CUDA). Tests force the Triton path on CPU tensors under the Triton
interpreter, so the choice is explicit and checkable rather than buried in each kernel.
"""
from __future__ import annotations

import os
from typing import Literal

import torch

Backend = Literal["auto", "torch", "triton"]


def interpreter_enabled() -> bool:
    """True when Triton runs kernels in its CPU interpreter (read when ``@triton.jit`` runs)."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def use_triton(t: torch.Tensor, backend: Backend = "auto") -> bool:
    """Pick the implementation for tensors living on ``t.device``.

    ``auto``: Triton on CUDA, torch elsewhere; ``FACTORSPEC_KERNEL_BACKEND=triton|torch`` overrides
    ``auto`` (handy to run a whole test suite through the interpreter). ``triton`` on a CPU
    tensor needs ``TRITON_INTERPRET=1``.
    """
    if backend == "auto":
        env = os.environ.get("FACTORSPEC_KERNEL_BACKEND", "").strip().lower()
        if env in ("torch", "triton"):
            backend = env  # type: ignore[assignment]
    if backend == "torch":
        return False
    if backend == "triton":
        if not t.is_cuda and not interpreter_enabled():
            raise RuntimeError(
                "backend='triton' on a CPU tensor needs TRITON_INTERPRET=1 set before triton "
                "kernels are first imported"
            )
        return True
    if backend != "auto":
        raise ValueError(f"unknown backend {backend!r}")
    return t.is_cuda


def next_pow2(n: int) -> int:
    """Smallest power of two >= max(n, 1); Triton block shapes must be powers of two."""
    n = max(int(n), 1)
    return 1 << (n - 1).bit_length()
