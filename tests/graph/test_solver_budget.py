"""Budgets are per question: feasible_values runs one search per candidate value, and those
searches share the question's seconds instead of each getting a fresh budget."""
from __future__ import annotations

import pytest

from factorspec.errors import BudgetExceeded
from factorspec.graph import compile_spec
from factorspec.graph import solver as S

SPEC = {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 9},
                                         "b": {"type": "integer", "minimum": 0, "maximum": 9}},
        "required": ["a", "b"], "x-factorspec": {"relations": ["a + b == 9"]}}


def _spy_clock(monkeypatch: pytest.MonkeyPatch, step: float) -> list[float]:
    """A fake clock that advances `step` seconds each time a search starts; returns the deadlines."""
    clock = [1000.0]
    monkeypatch.setattr(S.time, "monotonic", lambda: clock[0])
    deadlines: list[float] = []
    orig = S._Search.__init__

    def spy(self, problem, budget):  # type: ignore[no-untyped-def]
        orig(self, problem, budget)
        deadlines.append(self.deadline)
        clock[0] += step

    monkeypatch.setattr(S._Search, "__init__", spy)
    return deadlines


def test_searches_of_one_question_share_its_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    cs = compile_spec(SPEC)
    root = cs.root()
    deadlines = _spy_clock(monkeypatch, 0.05)
    st = S.State(root.problem, root.D, root.witness, S.Budget(seconds=1.0, backend="own"))
    vid = cs.var_of["/a"] if "/a" in cs.var_of else next(v.id for v in cs.vars if v.name.endswith("a"))
    st.feasible_values(vid)
    assert len(deadlines) >= 5  # one search per candidate value (the witness's one included)
    assert max(deadlines) <= 1000.0 + 1.0 + 1e-9  # all inside the question's single second


def test_many_short_searches_still_hit_the_question_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each search is a few nodes (under any node-count check interval), but together they pass
    the question's second: the question raises instead of running on."""
    cs = compile_spec(SPEC)
    root = cs.root()
    _spy_clock(monkeypatch, 0.3)
    st = S.State(root.problem, root.D, root.witness, S.Budget(seconds=1.0, backend="own"))
    vid = cs.var_of["/a"] if "/a" in cs.var_of else next(v.id for v in cs.vars if v.name.endswith("a"))
    with pytest.raises(BudgetExceeded):
        st.feasible_values(vid)


def test_question_scope_is_released_after_a_budget_error(monkeypatch: pytest.MonkeyPatch) -> None:
    cs = compile_spec(SPEC)
    root = cs.root()
    p = root.problem
    with pytest.raises(BudgetExceeded):
        with p.question(S.Budget(seconds=1.0, backend="own")):
            raise BudgetExceeded("seconds", 1.0, 2.0)
    assert getattr(p._question, "deadline", None) is None
