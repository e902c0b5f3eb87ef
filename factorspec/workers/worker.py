"""The worker process: holds the matchers of its requests, steps them, writes bitmask rows into
the shared block and sends drafts back. Imports numpy and the core only (no torch)."""
from __future__ import annotations

import collections
import os
import pickle
import signal
import time
from collections.abc import Callable
from typing import Any, Optional

import numpy as np

from factorspec.constraint import DraftTree, fill_tree_bitmask, truncate_draft
from factorspec.graph.backends import cpsat, own_only
from factorspec.graph.compiler import SpecCompiler
from factorspec.graph.matcher import Matcher
from factorspec.workers.checkpoint import dump_spec, dump_state, load_spec, load_state, paused_gc, states_of
from factorspec.workers.protocol import PROGRESS_SHIFT, StepItem, encode_error

CHECKPOINT_TOKENS = 32  # a request's state is checkpointed when its solver states change, or after this many tokens
URGENT_S = 0.005  # a request whose step took this long (a search) has its checkpoint sent right after the step


class TokenRejected(Exception):
    pass


def _attach(name: str) -> Any:
    """Attach to the pool's block without registering it with a resource tracker (the parent
    owns and unlinks it; a tracker in a worker could unlink it when that worker exits)."""
    from multiprocessing import resource_tracker, shared_memory

    register = resource_tracker.register
    resource_tracker.register = lambda *a, **k: None
    try:
        return shared_memory.SharedMemory(name=name)
    finally:
        resource_tracker.register = register


class Worker:
    def __init__(self, vocab: Any) -> None:
        self.vocab = vocab
        self.compiler = SpecCompiler()  # requests of one spec share its compiled machine
        self.matchers: dict[Any, Matcher] = {}
        self.failed: dict[Any, tuple] = {}
        # the mirror (a spare): a shadow matcher per live request, following its tokens, so that it
        # can take a dead worker's requests at once; and why a shadow ended, if one did
        self.shadows: dict[Any, Matcher] = {}
        self.shadow_failed: dict[Any, tuple] = {}
        # a mirror's work is deferred to when its pipe is empty (`idle_work`), so that it never
        # delays a message: shadows to compile (rid -> (doc, prompt, seq of its add)), moves each
        # shadow has still to follow (rid -> [(tokens, rollback), ...]) and the order to do them in
        self.shadow_new: dict[Any, tuple] = {}
        self.shadow_todo: dict[Any, list] = {}
        self.shadow_queue: collections.deque = collections.deque()
        self.shadow_queued: set = set()
        self.behind: dict[Any, list] = {}  # promoted shadows: the moves they have still to follow
        # what makes a re-add cheap (checkpoint.py): the compiled spec of every request held here
        # (matchers and shadows), its spec image still to send to the parent, the checkpoints
        # still to send (rid -> (step id, tokens, state), the latest taken at the end of a step,
        # written and sent when the pipe is empty) and, per request, the solver states and token count of the
        # last checkpoint taken
        self.origin: dict[Any, Any] = {}
        self.images: dict[str, bytes] = {}
        self.images_due: collections.deque = collections.deque()
        self.ckpt_due: dict[Any, tuple] = {}  # rid -> its latest checkpoint not yet sent
        self.ckpt_mark: dict[Any, tuple] = {}
        # a standby spare (the mirror off): the compiled spec of every live request, loaded from
        # its image when idle, so that taking a dead worker's place it only resumes checkpoints
        # (rid -> compiled spec; rid -> (doc, image, seq of its hold) still to load)
        self.held: dict[Any, Any] = {}
        self.hold_due: dict[Any, tuple] = {}
        # a held spec whose questions may go to CP-SAT: import ortools when idle (`warm_solver`),
        # or the first re-add's first question onto it pays the import (0.7 s of CPU) in a step
        self.warm_due = False
        self.solver_warmed = False
        # CPU seconds of the last add: getting the spec, resuming, accepting the tokens after the
        # checkpoint; how many those were; whether the spec was held here
        self.add_parts: tuple = (0.0, 0.0, 0.0, 0, False)
        self.step_id = 0
        self.shm: Any = None
        self.bitmask: Optional[np.ndarray] = None
        self.cancelled: Optional[np.ndarray] = None
        self.progress: Optional[np.ndarray] = None
        self.slot = 0
        self.seq = 0  # the message being served

    def attach(self, name: str, rows: int, words: int, slot: int, ctrl_offset: int, n_slots: int) -> None:
        if words < self.vocab.words:
            raise ValueError(f"the shared block has {words} words a row; the vocabulary needs {self.vocab.words}")
        self.shm = _attach(name)
        self.bitmask = np.ndarray((rows, words), dtype=np.int32, buffer=self.shm.buf)
        self.cancelled = np.ndarray((n_slots,), dtype=np.int64, buffer=self.shm.buf, offset=ctrl_offset)
        self.progress = np.ndarray((n_slots,), dtype=np.int64, buffer=self.shm.buf, offset=ctrl_offset + 8 * n_slots)
        self.slot = slot

    def mark(self, k: int) -> None:
        """Say in the shared block that item `k` of the current message is being computed (the
        parent reads it when a step runs out of budget, to fail that request alone)."""
        if self.progress is not None:
            self.progress[self.slot] = (self.seq << PROGRESS_SHIFT) | k if k >= 0 else 0

    def step(self, step_id: int, items: list[StepItem]) -> list:
        out = []
        for k, item in enumerate(items):
            if self._cancelled_step(step_id):
                out += self._cancel_rest([it.rid for it in items[k:]])
                break
            self.mark(k)
            out.append(self.step_one(item))
        return out

    def _cancel_rest(self, rids: list) -> list:
        """The parent gave up on this step: its rows may already belong to other requests, so the
        rest of the step's requests fail without writing any."""
        err = ("StepTimeout", "the step was cancelled after its budget ran out", "")
        out = []
        for rid in rids:
            self.matchers.pop(rid, None)
            self.failed[rid] = err
            out.append((rid, False, err))
        return out

    def add(self, rid: Any, doc: Any, prompt: Any = None, replay: Any = (), shadow: bool = False,
            image: Optional[bytes] = None, ckpt: Optional[tuple] = None) -> Optional[tuple]:
        """Compile `doc` for `rid`; `replay`: the tokens it had accepted on a worker that died
        (the pool moves it here and its next step continues where it was). With `shadow`, as a
        mirror of a request served elsewhere (see `advance`, `promote`). `image`: the spec as
        compiled elsewhere (`checkpoint.dump_spec`), loaded instead of compiled; `ckpt`: (n, bytes),
        its matcher's state after the first n tokens of `replay`, resumed instead of replaying them."""
        if shadow:
            self.shadow_failed.pop(rid, None)
            self.shadows.pop(rid, None)
            replay = tuple(replay)
            resume = (ckpt[0], ckpt[1], replay[:ckpt[0]]) if ckpt is not None and 0 < ckpt[0] <= len(replay) else None
            self.shadow_todo[rid] = [(replay[resume[0]:] if resume else replay, 0)]
            self.shadow_new[rid] = (doc, prompt, self.seq, image, resume)
            self._schedule(rid)
            return None
        self.failed.pop(rid, None)
        self.behind.pop(rid, None)
        self.ckpt_mark.pop(rid, None)
        try:
            held = self.held.pop(rid, None) if image is None else None
            cc, m, rest = self._build(doc, image, ckpt, tuple(replay), held)
            if prompt:
                m.set_prompt(prompt)
            c0 = time.thread_time()
            if rest:
                self._advance(m, rest, 0)
            self.add_parts = self.add_parts[:2] + (time.thread_time() - c0, len(rest), held is not None)
        except Exception as e:  # noqa: BLE001 - every failure is reported for this request
            self.failed[rid] = encode_error(e)
            self.matchers.pop(rid, None)
            self.origin.pop(rid, None)
            return self.failed[rid]
        self.matchers[rid] = m
        self.origin[rid] = cc
        if ckpt is not None and len(rest) < len(replay):
            self.ckpt_mark[rid] = (((), -1), ckpt[0])  # the parent holds that one
        if image is None and held is None:
            self.images_due.append(rid)
        return None

    def _build(self, doc: Any, image: Optional[bytes], ckpt: Optional[tuple], replay: tuple,
               held: Any = None) -> tuple:
        """(compiled spec, matcher, tokens still to accept): from the spec held here (`hold`), the
        image and the checkpoint where they are given and load, else compiled here and at the
        start. A checkpoint holds values only, so it resumes on a spec compiled here as well as on
        the image. Sets `add_parts`' first two: CPU seconds getting the spec, and resuming."""
        c0 = time.thread_time()
        cc = held
        if cc is None and image is not None:
            try:
                cc = load_spec(self.compiler, doc, image)
            except Exception:  # noqa: BLE001 - an optimisation only: compile it instead
                cc = None
        if cc is None:
            cc = self.compiler.compile(doc)
        c1 = time.thread_time()
        if ckpt is not None and 0 < ckpt[0] <= len(replay):
            try:
                m = load_state(cc, ckpt[1], self.vocab, replay[:ckpt[0]])
                self.add_parts = (c1 - c0, time.thread_time() - c1)
                return cc, m, replay[ckpt[0]:]
            except Exception:  # noqa: BLE001 - replayed from the start instead
                pass
        m = cc.matcher(self.vocab)
        self.add_parts = (c1 - c0, time.thread_time() - c1)
        return cc, m, replay

    def _matcher(self, rid: Any) -> Optional[Matcher]:
        """The matcher of `rid`, brought up to date first if it is a promoted shadow still behind."""
        moves = self.behind.pop(rid, None)
        m = self.matchers.get(rid)
        if moves and m is not None:
            for tokens, rollback in moves:
                self._advance(m, tokens, rollback)
        return m

    def remove(self, rid: Any) -> None:
        self.held.pop(rid, None)
        self.hold_due.pop(rid, None)
        self.ckpt_due.pop(rid, None)
        self.behind.pop(rid, None)
        self.origin.pop(rid, None)
        self.ckpt_mark.pop(rid, None)
        self.matchers.pop(rid, None)
        self.failed.pop(rid, None)
        self.shadows.pop(rid, None)
        self.shadow_failed.pop(rid, None)
        self.shadow_new.pop(rid, None)
        self.shadow_todo.pop(rid, None)

    def advance(self, moves: list) -> None:
        """Shadows follow their requests: (rid, tokens, rollback) as sent to the serving worker.
        Only noted here; `idle_work` applies them (or `promote`, for the shadows it serves)."""
        for rid, tokens, rollback in moves:
            todo = self.shadow_todo.get(rid)
            if todo is None:
                if rid not in self.shadows:
                    continue  # removed, or its shadow failed
                todo = self.shadow_todo[rid] = []
            todo.append((tuple(tokens), int(rollback)))
            self._schedule(rid)

    def _schedule(self, rid: Any) -> None:
        if rid not in self.shadow_queued:
            self.shadow_queued.add(rid)
            self.shadow_queue.append(rid)

    def idle_work(self, poll: Callable[[], bool] = lambda: False) -> Optional[tuple]:
        """One unit of deferred work: mirror work first (compile one shadow, or bring one up to
        date; the reply of a shadow just compiled: ("added", seq of its add, rid, error, seconds)),
        then the checkpoints taken (`checkpoints`), the held specs to load, the solver's import
        (`warm_solver`), then one spec image (`image`)."""
        if not self.shadow_queue:
            if self.ckpt_due:
                return self.checkpoints(poll)
            if self.hold_due:
                return self.load_held(poll)
            if self.warm_due:
                self.warm_solver()
                return None
            return self.image()
        while self.shadow_queue:
            rid = self.shadow_queue.popleft()
            self.shadow_queued.discard(rid)
            new = self.shadow_new.get(rid)
            if new is not None or self.shadow_todo.get(rid):
                t0 = time.perf_counter()
                err = self._catch_up(rid)
                return None if new is None else ("added", new[2], rid, err, time.perf_counter() - t0)
        return None

    def has_idle_work(self) -> bool:
        return bool(self.shadow_queue or self.ckpt_due or self.images_due or self.hold_due or self.warm_due)

    def warm_solver(self) -> None:
        """Import ortools (`cpsat.available`) ahead of the first question that needs it."""
        self.warm_due = False
        self.solver_warmed = True
        cpsat.available()

    def hold(self, entries: list) -> None:
        """A standby spare: keep the compiled spec of these requests ((rid, doc, image) each),
        loaded from their images when idle (`load_held`), so that if it takes a dead worker's
        place their re-adds only resume checkpoints (`add` finds the spec in `held`)."""
        for rid, doc, image in entries:
            if rid not in self.held:
                self.hold_due[rid] = (doc, image, self.seq)

    def load_held(self, poll: Callable[[], bool]) -> Optional[tuple]:
        """Load held specs until `poll` says a message waits (8 at most a call); the reply
        ("held", seq of the last hold read, [rid loaded, ...], [rid tried, ...], cpu seconds)."""
        c0 = time.thread_time()
        done: list = []
        tried: list = []
        while self.hold_due and len(tried) < 8:
            rid = next(iter(self.hold_due))
            doc, image, _seq = self.hold_due.pop(rid)
            tried.append(rid)
            try:
                cc = self.held[rid] = load_spec(self.compiler, doc, image)
            except Exception:  # noqa: BLE001 - an optimisation only: a re-add then loads or compiles
                pass
            else:
                done.append(rid)
                if not self.solver_warmed and not own_only(cc.spec.problem, cc.spec.budget.backend):
                    self.warm_due = True
            if poll():
                break
        return ("held", self.seq, done, tried, time.thread_time() - c0)

    def release(self) -> None:
        """A standby that took a slot holds no specs beyond those of its requests."""
        self.held.clear()
        self.hold_due.clear()

    def checkpoints(self, poll: Callable[[], bool], before: Optional[int] = None) -> Optional[tuple]:
        """Write the checkpoints taken (until `poll` says a message waits; with `before`, only
        those taken in steps before that one, all of them); the reply ("ckpt", seq,
        [(rid, step id, n, bytes), ...], cpu seconds)."""
        c0 = time.thread_time()
        out = []
        k = 0
        while self.ckpt_due:
            rid = next(iter(self.ckpt_due))
            if before is not None and self.ckpt_due[rid][0] >= before:
                urgent = [r for r, e in self.ckpt_due.items() if e[3]]
                if not urgent:
                    break  # (in the order taken: the rest are newer)
                rid = urgent[0]
            step_id, n, state, _urgent = self.ckpt_due.pop(rid)
            cc = self.origin.get(rid)
            blob = dump_state(cc, state) if cc is not None else None
            if blob is not None:
                out.append((rid, step_id, n, blob))
            k += 1
            if before is None and k % 8 == 0 and poll():
                break
        return ("ckpt", self.seq, out, time.thread_time() - c0) if out else None

    def image(self) -> Optional[tuple]:
        """The spec image of the next request added here whose spec the parent has not got:
        ("image", seq, rid, bytes, cpu seconds); one a call."""
        while self.images_due:
            rid = self.images_due.popleft()
            cc = self.origin.get(rid)
            if cc is None:
                continue
            c0 = time.thread_time()
            blob = self.images.get(cc.key)
            if blob is None:
                blob = dump_spec(cc)
                if blob is None:
                    continue
                self.images[cc.key] = blob
                while len(self.images) > self.compiler.cache_limit:
                    self.images.pop(next(iter(self.images)))
            return ("image", self.seq, rid, blob, time.thread_time() - c0)
        return None

    def _catch_up(self, rid: Any) -> Optional[tuple]:
        """Compile `rid`'s shadow if it is new and apply the moves it has still to follow; the
        error that ended it, if one did (the serving worker fails it the same way)."""
        new = self.shadow_new.pop(rid, None)
        moves = self.shadow_todo.pop(rid, [])
        try:
            if new is not None:
                doc, prompt, _seq, image, ck = new
                if ck is not None:
                    cc, m, rest = self._build(doc, image, ck[:2], ck[2])
                    if rest:
                        moves = [(rest, 0)] + moves
                else:
                    cc, m, _ = self._build(doc, image, None, ())
                if prompt:
                    m.set_prompt(prompt)
                self.shadows[rid] = m
                self.origin[rid] = cc
            m = self.shadows[rid]
            for tokens, rollback in moves:
                self._advance(m, tokens, rollback)
        except Exception as e:  # noqa: BLE001
            self.shadows.pop(rid, None)
            self.origin.pop(rid, None)
            self.shadow_failed[rid] = encode_error(e)
            return self.shadow_failed[rid]
        return None

    def promote(self, rids: list) -> None:
        """This mirror now serves `rids` (its shadows, brought up to date, become their
        matchers); the other shadows are dropped (a serving worker mirrors nothing)."""
        for rid in rids:
            if rid in self.shadow_new:  # (rare: the pool promotes only shadows said compiled)
                self._catch_up(rid)
            m = self.shadows.pop(rid, None)
            if m is not None:
                self.matchers[rid] = m
                self.failed.pop(rid, None)
                if self.shadow_todo.get(rid):  # followed at its next step (`_matcher`), as part of it
                    self.behind[rid] = self.shadow_todo.pop(rid)
            else:
                self.failed[rid] = self.shadow_failed.get(rid) or (
                    "RequestFailed", "its mirror was not on the worker that took over", "")
        for rid in self.shadows:
            self.origin.pop(rid, None)
        self.shadows.clear()
        self.shadow_failed.clear()
        self.shadow_new.clear()
        self.shadow_todo.clear()
        self.shadow_queue.clear()
        self.shadow_queued.clear()

    def _cancelled_step(self, step_id: int) -> bool:
        return self.cancelled is not None and self.cancelled[self.slot] >= step_id

    def _fail(self, rid: Any, e: BaseException, row: int) -> tuple:
        self.matchers.pop(rid, None)
        self.failed[rid] = encode_error(e)
        self._zero(row)
        return rid, False, self.failed[rid]

    def _advance(self, m: Matcher, tokens: Any, rollback: int) -> None:
        if rollback:
            m.rollback(rollback)
        for k, t in enumerate(tokens):
            if not m.accept_token(int(t)):
                b = m.vocab.token_bytes[t] if 0 <= t < len(m.vocab.token_bytes) else None
                raise TokenRejected(f"token {t} ({b!r}) at position {k} of this step is not allowed "
                                    f"after {m.num_accepted()} accepted tokens (text {bytes(m.text[-40:])!r})")

    def tree_drafts(self, items: list[StepItem]) -> tuple[list, list]:
        """Phase 1 of a two-phase step: apply each request's tokens and make its draft. Returns
        the reply entries and what phase 2 needs: (rid, row, draft or None, tree, t_spent, k)."""
        out, todo = [], []
        for k, it in enumerate(items):
            rid, row, width = it.rid, it.row, it.draft_width
            self.mark(k)
            t0 = time.perf_counter()
            try:
                m = self._matcher(rid)
            except Exception as e:  # noqa: BLE001 - its serving worker would have failed it the same way
                out.append(self._fail(rid, e, row))
                continue
            if m is None:
                out.append(self._unknown(rid, row))
                continue
            try:
                m = self._rewound(rid, m, it.rollback)
                self._advance(m, it.tokens, it.rollback)
                if it.rollback:
                    self.ckpt_mark.pop(rid, None)
                term = m.is_terminated()
                if it.width_policy is not None and width > 0 and not term:
                    width = it.width_policy.worker_width(m, width)
                d: Optional[DraftTree]
                if it.given and it.tree:
                    g = list(it.given)
                    d = DraftTree(g, list(range(-1, len(g) - 1)), [False] * len(g))
                else:
                    d = m.draft(width) if width > 0 and not term else None
                    if d is not None:
                        d = truncate_draft(d, width, it.chain)
                if self.bitmask is not None and it.tree and d is not None and row + len(d) >= self.bitmask.shape[0]:
                    raise ValueError(f"a draft of {len(d)} nodes at row {row} does not fit the shared block's "
                                     f"{self.bitmask.shape[0]} rows")
            except Exception as e:  # noqa: BLE001 - a failing matcher fails only its request
                out.append(self._fail(rid, e, row))
                continue
            dt = time.perf_counter() - t0
            out.append((rid, True, (d, term, dt)))
            todo.append((rid, row, d, it.tree, dt, k))
        return out, todo

    def tree_rows(self, step_id: int, todo: list) -> list:
        """Phase 2: the bitmask rows of the root and (tree items) of every draft node."""
        out = []
        for j, (rid, row, d, tree, dt, k) in enumerate(todo):
            if self._cancelled_step(step_id):
                out += self._cancel_rest([t[0] for t in todo[j:]])
                break
            self.mark(k)
            t0 = time.perf_counter()
            m = self.matchers.get(rid)
            try:
                bm = self.bitmask
                if m is None or bm is None:
                    raise RuntimeError("the request's matcher or the shared block is gone")
                if tree and d is not None:
                    valid = fill_tree_bitmask(m, d, bm, row)
                else:
                    m.fill_next_token_bitmask(bm, row)
                    valid = [True]
            except Exception as e:  # noqa: BLE001
                out.append(self._fail(rid, e, row))
                continue
            dt += time.perf_counter() - t0
            if not m.is_terminated():
                self._note(rid, m, 0, dt)
            out.append((rid, True, (valid, dt)))
        return out

    def step_one(self, it: StepItem) -> tuple:
        """A one-phase step of one request: its root row, then its draft."""
        rid, row, width = it.rid, it.row, it.draft_width
        t0 = time.perf_counter()
        try:
            m = self._matcher(rid)
        except Exception as e:  # noqa: BLE001 - its serving worker would have failed it the same way
            return self._fail(rid, e, row)
        if m is None:
            return self._unknown(rid, row)
        try:
            m = self._rewound(rid, m, it.rollback)
            self._advance(m, it.tokens, it.rollback)
            if self.bitmask is None:
                raise RuntimeError("worker has no shared bitmask block")
            m.fill_next_token_bitmask(self.bitmask, row)  # zeroes the row past the vocabulary
            term = m.is_terminated()
            draft = m.draft(width) if width > 0 and not term else DraftTree()
        except Exception as e:  # noqa: BLE001 - a failing matcher fails only its request
            return self._fail(rid, e, row)
        dt = time.perf_counter() - t0
        if not term:
            self._note(rid, m, it.rollback, dt)
        return rid, True, (draft, term, dt)

    def _rewound(self, rid: Any, m: Matcher, rollback: int) -> Matcher:
        """`m`, or, when it was resumed from a checkpoint and `rollback` goes back past that point,
        the same request replayed from the start (its accepted tokens are in the matcher), which
        can roll back that far."""
        cc = self.origin.get(rid)
        if rollback <= m.rollback_room() or cc is None:
            return m
        m2 = cc.matcher(self.vocab)
        m2.set_prompt(m.prompt)
        self._advance(m2, m.tokens, 0)
        self.matchers[rid] = m2
        return m2

    def _note(self, rid: Any, m: Matcher, it_rollback: int, spent: float = 0.0) -> None:
        """Take a checkpoint of `rid` at the end of this step when its solver states changed
        since the last one (or many tokens went by): only the state's immutable values are held
        here; they are written and sent when the pipe is empty (`idle_work`), else after the next
        step (one step late), or right after this one when it took `URGENT_S` or more (a search
        whose answers the checkpoint carries). Replaying a value's tokens costs the solver's
        narrowing; text between values replays cheaply."""
        if rid not in self.origin:
            return
        n = len(m.tokens)
        states = states_of(m)
        mark = None if it_rollback else self.ckpt_mark.get(rid)
        if mark is not None:
            (old, answers), at = mark
            if (n - at < CHECKPOINT_TOKENS and answers == states[1] and len(old) == len(states[0])
                           and all(a is b for a, b in zip(old, states[0]))):
                return
        self.ckpt_mark[rid] = (states, n)
        self.ckpt_due.pop(rid, None)  # (insertion order: the oldest is sent first)
        self.ckpt_due[rid] = (self.step_id, n, m.checkpoint(), spent >= URGENT_S)

    def _unknown(self, rid: Any, row: int) -> tuple:
        """A request this worker does not hold: the error that ended it, or "unknown"."""
        err = self.failed.get(rid) or ("RequestFailed", "unknown request (never added, or removed)", "")
        self._zero(row)
        return rid, False, err

    def _zero(self, row: int) -> None:
        if self.bitmask is not None and 0 <= row < self.bitmask.shape[0]:
            self.bitmask[row, :] = 0

    def close(self) -> None:
        self.bitmask = self.cancelled = None
        if self.shm is not None:
            try:
                self.shm.close()
            except BufferError:
                pass


SPARE_NICE = 19  # a spare's priority (nice value) until it takes a slot, where it may return to its own


def _can_renice(base: int) -> bool:
    """Whether this process may return to nice value `base` after lowering its priority (root,
    or an RLIMIT_NICE that allows it; otherwise a spare keeps the priority it started with)."""
    try:
        import resource

        if os.geteuid() == 0:
            return True
        soft = resource.getrlimit(resource.RLIMIT_NICE)[0]
        return soft == resource.RLIM_INFINITY or 20 - soft <= base
    except (ImportError, AttributeError, OSError, ValueError):
        return False


class _Priority:
    """A spare (and the mirror's work on it) runs at low OS priority, so that a replacement's
    start and a mirror's rebuild take only what the serving workers leave; it returns to the
    pool's priority when it takes a slot (attach)."""

    def __init__(self, spare: bool) -> None:
        self.base: Optional[int] = None
        if spare and hasattr(os, "getpriority"):
            base = os.getpriority(os.PRIO_PROCESS, 0)
            if base < SPARE_NICE and _can_renice(base):
                try:
                    os.setpriority(os.PRIO_PROCESS, 0, SPARE_NICE)
                    self.base = base
                except OSError:
                    pass

    def restore(self) -> None:
        if self.base is not None:
            try:
                os.setpriority(os.PRIO_PROCESS, 0, self.base)
            except OSError:
                pass
            self.base = None


def main(conn_in: Any, conn_out: Any, vocab_factory: Callable[[], Any], spare: bool = False) -> None:
    """Process entry point: serve messages until "close" or until the parent goes away. A spare
    (`spare`) runs at low priority until it is attached to a slot, and does its mirror work
    (`Worker.idle_work`) only while no message waits; whenever it has done everything it was
    sent it says so (("idle", seq))."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when workers stop
    prio = _Priority(spare)
    try:
        vocab = vocab_factory()
    except Exception as e:  # noqa: BLE001
        conn_out.send(("fatal", f"building the vocabulary failed: {encode_error(e)[1]}"))
        return
    w = Worker(vocab)
    conn_out.send(("ready", os.getpid(), vocab.words, vocab.vocab_size, vocab.name))
    idle_said = 0
    try:
        while True:
            if w.has_idle_work() and not conn_in.poll(0):
                reply = w.idle_work(lambda: conn_in.poll(0))
                if reply is not None:
                    conn_out.send(reply)
                if w.bitmask is None and not w.has_idle_work() and w.seq > idle_said:
                    conn_out.send(("idle", w.seq))
                    idle_said = w.seq
                continue
            try:
                msg = pickle.loads(conn_in.recv_bytes())
            except (EOFError, OSError):
                return
            kind, seq = msg[0], msg[1]
            w.seq = seq
            if kind == "step":
                w.step_id = msg[2]
            if kind == "step" and len(msg) > 4 and msg[4]:  # two-phase: drafts first, then rows
                with paused_gc():
                    t0, c0 = time.perf_counter(), time.thread_time()
                    first, todo = w.tree_drafts(msg[3])
                    conn_out.send(("drafts", seq, msg[2], first))
                    out = [e for e in first if not e[1]] + w.tree_rows(msg[2], todo)
                    t1 = time.perf_counter()
                    conn_out.send(("step", seq, msg[2], out, (t0, t1, time.thread_time() - c0)))
            elif kind == "step":
                with paused_gc():
                    t0, c0 = time.perf_counter(), time.thread_time()
                    out = w.step(msg[2], msg[3])
                    t1 = time.perf_counter()
                    conn_out.send(("step", seq, msg[2], out, (t0, t1, time.thread_time() - c0)))
            elif kind == "add" and len(msg) > 6 and msg[6]:  # a shadow: compiled when idle, "added" then
                w.add(*msg[2:])
                conn_out.send(("ack", seq))
            elif kind == "add":
                t0, c0 = time.perf_counter(), time.thread_time()
                w.mark(0)
                err = w.add(*msg[2:])
                conn_out.send(("added", seq, msg[2], err, time.perf_counter() - t0, time.thread_time() - c0,
                               w.add_parts))
            elif kind == "advance":
                w.advance(msg[2])
                conn_out.send(("ack", seq))
            elif kind == "promote":
                w.promote(msg[2])
                conn_out.send(("ack", seq))
            elif kind == "hold":
                w.hold(msg[2])
                conn_out.send(("ack", seq))
            elif kind == "release":
                w.release()
                conn_out.send(("ack", seq))
            elif kind == "remove":
                w.remove(msg[2])
                conn_out.send(("ack", seq))
            elif kind == "attach":
                prio.restore()
                w.hold_due.clear()  # a standby taking a slot: no more loading (its held specs serve the re-adds)
                try:
                    w.attach(*msg[2:])
                except Exception as e:  # noqa: BLE001
                    conn_out.send(("fatal", f"attaching the shared bitmask failed: {encode_error(e)[1]}"))
                    return
                conn_out.send(("ack", seq))
            elif kind == "close":
                return
            if kind == "step" and w.ckpt_due:
                # a worker that never finds its pipe empty (the next step already waits: a loaded
                # host) still sends its checkpoints, one step late at most (the costly ones at once)
                reply = w.checkpoints(lambda: True, before=msg[2])
                if reply is not None:
                    conn_out.send(reply)
            w.mark(-1)
            if w.bitmask is None and not w.has_idle_work() and seq > idle_said:
                conn_out.send(("idle", seq))
                idle_said = seq
    except (BrokenPipeError, EOFError, OSError):
        return
    finally:
        w.close()
