"""A request resumed from its spec's image and a checkpoint of its matcher (what a re-add after a
worker's death uses, workers/checkpoint.py) behaves exactly as the matcher it was taken from: the
same mask, draft and accepts at every later position, oracle the original matcher run on."""
from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from worker_helpers import VOCAB, example_spec, plan_specs

from factorspec.graph.compiler import SpecCompiler
from factorspec.graph.token_vocab import unpack_mask
from factorspec.workers.checkpoint import dump_spec, dump_state, load_spec, load_state
from factorspec.workers.worker import Worker

V = VOCAB()


def _walk(spec: Any, seed: int) -> tuple[list, list, list]:
    """Decode `spec` with random allowed tokens; per position (mask, draft) and a checkpoint."""
    cc = SpecCompiler().compile(spec)
    m = cc.matcher(V)
    rng = random.Random(seed)
    seen, ckpts, toks = [], [], []
    while not m.is_terminated():
        d = m.draft(8)  # (a draft asks the solver ahead: the checkpoint carries those answers)
        mask = m.next_token_mask().copy()
        seen.append((mask.tobytes(), d.tokens, d.parents, d.certain))
        blob = dump_state(cc, m.checkpoint())
        assert blob is not None
        ckpts.append(blob)
        ids = [int(i) for i in unpack_mask(mask, V.vocab_size)]
        stops = set(V.stop_ids) & set(ids)
        t = min(stops) if stops else rng.choice(ids)
        assert m.accept_token(t)
        toks.append(t)
    return seen, ckpts, toks


SPECS = [("plan", s) for s in plan_specs(3, seed=5)] + [(n, example_spec(n)) for n in
                                                         ("invoice", "meeting_schedule", "budget_allocation")]


@pytest.mark.parametrize("image", [True, False], ids=["from-image", "compiled-again"])
@pytest.mark.parametrize("k", range(len(SPECS)), ids=[n for n, _ in SPECS])
def test_resumed_matcher_gives_the_masks_and_drafts_of_the_original(k: int, image: bool) -> None:
    spec = SPECS[k][1]
    seen, ckpts, toks = _walk(spec, seed=k)
    blob = dump_spec(SpecCompiler().compile(spec)) if image else None
    assert not image or blob is not None
    for j in range(0, len(ckpts), max(1, len(ckpts) // 6)):
        comp = SpecCompiler()
        cc = load_spec(comp, spec, blob) if blob is not None else comp.compile(spec)
        m = load_state(cc, ckpts[j], V, toks[:j])
        assert m.num_accepted() == j and bytes(m.text) == b"".join(V.token_bytes[t] for t in toks[:j])
        for pos in range(j, len(seen)):
            d = m.draft(8)
            assert (m.next_token_mask().tobytes(), d.tokens, d.parents, d.certain) == seen[pos], (j, pos)
            assert m.accept_token(toks[pos])
        assert m.is_terminated() and m.tokens == toks


def test_rollback_past_the_checkpoint_replays_from_the_start() -> None:
    """A resumed matcher can roll back only what it accepted since; the worker then rebuilds the
    request from its tokens, and the masks are those of the original after the same rollback."""
    spec = plan_specs(1, seed=9)[0]
    seen, ckpts, toks = _walk(spec, seed=1)
    j = len(toks) // 2
    w = Worker(V)
    comp = SpecCompiler()
    err = w.add("r", spec, None, toks[:j], False, dump_spec(comp.compile(spec)), (j, ckpts[j]))
    assert err is None and w.matchers["r"].rollback_room() == 0
    back = 5
    m = w._rewound("r", w.matchers["r"], back)
    assert m.rollback_room() == j
    m.rollback(back)
    assert m.next_token_mask().tobytes() == seen[j - back][0]
    with pytest.raises(ValueError, match="since it was resumed"):
        load_state(comp.compile(spec), ckpts[j], V, toks[:j]).rollback(1)


@pytest.mark.parametrize("k", range(len(SPECS)), ids=[n for n, _ in SPECS])
def test_readd_onto_a_held_spec_gives_the_masks_and_drafts_of_the_original(k: int) -> None:
    """A standby worker loads the spec from its image when idle (`hold`, `load_held`); a re-add
    there with no image and a checkpoint uses that spec (nothing loaded at the re-add, no image
    sent back) and gives, at every later position, the original's mask and draft."""
    spec = SPECS[k][1]
    seen, ckpts, toks = _walk(spec, seed=20 + k)
    image = dump_spec(SpecCompiler().compile(spec))
    for j in sorted({1, len(toks) // 3, len(toks) - 1}):
        w = Worker(V)
        w.seq = 5
        w.hold([("r", spec, image), ("other", spec, image)])
        assert "r" not in w.held and w.has_idle_work()  # loaded only when idle
        reply = w.load_held(lambda: False)
        assert reply[:4] == ("held", 5, ["r", "other"], ["r", "other"]) and not w.hold_due
        held = w.held["r"]
        assert w.add("r", spec, None, toks[:j], False, None, (j, ckpts[j])) is None
        assert w.add_parts[4] is True and w.add_parts[3] == 0  # the held spec; no token replayed
        assert w.origin["r"] is held and "r" not in w.held and not w.images_due
        w.release()
        assert not w.held and not w.hold_due
        m = w.matchers["r"]
        for pos in range(j, len(seen)):
            d = m.draft(8)
            assert (m.next_token_mask().tobytes(), d.tokens, d.parents, d.certain) == seen[pos], (j, pos)
            assert m.accept_token(toks[pos])
        assert m.is_terminated()


def test_held_spec_of_a_removed_request_is_dropped_and_a_bad_image_is_not_held() -> None:
    spec, other = plan_specs(2, seed=4)
    image = dump_spec(SpecCompiler().compile(spec))
    w = Worker(V)
    w.hold([("a", spec, image), ("b", spec, image), ("bad", other, b"not a pickle")])
    w.remove("b")  # before it was loaded
    reply = w.load_held(lambda: False)
    assert reply[2] == ["a"] and reply[3] == ["a", "bad"] and set(w.held) == {"a"}
    w.remove("a")
    assert not w.held and not w.has_idle_work()
    # a re-add of a request whose spec is not held loads its image (or compiles) as before
    assert w.add("c", spec, None, (), False, image, None) is None and w.add_parts[4] is False


def test_standby_imports_the_solver_when_idle_only_for_specs_that_may_need_it() -> None:
    """A held spec whose questions may go to CP-SAT (`backends.own_only` false) makes the
    standby import ortools as idle work, so that a kill's first re-add onto it does not pay the
    import (0.7 s of CPU) inside its step; a trip's spec (own search only) asks for nothing."""
    trip, other = plan_specs(1, seed=3)[0], example_spec("meeting_schedule")
    w = Worker(V)
    w.hold([("t", trip, dump_spec(SpecCompiler().compile(trip)))])
    w.load_held(lambda: False)
    assert "t" in w.held and not w.warm_due and not w.has_idle_work()
    w.hold([("m", other, dump_spec(SpecCompiler().compile(other)))])
    w.load_held(lambda: False)
    assert "m" in w.held and w.warm_due and w.has_idle_work()
    assert w.idle_work() is None and not w.warm_due and w.solver_warmed
    w.hold([("m2", other, dump_spec(SpecCompiler().compile(other)))])
    w.load_held(lambda: False)
    assert not w.warm_due and not w.has_idle_work()  # once a process


def test_a_trip_decodes_without_importing_ortools() -> None:
    """auto answers a trip by the own search; it must not import ortools on the way (a worker's
    first trip question, or a standby's first re-add, paid 0.7 s of CPU for it)."""
    root, here = Path(__file__).resolve().parents[2], Path(__file__).resolve().parent
    code = (
        "import sys\n"
        f"sys.path[:0] = [{str(root)!r}, {str(here)!r}]\n"
        "from worker_helpers import VOCAB, plan_specs, pick\n"
        "import random\n"
        "from factorspec.graph.compiler import SpecCompiler\n"
        "m = SpecCompiler().compile(plan_specs(2, seed=0)[1]).matcher(VOCAB())  # its root searches\n"
        "rng = random.Random(0)\n"
        "while not m.is_terminated():\n"
        "    m.draft(8)\n"
        "    assert m.accept_token(pick(m.next_token_mask(), rng))\n"
        "print('ortools' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "False"
