"""Torch's thread count from the CPUs this process may really use.

Torch sizes its thread pool from the machine's cores. In a container or CI sandbox limited to a
few CPUs by a cgroup quota, that count can be the host's, and a pool far larger than the quota
spins and preempts itself: the main job ran 15-30x slower in CI than with the right count. The
usable count is the smallest of the affinity mask and the cgroup quota (v2 `cpu.max`, v1
`cpu.cfs_quota_us`). Where other processes already keep those CPUs busy (a shared CI runner, the
mask workers), several threads can be slower than one: torch's threads wait for each other at
every op. One small matmul timed at both counts decides, once per process."""
from __future__ import annotations

import math
import os
from pathlib import Path

_CGROUP = Path("/sys/fs/cgroup")


def _cgroup_quota(root: Path = _CGROUP) -> int | None:
    """CPUs allowed by the cgroup quota, rounded up; None when unlimited or unreadable."""
    try:
        v2 = root / "cpu.max"
        if v2.is_file():
            quota, period = v2.read_text().split()[:2]
            if quota == "max":
                return None
            return max(1, math.ceil(int(quota) / int(period)))
        q, p = root / "cpu" / "cpu.cfs_quota_us", root / "cpu" / "cpu.cfs_period_us"
        if q.is_file() and p.is_file():
            quota_us, period_us = int(q.read_text()), int(p.read_text())
            if quota_us > 0 and period_us > 0:
                return max(1, math.ceil(quota_us / period_us))
    except (OSError, ValueError):
        return None
    return None


def usable_cpus(root: Path = _CGROUP) -> int:
    """CPUs this process can run on at once: affinity mask and cgroup quota, whichever is less."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    quota = _cgroup_quota(root)
    return max(1, min(n, quota) if quota is not None else n)


def configure_torch_threads() -> int:
    """Cap torch's intra-op threads at the usable CPUs, or one where more are slower; an explicit
    setting wins.

    FACTORSPEC_TORCH_THREADS, else OMP_NUM_THREADS (which torch reads itself), else
    `usable_cpus()` unless the probe finds one thread as fast. Returns the count torch uses."""
    import torch

    explicit = os.environ.get("FACTORSPEC_TORCH_THREADS")
    if explicit:
        torch.set_num_threads(max(1, int(explicit)))
    elif not os.environ.get("OMP_NUM_THREADS"):
        n = min(usable_cpus(), torch.get_num_threads())
        if n > 1 and _matmul_seconds(n) > _MULTI_THREAD_GAIN * _matmul_seconds(1):
            n = 1  # the other CPUs are busy: more threads would only wait for each other
        torch.set_num_threads(n)
    return int(torch.get_num_threads())


# several threads are kept only if they make the probe at least this much faster than one
_MULTI_THREAD_GAIN = 0.8


def _matmul_seconds(threads: int, size: int = 768, reps: int = 3) -> float:
    """Best of `reps` timings of one float32 matmul at `threads` torch threads."""
    import time

    import torch

    torch.set_num_threads(threads)
    a = torch.ones(size, size)
    a @ a
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        a @ a
        best = min(best, time.perf_counter() - t)
    return best
