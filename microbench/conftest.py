"""Microbenchmarks are collected only when asked for: when a file of this folder is named on the
command line, or with ``--benchmark-only``. A plain ``pytest`` over the repository skips them."""
import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)


def pytest_ignore_collect(collection_path, config):
    if not collection_path.name.startswith("test_") or collection_path.suffix != ".py":
        return None
    named = any(
        os.path.abspath(str(a).split("::")[0]) == str(collection_path) for a in config.args
    )
    asked = named or bool(config.getoption("benchmark_only", default=False))
    return None if asked else True


def pytest_configure(config):
    # The CPU machines are shared (load well above the 2 cores): with 2 intra-op threads, small
    # torch index ops spin in OpenMP barriers and take 100x longer. One thread gives stable CPU
    # figures; set FACTORSPEC_BENCH_THREADS to override.
    import torch

    if not torch.cuda.is_available():
        torch.set_num_threads(int(os.environ.get("FACTORSPEC_BENCH_THREADS", "1")))
