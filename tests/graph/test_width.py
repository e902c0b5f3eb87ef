"""Per-request verify width from the cost model."""
from types import SimpleNamespace

from factorspec.draft.width import CertainWidth, CostModel


def _state(run: int):
    c = SimpleNamespace(certain_run=lambda cap: [0] * min(run, cap))
    return SimpleNamespace(request=SimpleNamespace(constraint=c))


def test_certain_tokens_are_always_sent_up_to_the_cap():
    pol = CertainWidth(CostModel(max_width=64))
    assert pol(_state(60), 8) == 60
    assert pol(_state(500), 1) == 64


def test_tree_allowance_only_while_the_rate_is_low():
    pol = CertainWidth(CostModel(per_token=0.0375, max_width=64), tree_allowance=4)
    assert pol(_state(0), 1) == 4  # nothing certain: branches are worth a try
    assert pol(_state(3), 1) == 7
    expensive = CertainWidth(CostModel(per_token=0.5, max_width=64), tree_allowance=4)
    assert expensive(_state(10), 1) == 10  # costly tokens: no speculative branches


def test_each_request_gets_its_own_width():
    pol = CertainWidth(CostModel(max_width=64))
    assert [pol(_state(n), 3) for n in (0, 12, 40)] == [4, 16, 40]
