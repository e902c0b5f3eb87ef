"""Shared pieces of the worker tests: a small byte-level vocabulary and small specs."""
from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from factorspec.graph.token_vocab import unpack_mask
from benchmarks.natural_plan import generate, parse_instance, to_spec
from benchmarks.natural_plan.generate import instance_id
from factorspec.workers import BytesVocab

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

MERGES = [b'"', b'": ', b', ', b'{"', b'"}', b'day', b'city', b'": "', b'", "', b'}, {', b'[{', b'}]',
          b'_day', b'start', b'end', b'10', b'20', b'00', b'" ', b'an', b'er', b'in', b'on']
TOKENS = tuple([bytes([i]) for i in range(256)] + MERGES + [b""])
STOP = len(TOKENS) - 1
VOCAB_SIZE = 320  # padded past the tokens, like a model's logits
VOCAB = BytesVocab(TOKENS, (STOP,), VOCAB_SIZE, "bytes+merges")
QUOTE = 34


def plan_specs(count: int, seed: int = 0, sizes: tuple = (3, 4)) -> list[dict]:
    raws = {n: generate(n, seed, (count + len(sizes) - 1) // len(sizes)) for n in sizes}
    out = []
    for k in range(count):
        n = sizes[k % len(sizes)]
        j = k // len(sizes)
        out.append(to_spec(parse_instance(instance_id(n, seed, j), raws[n][j])))
    return out


def example_spec(name: str) -> dict:
    return json.loads((EXAMPLES / f"{name}.spec.json").read_text(encoding="utf-8"))


def certain_chain(draft: Any) -> list[int]:
    """The leading certain chain of a draft tree (what greedy masked decoding must emit)."""
    out = []
    for k, (t, p, c) in enumerate(zip(draft.tokens, draft.parents, draft.certain)):
        if p != k - 1 or not c:
            break
        out.append(t)
    return out


def pick(row: np.ndarray, rng: random.Random) -> int:
    """A random allowed token, steering toward the end (stop, then closing quotes)."""
    ids = [int(i) for i in unpack_mask(row, VOCAB_SIZE)]
    assert ids, "empty mask"
    if STOP in ids:
        return STOP
    if QUOTE in ids and rng.random() < 0.5:
        return QUOTE
    return rng.choice(ids)


def decode(tokens: list[int]) -> Any:
    return json.loads(b"".join(TOKENS[t] for t in tokens if t != STOP))


@dataclass(frozen=True)
class SlowSpecVocab:
    """Fault injection: VOCAB, in a worker where a request whose spec's title is "slow" sleeps
    `seconds` from its `after`-th step on (mid-step, inside the matcher's advance), and one whose
    title is "slow-compile" sleeps while its spec compiles. Everything else is untouched."""

    seconds: float = 60.0
    after: int = 1

    def __call__(self) -> Any:
        import time

        from factorspec.workers import worker

        slow: dict = {}  # id(matcher) -> steps seen
        add, advance = worker.Worker.add, worker.Worker._advance
        seconds, after = self.seconds, self.after

        def slow_add(w: Any, rid: Any, doc: Any, *a: Any, **k: Any) -> Any:
            title = doc.get("title") if isinstance(doc, dict) else None
            if title == "slow-compile":
                time.sleep(seconds)
            err = add(w, rid, doc, *a, **k)
            if title == "slow" and rid in w.matchers:
                slow[id(w.matchers[rid])] = 0
            return err

        def slow_advance(w: Any, m: Any, tokens: Any, rollback: int) -> None:
            if id(m) in slow:
                slow[id(m)] += 1
                if slow[id(m)] > after:
                    time.sleep(seconds)
            advance(w, m, tokens, rollback)

        worker.Worker.add = slow_add  # type: ignore[method-assign]
        worker.Worker._advance = slow_advance  # type: ignore[method-assign]
        return VOCAB()


@dataclass(frozen=True)
class ColdStartVocab:
    """Fault injection: VOCAB, built `seconds` late in every process started once `marker`
    exists (a replacement worker that takes long to start, like one loading a real tokenizer)."""

    marker: str
    seconds: float = 60.0

    def __call__(self) -> Any:
        import os
        import time

        if os.path.exists(self.marker):
            time.sleep(self.seconds)
        return VOCAB()


@dataclass(frozen=True)
class CrashingVocab:
    """A recipe whose process dies by a signal while building (a segfaulting tokenizer)."""

    def __call__(self) -> Any:
        import os
        import signal

        os.kill(os.getpid(), signal.SIGSEGV)


# waits for the spare to catch up: a correctness precondition, not a speed check. The spare runs
# at low OS priority (worker.SPARE_NICE) and on a busy host (a parallel test run, load 5 or more)
# it gets the CPU only in gaps, so the wait is generous; a spare that never catches up still fails
CATCH_UP_S = 180.0


def wait_caught_up(pool: Any, timeout: float = CATCH_UP_S, what: Any = None) -> None:
    """Until the mirror spare has built its vocabulary, compiled every shadow sent to it and
    followed its tokens (or until `what()`): a shadow not compiled yet when its worker dies is
    re-added elsewhere, which the tests that count promotions must not meet."""
    import time

    deadline = time.monotonic() + timeout
    while not (what or pool.mirror_caught_up)():
        assert time.monotonic() < deadline, f"the spare did not catch up within {timeout:g} s"
        time.sleep(0.005)  # (mirror_caught_up reads the pipes)


def all_fresh(pool: Any) -> bool:
    """Every serving worker is ready and reading its pipe (read what they sent first): new requests
    go to those (`MaskWorkerPool._choose`). Non-blocking."""
    pool._pump(0)
    return all(pool._fresh(s) for s in pool._slots)
