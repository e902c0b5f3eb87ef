"""The compute dtype of a model on this CPU: bfloat16 where the CPU computes it fast, else float32.

bfloat16 halves the weights' memory and, on CPUs with bf16 instructions (AVX512-BF16, AMX), runs
about 4x faster than float32 here. On CPUs without them, PyTorch emulates bf16 matmuls and can
be many times slower than float32. Which one a CPU is, no flag says reliably across vendors, so
one small matmul of each decides, once per process. FACTORSPEC_DTYPE (bfloat16 or float32)
overrides. The records stay valid either way (masks are exact); greedy tokens may differ
between dtypes, as between machines."""
from __future__ import annotations

import os
import time
from functools import cache
from typing import Any

ENV_VAR = "FACTORSPEC_DTYPE"
# bf16 is kept unless it is this many times slower than float32 on the probe
_SLOWER_THAN_F32 = 1.5


def _probe_seconds(dtype: Any, m: int = 128, k: int = 896, n: int = 896, reps: int = 3) -> float:
    import torch

    a = torch.ones(m, k, dtype=dtype)
    b = torch.ones(k, n, dtype=dtype)
    a @ b  # warm-up: the first call pays for kernel selection
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t)
    return best


@cache
def cpu_dtype_name() -> str:
    """'bfloat16' or 'float32': the environment's choice, else what the probe measured faster."""
    explicit = os.environ.get(ENV_VAR)
    if explicit:
        if explicit not in ("bfloat16", "float32"):
            raise ValueError(f"{ENV_VAR} must be bfloat16 or float32, not {explicit!r}")
        return explicit
    import torch

    bf16 = _probe_seconds(torch.bfloat16)
    f32 = _probe_seconds(torch.float32)
    return "bfloat16" if bf16 <= _SLOWER_THAN_F32 * f32 else "float32"


def default_dtype(device: str = "cpu") -> Any:
    """The dtype load_model uses when none is given: bfloat16 off the CPU, else cpu_dtype_name()."""
    import torch

    if not str(device).startswith("cpu"):
        return torch.bfloat16
    return getattr(torch, cpu_dtype_name())
