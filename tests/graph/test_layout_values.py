"""layout_values: `rejects` and `admits` are one-sided checks of a concrete value against a
compiled layout node. Over random small schemas and a universe of small JSON values: a value
`rejects` names is never accepted by the compiled spec, and a value `admits` names is accepted
by it and by the `jsonschema` validator (layouts are sound); both decide often enough to matter."""
from __future__ import annotations

import random

import jsonschema
import pytest

from factorspec.errors import SpecError
from factorspec.graph import compile_spec
from factorspec.graph.layout_values import admits, rejects
from tests.graph.test_exclusive import UNIVERSE, _leaf, _one_of


def _schema(r: random.Random) -> dict:
    return _one_of(r) if r.random() < 0.3 else _leaf(r, 0)


@pytest.mark.parametrize("chunk", range(4))
def test_rejects_and_admits_agree_with_the_compiled_spec_and_the_validator(chunk: int) -> None:
    decided_r = decided_a = compiled = 0
    for seed in range(chunk * 60, chunk * 60 + 60):
        s = _schema(random.Random(seed))
        try:
            cs = compile_spec(s)
        except SpecError:
            continue
        compiled += 1
        validator = jsonschema.Draft202012Validator(s)
        for v in UNIVERSE:
            if rejects(cs.template, v):
                decided_r += 1
                assert cs.check(v) != [], (s, v)
            if admits(cs.template, v):
                decided_a += 1
                assert cs.check(v) == [] and validator.is_valid(v), (s, v)
            assert not (rejects(cs.template, v) and admits(cs.template, v)), (s, v)
    assert compiled >= 30 and decided_r >= 200 and decided_a >= 100, (compiled, decided_r, decided_a)
