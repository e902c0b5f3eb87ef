"""What the pool and its workers exchange, and the errors a request can end with.

Messages are tuples (pickled once by the sender); a step's items are the `StepItem` dataclasses
themselves and a draft travels as the contract's `DraftTree`:

parent -> worker   ("attach", seq, shm_name, rows, words, slot, ctrl_offset, n_slots)
                   ("add", seq, rid, spec_doc, prompt_ids, replay_tokens, shadow, image, (n, checkpoint))
                   ("advance", seq, [(rid, tokens, rollback), ...])   the mirror's shadows follow
                   ("promote", seq, [rid, ...])           the mirror serves these; drops the rest
                   ("hold", seq, [(rid, spec_doc, image), ...])   a standby loads these specs when idle
                   ("release", seq)                       a standby that took a slot drops the specs it holds
                   ("remove", seq, rid)
                   ("step", seq, step_id, [StepItem, ...], two_phase)
                   ("close", seq)
worker -> parent   ("ready", pid, words, vocab_size, vocab_name)
                   ("fatal", message)                     the worker cannot serve; it exits
                   ("ack", seq)                           after attach/remove/advance/promote
                   ("added", seq, rid, error | None, compile_s[, cpu_s, (spec_cpu_s, resume_cpu_s,
                            replay_cpu_s, tokens replayed, spec was held)])
                   ("drafts", seq, step_id, [(rid, ok, payload), ...])   two-phase steps only
                   ("step", seq, step_id, [(rid, ok, payload), ...], (t_begin, t_end, cpu_s))
                   ("idle", seq)                          a spare has done all it was sent
                   ("image", seq, rid, bytes, cpu_s)      the request's compiled spec (checkpoint.dump_spec)
                   ("ckpt", seq, [(rid, step_id, n, bytes), ...], cpu_s)   matcher checkpoints
                   ("held", seq, [rid loaded, ...], [rid tried, ...], cpu_s)   a standby's loaded specs
payloads: drafts (DraftTree | None, terminated, seconds); tree-step rows (valid, seconds);
one-phase step (DraftTree, terminated, seconds); a failure: the error triple.

A two-phase step (any item with `tree`) answers twice: "drafts" as soon as every request's
tokens are applied and its draft is made (the engine needs the drafts to build its forward), then
"step" once the bitmask rows of every draft node are written (the engine needs those only after
the forward, so the workers fill them while the forward runs).

The shared block holds, after the rows (at ctrl_offset), one int64 cancel word per slot (the
last step id the parent gave up on there) and then one int64 progress word per slot: the worker
writes seq << PROGRESS_SHIFT | k before computing item k of message seq (item 0 of an "add"),
0 between messages, so a parent whose step ran out of budget knows which request was the slow
one.

A re-add (a request moved after its worker died) carries the spec's image, loaded instead of
compiled, and the request's latest checkpoint with the number n of its tokens it covers: the
worker resumes there and accepts only the tokens after n (workers/checkpoint.py). Workers send
images and checkpoints when their pipe is empty (or, for checkpoints, after the next step).

Every reply carries the sequence number of the last message the worker has read, so the parent
knows how many bytes are still unread in the pipe. An error travels as
(kind, cause, pointer) and is rebuilt into a `RequestFailed` subclass in the parent.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from factorspec.constraint import DraftTree
from factorspec.errors import FactorSpecError

PROGRESS_SHIFT = 20  # a progress word is seq << PROGRESS_SHIFT | item index (one aligned int64 store)


class RequestFailed(FactorSpecError):
    """A request can make no further progress; `cause` says why (as the worker saw it).

    `kind` names the underlying error (e.g. "SpecError", "TokenRejected", "ValueError"),
    `pointer` is the JSON Pointer of a spec error ("" otherwise)."""

    def __init__(self, rid: Any, cause: str, kind: str = "", pointer: str = "") -> None:
        self.rid, self.cause, self.kind, self.pointer = rid, cause, kind or type(self).__name__, pointer
        super().__init__(f"request {rid!r} failed: {cause}")


class WorkerCrashed(RequestFailed):
    """The worker process that held the request died (killed, or exited)."""


class StepTimeout(RequestFailed):
    """A step's results did not arrive within its budget."""


ERROR_TYPES: dict[str, type] = {"RequestFailed": RequestFailed, "WorkerCrashed": WorkerCrashed,
                                "StepTimeout": StepTimeout}


def encode_error(exc: BaseException) -> tuple[str, str, str]:
    """(kind, cause, pointer) of an exception raised in a worker."""
    kind = type(exc).__name__
    pointer = getattr(exc, "pointer", "") or ""
    text = str(exc) or repr(exc)
    return kind, f"{kind}: {text}", pointer if isinstance(pointer, str) else ""


def decode_error(rid: Any, err: tuple[str, str, str]) -> RequestFailed:
    kind, cause, pointer = err
    cls = ERROR_TYPES.get(kind, RequestFailed)
    return cls(rid, cause, kind, pointer)


@dataclass
class StepItem:
    """One request's part of a step.

    `tokens` are the tokens accepted since the last step (the request's first step: since the
    prompt), applied after undoing `rollback` tokens. The worker then writes the bitmask row of
    the next position into row `row` of the shared block and drafts up to `draft_width` tokens.

    With `tree`, the worker also writes the row of every draft node k into row `row + k + 1`
    (the rows an engine applies when it verifies the draft; see `constraint.fill_tree_bitmask`)
    and reports per row whether the path is accepted (`StepResult.valid`). `chain` keeps only the
    draft's first-child chain. `width_policy` (a picklable policy with `worker_width(constraint,
    cap)`, e.g. `draft.CertainWidth`) lets the worker choose the width itself, capped at
    `draft_width`, since only it holds the request's matcher. `given` (with `tree`): verify these tokens as a chain instead of
    drafting (an engine whose drafts come from elsewhere, e.g. vLLM's proposer, still gets the
    rows of every draft position from one step)."""

    rid: Any
    tokens: tuple = ()
    row: int = 0
    draft_width: int = 0
    rollback: int = 0
    tree: bool = False
    chain: bool = False
    width_policy: Any = None
    given: tuple = ()

    @classmethod
    def of(cls, x: Any) -> "StepItem":
        """A normalised item (plain ints and tuples, as sent to a worker) from a `StepItem`, a
        dict of its fields or a tuple in field order."""
        it = x if isinstance(x, StepItem) else cls(**x) if isinstance(x, dict) else cls(*x)
        return cls(it.rid, tuple(int(t) for t in it.tokens), int(it.row), int(it.draft_width), int(it.rollback),
                   bool(it.tree), bool(it.chain), it.width_policy, tuple(int(t) for t in it.given))


@dataclass
class StepResult:
    """What one step produced for one request.

    On success the bitmask row is already in `pool.bitmask[row]` (a terminated request's row
    allows exactly the stop tokens) and `draft` holds the draft tree (empty when the width was 0
    or the request is terminated). On failure `error` is set, `draft` is None and the row is all
    zero (no token allowed): drop the request."""

    rid: Any
    row: int
    ok: bool
    draft: Optional[DraftTree] = None
    terminated: bool = False
    error: Optional[RequestFailed] = None
    compute_s: float = 0.0  # worker time spent on this request in this step
    valid: Optional[list] = None  # tree steps: per row (root first) whether its path is accepted

    def raise_for_error(self) -> "StepResult":
        if self.error is not None:
            raise self.error
        return self
