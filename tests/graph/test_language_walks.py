"""Token-level random walks (with the exact-mask oracle at random positions) over specs written
in the relation forms of issue #13: every walk ends in a record that `check` accepts, with no
dead end, and the masks at the checked positions are exact."""
from __future__ import annotations

from typing import Any

import pytest

from factorspec.graph import compile_spec
from factorspec.graph.textstate import TextMachine

from .conftest import TOKENIZERS
from .test_language_features import I, S, arr, obj, spec

SPECS = {
    "nested_stars": spec({"tables": arr(obj({"guests": arr(I(0, 5), 1, 2)}), 2, 2)},
                         ["all_different(tables[*].guests[*])", "sum(tables[*].guests[*]) >= 6"]),
    "positional": spec({"t": arr(I(0, 2), 2, 3), "n": arr(I(0, 4), 3, 3), "d": I(0, 3)},
                       ["forall k: n[t[k]] <= capacity[t[k]]", "d == dist[t[0]][t[1]]"],
                       {"capacity": [3, 2, 0], "dist": [[0, 2, 1], [2, 0, 3], [1, 3, 0]]}),
    "string_order": spec({"guests": arr(S("bo", "al", "Cy", "é", "b"), 2, 4)},
                         ["forall k: guests[k] < guests[k+1]"]),
    "conditional_division": spec({"w": I(0, 20), "fee": I(0, 5), "total": I(0, 30),
                                  "shares": arr(I(0, 30), 1, 4)},
                                 ["fee == (5 if w > 10 else 0)",
                                  "forall i: shares[i] == (total + fee) / len(shares)"]),
    "presence": spec({"subtotal": I(0, 100), "discount": I(1, 20), "note": {"type": "string", "maxLength": 4},
                      "items": arr(I(0, 9), 0, 3)},
                     ["subtotal >= 50 implies has(discount)", "has(note) == has(items[1])",
                      "has(items[1]) implies items[1] > items[0]"], required=["subtotal", "items"]),
    "element_distinct": spec({"players": arr(obj({"name": S("a", "b", "c"), "skill": I(0, 3)}), 1, 3),
                              "captain": I(0, 2), "rooms": arr(I(0, 3), 2, 4)},
                             ["players[captain].skill == 3", "len(set(rooms[*])) == 2",
                              "count(rooms[i] == rooms[j] for i, j if i < j) >= 1"]),
    # second round (test_language_more.py): membership in the record, // and % by fields, tables of
    # tables, item generators, min/max of strings, all/any
    "items_and_tables": spec({"p": S("ann", "bob"), "d": I(0, 1), "h": I(0, 8), "xs": arr(I(0, 3), 1, 3),
                              "q": I(1, 3), "r": I(0, 3), "lo": S("bo", "Al", "cy")},
                             ["h == avail[p][d]", "r == sum(xs) % q", "q in xs",
                              "all(x < 3 for x in xs) or any(x == 3 for x in xs)", "lo == min(lo, \"bo\")"],
                             {"avail": {"ann": [8, 0], "bob": [4, 6]}}),
}


@pytest.mark.parametrize("key", sorted(SPECS))
def test_walks_over_new_forms(key: str, vocab_of: Any, walker: Any) -> None:
    cs = compile_spec(SPECS[key])
    tm = TextMachine(cs)
    v = vocab_of(TOKENIZERS[1])
    for seed in range(3):
        walker.walk(cs, tm, v, seed, oracle_steps=3, complete=1, disallowed=32)
