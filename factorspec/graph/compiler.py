"""One spec compiler with a bounded cache: spec document -> `CompiledConstraint` -> matchers.

xgrammar's shape (`GrammarCompiler(cache_enabled, cache_limit_bytes)` -> `CompiledGrammar` ->
`GrammarMatcher`): compiling a spec (schema layout, grounding, the solver's root) and its byte
automaton (`TextMachine`, whose memo tables warm up as requests run) is done once per spec and
shared by every request of it; each request gets only its own `Matcher`. Every integration (vLLM
backend, patches and proposer, SGLang's grammar backend) and the mask workers compile here.

The cache key is the spec's canonical text: its JSON with whitespace removed and keys in their
given order (property order is part of a spec: it fixes the record's layout), plus the compiler's
budget and style. The cache is an LRU bounded by `cache_limit` entries and is thread-safe.
"""
from __future__ import annotations

import json
import threading
import weakref
from collections import OrderedDict
from typing import Any, Optional

from factorspec.errors import SpecError
from factorspec.graph.solver import Budget
from factorspec.graph.spec import CompiledSpec, compile_spec
from factorspec.graph.textstate import TextMachine
from factorspec.graph.token_vocab import TokenVocab

DEFAULT_CACHE_LIMIT = 256

# spec -> its shared machine, for specs compiled outside a SpecCompiler (`Matcher.for_spec`)
_MACHINES: weakref.WeakKeyDictionary[CompiledSpec, TextMachine] = weakref.WeakKeyDictionary()
_MACHINES_LOCK = threading.Lock()


def machine_of(spec: CompiledSpec) -> TextMachine:
    """The one `TextMachine` of `spec` (built at its first use, then shared)."""
    with _MACHINES_LOCK:
        m = _MACHINES.get(spec)
        if m is None:
            m = _MACHINES[spec] = TextMachine(spec)
        return m


def canonical_spec_text(doc: Any) -> str:
    """The cache key of a spec document (dict, or JSON text): compact JSON, keys in given order."""
    if isinstance(doc, (str, bytes)):
        try:
            doc = json.loads(doc)
        except json.JSONDecodeError as e:
            raise SpecError("", f"spec is not valid JSON: {e}") from None
    try:
        return json.dumps(doc, ensure_ascii=False, separators=(",", ":"), )
    except (TypeError, ValueError) as e:
        raise SpecError("", f"spec is not a JSON document: {e}") from None


class CompiledConstraint:
    """A compiled spec and its shared byte automaton; makes one `Matcher` per request."""

    __slots__ = ("key", "spec", "machine", "__weakref__")

    def __init__(self, key: str, spec: CompiledSpec, machine: TextMachine) -> None:
        self.key, self.spec, self.machine = key, spec, machine

    def check(self) -> CompiledConstraint:
        """Raise `Unsatisfiable` (naming the conflicting relations) if no record exists."""
        self.spec.root()
        return self

    def matcher(self, vocab: TokenVocab) -> Any:
        """A fresh per-request matcher at the start of the record."""
        from factorspec.graph.matcher import Matcher

        return Matcher(self.machine, vocab)

    def __repr__(self) -> str:
        return f"CompiledConstraint({self.key[:60]!r})"


class SpecCompiler:
    """Compiles spec documents, caching the results (LRU, at most `cache_limit` specs).

    `cache_enabled=False` compiles every call afresh (each result still owns one machine).
    `open_objects=False` closes objects with additionalProperties true or a schema (see
    docs/spec.md: open is the default)."""

    def __init__(self, cache_enabled: bool = True, cache_limit: int = DEFAULT_CACHE_LIMIT,
                 budget: Optional[Budget] = None, open_objects: bool = True) -> None:
        if cache_limit < 1:
            raise ValueError("cache_limit must be >= 1")
        self.cache_enabled = cache_enabled
        self.cache_limit = int(cache_limit)
        self.budget = budget
        self.open_objects = open_objects
        self._cache: OrderedDict[str, CompiledConstraint] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def compile(self, doc: Any, check: bool = False) -> CompiledConstraint:
        """The compiled spec of `doc` (dict or JSON text); with `check`, also its feasibility.
        Raises SpecError on a malformed spec (errors are not cached)."""
        key = canonical_spec_text(doc)
        if self.cache_enabled:
            with self._lock:
                hit = self._cache.get(key)
                if hit is not None:
                    self._cache.move_to_end(key)
                    self.hits += 1
            if hit is not None:
                return hit.check() if check else hit
        spec = compile_spec(json.loads(key), self.budget, open_objects=self.open_objects)
        if self.cache_enabled:
            with self._lock:
                self.misses += 1
        cc = self._keep(key, spec)
        return cc.check() if check else cc

    def cached(self, doc: Any) -> Optional[CompiledConstraint]:
        """The compiled spec of `doc` if it is in the cache (compiles nothing)."""
        key = canonical_spec_text(doc)
        with self._lock:
            hit = self._cache.get(key) if self.cache_enabled else None
            if hit is not None:
                self._cache.move_to_end(key)
        return hit

    def adopt(self, doc: Any, spec: CompiledSpec) -> CompiledConstraint:
        """Take `spec`, compiled from `doc` elsewhere with this compiler's settings (e.g. by
        another process, then pickled), as the compiled spec of `doc`, as if compiled here."""
        return self._keep(canonical_spec_text(doc), spec)

    def _keep(self, key: str, spec: CompiledSpec) -> CompiledConstraint:
        cc = CompiledConstraint(key, spec, machine_of(spec))
        if self.cache_enabled:
            with self._lock:
                have = self._cache.get(key)
                if have is not None:  # another thread compiled it meanwhile: one object per key
                    cc = have
                    self._cache.move_to_end(key)
                else:
                    self._cache[key] = cc
                    while len(self._cache) > self.cache_limit:
                        self._cache.popitem(last=False)
        return cc

    def cache_size(self) -> int:
        with self._lock:
            return len(self._cache)

    def clear_cache(self) -> None:
        with self._lock:
            self._cache.clear()


_DEFAULT: Optional[SpecCompiler] = None
_DEFAULT_LOCK = threading.Lock()


def default_compiler() -> SpecCompiler:
    """The process-wide compiler (what the vLLM integration and `Matcher.for_spec` users share)."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = SpecCompiler()
        return _DEFAULT
