"""What the pool keeps of each request so that a worker's death costs little: the request's
compiled spec as bytes (`dump_spec`, made once by the worker that compiled it) and, every few
steps, a checkpoint of its matcher's state (`dump_state`). A request re-added after its worker
died then loads its spec instead of compiling it and resumes at its last checkpoint instead of
replaying every token it had accepted (`load_spec`, `load_state`, `Matcher.resume`).

Exactness: a checkpoint is the matcher's configurations, forced-token plan and termination,
written by value (stacks of tuples, ints, strings and bytes, and solver states as their domains
and witness), with the spec's solver problem and budget written as references to the spec's
own, so that the resumed matcher holds equal values over an equal spec. Anything else in a
state (an object this module does not know) makes `dump_state` return None: the request is then
replayed from its tokens, as before. The answers the solver found from the matcher's current
states (their memo: the narrowings a draft looked ahead through) travel with the checkpoint, so a
resumed request does not search for them again; other caches (deeper memos, the problem's
nogoods, a spec image's memos) are left out: they hold answers only, found again on demand.
"""
from __future__ import annotations

import contextlib
import gc
import io
import pickle
from collections.abc import Iterator
from fractions import Fraction
from typing import Any, Optional

from factorspec.graph.compiler import CompiledConstraint, SpecCompiler
from factorspec.graph.matcher import Matcher
from factorspec.graph.solver import State
from factorspec.graph.spec import CompiledSpec


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic garbage collection inside: for work that allocates many objects and must not
    stop for a full collection, which scans every compiled spec a worker holds (a spec image's
    dump or load; a worker's step: 30-60 ms on a serving worker of 64 trip requests, 100-140 ms on
    a standby holding every live spec, measured in pool_faults, longer than the step itself). The
    collections due run after it (reference counting still frees everything else at once). The
    collector's state is restored, also after an exception."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class _Unsupported(Exception):
    pass


def _state(D: list, witness: list, memo: Any = None) -> State:  # pragma: no cover - replaced on load
    raise RuntimeError("a matcher checkpoint is loaded by load_state")


class _StatePickler(pickle.Pickler):
    """Builtin values are written by the C pickler without a callback (`reducer_override` is not
    asked about exact ints, strings, bytes, tuples, lists, sets and frozensets); a solver state is
    written as its domains and witness; a Fraction as itself; anything else is refused."""

    def __init__(self, f: Any, spec: CompiledSpec, top: tuple = ()) -> None:
        super().__init__(f, protocol=pickle.HIGHEST_PROTOCOL)
        self.problem, self.budget = spec.problem, spec.budget
        self.top = top

    def reducer_override(self, obj: Any) -> Any:
        if type(obj) is State:
            if obj.problem is not self.problem or obj.budget is not self.budget:
                raise _Unsupported("a solver state of another problem")
            if any(obj is t for t in self.top):  # with the answers found from it (their states without theirs)
                return _state, (obj.D, obj.witness, obj._memo)
            return _state, (obj.D, obj.witness)
        if type(obj) is Fraction or obj is Fraction or obj is _state:
            return NotImplemented
        raise _Unsupported(type(obj).__name__)


class _StateUnpickler(pickle.Unpickler):
    def __init__(self, f: Any, spec: CompiledSpec) -> None:
        super().__init__(f)
        problem, budget = spec.problem, spec.budget

        def make(D: list, witness: list, memo: Any = None) -> State:
            s = State(problem, D, witness, budget)
            if memo:
                s._memo = dict(memo)
            return s
        self._make = make

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == (__name__, "_state"):
            return self._make
        if (module, name) == ("fractions", "Fraction"):
            return Fraction
        raise pickle.UnpicklingError(f"{module}.{name} in a matcher checkpoint")


def dump_spec(cc: CompiledConstraint) -> Optional[bytes]:
    """The compiled spec as bytes (its root state included: no solve when loaded), or None when
    it does not pickle (then a re-add compiles it again)."""
    spec = cc.spec
    try:
        spec.root()
    except Exception:  # noqa: BLE001 - an unsatisfiable spec has no matchers to resume
        return None
    with paused_gc():  # a dump of many small objects would otherwise trigger collections
        try:
            return pickle.dumps(spec, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001 - an optimisation only
            return None


def load_spec(compiler: SpecCompiler, doc: Any, blob: bytes) -> CompiledConstraint:
    """The compiled spec of `doc` from `blob` (what `dump_spec` wrote for it), kept in
    `compiler`'s cache as if compiled there; the cached one if the compiler has it."""
    hit = compiler.cached(doc)
    if hit is not None:
        return hit
    with paused_gc():
        spec = pickle.loads(blob)
    if not isinstance(spec, CompiledSpec):
        raise TypeError(f"a spec image holds a {type(spec).__name__}, not a compiled spec")
    return compiler.adopt(doc, spec)


def dump_state(cc: CompiledConstraint, state: tuple) -> Optional[bytes]:
    """A matcher's `checkpoint()` of spec `cc` as bytes (a few hundred for a natural-plan
    record), or None when it holds something this module does not write by value."""
    f = io.BytesIO()
    try:
        _StatePickler(f, cc.spec, tuple(c[1] for c in state[0])).dump(state)
    except (_Unsupported, pickle.PicklingError, TypeError, AttributeError, RecursionError):
        return None
    return f.getvalue()


def load_state(cc: CompiledConstraint, blob: bytes, vocab: Any, tokens: Any) -> Matcher:
    """A matcher of `cc` at the checkpoint `blob` (of a matcher of an equal spec), after `tokens`."""
    state = _StateUnpickler(io.BytesIO(blob), cc.spec).load()
    return Matcher.resume(cc.machine, vocab, state, tokens)


def states_of(m: Matcher) -> tuple:
    """The solver states `m` is at and how many answers they hold (a checkpoint is worth taking
    when these change: replaying a value's tokens costs the solver's narrowing, and a checkpoint
    carries the answers found from its states; replaying text between values costs little)."""
    sols = tuple(c[1] for c in m.configs)
    return sols, sum(s.answers() for s in sols if s is not None)
