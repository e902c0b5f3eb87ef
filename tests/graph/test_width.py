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


def test_policies_are_picklable_dataclasses_and_run_in_a_worker():
    import pickle

    pol = CertainWidth(CostModel(base=0.8, per_token=0.05, max_width=32), tree_allowance=3)
    back = pickle.loads(pickle.dumps(pol))
    assert back == pol
    # the engine's side: the cap is the smaller of the policy's and the engine's
    assert pol.for_worker(100) == (32, pol) and pol.for_worker(10) == (10, pol)
    # the worker's side: the same choice with the cost model capped at the engine's cap
    c = _state(7).request.constraint
    assert back.worker_width(c, 10) == CertainWidth(CostModel(0.8, 0.05, 10), 3).choose(c) == 10
    assert back.worker_width(c, 32) == pol.choose(c)


def test_the_core_imports_neither_the_engine_nor_torch():
    import subprocess
    import sys

    code = ("import sys, factorspec.graph.matcher, factorspec.graph.compiler, factorspec.draft, "
            "factorspec.constraint, factorspec.workers\n"
            "bad = [m for m in sys.modules if m.startswith(('factorspec.engine', 'torch', 'factorspec.integrations'))]\n"
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)
