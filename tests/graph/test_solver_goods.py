"""The search's memo of first solutions (`Problem.goods`) and the gap rule's pruned path
enumeration (`sequence._fillings`): both must change no answer and no witness.

Goods: a search node whose key (open domains, the decided values each factor reads) equals an
earlier node's has the same solutions on its open variables, hence the same first one; the
search takes it from the memo instead of searching again. Compared here with the same questions
asked with the memo off: every feasible value set and every witness along walks over trips
(generated and hand-made), and the memo must actually be used."""
from __future__ import annotations

import random
from typing import Any, Optional

from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.natural_plan import generate_file, parse_instance, to_spec
from factorspec.graph import Budget, compile_spec
from factorspec.graph.globals import sequence as Q
from factorspec.graph.solver import State


def _walk(problem, static: bool, seed: int) -> list:
    """feasible_values of every slot along a random walk, with each step's witness."""
    problem.static_order = static and problem.static_order
    problem.goods.clear()
    problem.nogoods.clear()
    st_ = State.root(problem, Budget(seconds=120, backend="own"))
    assert st_ is not None
    rnd = random.Random(seed)
    out = []
    for v in problem.branch_order:
        vals = st_.feasible_values(v)
        k = vals[rnd.randrange(len(vals))]
        nxt = st_.assign(v, k)
        assert nxt is not None
        out.append((v, vals, k, list(nxt.witness)))
        st_ = nxt
    return out


def test_goods_change_no_answer_on_generated_trips() -> None:
    hits = 0
    for n in (6, 8, 12):
        for iid, raw in generate_file(n, 3, 2).items():
            spec = to_spec(parse_instance(iid, raw))
            for seed in (0, 1):
                a = compile_spec(spec, budget=Budget(seconds=120, backend="own")).problem
                b = compile_spec(spec, budget=Budget(seconds=120, backend="own")).problem
                assert a.static_order  # trips branch in a static order: the memo applies
                with_memo = _walk(a, True, seed)
                without = _walk(b, False, seed)
                assert with_memo == without, (iid, seed)
                assert b.stats.good_hits == 0
                hits += a.stats.good_hits
    assert hits > 0  # the memo is exercised, not dead code


# -- _fillings: the live-set pruning against the plain enumeration -------------------------------

def _reference(adj, h, win, inside, ga, gb, s, e):
    """The enumeration without pruning (as before the live sets), uncapped."""
    out: dict[int, int] = {}

    def rec(cur, t, used, first):
        if t == gb:
            if e is None or cur is None or adj[cur] >> e & 1:
                out[used] = out.get(used, 0) | first
            return
        for v in range(len(adj)):
            if not inside >> v & 1 or used >> v & 1 or (cur is not None and not adj[cur] >> v & 1):
                continue
            if t + h[v] <= gb and win[v] >> t & 1:
                rec(v, t + h[v], used | 1 << v, first or 1 << v)

    rec(s, ga, 0, 0)
    return out


def _draw_ends(data: Any, nv: int) -> tuple[int, Optional[int], Optional[int]]:
    """A gap's inside set and its optional start and end values (never inside)."""
    inside = data.draw(st.integers(0, (1 << nv) - 1))
    s = data.draw(st.one_of(st.none(), st.integers(0, nv - 1)))
    e = data.draw(st.one_of(st.none(), st.integers(0, nv - 1)))
    if s is not None:
        inside &= ~(1 << s)
    if e is not None:
        inside &= ~(1 << e)
    return inside, s, e


@settings(max_examples=300, deadline=None)
@given(st.integers(2, 8), st.data())
def test_fillings_match_plain_enumeration(nv: int, data) -> None:
    adj = [data.draw(st.integers(0, (1 << nv) - 1)) & ~(1 << v) for v in range(nv)]
    h = [data.draw(st.integers(1, 4)) for _ in range(nv)]
    ga = data.draw(st.integers(0, 3))
    gb = ga + data.draw(st.integers(0, 9))
    win = {v: data.draw(st.integers(0, (1 << (gb + 2)) - 1)) for v in range(nv)}
    inside, s, e = _draw_ends(data, nv)
    got = Q._fillings(adj, h, win, inside, ga, gb, s, e)
    assert got is not None  # tiny instances stay under the step cap
    assert got == _reference(adj, h, win, inside, ga, gb, s, e)


def _tree_nodes(adj, h, win, inside, ga, gb, s, e) -> int:
    """Nodes of the pruned enumeration's tree, walked without a cap (what `_fillings` counts)."""
    live = [0] * (gb - ga + 1)
    for t in range(gb - 1, ga - 1, -1):
        for v in Q._bits(inside):
            t2 = t + h[v]
            if t2 > gb or not win[v] >> t & 1:
                continue
            if (t2 == gb and (e is None or adj[v] >> e & 1)) or (t2 < gb and adj[v] & live[t2 - ga]):
                live[t - ga] |= 1 << v

    def count(cur, t, used):
        if t == gb:
            return 1
        cand = inside & ~used & live[t - ga] & (adj[cur] if cur is not None else -1)
        return 1 + sum(count(v, t + h[v], used | 1 << v) for v in Q._bits(cand))

    return count(s, ga, 0)


@settings(max_examples=300, deadline=None)
@given(st.integers(2, 9), st.integers(1, 30), st.data())
def test_fillings_cap_is_exact(nv: int, cap: int, data) -> None:
    """`_fillings` gives up exactly where its tree has more nodes than FILL_STEPS, whether the
    three-level count (`_over_cap`) or the walk finds it; below the cap, the plain enumeration.
    (Dense tables and wide windows, so that trees pass small caps often.)"""
    full = (1 << nv) - 1
    adj = [data.draw(st.one_of(st.just(full), st.integers(0, full))) & ~(1 << v) for v in range(nv)]
    h = [data.draw(st.integers(1, 3)) for _ in range(nv)]
    ga = data.draw(st.integers(0, 2))
    gb = ga + data.draw(st.integers(0, 8))
    wfull = (1 << (gb + 2)) - 1
    win = {v: data.draw(st.one_of(st.just(wfull), st.integers(0, wfull))) for v in range(nv)}
    inside, s, e = _draw_ends(data, nv)
    args = (adj, h, win, inside, ga, gb, s, e)
    old = Q.FILL_STEPS
    Q.FILL_STEPS = cap
    try:
        got = Q._fillings(*args)
    finally:
        Q.FILL_STEPS = old
    if _tree_nodes(*args) > cap:
        assert got is None
    else:
        assert got == _reference(*args)
