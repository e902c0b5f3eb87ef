"""The DistinctSequence node's shortcuts (`sequence.SHORTCUTS`: answers known without running
their computation) against the computations themselves, on generated NATURAL PLAN trips long
enough for a long first gap: decoding walks (root, then each slot's feasible values, taking the
smallest) give the same values, the same records and the same search nodes either way, and the
shortcuts do fire there (openers known from splits already found or searched among the short
gaps' sets, paths instead of fillings, fillings read from the gap's last ones)."""
from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from benchmarks.natural_plan import generate_file, parse_instance, to_spec
from factorspec.graph import Budget, compile_spec
from factorspec.graph.globals import sequence as Q


def _walk(problem: Any) -> tuple[list, list, int]:
    """(each slot's feasible values, each state's record, search nodes) of one decoding walk."""
    cs = compile_spec(to_spec(problem), Budget(seconds=120, backend="own"))
    st = cs.root()
    values, records = [], [list(st.witness)]
    for v in sorted(cs.var_of.values(), key=lambda v: v.order):
        vals = st.feasible_values(v.id)
        values.append(vals)
        if not vals:
            break
        st = st.assign(v.id, vals[0])
        records.append(list(st.witness))
    return values, records, st.problem.stats.nodes


def _spy(monkeypatch: pytest.MonkeyPatch, fired: Counter) -> None:
    """Count the shortcuts that answer (and the fillings enumerated)."""
    opens, opener, path, fillings = (Q.DistinctSequence._opens, Q.DistinctSequence._opener,
                                     Q.DistinctSequence._opening_path, Q._fillings)

    def spy_opens(self, *a):
        r = opens(self, *a)
        fired["opens"] += r is not None
        return r

    def spy_opener(self, *a):
        r = opener(self, *a)
        fired["opener"] += r is not None
        return r

    def spy_path(self, *a):
        r = path(self, *a)
        fired["path"] += bool(r)
        return r

    def spy_fillings(*a):
        fired["fillings"] += 1
        return fillings(*a)

    monkeypatch.setattr(Q.DistinctSequence, "_opens", spy_opens)
    monkeypatch.setattr(Q.DistinctSequence, "_opener", spy_opener)
    monkeypatch.setattr(Q.DistinctSequence, "_opening_path", spy_path)
    monkeypatch.setattr(Q, "_fillings", spy_fillings)


@pytest.mark.parametrize("size,index", [(20, 1), (20, 3), (30, 1)])
def test_shortcuts_change_no_answer_record_or_node(monkeypatch: pytest.MonkeyPatch, size: int, index: int) -> None:
    problem = parse_instance(*list(generate_file(size, 0, index + 1).items())[index])
    with_, without = Counter(), Counter()
    with monkeypatch.context() as m:
        _spy(m, with_)
        got = _walk(problem)
    with monkeypatch.context() as m:
        m.setattr(Q, "SHORTCUTS", False)
        _spy(m, without)
        want = _walk(problem)
    assert got == want
    assert with_["opens"] > 0 and with_["opener"] > 0 and with_["path"] > 0, with_
    assert without["opens"] == without["opener"] == without["path"] == 0, without
    assert with_["fillings"] < without["fillings"], (with_, without)
