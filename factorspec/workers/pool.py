"""A pool of CPU processes that keep each request's matcher and compute the next step's bitmask
rows and drafts while the model's forward pass runs.

    with MaskWorkerPool(2, "qwen2.5-0.5b", max_rows=64) as pool:
        pool.add_request("r1", spec_doc)
        h = pool.submit_step([("r1", [], 0, 8)])         # returns at once
        ... launch the forward pass ...
        res = pool.collect(h)["r1"]                        # rows already in pool.bitmask
        logits.masked_fill_(~allowed(torch.from_numpy(pool.bitmask[:n])), -inf)

Requests are sticky: a request lives on one worker (least-loaded or hash assignment, kept in a
map) until that worker dies. Bitmask rows go into one shared-memory block of [max_rows, words]
int32 (xgrammar layout) that all workers write; the caller names the row of each request per step.
Drafts, termination and errors come back over a pipe per worker.

Failures stay local: a malformed spec, a rejected token or a raising matcher fails that request
(`RequestFailed`, naming it and the cause). A worker that dies is replaced (by the warm spare,
which has its vocabulary built already, when there is one; a fresh spare then starts in the
background), and the requests it held are re-added on the workers that are ready, each with the
tokens it had accepted, and their part of outstanding steps is resent (same rows): they continue
with identical masks and no step waits for a process to start. A re-add is cheap: the pool
keeps each request's compiled spec as bytes (an image, sent once by the worker that compiled it)
and a recent checkpoint of its matcher (sent by its worker when idle, at most a step late), so
the new worker loads the spec instead of compiling it and resumes at the checkpoint instead of
replaying every token (workers/checkpoint.py; same masks, tested against the original). With the
mirror off, the first spare is a standby that holds every request's compiled spec (loaded from
its image when idle): the requests of a dead worker whose place it takes are re-added there with
only their checkpoints to resume (docs/robustness.md). With the mirror on (by default
where the host has a core for it) the spare also keeps a shadow of every request, and the one
that takes a dead worker's place serves its requests from their shadows: nothing to compile
again in that step. A spare runs at low OS priority (worker.SPARE_NICE, where the pool may give
it its own priority back when it takes a slot) and does its shadow work only while no message
waits for it, so a replacement's start and the mirror's rebuild take what the serving workers
leave; a shadow counts once the spare says it is compiled, and a promoted shadow follows the
tokens it was still behind on at its next step. A model's vocabulary is built once, here, into an image (`TokenizerImage`, given to the workers as a file), so that a
worker, a replacement included, starts in about a second without importing transformers. A step that overruns its budget
kills the worker that is late (unless kill_on_timeout=False): the request that worker was busy
with at the deadline (its progress word in the shared block says which) fails with
`StepTimeout` naming the budget, and the worker's other requests are replayed elsewhere like
after a crash; `collect` then waits at most one more budget for those replays, and returns by
then in every case. With kill_on_timeout=False the late worker finishes its step but writes no
further rows of it (it checks a cancel word in the shared block before each row), so the caller
may reuse those rows; only a row being written at the very instant of the timeout can still land.

Not thread-safe: drive a pool from one thread (the engine loop).
"""
from __future__ import annotations

import dataclasses
import fcntl
import itertools
import multiprocessing as mp
import os
import pickle
import queue
import signal
import tempfile
import threading
import time
import weakref
import zlib
from multiprocessing.connection import wait as mp_wait
from typing import Any, Iterable, Optional

import numpy as np

from factorspec.constraint import DraftTree
from factorspec.errors import FactorSpecError
from factorspec.workers.protocol import (PROGRESS_SHIFT, RequestFailed, StepItem, StepResult, StepTimeout,
                                         WorkerCrashed, decode_error)
from factorspec.workers.vocab_recipes import RecipeFile, as_vocab_factory

_F_SETPIPE_SZ, _F_GETPIPE_SZ = 1031, 1032
_PIPE_WANT = 1 << 20
_RECIPE_INLINE = 64 * 1024  # a recipe pickled larger than this goes to workers as a file


class PoolError(FactorSpecError):
    """The pool itself cannot serve (no worker could start, or it is closed)."""


def _default_context() -> Any:
    methods = mp.get_all_start_methods()
    if "forkserver" in methods:
        ctx = mp.get_context("forkserver")
        try:
            ctx.set_forkserver_preload(["factorspec.workers.worker"])
        except Exception:  # noqa: BLE001 - preload is an optimisation only
            pass
        return ctx
    return mp.get_context("spawn")


def _worker_entry(conn_in: Any, conn_out: Any, factory: Any, spare: bool = False) -> None:
    from factorspec.workers.worker import main

    main(conn_in, conn_out, factory, spare)


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask, else the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def mirror_fits(num_workers: int, spares: int) -> bool:
    """Whether the mirror is free: a core for each worker, each spare and the caller. Where it
    is not, the mirror's second copy of every request's work slows every fault-free step, and a
    fault (rare) is cheaper paid when it happens (re-adding the dead worker's requests)."""
    return spares > 0 and usable_cores() >= num_workers + spares + 1


def _raise_priority(pid: Optional[int]) -> None:
    """A spare taking a slot returns to this process's priority at once (it lowered its own
    while spare, see worker.SPARE_NICE; raised from here, it need not first be scheduled, at its
    low priority, to read its "attach")."""
    if pid is None or not hasattr(os, "setpriority"):
        return
    try:
        mine = os.getpriority(os.PRIO_PROCESS, 0)
        if os.getpriority(os.PRIO_PROCESS, pid) > mine:
            os.setpriority(os.PRIO_PROCESS, pid, mine)
    except OSError:
        pass  # not allowed here (then the spare never lowered its own), or it is gone


_CUTS = 16  # rollbacks kept per request, to tell whether a late checkpoint still holds
_HOLD_BATCH, _HOLD_AHEAD = 8, 16  # images sent to the standby a message, and at most unanswered

SPARE = -1  # the slot index of the warm spare until it takes a dead worker's place


class _Slot:
    """One worker process (one generation of a slot, or the spare)."""

    def __init__(self, index: int, generation: int) -> None:
        self.index, self.generation = index, generation
        self.proc: Any = None
        self.pid: Optional[int] = None
        self.send_conn: Any = None
        self.recv_conn: Any = None
        self.ready = False
        self.dead = False
        self.fatal: Optional[str] = None
        self.rids: set = set()
        self.lock = threading.Lock()
        self.outbox: "queue.SimpleQueue[Optional[bytes]]" = queue.SimpleQueue()
        self.queued = 0  # messages handed to the sender thread and not yet written
        self.sender: Optional[threading.Thread] = None
        self.seq = 0
        self.inflight: list = []  # (seq, bytes, sent at) written or queued, not yet known to be read
        self.what: dict[int, tuple] = {}  # seq -> ("add", rid) | ("step", step_id, rids), until its last reply
        self.inflight_bytes = 0
        self.capacity = 32 * 1024
        self.applied = 0  # a spare: the last message whose work (deferred mirror work included) is done

    def _sender_loop(self) -> None:
        while True:
            data = self.outbox.get()
            if data is None:
                return
            try:
                self.send_conn.send_bytes(data)
            except (OSError, ValueError):
                pass  # the worker is gone; its death is seen through the sentinel
            with self.lock:
                self.queued -= 1


class StepHandle:
    """An outstanding step; pass it to `MaskWorkerPool.collect`.

    A step goes out as one message per worker (a part, keyed (slot, generation, seq)); a part
    whose worker dies is resent, split over the workers its requests moved to."""

    def __init__(self, step_id: int, order: list) -> None:
        self.id = step_id
        self.order = order
        self.results: dict[Any, StepResult] = {}
        self.pending: dict[tuple, list] = {}  # part -> its requests, until its rows are in
        self.rows: dict[Any, int] = {}
        self.submitted = time.perf_counter()
        self.worker_s: dict[int, float] = {}  # slot -> worker compute time for the whole step
        self.worker_cpu: dict[int, float] = {}  # slot -> the CPU time of that (what contention does not stretch)
        # slot -> (worker began, worker finished, parent started reading the reply): perf_counter
        # is CLOCK_MONOTONIC, comparable across processes on one host
        self.spans: dict[int, tuple] = {}
        self.collected: float = 0.0
        self.two_phase = False
        self.pending_drafts: dict[tuple, list] = {}  # two-phase steps: parts whose drafts are still out
        self.drafts: dict[Any, StepResult] = {}  # two-phase steps: phase-1 results (no rows yet)
        self.items: dict[Any, StepItem] = {}  # what was sent, to resend to another worker
        self.replayed: set = set()  # requests whose part was resent after their worker died

    @property
    def done(self) -> bool:
        return not self.pending

    @property
    def drafts_done(self) -> bool:
        return not self.pending_drafts


class MaskWorkerPool:
    """Sticky per-request matchers in worker processes, bitmasks in shared memory.

    num_workers: processes; vocab_factory: a model name, a `TokenVocab` without an encode
    function, `BytesVocab`/`ModelVocab`, or any picklable callable returning a `TokenVocab`
    (built once inside each worker); max_rows: rows of the shared bitmask block; vocab_size:
    width of the rows in tokens (default: the vocabulary's own size, e.g. pass the logits width
    when it is padded); step_timeout: default budget of `collect`; assign: "least_loaded" or
    "hash"; spares: warm processes (vocabulary built, no requests) kept to take a dead worker's
    place at once; mirror: the first spare also keeps a shadow matcher of every live request
    (compiled there, following its tokens) and, taking a dead worker's place, serves that
    worker's requests from them at once, with nothing to compile or replay (otherwise, or while
    the mirror is catching up, they are re-added on the ready workers). The mirror compiles every
    spec a second time and follows every token (accepting tokens is most of a step's work): free
    where the spare has a core of its own, on 2 shared cores it doubled the fault-free step
    (docs/robustness.md). Hence mirror="auto" (the default): on when this process may use a core
    for every worker, the spares and itself (`mirror_fits`), off otherwise; mp_context: a
    multiprocessing context (default forkserver, else spawn); prebuild: a recipe with an
    `image()` (`ModelVocab`) is built once here and the workers start from that image; standby
    (the mirror off): the first spare holds every live request's compiled spec, loaded from its
    image when idle (~1 ms a request, once), so that a kill's re-adds onto it only resume
    checkpoints (no spec loaded at the kill)."""

    def __init__(self, num_workers: int, vocab_factory: Any, max_rows: int, *, vocab_size: Optional[int] = None,
                 step_timeout: float = 30.0, start_timeout: float = 120.0, assign: str = "least_loaded",
                 kill_on_timeout: bool = True, mp_context: Any = None, wait_ready: bool = True,
                 max_replays: int = 3, spares: int = 1, mirror: bool | str = "auto", prebuild: bool = True,
                 standby: bool = True) -> None:
        if num_workers < 1:
            raise ValueError("num_workers must be >= 1")
        if max_rows < 1:
            raise ValueError("max_rows must be >= 1")
        if assign not in ("least_loaded", "hash"):
            raise ValueError("assign must be 'least_loaded' or 'hash'")
        if spares < 0:
            raise ValueError("spares must be >= 0")
        self.num_workers, self.max_rows, self.spares = num_workers, max_rows, spares
        if mirror not in (True, False, "auto"):
            raise ValueError("mirror must be True, False or 'auto'")
        if mirror == "auto":
            mirror = mirror_fits(num_workers, spares)
        self.mirror = bool(mirror) and spares > 0
        # the mirror off: the first spare is a standby that holds every request's compiled spec
        # (loaded from its image when idle), so that taking a dead worker's place its re-adds
        # only resume checkpoints (no spec to load, no token to replay before the checkpoint)
        self.standby = bool(standby) and spares > 0 and not self.mirror
        self._standby: Optional[_Slot] = None
        self._hold_queue: dict[Any, None] = {}  # requests whose image the standby has not been sent yet
        self._hold_sent: set = set()  # sent to the current standby
        self._held: set = set()  # of those, loaded there (its "held" came back)
        self._hold_out: set = set()  # of those, not answered yet (loaded or not)
        self.held_readds = 0  # re-adds that found their spec held on the standby that took the slot
        # per death: (seen at perf_counter, parent seconds in _on_dead, requests moved, of which
        # onto held specs); and the re-adds' CPU split: spec (load or compile), resume, replay
        self.deaths: list = []
        self.replay_parts = {"spec": 0.0, "resume": 0.0, "replay": 0.0}
        self.promoted = 0  # requests a dead worker's place-taker served from its mirror (no re-add)
        self._mirror: Optional[_Slot] = None  # the spare that mirrors every live request
        self._sent: dict[Any, list] = {}  # rid -> every token sent for it (what its mirror has seen)
        self._shadow_sent: set = set()  # the requests whose shadow was sent to the current mirror
        self._mirrored: set = set()  # those of them the mirror has compiled (its "added" came back)
        self._lag = min(1.0, step_timeout / 2)  # a worker this far behind its pipe takes no replays
        self.step_timeout, self.start_timeout = step_timeout, start_timeout
        self.assign, self.kill_on_timeout = assign, kill_on_timeout
        self.restarts = 0
        self.replays = 0  # requests moved to another worker after theirs died
        self.replay_tokens = 0  # tokens those re-adds accepted again (after their checkpoint, where resumed)
        self.replay_cpu_s = 0.0  # the workers' CPU time on those re-adds (compile and replay)
        self.replay_cpu_by_slot: dict[int, float] = {}  # the same per slot
        self.resumed = 0  # re-adds that resumed at a checkpoint (the rest replayed every token)
        # what makes a re-add cheap (workers/checkpoint.py): per request its compiled spec as
        # bytes (sent by the worker that compiled it, when idle) and its latest checkpoint
        # (step id, tokens, bytes), and the rollbacks since ((step id, tokens left), at most
        # _CUTS; a checkpoint older than a cut below it, or than the cuts kept, is not used)
        self._images: dict[Any, bytes] = {}
        self._ckpts: dict[Any, tuple] = {}
        self._cuts: dict[Any, list] = {}
        # CPU seconds of one request's part of a step and of one re-add (running means): how the
        # re-adds of a dead worker's requests are spread (`_on_dead`)
        self._cost_step, self._cost_add = 3e-4, 3e-3
        self._cost_spec, self._cost_resume = 1.5e-3, 3e-4  # of a re-add: its spec's load; the rest
        self.checkpoint_cpu_s = 0.0  # the workers' CPU time writing checkpoints and spec images (when idle)
        self.checkpoints = 0
        self.max_replays = max_replays  # deaths in a row (no good step between) before a request fails
        self._docs: dict[Any, tuple] = {}  # rid -> (spec_doc, prompt): to re-add it elsewhere
        self._hist: dict[Any, list] = {}  # rid -> tokens accepted up to its last good step
        self._crashes: dict[Any, int] = {}  # rid -> worker deaths since its last good step
        self._factory = as_vocab_factory(vocab_factory)
        if prebuild and callable(getattr(self._factory, "image", None)):
            self._factory = self._factory.image() or self._factory  # type: ignore[attr-defined]
        self._recipe_file: list = [None]  # (a list: the finalizer sees the path set later)
        blob = pickle.dumps(self._factory, protocol=pickle.HIGHEST_PROTOCOL)
        if len(blob) > _RECIPE_INLINE:
            fd, path = tempfile.mkstemp(prefix="factorspec-vocab-", suffix=".pkl")
            with os.fdopen(fd, "wb") as f:
                f.write(blob)
            self._recipe_file[0] = path
            self._factory = RecipeFile(path)
        self._ctx = mp_context or _default_context()
        self._closed = False
        self._assign: dict[Any, _Slot] = {}
        self._failed: dict[Any, RequestFailed] = {}
        self._added: dict[Any, Optional[RequestFailed]] = {}
        self._steps: dict[int, StepHandle] = {}
        self._step_ids = itertools.count(1)
        self._procs: list = []  # every process started, for the finalizer
        self._shm: Any = None
        self._bitmask: Optional[np.ndarray] = None
        self._cancelled: Optional[np.ndarray] = None
        self._progress: Optional[np.ndarray] = None
        self._ctrl_offset = 0
        self.words: Optional[int] = (vocab_size + 31) // 32 if vocab_size else None
        self._finalizer = weakref.finalize(self, _cleanup, self._procs, [None], self._recipe_file)
        self._slots: list[_Slot] = []
        self._spares: list[_Slot] = []
        self._spare_generation = itertools.count(1_000_000)  # spares' own generations, distinct from slots'
        self._start_failures = [0] * num_workers  # deaths in a row before becoming ready, per slot
        self._spare_failures = 0
        try:
            self._slots = [self._spawn(i, 0) for i in range(num_workers)]
            for _ in range(spares):
                self._spawn_spare()
            deadline = time.monotonic() + start_timeout
            while self.words is None:
                self._wait_or_fail(deadline, "the first worker to build its vocabulary")
            from multiprocessing import shared_memory

            # the bitmask rows, then per slot one int64 cancel word (the last step id cancelled
            # on that slot) and one int64 progress word (what the worker is computing)
            self._ctrl_offset = (max_rows * self.words * 4 + 7) // 8 * 8
            self._shm = shared_memory.SharedMemory(create=True, size=self._ctrl_offset + 16 * num_workers)
            self._finalizer.detach()
            self._finalizer = weakref.finalize(self, _cleanup, self._procs, [self._shm], self._recipe_file)
            self._bitmask = np.ndarray((max_rows, self.words), dtype=np.int32, buffer=self._shm.buf)
            self._bitmask[:] = 0
            self._cancelled = np.ndarray((num_workers,), dtype=np.int64, buffer=self._shm.buf,
                                         offset=self._ctrl_offset)
            self._cancelled[:] = 0
            self._progress = np.ndarray((num_workers,), dtype=np.int64, buffer=self._shm.buf,
                                        offset=self._ctrl_offset + 8 * num_workers)
            self._progress[:] = 0
            for s in self._slots:
                if not s.dead:
                    self._attach(s)
            if wait_ready:
                while not all(s.ready or s.fatal for s in self._slots):
                    self._wait_or_fail(deadline, "all workers to start")
                if not any(s.ready for s in self._slots):
                    raise PoolError("no mask worker could start: " + "; ".join(str(s.fatal) for s in self._slots))
        except BaseException:
            self.close()
            raise

    # -- public API -------------------------------------------------------------------------------
    @property
    def bitmask(self) -> np.ndarray:
        """The shared [max_rows, words] int32 block (torch.from_numpy works on it)."""
        if self._bitmask is None:
            raise PoolError("the pool is closed")
        return self._bitmask

    def worker_pids(self) -> list[int]:
        """The serving workers (not the spares)."""
        return [s.pid for s in self._slots if not s.dead and s.pid is not None]

    def spare_pids(self) -> list[int]:
        return [s.pid for s in self._spares if not s.dead and s.pid is not None]

    def mirror_caught_up(self) -> bool:
        """Whether the mirror has compiled every shadow sent to it and followed every token (a
        kill now is served from shadows with nothing to catch up). Non-blocking."""
        self._pump(0)
        m = self._mirror
        return m is not None and m.ready and not m.dead and m.applied >= m.seq

    def standby_caught_up(self) -> bool:
        """Whether the standby spare holds the compiled spec of every live request (a kill now
        re-adds the dead worker's requests there with only their checkpoints to resume; a
        request whose image has not come back yet is not counted). Non-blocking."""
        self._pump(0)
        sb = self._standby
        return (sb is not None and sb.ready and not sb.dead and not self._hold_queue and not self._hold_out
                and all(rid in self._held for rid in self._images))

    def standby_holds_all(self) -> bool:
        """`standby_caught_up`, and every live request's image has come back and is held there
        (images come back when the serving workers are idle, so in the first steps, or on a busy
        host, a request may not be held yet). What a test or benchmark that kills a worker on
        purpose, to measure held re-adds, waits for. Non-blocking."""
        return self.standby_caught_up() and all(rid in self._held for rid in self._assign)

    def requests(self) -> dict[Any, int]:
        """Live requests and the worker slot each is on."""
        return {rid: s.index for rid, s in self._assign.items()}

    def add_request(self, rid: Any, spec_doc: Any, wait: bool = False, timeout: Optional[float] = None,
                    prompt_ids: Any = None) -> None:
        """Compile `spec_doc` (dict or JSON text) for `rid` in its worker. Errors are reported for
        that request (at its next step, or by `request_error`); with wait=True they are raised.
        `prompt_ids` (optional) feed the matcher's prompt-lookup drafts of free text."""
        self._check_open()
        if rid in self._assign:
            raise ValueError(f"request {rid!r} is already in the pool")
        self._pump(0)
        self._failed.pop(rid, None)
        self._added.pop(rid, None)
        slot = self._choose(rid)
        if slot is None:
            self._failed[rid] = WorkerCrashed(rid, "no mask worker is alive", "WorkerCrashed")
        else:
            self._assign[rid] = slot
            slot.rids.add(rid)
            prompt = [int(t) for t in prompt_ids] if prompt_ids is not None else None
            self._docs[rid] = (spec_doc, prompt)
            self._hist[rid] = []
            self._sent[rid] = []
            self._crashes[rid] = 0
            self._send(slot, "add", rid, spec_doc, prompt, what=("add", rid))
            if self._mirror is not None and not self._mirror.dead:
                self._send(self._mirror, "add", rid, spec_doc, prompt, (), True)
                self._shadow_sent.add(rid)
        if wait:
            deadline = time.monotonic() + (self.step_timeout if timeout is None else timeout)
            while rid not in self._added and rid not in self._failed:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise StepTimeout(rid, f"compiling the spec took longer than {timeout or self.step_timeout:.3g} s")
                self._pump(left)
            err = self.request_error(rid)
            if err is not None:
                raise err

    def request_error(self, rid: Any) -> Optional[RequestFailed]:
        """The error that ended `rid`, if any (non-blocking)."""
        self._pump(0)
        return self._failed.get(rid)

    def remove_request(self, rid: Any) -> None:
        """Forget `rid` (finished, cancelled or failed)."""
        self._failed.pop(rid, None)
        self._added.pop(rid, None)
        self._docs.pop(rid, None)
        self._hist.pop(rid, None)
        self._crashes.pop(rid, None)
        self._sent.pop(rid, None)
        self._images.pop(rid, None)
        self._ckpts.pop(rid, None)
        self._cuts.pop(rid, None)
        mirrored = rid in self._shadow_sent
        self._shadow_sent.discard(rid)
        self._mirrored.discard(rid)
        self._hold_queue.pop(rid, None)
        if rid in self._hold_sent:
            self._hold_sent.discard(rid)
            self._held.discard(rid)
            self._hold_out.discard(rid)
            self._feed_standby()
            sb = self._standby
            if sb is not None and not sb.dead and not self._closed:
                self._send(sb, "remove", rid)
        slot = self._assign.pop(rid, None)
        if slot is not None:
            slot.rids.discard(rid)
            if not slot.dead and not self._closed:
                self._send(slot, "remove", rid)
        if mirrored and self._mirror is not None and not self._mirror.dead and not self._closed:
            self._send(self._mirror, "remove", rid)

    def submit_step(self, items: Iterable[Any]) -> StepHandle:
        """Start a step; returns at once. Each item is a `StepItem` (or a dict of its fields, or a
        tuple in its field order: rid, accepted_tokens_since_last_step, row, draft_width, ...); the
        workers receive the normalised `StepItem`s themselves.
        A step with any `tree` item is two-phase: `collect_drafts` returns once the drafts are
        made, `collect` once the rows of every draft node are written."""
        self._check_open()
        self._pump(0)
        items = [StepItem.of(x) for x in items]
        h = StepHandle(next(self._step_ids), [it.rid for it in items])
        rows: set = set()
        by_slot: dict[int, list] = {}
        for it in items:
            row = int(it.row)
            if not 0 <= row < self.max_rows:
                raise ValueError(f"request {it.rid!r}: row {row} outside the block's {self.max_rows} rows")
            if row in rows:
                raise ValueError(f"row {row} is given to two requests in one step")
            if it.rid in h.rows:
                raise ValueError(f"request {it.rid!r} appears twice in one step")
            rows.add(row)
            h.rows[it.rid] = row
            slot = self._assign.get(it.rid)
            h.two_phase = h.two_phase or it.tree  # also for a failed request: collect_drafts serves it
            if slot is None:
                err = self._failed.get(it.rid) or RequestFailed(it.rid, "unknown request (never added, or removed)")
                self._fail_result(h, it.rid, err)
                continue
            h.items[it.rid] = it
            by_slot.setdefault(slot.index, []).append(it)
        self._steps[h.id] = h
        for idx, lst in by_slot.items():
            self._send_part(h, self._slots[idx], lst, drafts=h.two_phase)
        moves = []
        for it in h.items.values():
            sent = self._sent.get(it.rid)
            if sent is None:
                continue
            if it.rollback:
                del sent[max(0, len(sent) - it.rollback):]
            sent.extend(it.tokens)
            if it.tokens or it.rollback:
                moves.append((it.rid, it.tokens, it.rollback))
        if moves and self._mirror is not None and not self._mirror.dead:
            self._send(self._mirror, "advance", moves)  # after the parts: off the step's path
        return h

    def collect_drafts(self, handle: StepHandle, timeout: Optional[float] = None) -> dict[Any, StepResult]:
        """Two-phase steps: wait (at most `timeout`) until every request's draft is made; results
        per request in submission order, without rows (those come with `collect`). A request
        that failed (or whose worker died or overran the budget) comes back with `ok` False."""
        if not handle.two_phase:
            raise ValueError("collect_drafts needs a step with tree items; use collect")
        self._wait(handle, handle.pending_drafts, timeout)
        out = {}
        for rid in handle.order:
            r = handle.results.get(rid)
            if r is None or r.ok:
                r = handle.drafts.get(rid)
            if r is None:
                self._fail_result(handle, rid, RequestFailed(rid, f"step {handle.id} returned no draft for it"))
                r = handle.results[rid]
            out[rid] = r
        return out

    def collect(self, handle: StepHandle, timeout: Optional[float] = None) -> dict[Any, StepResult]:
        """Wait (at most `timeout`, default step_timeout) for the step; results per request, in
        submission order. At the deadline the late workers are killed: the request each was busy
        with gets StepTimeout, their other requests are replayed on other workers, and collect
        waits at most one more budget for those (which then fail with StepTimeout too)."""
        self._wait(handle, handle.pending, timeout)
        self._steps.pop(handle.id, None)
        for rid in handle.order:
            if rid not in handle.results:  # defensive: a reply that left a request out
                self._fail_result(handle, rid, RequestFailed(rid, f"step {handle.id} returned no result for it"))
        handle.collected = time.perf_counter()
        return {rid: handle.results[rid] for rid in handle.order}

    def _wait(self, handle: StepHandle, pending: dict, timeout: Optional[float]) -> None:
        """Read replies until `pending` (a part map of the handle) empties. When the budget runs
        out, the late parts are expired (their workers killed, the healthy requests replayed) and
        one more budget is given to the replays; after that, whatever is still out fails."""
        budget = self.step_timeout if timeout is None else timeout
        deadline = time.monotonic() + budget
        rounds = 0
        while pending:
            left = deadline - time.monotonic()
            if left <= 0:
                self._expire(handle, pending, budget, replay=rounds == 0)
                rounds += 1
                if rounds >= 2:
                    break
                deadline = time.monotonic() + budget
                continue
            self._pump(left)

    def step(self, items: Iterable[Any], timeout: Optional[float] = None) -> dict[Any, StepResult]:
        return self.collect(self.submit_step(items), timeout)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        procs = self._slots + self._spares
        for s in procs:
            if not s.dead:
                try:
                    self._send(s, "close")
                except Exception:  # noqa: BLE001
                    pass
        end = time.monotonic() + 2.0
        for s in procs:
            if s.proc is not None:
                s.proc.join(max(0.0, end - time.monotonic()))
                if s.proc.is_alive():
                    s.proc.kill()
                    s.proc.join(1.0)
            self._retire(s)
        self._bitmask = self._cancelled = self._progress = None
        if self._shm is not None:
            try:
                self._shm.close()
            except BufferError:
                pass  # the caller still holds views; the mapping goes with the process
            try:
                self._shm.unlink()
            except FileNotFoundError:
                pass
        _unlink(self._recipe_file)
        self._finalizer.detach()

    def __enter__(self) -> "MaskWorkerPool":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- processes --------------------------------------------------------------------------------
    def _spawn(self, index: int, generation: int) -> _Slot:
        s = _Slot(index, generation)
        r_in, w_in = self._ctx.Pipe(duplex=False)
        r_out, w_out = self._ctx.Pipe(duplex=False)
        try:
            fcntl.fcntl(w_in.fileno(), _F_SETPIPE_SZ, _PIPE_WANT)
        except OSError:
            pass
        try:
            size = fcntl.fcntl(w_in.fileno(), _F_GETPIPE_SZ)
            s.capacity = max(4096, size // 2)
        except OSError:
            pass
        name = "factorspec-mask-worker-" + ("spare" if index == SPARE else str(index))
        p = self._ctx.Process(target=_worker_entry, args=(r_in, w_out, self._factory, index == SPARE), daemon=True,
                              name=name)
        p.start()
        r_in.close()
        w_out.close()
        s.proc, s.pid, s.send_conn, s.recv_conn = p, p.pid, w_in, r_out
        self._procs.append(p)
        if self._shm is not None and index != SPARE:
            self._attach(s)
        return s

    def _spawn_spare(self) -> None:
        """A warm process: it builds its vocabulary now and waits, unattached, for a slot. The
        first spare is the mirror: it gets a shadow of every live request, at the tokens sent."""
        if self._closed or len(self._spares) >= self.spares:
            return
        try:
            sp = self._spawn(SPARE, next(self._spare_generation))
        except Exception:  # noqa: BLE001 - a spare is an optimisation; dead workers get fresh processes
            self.spares = len(self._spares)
            return
        self._spares.append(sp)
        if self.standby and (self._standby is None or self._standby.dead):
            self._standby = sp
            self._hold_sent, self._held, self._hold_out = set(), set(), set()
            self._hold_queue = dict.fromkeys(sorted(self._images, key=repr))  # sent once it is ready
        if self.mirror and (self._mirror is None or self._mirror.dead):
            self._mirror = sp
            self._shadow_sent, self._mirrored = set(self._assign), set()
            for rid in sorted(self._assign, key=repr):
                doc, prompt = self._docs[rid]
                sent = self._sent.get(rid, [])
                self._send(sp, "add", rid, doc, prompt, tuple(sent), True, self._images.get(rid),
                           self._resume_point(rid, sent))

    def _take_spare(self, index: int) -> tuple[Optional[_Slot], bool]:
        """The most advanced spare (caught up first, then ready) as the new process of slot
        `index`, and whether it is the mirror, caught up (so it can serve the dead worker's
        requests from its shadows)."""
        live = [s for s in self._spares if not s.dead and s.fatal is None]
        if not live:
            return None, False
        s = max(live, key=lambda x: (self._fresh(x), x.ready))
        mirrored = s is self._mirror and self._fresh(s)
        if s is self._standby:
            self._standby = None
            self._hold_queue, self._hold_sent, self._held, self._hold_out = {}, set(), set(), set()
        if s is self._mirror:
            self._mirror = None
            self._shadow_sent, self._mirrored = set(), set()
        self._spares.remove(s)
        s.index = index
        _raise_priority(s.pid)
        if self._shm is not None:  # else the constructor attaches every slot once the block exists
            self._attach(s)
        return s, mirrored

    def _fresh(self, s: _Slot) -> bool:
        """Ready and reading its pipe: nothing sent to it has waited longer than the lag."""
        return (s.ready and not s.dead and s.fatal is None
                and (not s.inflight or time.monotonic() - s.inflight[0][2] < self._lag))

    def _feed_standby(self) -> None:
        """Send the standby the images it does not hold yet, a few at a time (it loads them when
        idle and at low priority; paced by its "held" replies, so a fresh standby is never sent
        every image of the pool at once, e.g. right after a kill)."""
        sb = self._standby
        if sb is None or sb.dead or not sb.ready or self._closed:
            return
        while self._hold_queue and len(self._hold_out) < _HOLD_AHEAD:
            batch: list = []
            while self._hold_queue and len(batch) < _HOLD_BATCH:
                rid = next(iter(self._hold_queue))
                del self._hold_queue[rid]
                img, doc = self._images.get(rid), self._docs.get(rid)
                if img is not None and doc is not None and rid in self._assign:
                    batch.append((rid, doc[0], img))
                    self._hold_sent.add(rid)
            if not batch:
                return
            self._hold_out.update(e[0] for e in batch)
            self._send(sb, "hold", batch)

    def _attach(self, s: _Slot) -> None:
        if self._cancelled is not None:
            self._cancelled[s.index] = 0
            self._progress[s.index] = 0  # type: ignore[index]
        self._send(s, "attach", self._shm.name, self.max_rows, self.words, s.index, self._ctrl_offset,
                   self.num_workers)

    def _send(self, s: _Slot, kind: str, *args: Any, what: Any = None) -> None:
        s.seq += 1
        data = pickle.dumps((kind, s.seq) + args, protocol=pickle.HIGHEST_PROTOCOL)
        size = len(data) + 16
        s.inflight.append((s.seq, size, time.monotonic()))
        if what is not None:
            s.what[s.seq] = what
        s.inflight_bytes += size
        with s.lock:
            if s.queued == 0 and s.inflight_bytes <= s.capacity:
                try:  # fits in the pipe: cannot block
                    s.send_conn.send_bytes(data)
                except (OSError, ValueError):
                    pass  # dead worker: seen through its sentinel
                return
            s.queued += 1
        if s.sender is None:  # the worker is behind: a thread writes so that we never block
            s.sender = threading.Thread(target=s._sender_loop, daemon=True,
                                        name=f"factorspec-mask-sender-{s.index}")
            s.sender.start()
        s.outbox.put(data)

    def _send_part(self, h: StepHandle, s: _Slot, items: list, drafts: bool) -> None:
        """One worker's part of step `h`; `drafts`: its phase-1 reply is still awaited."""
        rids = [it.rid for it in items]
        self._send(s, "step", h.id, items, h.two_phase, what=("step", h.id, rids))
        key = (s.index, s.generation, s.seq)
        h.pending[key] = rids
        if drafts:
            h.pending_drafts[key] = rids

    def _acked(self, s: _Slot, seq: int) -> None:
        k = 0
        while k < len(s.inflight) and s.inflight[k][0] <= seq:
            s.inflight_bytes -= s.inflight[k][1]
            k += 1
        if k:
            del s.inflight[:k]

    def _choose(self, rid: Any) -> Optional[_Slot]:
        live = [s for s in self._slots if not s.dead and s.fatal is None]
        # a worker that is behind (or still starting) only when none is ready and caught up
        live = [s for s in live if self._fresh(s)] or [s for s in live if s.ready] or live
        if not live:
            return None
        if self.assign == "hash":
            return live[zlib.crc32(repr(rid).encode()) % len(live)]
        return min(live, key=lambda s: (len(s.rids), s.index))

    def _wait_or_fail(self, deadline: float, what: str) -> None:
        if all(s.fatal for s in self._slots):
            raise PoolError("no mask worker could start: " + "; ".join(str(s.fatal) for s in self._slots))
        left = deadline - time.monotonic()
        if left <= 0:
            raise PoolError(f"timed out after {self.start_timeout:.3g} s waiting for {what}")
        self._pump(min(left, 1.0))

    # -- messages ---------------------------------------------------------------------------------
    def _pump(self, timeout: float) -> None:
        """Read whatever the workers sent (waiting up to `timeout` for something); notice deaths."""
        objs: dict = {}
        for s in self._slots + self._spares:
            if not s.dead:
                objs[s.recv_conn] = s
                objs[s.proc.sentinel] = s
        if not objs:
            if timeout > 0:
                time.sleep(min(timeout, 0.01))
            return
        for o in mp_wait(list(objs), timeout):
            s = objs[o]
            if s.dead:
                continue
            self._read(s)
            if not s.dead and o is not s.recv_conn:  # process ended; its last words were read
                self._on_dead(s, self._death_cause(s))

    def _read(self, s: _Slot) -> None:
        try:
            while s.recv_conn.poll(0):
                self._handle(s, s.recv_conn.recv())
        except (EOFError, OSError):
            self._on_dead(s, self._death_cause(s))

    def _handle(self, s: _Slot, msg: tuple) -> None:
        kind = msg[0]
        if kind == "drafts":
            _, seq, step_id, out = msg
            self._acked(s, seq)
            h = self._steps.get(step_id)
            if h is None or h.pending_drafts.pop((s.index, s.generation, seq), None) is None:
                return
            for rid, ok, payload in out:
                row = h.rows[rid]
                if ok:
                    draft, term, dt = payload
                    h.drafts[rid] = StepResult(rid, row, True, draft if draft is not None else DraftTree(), term,
                                               None, dt)
                else:
                    err = decode_error(rid, payload)
                    self._forget(rid, err)
                    h.results[rid] = StepResult(rid, row, False, None, False, err)
        elif kind == "step":
            _, seq, step_id, out, (w_begin, w_end, w_cpu) = msg
            t_read = time.perf_counter()
            self._acked(s, seq)
            s.what.pop(seq, None)
            h = self._steps.get(step_id)
            key = (s.index, s.generation, seq)
            if h is None or h.pending.pop(key, None) is None:
                return  # a step already given up on
            h.worker_s[s.index] = h.worker_s.get(s.index, 0.0) + w_end - w_begin
            h.worker_cpu[s.index] = h.worker_cpu.get(s.index, 0.0) + w_cpu
            if out:
                self._cost_step += 0.1 * (w_cpu / len(out) - self._cost_step)
            h.spans[s.index] = (w_begin, w_end, t_read)
            h.pending_drafts.pop(key, None)
            for rid, ok, payload in out:
                row = h.rows[rid]
                if ok:
                    self._commit(rid, h.items.get(rid), h.id)
                if ok and h.two_phase:
                    valid, dt = payload
                    d = h.drafts.get(rid)
                    if d is None:  # defensive: rows without a draft
                        err = RequestFailed(rid, f"step {h.id}: rows arrived without a draft")
                        self._forget(rid, err)
                        h.results[rid] = StepResult(rid, row, False, None, False, err)
                        continue
                    h.results[rid] = StepResult(rid, row, True, d.draft, d.terminated, None, dt, list(valid))
                elif ok:
                    draft, term, dt = payload
                    h.results[rid] = StepResult(rid, row, True, draft, term, None, dt)
                else:
                    err = decode_error(rid, payload)
                    self._forget(rid, err)
                    h.results[rid] = StepResult(rid, row, False, None, False, err)
        elif kind == "added":
            _, seq, rid, err, _dt = msg[:5]
            what = s.what.get(seq)
            if len(msg) > 5 and what is not None and what[-1] == "replay":
                self.replay_cpu_s += msg[5]
                self._cost_add += 0.1 * (msg[5] - self._cost_add)
                self.replay_cpu_by_slot[s.index] = self.replay_cpu_by_slot.get(s.index, 0.0) + msg[5]
                if len(msg) > 6 and err is None:
                    spec_s, resume_s, replay_s, _n, held = msg[6]
                    self.replay_parts["spec"] += spec_s
                    self.replay_parts["resume"] += resume_s
                    self.replay_parts["replay"] += replay_s
                    self.held_readds += bool(held)
                    if not held:
                        self._cost_spec += 0.1 * (spec_s - self._cost_spec)
                    self._cost_resume += 0.1 * (resume_s + replay_s - self._cost_resume)
            self._acked(s, seq)
            s.what.pop(seq, None)
            if s.index == SPARE:  # a shadow compiled (its add was read, and acked, long before)
                if s is self._mirror and err is None and rid in self._shadow_sent:
                    self._mirrored.add(rid)
            elif self._assign.get(rid) is s:
                e = None if err is None else decode_error(rid, err)
                self._added[rid] = e
                if e is not None:
                    self._forget(rid, e)
        elif kind == "ack":
            self._acked(s, msg[1])
        elif kind == "image":  # a request's compiled spec, as bytes
            _, seq, rid, blob, cpu = msg
            self._acked(s, seq)
            self.checkpoint_cpu_s += cpu
            if self._assign.get(rid) is s:
                self._images[rid] = blob
                if self._standby is not None and rid not in self._hold_sent:
                    self._hold_queue[rid] = None
                    self._feed_standby()
        elif kind == "held":  # the standby has loaded these specs
            _, seq, loaded, tried, cpu = msg
            self._acked(s, seq)
            self.checkpoint_cpu_s += cpu
            if s is self._standby:
                self._hold_out.difference_update(tried)
                self._held.update(r for r in loaded if r in self._hold_sent)
                self._feed_standby()
        elif kind == "ckpt":  # checkpoints taken at the end of steps
            _, seq, items, cpu = msg
            self._acked(s, seq)
            self.checkpoint_cpu_s += cpu
            for rid, step_id, n, blob in items:
                have = self._ckpts.get(rid)
                if (self._assign.get(rid) is s and (have is None or have[0] < step_id)
                        and self._ckpt_valid(rid, step_id, n)):
                    self._ckpts[rid] = (step_id, n, blob)
                    self.checkpoints += 1
        elif kind == "idle":  # a spare has done all it was sent, deferred mirror work included
            self._acked(s, msg[1])
            s.applied = max(s.applied, msg[1])
        elif kind == "ready":
            _, pid, words, _vocab_size, _name = msg
            s.ready, s.pid = True, pid
            if s.index == SPARE:
                self._spare_failures = 0
                if s is self._standby:
                    self._feed_standby()
            else:
                self._start_failures[s.index] = 0
            if self.words is None:
                self.words = words
        elif kind == "fatal":
            s.fatal = msg[1]

    def _commit(self, rid: Any, it: Optional[StepItem], step_id: int = 0) -> None:
        """A good step of `rid`: its accepted tokens are known up to here (for a replay)."""
        hist = self._hist.get(rid)
        if hist is None or it is None:
            return
        if it.rollback:
            del hist[len(hist) - it.rollback:]
            cuts = self._cuts.setdefault(rid, [])
            cuts.append((step_id, len(hist)))
            del cuts[:-_CUTS]
            ck = self._ckpts.get(rid)
            if ck is not None and ck[1] > len(hist):
                del self._ckpts[rid]
        hist.extend(int(t) for t in it.tokens)
        self._crashes[rid] = 0

    def _ckpt_valid(self, rid: Any, step_id: int, n: int) -> bool:
        """Whether a checkpoint of `rid` taken after step `step_id`, at `n` tokens, is its state
        after its first n committed tokens now (no rollback since went below n)."""
        hist = self._hist.get(rid)
        if hist is None or n > len(hist):
            return False
        cuts = self._cuts.get(rid)
        if not cuts:
            return True
        if len(cuts) >= _CUTS and cuts[0][0] > step_id:
            return False  # older than the rollbacks kept
        return all(left >= n for sid, left in cuts if sid > step_id)

    def _resume_point(self, rid: Any, tokens: list) -> Optional[tuple]:
        """(n, bytes): `rid`'s latest checkpoint, if it is the state after tokens[:n]."""
        ck = self._ckpts.get(rid)
        hist = self._hist.get(rid)
        if ck is None or hist is None or ck[1] > len(tokens) or not self._ckpt_valid(rid, ck[0], ck[1]):
            return None
        n = ck[1]
        if tokens is not hist and tokens[:n] != hist[:n]:
            return None
        return n, ck[2]

    def _forget(self, rid: Any, err: RequestFailed) -> None:
        self._failed[rid] = err
        slot = self._assign.pop(rid, None)
        if slot is not None:
            slot.rids.discard(rid)

    def _fail_result(self, h: StepHandle, rid: Any, err: RequestFailed) -> None:
        row = h.rows[rid]
        if self._bitmask is not None:
            self._bitmask[row, :] = 0
        h.results[rid] = StepResult(rid, row, False, None, False, err)

    def _death_cause(self, s: _Slot) -> str:
        s.proc.join(1.0)
        code = s.proc.exitcode
        name = "the spare mask worker" if s.index == SPARE else f"mask worker {s.index}"
        if s.fatal:
            return f"{name} (pid {s.pid}) could not serve: {s.fatal}"
        if code is None:
            s.proc.kill()
            s.proc.join(1.0)
            what = "closed its pipe (killed)"
        elif code < 0:
            try:
                what = f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                what = f"was killed by signal {-code}"
        else:
            what = f"exited with code {code}"
        return f"{name} (pid {s.pid}) {what}"

    def _start_failed(self, s: _Slot, cause: str) -> bool:
        """Count a death before the worker was ever ready; True once that slot is given up on
        (three in a row: the recipe cannot build, or the process cannot start here)."""
        if s.ready or s.fatal is not None:
            return s.fatal is not None
        if s.index == SPARE:
            self._spare_failures += 1
            n = self._spare_failures
        else:
            self._start_failures[s.index] += 1
            n = self._start_failures[s.index]
        if n >= 3:
            s.fatal = f"died {n} times in a row before it was ready ({cause})"
        return s.fatal is not None

    def _on_dead(self, s: _Slot, cause: str, timed_out: Optional[dict] = None) -> None:
        """Replace `s` (by a spare, else a fresh process) and move the requests it held, so they
        continue with identical masks and no step waits for a process to start: onto the
        spare's shadows when the spare is the mirror and caught up (nothing to compile), else
        re-added with the tokens they had accepted on the workers that are ready and caught up
        (each where it would finish first; onto the standby that took the slot where it holds the
        request's spec: only the checkpoint to resume; all of those there where the workers share
        cores); their part of outstanding steps is resent (same rows). A request whose worker
        died `max_replays` times in a row (no good step between) fails, saying so; one in
        `timed_out` (rid -> cause) fails with StepTimeout."""
        if s.dead:
            return
        s.dead = True
        timed_out = timed_out or {}
        self._retire(s)
        gave_up = self._start_failed(s, cause)
        if s.index == SPARE:
            if s in self._spares:
                self._spares.remove(s)
            if s is self._mirror:
                self._mirror = None
                self._shadow_sent, self._mirrored = set(), set()
            if s is self._standby:
                self._standby = None
                self._hold_queue, self._hold_sent, self._held, self._hold_out = {}, set(), set(), set()
            if gave_up:
                self.spares = len(self._spares)  # the recipe cannot start here: no more spares
            else:
                self._spawn_spare()
            return
        t_seen = time.perf_counter()
        ns: Optional[_Slot] = None
        took_spare = mirrored = False
        shadowed = self._mirrored  # (taking the mirror resets the set)
        standby, held = self._standby, self._held  # (and taking the standby resets its sets)
        if not gave_up and not self._closed:
            self.restarts += 1
            ns, mirrored = self._take_spare(s.index)
            took_spare = ns is not None
            if ns is None or ns is not standby:
                held = set()
            if ns is not None:
                ns.generation = s.generation + 1
            else:
                try:
                    ns = self._spawn(s.index, s.generation + 1)
                except Exception as e:  # noqa: BLE001 - the slot stays dead; the others go on
                    s.fatal = f"could not start a replacement: {type(e).__name__}: {e}"
            if ns is not None:
                self._slots[s.index] = ns
        targets = [x for x in self._slots if self._fresh(x)] or [x for x in self._slots if x.ready and not x.dead
                                                                  and x.fatal is None]
        if not targets and ns is not None:
            targets = [ns]
        elif held and ns is not None and ns.ready and ns not in targets:
            targets.append(ns)  # a standby behind only on its holds (dropped once it serves): it reads at once
        outstanding: dict[Any, int] = {}
        for h in self._steps.values():
            for rid in h.items:
                if rid not in h.results:
                    outstanding[rid] = outstanding.get(rid, 0) + 1
        moved: dict[Any, _Slot] = {}
        promoted: list = []  # served by `ns` from its shadows: resent without their tokens
        # the CPU each target would spend before it is done: its own requests' part of the step,
        # then the re-adds given to it (a spec held there costs only its resume)
        load = {x.index: len(x.rids) * self._cost_step for x in targets}
        # where the workers share cores a step ends when their total CPU is spent, wherever it
        # is spent: a request whose spec the standby holds goes there (it costs least there)
        shared = usable_cores() < len(targets) + 1
        n_held = 0
        for rid in sorted(s.rids, key=repr):
            n = self._crashes.get(rid, 0) + 1
            self._crashes[rid] = n
            promotable = mirrored and ns is not None and rid in shadowed and outstanding.get(rid, 0) <= 1
            if rid in timed_out:
                self._forget(rid, StepTimeout(rid, timed_out[rid], "StepTimeout"))
            elif rid not in self._docs or n > self.max_replays or not (targets or promotable):
                why = cause if n <= self.max_replays else (
                    f"{cause}; its worker died {n} times in a row while serving it, not replayed again")
                self._forget(rid, WorkerCrashed(rid, why, "WorkerCrashed"))
            elif promotable and ns is not None:
                ns.rids.add(rid)
                self._assign[rid] = ns
                moved[rid] = ns
                promoted.append(rid)
                self.promoted += 1
            else:
                # the target that would finish first (a replacement holds none: it takes more;
                # the standby that took the slot holds the spec: it takes most)
                hist_l = self._hist.get(rid, [])
                ck = self._resume_point(rid, hist_l)
                image = self._images.get(rid)
                base = self._cost_step + (self._cost_resume if ck is not None or image is not None else self._cost_add)
                extra = self._cost_spec if image is not None else self._cost_add  # where the spec is not held
                here = ns if rid in held else None
                t = here if here is not None and shared and here in targets else min(
                    targets, key=lambda x: (load[x.index] + base + (0.0 if x is here else extra), x.index))
                on_held = t is here
                load[t.index] += base + (0.0 if on_held else extra)
                n_held += on_held
                doc, prompt = self._docs[rid]
                t.rids.add(rid)
                self._assign[rid] = t
                self.resumed += ck is not None
                self._send(t, "add", rid, doc, prompt, tuple(hist_l), False, None if on_held else image, ck,
                           what=("add", rid, "replay"))
                moved[rid] = t
                self.replays += 1
                self.replay_tokens += len(hist_l) - (ck[0] if ck is not None else 0)
        s.rids.clear()
        if took_spare and ns is not None:  # a serving worker keeps no shadows
            self._send(ns, "promote", promoted)
        if took_spare and ns is not None and ns is standby:  # nor specs of requests it does not serve
            self._send(ns, "release")
        m = self._mirror
        if timed_out and m is not None and m.ready and not m.dead and not self._fresh(m):
            m.proc.kill()  # behind, maybe on the slow request's shadow: a fresh mirror is made without it
        for h in list(self._steps.values()):
            for key in [k for k in h.pending if k[0] == s.index and k[1] == s.generation]:
                rids = h.pending.pop(key)
                drafts_out = h.pending_drafts.pop(key, None) is not None
                resend: dict[int, list] = {}
                for rid in rids:
                    if rid in h.results:
                        continue
                    if rid in moved and rid in h.items:
                        it = h.items[rid]
                        if rid in promoted:  # its shadow has these tokens already
                            it = dataclasses.replace(it, tokens=(), rollback=0)
                        resend.setdefault(moved[rid].index, []).append(it)
                        h.replayed.add(rid)
                    else:
                        err = self._failed.get(rid) or WorkerCrashed(rid, cause, "WorkerCrashed")
                        self._fail_result(h, rid, err)
                for idx, items in resend.items():
                    self._send_part(h, self._slots[idx], items, drafts=drafts_out)
        self.deaths.append((t_seen, time.perf_counter() - t_seen, len(moved), n_held))
        self._spawn_spare()

    def _retire(self, s: _Slot) -> None:
        s.dead = True
        if s.sender is not None:
            s.outbox.put(None)
        for c in (s.send_conn, s.recv_conn):
            try:
                c.close()
            except Exception:  # noqa: BLE001
                pass

    def _busy_with(self, s: _Slot) -> Optional[tuple]:
        """(rid, what) of the request worker `s` was computing, from its progress word; None
        when it was between messages or on one that is not a request's."""
        if self._progress is None:
            return None
        word = int(self._progress[s.index])
        seq, k = word >> PROGRESS_SHIFT, word & ((1 << PROGRESS_SHIFT) - 1)
        what = s.what.get(seq) if seq else None
        if what is not None and what[0] == "add":
            return what[1], "while compiling this request's spec"
        if what is not None and what[0] == "step" and 0 <= k < len(what[2]):
            return what[2][k], f"while computing this request's rows and draft of step {what[1]}"
        return None

    def _expire(self, h: StepHandle, pending: dict, budget: float, replay: bool = True) -> None:
        """The budget of step `h` ran out with the parts in `pending` (its rows' or its drafts'
        map) still out. With kill_on_timeout, each late worker is killed; the
        request it was busy with fails with StepTimeout, its other requests are replayed (when
        `replay`) or fail too. Without, the late requests fail and their rows are cancelled."""
        for key in list(pending):
            if key not in pending:
                continue  # handled with an earlier part of the same worker
            idx, gen, _seq = key
            s = self._slots[idx]
            late = pending[key]
            where = f"mask worker {idx} (pid {s.pid})"
            if s.generation == gen and not s.dead and self.kill_on_timeout:
                busy = self._busy_with(s) if replay else None
                s.proc.kill()
                s.proc.join(1.0)
                if busy is not None:
                    rid, what = busy
                    timed = {rid: f"step {h.id} ran past its {budget:.3g} s budget on {where} {what}; the worker "
                                  f"was killed and replaced, and its other requests continue on other workers"}
                    cause = (f"{where} was killed: it overran step {h.id}'s {budget:.3g} s budget "
                             f"serving request {rid!r}")
                elif replay:
                    timed = {}
                    cause = f"{where} was killed: it gave no result within step {h.id}'s {budget:.3g} s budget"
                else:
                    cause = (f"step {h.id} got no result from {where} within its {budget:.3g} s budget, nor from "
                             f"the workers its requests were replayed on within one more; the worker was killed "
                             f"and replaced")
                    timed = dict.fromkeys(late, cause)
                self._on_dead(s, cause, timed_out=timed)
                continue
            cause = f"step {h.id} got no result from {where} within its {budget:.3g} s budget"
            # the worker may still be on this step: it checks this before each row it writes
            if self._cancelled is not None and not s.dead:
                self._cancelled[idx] = max(int(self._cancelled[idx]), h.id)
            h.pending.pop(key, None)
            h.pending_drafts.pop(key, None)
            for rid in late:
                if rid not in h.results:
                    err = StepTimeout(rid, cause, "StepTimeout")
                    self.remove_request(rid)
                    self._failed[rid] = err
                    self._fail_result(h, rid, err)

    def _check_open(self) -> None:
        if self._closed:
            raise PoolError("the pool is closed")


def _unlink(box: list) -> None:
    if box[0] is not None:
        try:
            os.unlink(box[0])
        except OSError:
            pass
        box[0] = None


def _cleanup(procs: list, shm_box: list, recipe_box: list) -> None:
    """Finalizer for a pool that was never closed."""
    _unlink(recipe_box)
    for p in procs:
        try:
            if p.is_alive():
                p.kill()
        except Exception:  # noqa: BLE001
            pass
    shm = shm_box[0]
    if shm is not None:
        try:
            shm.unlink()
        except Exception:  # noqa: BLE001
            pass
