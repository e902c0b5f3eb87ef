"""What the vLLM backend and its mask workers (`maskpool`) share, without importing vLLM: which
schemas are FactorSpec's, spec compilation (through the process's `SpecCompiler`), the
request's stop-token view of the vocabulary, and the batched in-process fill of mask rows.

Both `backend` and `maskpool` import this module; neither imports the other at module level."""
from __future__ import annotations

import copy
import json
from typing import Any, Iterable, Optional

import numpy as np

FACTORSPEC_KEY = "x-factorspec"

_STOP_VIEWS: dict[tuple, Any] = {}


def schema_of(spec: Any) -> Optional[dict]:
    """The schema as a dict if it is a JSON schema (dict or JSON text), else None."""
    if isinstance(spec, dict):
        return spec
    if isinstance(spec, (str, bytes)):
        try:
            doc = json.loads(spec)
        except (ValueError, TypeError):
            return None
        return doc if isinstance(doc, dict) else None
    return None


def is_factorspec_schema(spec: Any) -> bool:
    doc = schema_of(spec)
    return doc is not None and FACTORSPEC_KEY in doc


def compile_checked(doc: Any) -> Any:
    """The compiled spec of `doc` plus the feasibility check (raises SpecError / Unsatisfiable),
    from the process's `SpecCompiler` (one compiled spec and byte automaton per schema)."""
    from factorspec.graph.compiler import default_compiler

    return default_compiler().compile(doc, check=True).spec


def with_stops(vocab: Any, stop_token_ids: Any) -> Any:
    """The vocabulary with the request's stop tokens (vLLM passes the EOS and user stop-token
    ids it will actually stop on; FactorSpec's own default is every end-of-turn control token,
    which would let the model end the record with a token vLLM does not stop on). A shallow view:
    the tries and masks are shared."""
    ids = tuple(sorted({int(t) for t in (stop_token_ids or ()) if 0 <= int(t) < vocab.vocab_size}))
    if not ids or list(ids) == list(vocab.stop_ids):
        return vocab
    key = (id(vocab), ids)
    v = _STOP_VIEWS.get(key)
    if v is None:
        v = copy.copy(vocab)
        v.stop_ids = list(ids)
        _STOP_VIEWS[key] = v
    return v


def rows_for(m: Any, tokens: list[int]) -> tuple[list[np.ndarray], Optional[int]]:
    """Mask rows of matcher `m` at the position before each token and after the last
    (len(tokens)+1 rows, fewer when a token is rejected: then `failed` is the index of the first
    rejected token and the rows stop at the last valid state). The matcher is left as it was."""
    rows: list[np.ndarray] = []
    accepted = 0
    failed: Optional[int] = None
    try:
        for i, t in enumerate(tokens):
            rows.append(m.next_token_mask())
            if t == -1:  # vLLM pads drafts with -1
                failed = i
                break
            if m.is_terminated() or not m.accept_token(int(t)):
                failed = i
                break
            accepted += 1
        if failed is None:
            rows.append(m.next_token_mask())
    finally:
        m.rollback(accepted)
    return rows, failed


def fill_rows(bitmask: Any, items: Iterable[tuple[Any, int, list[int]]]) -> None:
    """One batched call for the rows of every FactorSpec request of a step.

    items: (grammar, first row, scheduled draft tokens); the request gets len(tokens)+1
    consecutive rows: the mask before each draft token and the bonus position. After a
    rejected (or -1 padding) draft token the remaining rows repeat the last valid state's row,
    as vLLM does."""
    arr = bitmask.numpy() if hasattr(bitmask, "numpy") else bitmask
    width = arr.shape[1]
    for grammar, start, tokens in items:
        rows, _failed = grammar.rows_for(tokens)
        n = len(tokens) + 1
        for j in range(n):
            row = rows[min(j, len(rows) - 1)]
            w = min(len(row), width)
            arr[start + j, :w] = row[:w]
            if w < width:
                arr[start + j, w:] = 0
