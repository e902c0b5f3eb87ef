"""The official JSON Schema meta-schemas, offline: a `$ref` to a well-known meta-schema URI (e.g.
'http://json-schema.org/draft-04/schema#/properties/title', as the swagger-2.0 schema writes) is
resolved from the `jsonschema_specifications` package (shipped with `jsonschema`), never fetched.

Only the self-contained meta-schemas (drafts 4, 6 and 7: one document, internal '#...' references
only) are served; the 2019-09/2020-12 ones are split over vocabularies joined by `$dynamicRef` and
stay refused. `embed` copies a meta-schema into the spec document under `REMOTE_KEY` with its
internal references rewritten to point there, so every reference stays local (one document, one
JSON Pointer space for recursion detection and error messages)."""
from __future__ import annotations

from typing import Any, Optional

REMOTE_KEY = "$fsRemote"
# base URI (no fragment, no trailing '#') -> the registry's name for it
# (their official ids only: an https:// spelling names another, unknown document, as for jsonschema)
_SELF_CONTAINED = {f"http://json-schema.org/draft-{n:02d}/schema": f"http://json-schema.org/draft-{n:02d}/schema"
                   for n in (4, 6, 7)}


def meta_schema_base(ref: str) -> Optional[str]:
    """The registry name of the meta-schema `ref` points into, or None if it names none we serve."""
    base = ref.partition("#")[0]
    return _SELF_CONTAINED.get(base)


def load(name: str) -> Optional[dict]:
    """The meta-schema document, or None where `jsonschema_specifications` is not installed."""
    try:
        from jsonschema_specifications import REGISTRY
    except ImportError:  # pragma: no cover - installed with jsonschema
        return None
    contents = REGISTRY.contents(name)
    return contents if isinstance(contents, dict) else None


def _rebase(x: Any, prefix: str) -> Any:
    """A copy of `x` whose internal '#...' references (and absolute ones to its own URI) point
    under `prefix` (a JSON Pointer into the embedding document)."""
    if isinstance(x, list):
        return [_rebase(v, prefix) for v in x]
    if not isinstance(x, dict):
        return x
    out = {}
    for k, v in x.items():
        if k == "$ref" and isinstance(v, str):
            frag = v[1:] if v.startswith("#") else v.partition("#")[2] if meta_schema_base(v) else None
            out[k] = v if frag is None else "#" + prefix + frag
        elif k in ("id", "$id") and isinstance(v, str):
            continue  # the embedded copy lives in the spec's own document: no base URI of its own
        else:
            out[k] = _rebase(v, prefix)
    return out


def embed(doc: dict, names: list[str]) -> dict:
    """`doc` with the meta-schemas `names` copied under `REMOTE_KEY` (position i: names[i])."""
    return {**doc, REMOTE_KEY: [_rebase(load(n), f"/{REMOTE_KEY}/{i}") for i, n in enumerate(names)]}


def remote_refs(doc: Any) -> list[str]:
    """The meta-schemas that `$ref`s anywhere in `doc` point into (registry names, in order)."""
    out: dict[str, None] = {}

    def walk(x: Any) -> None:
        if isinstance(x, dict):
            r = x.get("$ref")
            if isinstance(r, str) and not r.startswith("#"):
                name = meta_schema_base(r)
                if name is not None:
                    out[name] = None
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(doc)
    return list(out)
