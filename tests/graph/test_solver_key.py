"""The search's node key (`_Search._key`) reads factors over the same variables as one group.

The key decides which search nodes share nogoods and first solutions (`Problem.goods`), so the
grouped key must make exactly the same nodes equal as the key with one entry per factor (the
reference below, the key before the grouping): checked on every node the searches of walks over
generated trips and hand-made specs enter, pair by pair through a canonical map."""
from __future__ import annotations

from typing import Any

from benchmarks.natural_plan import generate_file, parse_instance, to_spec
from factorspec.graph import Budget, compile_spec
from factorspec.graph import solver as S


def _per_factor_key(p: S.Problem, D: list) -> tuple:
    """The key with one entry per factor (as `_key` was before the groups)."""
    A, fixed, open_l = S.split_fixed(D)
    sigs: list[tuple[int, Any]] = []
    for ci, vs in enumerate(p.fvars):
        fm = sum(1 << v for v in vs)
        m = fm & fixed
        if not m:
            continue
        if m == fm:
            try:
                holds = bool(p.factors[ci].node.ev(A))
            except (TypeError, ZeroDivisionError):
                holds = False
            if not holds:
                sigs.append((ci, tuple(D[v] for v in vs)))
            continue
        fixed_vs = [v for v in vs if fixed >> v & 1]
        if p.set_sig[ci]:
            sigs.append((ci, frozenset(D[v] for v in fixed_vs)))
        else:
            sigs.append((ci, tuple((v, D[v]) for v in fixed_vs)))
    return tuple(open_l), tuple(sigs)


SPEC = {
    "type": "object",
    "properties": {
        "xs": {"type": "array", "minItems": 4, "maxItems": 4,
               "items": {"type": "integer", "minimum": 0, "maximum": 5}},
        "a": {"type": "integer", "minimum": 0, "maximum": 9},
        "b": {"type": "integer", "minimum": 0, "maximum": 9},
    },
    "required": ["xs", "a", "b"],
    "x-factorspec": {"relations": [
        {"name": "distinct", "expr": "all_different(xs[*])"},
        {"name": "sum", "expr": "a + b == xs[0] + xs[3]"},
        {"name": "order", "expr": "a <= b"},
        {"name": "odd", "expr": "(a + xs[1]) % 2 == 1"},
        {"name": "same_vars", "expr": "a != xs[1]"},
    ]},
}


def _walk_keys(spec: dict, pick_last: bool) -> list[tuple[tuple, tuple]]:
    """(grouped key, per-factor key) of every node whose key the searches of one walk compute."""
    cs = compile_spec(spec, budget=Budget(seconds=120, backend="own"))
    p = cs.problem
    got: list[tuple[tuple, tuple]] = []
    orig = S._Search._key

    def both(self: S._Search, D: list) -> tuple:
        k = orig(self, D)
        got.append((k, _per_factor_key(self.p, D)))
        return k

    S._Search._key = both  # type: ignore[method-assign]
    try:
        st = cs.root()
        assert st is not None
        for vid in p.branch_order:
            vals = st.feasible_values(vid)
            nxt = st.assign(vid, vals[-1] if pick_last else vals[0])
            assert nxt is not None
            st = nxt
    finally:
        S._Search._key = orig  # type: ignore[method-assign]
    return got


def _same_classes(pairs: list[tuple[tuple, tuple]]) -> None:
    """Equal grouped keys exactly where the per-factor keys are equal."""
    fwd: dict = {}
    back: dict = {}
    for g, f in pairs:
        assert fwd.setdefault(g, f) == f
        assert back.setdefault(f, g) == g


def test_grouped_key_equals_per_factor_key_on_trips() -> None:
    total = repeats = 0
    for n in (12, 20):
        for iid, raw in generate_file(n, 5, 2).items():
            spec = to_spec(parse_instance(iid, raw))
            for pick_last in (False, True):
                pairs = _walk_keys(spec, pick_last)
                _same_classes(pairs)
                total += len(pairs)
                repeats += len(pairs) - len({g for g, _ in pairs})
    assert total > 0 and repeats > 0  # keys were computed, and some nodes met again


def test_grouped_key_on_factors_sharing_variables() -> None:
    cs = compile_spec(SPEC, budget=Budget(seconds=60, backend="own"))
    groups = cs.problem.fgroups
    assert any(len(cis) > 1 for _, _, cis, _ in groups)  # `odd` and `same_vars` read a and xs[1]
    for pick_last in (False, True):
        pairs = _walk_keys(SPEC, pick_last)
        assert pairs
        _same_classes(pairs)
