"""Decoding engines. `engine.Engine` is the reference transformers loop (greedy, tree-verified
drafts, continuous batching); the engine/constraint contract is `factorspec.constraint`
(re-exported here).

The engine loop imports torch; it is loaded lazily so that `import factorspec.engine` stays cheap."""
from __future__ import annotations

from typing import Any

from factorspec.constraint import DraftTree, RequestConstraint

_LAZY = ("Engine", "Request", "RequestState", "RequestStats", "Result", "adaptive_width", "fixed_width")

__all__ = list(_LAZY) + ["DraftTree", "RequestConstraint"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from factorspec.engine import engine

        return getattr(engine, name)
    raise AttributeError(f"module 'factorspec.engine' has no attribute {name!r}")
