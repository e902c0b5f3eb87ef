"""Torch-free access to the token engine.

`factorspec.graph.matcher` imports `DraftTree` from `factorspec.engine.interface`; importing that
the ordinary way runs `factorspec/engine/__init__.py`, which imports the reference engine and
torch (seconds of start-up and hundreds of MB per worker). The interface module itself needs only
numpy, so it is loaded here under its real name without running the package's `__init__`. A later
`import factorspec.engine` finds the same module in `sys.modules`, so `DraftTree` stays one class.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

_INTERFACE = "factorspec.engine.interface"


def interface() -> ModuleType:
    mod = sys.modules.get(_INTERFACE)
    if mod is None:
        import factorspec

        path = Path(factorspec.__file__).resolve().parent / "engine" / "interface.py"
        spec = importlib.util.spec_from_file_location(_INTERFACE, path)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[_INTERFACE] = mod
        try:
            spec.loader.exec_module(mod)
        except BaseException:
            sys.modules.pop(_INTERFACE, None)
            raise
    return mod


def draft_tree_class() -> type:
    return interface().DraftTree


def matcher_class() -> type:
    interface()
    from factorspec.graph.matcher import Matcher

    return Matcher
