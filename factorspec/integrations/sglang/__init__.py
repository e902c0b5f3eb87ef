"""SGLang drop-in: FactorSpec as grammar backend (``--grammar-backend factorspec``) and as the
NGRAM worker's drafter.

``import factorspec.integrations.sglang`` registers the grammar backend ``"factorspec"`` through
SGLang's ``register_grammar_backend`` and adds it to the ``--grammar-backend`` choices. The
drafter (:class:`FactorSpecNGRAMWorker`) is installed by :func:`install_drafter`, which the
launcher runs in every SGLang process when ``FACTORSPEC_SGLANG_DRAFTER=1``; :func:`plugin` is the
``sglang.srt.plugins`` entry point doing both.

Matched against ``sglang==0.5.23`` (install it with ``--no-deps``; see docs/integrations.md).
"""
from __future__ import annotations

# CPU-only machines: sgl_kernel's CPU ops (torch stand-ins) before any sglang import (cpu.py)
from factorspec.integrations.sglang.cpu import install as _install_cpu_path

_install_cpu_path(attention=False)

try:
    from sglang.srt.constrained.base_grammar_backend import (
        GRAMMAR_BACKEND_REGISTRY,
        register_grammar_backend,
    )
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(
        f"factorspec.integrations.sglang needs sglang==0.5.23 ({type(e).__name__}: {e}); "
        "see docs/integrations.md for the install lines"
    ) from e

from factorspec.integrations.sglang.drafter import FactorSpecDrafter, NgramDrafts
from factorspec.integrations.sglang.grammar import (
    BACKEND_NAME,
    SGLangFactorSpecGrammar,
    FactorSpecGrammarBackend,
    create_factorspec_backend,
)

__all__ = [
    "BACKEND_NAME",
    "FactorSpecDrafter",
    "FactorSpecGrammarBackend",
    "NgramDrafts",
    "SGLangFactorSpecGrammar",
    "create_factorspec_backend",
    "install_drafter",
    "plugin",
    "register",
]


def register() -> None:
    """Register the ``factorspec`` grammar backend with SGLang (idempotent)."""
    _install_cpu_path()  # and torch_native's speculative-verify mode (cpu.py)
    if GRAMMAR_BACKEND_REGISTRY.get(BACKEND_NAME) is not create_factorspec_backend:
        register_grammar_backend(BACKEND_NAME, create_factorspec_backend)
    try:
        from sglang.srt.arg_groups.choices import GRAMMAR_BACKEND_CHOICES

        if BACKEND_NAME not in GRAMMAR_BACKEND_CHOICES:
            GRAMMAR_BACKEND_CHOICES.append(BACKEND_NAME)
    except ImportError:  # pragma: no cover - older layouts keep the list elsewhere
        pass


def install_drafter() -> None:
    """Make SGLang's NGRAM speculative algorithm use FactorSpec's drafts (this process)."""
    from factorspec.integrations.sglang.ngram_worker import install_drafter as _install

    _install()


def plugin() -> None:
    """``sglang.srt.plugins`` entry point: runs in every SGLang process (scheduler included)."""
    register()
    from factorspec.integrations.sglang.ngram_worker import drafter_requested

    if drafter_requested():
        install_drafter()


register()
