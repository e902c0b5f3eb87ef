"""Test-only helpers for the SGLang integration tests (CPU, sglang==0.5.23 installed --no-deps).

- ``torchvision`` and ``sgl_kernel.speculative`` stubs, put into ``sys.modules`` by the
  ``sglang_env`` fixture only when the real modules cannot be imported (PyPI has only CUDA builds
  of torchvision; sgl_kernel is the CUDA kernel package). The ``sgl_kernel.speculative`` stub's
  ``reconstruct_indices_from_tree_mask`` runs SGLang's own Triton version of that op
  (``reconstruct_indices_from_tree_mask_triton``) under the interpreter.
- ``TRITON_INTERPRET=1`` (SGLang's Triton kernels on CPU tensors) and a temporary
  ``SGLANG_CACHE_DIR``, set at import, before any ``@triton.jit`` decorator runs.
Never imported by the package itself.
"""
from __future__ import annotations

import importlib
import importlib.machinery
import os
import sys
import tempfile
import types

import pytest

os.environ.setdefault("TRITON_INTERPRET", "1")
os.environ.setdefault("SGLANG_CACHE_DIR", tempfile.mkdtemp(prefix="factorspec-sglang-cache-"))

SGLANG_SKIP_REASON = (
    "sglang is not importable: the SGLang integration tests need sglang==0.5.23 installed with "
    "--no-deps plus its light dependencies (see docs/integrations.md)"
)


def sglang_available() -> tuple[bool, str]:
    try:
        importlib.import_module("sglang")
        importlib.import_module("sglang.srt.constrained.base_grammar_backend")
    except Exception as e:  # noqa: BLE001 - any failure means: not usable here
        return False, f"{SGLANG_SKIP_REASON} ({type(e).__name__}: {e})"
    return True, ""


def _importable(name: str) -> bool:
    if name in sys.modules:
        return True
    try:
        importlib.import_module(name)
        return True
    except Exception:  # noqa: BLE001
        return False


def _reconstruct_via_sglang_triton(*args, **kwargs):
    from sglang.kernels.ops.speculative.reconstruct_tree import reconstruct_indices_from_tree_mask_triton

    return reconstruct_indices_from_tree_mask_triton(*args, **kwargs)


def _stub_getattr(modname: str):
    def __getattr__(name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        # Names imported at module load (InterpolationMode, ...) resolve to inert placeholders.
        return type(name, (), {"__module__": modname})
    return __getattr__


def install_stubs(torchvision: bool = True) -> list[str]:
    """Insert the stubs that are needed; returns the names inserted."""
    added = []
    if torchvision and not _importable("torchvision"):
        # transformers caches "is torchvision available?" (lru_cache): ask it first, while the
        # answer is still "no", so it never takes the stub for a real torchvision.
        from transformers.utils import import_utils as _tf_import_utils

        _tf_import_utils.is_torchvision_available()
        tv = types.ModuleType("torchvision")
        tv.__spec__ = importlib.machinery.ModuleSpec("torchvision", None, is_package=True)
        tv.__path__ = []  # type: ignore[attr-defined]
        tv.__version__ = "0.0.0+factorspec-stub"  # type: ignore[attr-defined]
        for sub in ("transforms", "transforms.functional", "io", "ops", "datasets", "models"):
            m = types.ModuleType(f"torchvision.{sub}")
            m.__spec__ = importlib.machinery.ModuleSpec(f"torchvision.{sub}", None)
            m.__getattr__ = _stub_getattr(f"torchvision.{sub}")  # type: ignore[attr-defined]
            if "." not in sub:
                setattr(tv, sub, m)
            sys.modules[f"torchvision.{sub}"] = m
        sys.modules["torchvision.transforms"].functional = sys.modules["torchvision.transforms.functional"]
        sys.modules["torchvision"] = tv
        added.append("torchvision")
    if not _importable("sgl_kernel.speculative"):
        pkg = sys.modules.get("sgl_kernel") or types.ModuleType("sgl_kernel")
        if not hasattr(pkg, "__path__"):
            pkg.__path__ = []  # type: ignore[attr-defined]
        spec = types.ModuleType("sgl_kernel.speculative")
        spec.reconstruct_indices_from_tree_mask = _reconstruct_via_sglang_triton  # type: ignore[attr-defined]
        pkg.speculative = spec  # type: ignore[attr-defined]
        sys.modules["sgl_kernel"] = pkg
        sys.modules["sgl_kernel.speculative"] = spec
        added.append("sgl_kernel.speculative")
    return added


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
