"""Test-only helpers for the SGLang integration tests (CPU, sglang==0.5.23 installed --no-deps).

- ``TRITON_INTERPRET=1`` (SGLang's Triton kernels on CPU tensors) and a temporary
  ``SGLANG_CACHE_DIR``, set at import, before any ``@triton.jit`` decorator runs.
- The CPU path (``sgl_kernel``'s CPU ops as torch code, a ``torchvision`` stub where none imports,
  ``torch_native`` with speculative verify) comes from the package itself:
  :mod:`factorspec.integrations.sglang.cpu`, installed when ``factorspec.integrations.sglang`` is
  imported. :func:`install_stubs` is kept for the tests that call it.
Never imported by the package itself.
"""
from __future__ import annotations

import importlib
import os
import tempfile

import pytest

os.environ.setdefault("TRITON_INTERPRET", "1")
os.environ.setdefault("SGLANG_CACHE_DIR", tempfile.mkdtemp(prefix="factorspec-sglang-cache-"))

SGLANG_SKIP_REASON = (
    "sglang is not importable: the SGLang integration tests need sglang==0.5.23 installed with "
    "--no-deps plus its light dependencies (see docs/integrations.md)"
)


def sglang_available() -> tuple[bool, str]:
    """(True, "") when sglang and the drop-in import (the drop-in installs the CPU path first)."""
    try:
        importlib.import_module("factorspec.integrations.sglang")
        importlib.import_module("sglang")
        importlib.import_module("sglang.srt.constrained.base_grammar_backend")
    except Exception as e:  # noqa: BLE001 - any failure means: not usable here
        return False, f"{SGLANG_SKIP_REASON} ({type(e).__name__}: {e})"
    return True, ""


def install_stubs(torchvision: bool = True) -> list[str]:
    """The CPU path's stand-ins (idempotent); returns what :mod:`...sglang.cpu` provided."""
    from factorspec.integrations.sglang import cpu

    state = cpu.install()
    return list(state["ops"]) + (["torchvision"] if state["torchvision"] is True else [])


@pytest.fixture(scope="session")
def sglang_env():
    """Skip unless sglang imports; then install the stubs and make sure the backend registers."""
    ok, why = sglang_available()
    if not ok:
        pytest.skip(why)
    install_stubs()
    import factorspec.integrations.sglang as fs_sglang

    fs_sglang.register()
    return fs_sglang


@pytest.fixture(scope="session")
def smol_tok():
    """SmolLM2-135M's tokenizer (49,152 tokens; offline, from the model package)."""
    from factorspec.models import load_tokenizer

    try:
        return load_tokenizer("smollm2-135m")
    except Exception as e:  # noqa: BLE001
        pytest.fail(f"tokenizer smollm2-135m is not available ({type(e).__name__}: {e}); "
                    "CI installs it (.ci/run)", pytrace=False)


@pytest.fixture(scope="session")
def smol_backend(sglang_env, smol_tok):
    """FactorSpec's grammar backend for SmolLM2 (vocab 49,152, EOS 0 and 2)."""
    from factorspec.integrations.sglang import FactorSpecGrammarBackend

    return FactorSpecGrammarBackend(smol_tok, 49152, [0, 2], fallback=None)
