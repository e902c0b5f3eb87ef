"""Hostile inputs (issue #14): huge numbers, deep nesting, huge records, garbage JSON. Each must
end in a clear error with the limit named (CLI exit 2) or in an answer, never a traceback; the
property part (hypothesis, bounded in time) checks random specs and records against brute force."""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from factorspec.cli import main
from factorspec.errors import FactorSpecError, SpecError
from factorspec.graph import compile_spec
from factorspec.graph.limits import MAX_DEPTH, elide, load_json

SMALL = {"type": "object",
         "properties": {"x": {"type": "integer", "minimum": 0, "maximum": 10},
                        "a": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 9},
                              "maxItems": 2_000_000}},
         "required": ["x", "a"], "x-factorspec": {"relations": [{"name": "pos", "expr": "x >= 1"}]}}


def _write(tmp_path: Path, name: str, text: str) -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


@pytest.mark.parametrize("text", [
    '{"type": "object", "properties": {"x": {"type": "integer", "minimum": ' + "9" * 5000 + "}}}",
    '{"type": "object", "properties": {"x": {"type": "integer", "maximum": -' + "1" * 4400 + "}}}",
    "[" * 100_000 + "]" * 100_000,
    '{"a": ' * 2000 + "1" + "}" * 2000,
    '{"type": "object", "properties": {"x": {"type": "integer", "minimum": NaN}}}',
    '{"type": "object", "properties": {"x": {"type": "integer", "minimum": Infinity}}}',
    '{"type": "obj',
    "",
])
def test_compile_spec_text_gives_spec_error(text: str) -> None:
    with pytest.raises(SpecError) as e:
        compile_spec(text)
    assert len(str(e.value)) < 400


def test_deep_spec_dict_is_a_spec_error() -> None:
    doc: dict = {"type": "object", "properties": {}}
    node = doc
    for _ in range(MAX_DEPTH + 10):
        node["properties"] = {"p": {"type": "object", "properties": {}}}
        node = node["properties"]["p"]
    with pytest.raises(SpecError, match="MAX_DEPTH"):
        compile_spec(doc)


@pytest.mark.parametrize("spec_text,record_text,what", [
    ('{"type": "object", "properties": {"x": {"type": "integer", "minimum": ' + "9" * 5000 + "}}}", '{"x": 1}', "spec"),
    (json.dumps(SMALL), '{"x": ' + "9" * 5000 + ', "a": []}', "record"),
    (json.dumps(SMALL), "[" * 100_000 + "]" * 100_000, "record"),
    ("[" * 100_000 + "]" * 100_000, '{"x": 1, "a": []}', "spec"),
    (json.dumps(SMALL), '{"x": 1, "a": [}', "record"),
    (json.dumps(SMALL), '{"x": NaN, "a": []}', "record"),
])
def test_cli_check_bad_input_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture, spec_text: str,
                                    record_text: str, what: str) -> None:
    spec = _write(tmp_path, "spec.json", spec_text)
    rec = _write(tmp_path, "rec.json", record_text)
    assert main(["check", spec, rec]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"factorspec: error: {what} ") and len(err) < 400


def test_cli_names_the_digit_limit(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    spec = _write(tmp_path, "spec.json", json.dumps(SMALL))
    rec = _write(tmp_path, "rec.json", '{"x": ' + "9" * 5000 + ', "a": []}')
    assert main(["check", spec, rec]) == 2
    assert "MAX_NUMBER_DIGITS" in capsys.readouterr().err


def test_cli_solve_bad_input_exit_2(tmp_path: Path) -> None:
    spec = _write(tmp_path, "spec.json", '{"type": "object", "properties": {"x": {"minimum": ' + "9" * 5000 + "}}}")
    assert main(["solve", spec]) == 2


def test_million_item_record_check_is_fast_and_bounded(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """The 10^6-item record of issue #14 took 31-44 s and echoed 6.8 MB: now seconds and a short line."""
    spec = _write(tmp_path, "spec.json", json.dumps({**SMALL, "properties": {
        **SMALL["properties"], "a": {**SMALL["properties"]["a"], "maxItems": 5}}}))
    rec = _write(tmp_path, "rec.json", json.dumps({"x": 0, "a": [1] * 10**6}))
    t0 = time.monotonic()
    assert main(["check", spec, rec]) == 1
    took = time.monotonic() - t0
    out = capsys.readouterr().out
    assert "array length 1000000 outside [0, 5]" in out
    assert len(out) < 2000, len(out)
    assert took < 15, took


def test_million_item_valid_items_check(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    doc = {**SMALL, "x-factorspec": {"relations": [{"name": "short", "expr": "len(a) <= 3"}]}}
    doc["properties"] = {**SMALL["properties"], "a": {**SMALL["properties"]["a"], "maxItems": 100_000}}
    spec = _write(tmp_path, "spec.json", json.dumps(doc))
    rec = _write(tmp_path, "rec.json", json.dumps({"x": 1, "a": [3] * 100_000}))
    t0 = time.monotonic()
    assert main(["check", spec, rec]) == 1
    assert time.monotonic() - t0 < 15
    out = capsys.readouterr().out
    assert "short: len(a) <= 3" in out and len(out) < 2000


def test_many_violations_are_capped(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    spec = _write(tmp_path, "spec.json", json.dumps(SMALL))
    rec = _write(tmp_path, "rec.json", json.dumps({"x": 1, "a": [11] * 1000}))
    assert main(["check", spec, rec]) == 1
    out = capsys.readouterr().out
    assert out.startswith("invalid: 1000 violations") and "... and 900 more" in out
    assert len(out.splitlines()) == 102


def test_long_relation_text_is_elided() -> None:
    expr = " or ".join(f"x == {k}" for k in range(2, 2000))
    cs = compile_spec({**SMALL, "x-factorspec": {"relations": [{"name": "long", "expr": expr}]}})
    (v,) = cs.check({"x": 1, "a": []})
    assert len(expr) > 10_000 and len(str(v)) < 1000 and "more characters" in str(v)


def _spec_of(props: dict, rels: list) -> dict:
    return {"type": "object", "properties": props, "required": list(props), "x-factorspec": {"relations": rels}}


DIGITS = {"type": "integer", "minimum": 0, "maximum": 9}
TOO_BIG = [  # each needs more than MAX_VARS variables through [*] paths alone
    _spec_of({"a": {"type": "array", "maxItems": 400, "items": {"type": "array", "maxItems": 400, "items": DIGITS}}},
             ["sum(a[*][*]) >= 0"]),
    _spec_of({f"a{i}": {"type": "array", "items": DIGITS, "maxItems": 60_000} for i in range(3)},
             [f"sum(a{i}[*]) >= 0" for i in range(3)]),
    _spec_of({"t": {"type": "array", "maxItems": 2_000, "items": {"type": "object", "required": ["g"], "properties": {
        "g": {"type": "array", "maxItems": 60, "items": {"type": "object", "required": ["v"],
                                                       "properties": {"v": DIGITS}}}}}}},
             ["all_different(t[*].g[*].v) or 1 == 1"]),
]


@pytest.mark.parametrize("doc", TOO_BIG)
def test_too_many_variables_fails_before_grounding(doc: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    """The "more than 100000 variables" error took 13-19 s (grounding made 100,000 variables
    first): now the [*] paths are sized against the schema before any variable is made."""
    from factorspec.errors import RelationError
    from factorspec.graph.ground import Grounder

    made = []
    real = Grounder._new_var

    def counting(self, *a, **k):  # type: ignore[no-untyped-def]
        made.append(1)
        return real(self, *a, **k)

    monkeypatch.setattr(Grounder, "_new_var", counting)
    with pytest.raises(RelationError, match="more than 100000 variables") as e:
        compile_spec(doc)
    assert "/x-factorspec/relations/" in str(e.value) and len(made) == 0, len(made)


def test_the_size_check_never_exceeds_what_grounding_makes() -> None:
    """check_size is a lower bound: over the examples and specs that ground, the variables its
    [*] paths count are never more than the grounder makes (it must not refuse a spec that fits)."""
    from factorspec.graph.ground import _star_slots

    docs = [json.loads(p.read_text()) for p in sorted((Path(__file__).parents[2] / "examples").glob("*.spec.json"))]
    docs += [SMALL, UNSAT,
             _spec_of({"a": {"type": "array", "maxItems": 30, "items": {"type": "array", "minItems": 2, "maxItems": 5,
                                                                        "items": DIGITS}}},
                      ["sum(a[*][*]) >= 3", "max(a[*][*]) <= 8", "len(a) >= 1", "has(a[3])"]),
             _spec_of({"a": {"type": "array", "maxItems": 50, "items": {"type": "object", "properties": {
                 "v": DIGITS, "w": {"type": "boolean"}}}}, "n": DIGITS},
                      ["sum(a[*].v) == n", "forall i in a: a[i].v >= 1 or a[i].w", "min(a[*].v) <= n"])]
    for doc in docs:
        cs = compile_spec(doc)
        seen: dict = {}
        for rel in cs.relations:
            seen.update(_star_slots(rel.ast, cs.template))
        assert sum(seen.values()) <= len(cs.vars), (doc.get("title"), sum(seen.values()), len(cs.vars))
    assert sum(seen.values()) >= 50  # the star paths were seen (a[*].v: 50 items)


def test_a_million_bad_items_list_the_first_violations_and_say_so(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture) -> None:
    """A check of 10^6 wrong items built 10^6 violations (10.7 s, 84 MB of text): now it stops
    at MAX_VIOLATIONS and its last entry names the limit; the CLI prints that line too."""
    from factorspec.graph.limits import MAX_VIOLATIONS
    from factorspec.graph.schema import schema_violations

    cs = compile_spec(SMALL)
    for bad in (11, "abc"):
        out = cs.check({"x": 1, "a": [bad] * 10**6})
        assert len(out) == MAX_VIOLATIONS + 1 and out[-1].relation == "limit"
        assert "MAX_VIOLATIONS" in str(out[-1]) and all(v.relation == "schema" for v in out[:-1])
        # the walk itself stops there (the time was in building 10^6 entries, not in printing them)
        assert len(schema_violations(cs.template, {"x": 1, "a": [bad] * 10**6})) == MAX_VIOLATIONS
        assert len(schema_violations(cs.template, [{"x": 1, "a": [bad] * 7_000}] * 3)) == 1
        assert len(schema_violations(cs.template, {"x": 1, "a": [bad] * 7_000, **{f"k{i}": 0 for i in range(5_000)}})) \
            == MAX_VIOLATIONS
    rec = _write(tmp_path, "rec.json", json.dumps({"x": 1, "a": [11] * 10**6}))
    assert main(["check", _write(tmp_path, "spec.json", json.dumps(SMALL)), rec]) == 1
    text = capsys.readouterr().out
    assert "MAX_VIOLATIONS" in text and len(text.splitlines()) == 103 and len(text) < 20_000


def test_relation_violations_are_capped_too(monkeypatch: pytest.MonkeyPatch) -> None:
    import factorspec.graph.spec as spec_mod

    monkeypatch.setattr(spec_mod, "MAX_VIOLATIONS", 50)
    cs = compile_spec(_spec_of({"a": {"type": "array", "items": DIGITS, "maxItems": 300}}, ["forall i in a: a[i] > 5"]))
    out = cs.check({"a": [1] * 300})
    assert len(out) == 51 and out[-1].relation == "limit" and out[0].relation == "relation[0]"
    assert len(cs.check({"a": [1] * 30})) == 30


@pytest.mark.parametrize("rel,tail", [
    (" + ".join(["x"] * 3000) + " ===", "at offset 12000"),
    ("q" * 20_000 + " == 1", "not a top-level property, table or index variable)"),
])
def test_error_messages_are_bounded_and_keep_the_reason(rel: str, tail: str) -> None:
    """Errors echoed whole expressions (12,109 and 20,118 characters): now cut in the middle to
    MAX_MESSAGE, the head naming the relation and the tail the reason."""
    from factorspec.errors import MAX_MESSAGE

    with pytest.raises(SpecError) as e:
        compile_spec({**SMALL, "x-factorspec": {"relations": [rel]}})
    text = str(e.value)
    assert len(text) <= MAX_MESSAGE + 60 and "characters elided" in text, len(text)
    assert text.startswith("/x-factorspec/relations/0: relation ") and tail in text[-300:]


def _nested(n: int) -> list:
    out: list = []
    cur = out
    for _ in range(n):
        cur.append([])
        cur = cur[0]
    return out


DEEP_SPEC = {"type": "object", "properties": {
    "x": {"type": "integer", "minimum": 0, "maximum": 10},
    "a": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}}, "any": {}}, "required": ["x"]}


@pytest.mark.parametrize("n", [400, 900, 975, 990, 1_100, 100_000])
@pytest.mark.parametrize("where", ["a", "x", "root", "any"])
def test_check_of_a_deep_record_is_an_answer_or_names_max_depth(n: int, where: str) -> None:
    """A record nested near or past the interpreter's recursion limit made `check` (the API)
    raise RecursionError, from the walk or from printing the offending value."""
    from factorspec.errors import InputLimitError

    cs = compile_spec(DEEP_SPEC)
    rec: Any = _nested(n) if where == "root" else {"x": 1, where: _nested(n)}
    try:
        out = cs.check(rec)
    except InputLimitError as e:
        assert "MAX_DEPTH" in str(e)
        return
    assert all(len(str(v)) < 2000 for v in out)
    assert (out == []) == (where == "any")


@pytest.mark.parametrize("n", [995, 600])
def test_cli_check_of_a_deep_record_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture,
                                            monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    """Too deep to parse (995), or parsed and then too deep for the check's walk (600 under a
    lowered recursion limit): exit 2 naming MAX_DEPTH either way, not a traceback."""
    import sys

    spec = _write(tmp_path, "spec.json", json.dumps(DEEP_SPEC))
    rec = _write(tmp_path, "rec.json", '{"x": 1, "a": ' + "[" * n + "]" * n + "}")
    import factorspec.graph.spec as spec_mod

    real = spec_mod.CompiledSpec.assignment_of

    def shallow(self, record):  # type: ignore[no-untyped-def]
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(len(__import__("inspect").stack()) + 300)
        try:
            return real(self, record)
        finally:
            sys.setrecursionlimit(old)

    monkeypatch.setattr(spec_mod.CompiledSpec, "assignment_of", shallow)
    code = main(["check", spec, rec])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("factorspec: error: record ") and "MAX_DEPTH" in err, (code, err)


def test_elide_and_load_json() -> None:
    assert elide("abc") == "abc"
    assert len(elide("x" * 10_000)) < 200
    assert load_json('{"a": [1, 2.5]}') == {"a": [1, 2.5]}
    with pytest.raises(FactorSpecError, match="MAX_NUMBER_DIGITS"):
        load_json("1" * 5000)


# -- one budget for the unsatisfiable answer, core search included -----------------------------------
UNSAT = {"type": "object",
         "properties": {k: {"type": "integer", "minimum": 0, "maximum": 5} for k in "xyzuvw"},
         "required": list("xyzuvw"),
         "x-factorspec": {"relations": [{"name": "one", "expr": "x == 1"}, {"name": "two", "expr": "x == 2"},
                                        {"name": "r3", "expr": "y != z"}, {"name": "r4", "expr": "u != v"},
                                        {"name": "r5", "expr": "v != w"}, {"name": "r6", "expr": "w != y"}]}}


def test_unsat_core_is_minimal_within_budget() -> None:
    from factorspec.errors import Unsatisfiable

    cs = compile_spec(UNSAT)
    with pytest.raises(Unsatisfiable) as e:
        cs.solve()
    assert e.value.relations == ["one", "two"] and e.value.minimal
    assert "not minimal" not in str(e.value)


def test_unsat_core_search_shares_the_question_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each trial of the deletion filter made slow (0.3 s): under a 1 s budget the answer comes
    within about the budget, names a conflicting (non-minimal) set and says so."""
    import factorspec.graph.spec as spec_mod
    from factorspec.errors import Unsatisfiable
    from factorspec.graph import Budget

    real_root = spec_mod.State.root
    calls = []

    def slow_root(problem, budget=None):  # type: ignore[no-untyped-def]
        calls.append(budget.seconds if budget else None)
        if len(calls) > 1:  # the question's own root search stays fast
            time.sleep(0.3)
        return real_root(problem, budget)

    monkeypatch.setattr(spec_mod.State, "root", staticmethod(slow_root))
    cs = compile_spec(UNSAT, Budget(seconds=1.0))
    t0 = time.monotonic()
    with pytest.raises(Unsatisfiable) as e:
        cs.solve()
    took = time.monotonic() - t0
    assert took < 1.5, took  # 7 trials x 0.3 s = 2.1 s with a fresh budget per trial
    assert not e.value.minimal and "not minimal" in str(e.value)
    assert {"one", "two"} <= set(e.value.relations)
    assert all(s is not None and s <= 1.0 for s in calls[1:])  # trials get what is left, never more


# -- property fuzz (hypothesis): specs, relation expressions and records vs. brute force -------------
import itertools  # noqa: E402

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from factorspec.errors import BudgetExceeded, Unsatisfiable  # noqa: E402
from factorspec.graph import Budget  # noqa: E402

TALLY = {"inputs": 0, "clear errors": 0, "crashes": 0, "hangs": 0, "answers wrong": 0, "budget": 0}
TALLY_HUGE = dict.fromkeys(TALLY, 0)  # the huge-magnitude cases (bounds past 2^53 units)
FIELDS = ("x", "y", "z")
FUZZ = settings(max_examples=int(__import__("os").environ.get("FACTORSPEC_HYPOTHESIS_CASES", "250")),
                deadline=None, suppress_health_check=list(HealthCheck), derandomize=True,
                phases=[Phase.explicit, Phase.generate])  # no shrinking: bounded time; failures print the case


def _expr(draw: st.DrawFn, doms: dict, depth: int = 0) -> str:
    """A relation that is also a Python expression (the oracle evaluates it with eval); constants
    are small or values of the (possibly huge) domains, so comparisons are not all trivial."""
    def term(d: int) -> str:
        if d > 2 or draw(st.booleans()):
            if draw(st.booleans()):
                return draw(st.sampled_from(FIELDS))
            if draw(st.booleans()):
                return str(draw(st.sampled_from(doms[draw(st.sampled_from(FIELDS))])))
            return str(draw(st.integers(-20, 20)))
        op = draw(st.sampled_from(["+", "-", "*"]))
        return f"({term(d + 1)} {op} {term(d + 1)})"
    kind = draw(st.integers(0, 4)) if depth < 2 else 0
    if kind <= 2:
        return f"{term(0)} {draw(st.sampled_from(['==', '!=', '<=', '>=', '<', '>']))} {term(0)}"
    if kind == 3:
        op = draw(st.sampled_from(["and", "or"]))
        return f"({_expr(draw, doms, depth + 1)}) {op} ({_expr(draw, doms, depth + 1)})"
    return f"not ({_expr(draw, doms, depth + 1)})"


@st.composite
def fuzz_spec(draw: st.DrawFn, huge: bool = False) -> tuple[dict, list[str], dict]:
    props, doms = {}, {}
    for f in FIELDS:
        base = draw(st.sampled_from([0, -5, 10**18, -(10**30), 7 * (2**53 + 1) - 14] if huge else [0, -5, 3, -40]))
        step = draw(st.sampled_from([1, 1, 2, 7]))
        lo = base - base % step
        n = draw(st.integers(0, 5))
        props[f] = {"type": "integer", "minimum": lo, "maximum": lo + n * step}
        if step != 1:
            props[f]["multipleOf"] = step
        doms[f] = [lo + k * step for k in range(n + 1)]
    rels = [_expr(draw, doms) for _ in range(draw(st.integers(1, 3)))]
    spec = {"type": "object", "properties": props, "required": list(FIELDS),
            "x-factorspec": {"relations": rels}}
    return spec, rels, doms


def _oracle(rels: list[str], rec: dict) -> bool:
    return all(eval(r, {"__builtins__": {}}, dict(rec)) for r in rels)  # noqa: S307 - our own grammar


def _run_case(fn: Any, tally: dict = TALLY) -> None:
    tally["inputs"] += 1
    t0 = time.monotonic()
    try:
        fn()
    except FactorSpecError as e:
        tally["clear errors"] += 1
        if len(str(e)) > 1100:  # a clear error is a bounded one
            tally["answers wrong"] += 1
            raise AssertionError(f"error message of {len(str(e))} characters") from None
    except AssertionError:
        tally["answers wrong"] += 1
        raise
    except Exception:
        tally["crashes"] += 1
        raise
    finally:
        if time.monotonic() - t0 > 10:
            tally["hangs"] += 1


@FUZZ
@given(fuzz_spec())
def test_fuzz_specs_against_brute_force(case: tuple[dict, list[str], dict]) -> None:
    _spec_case(case, TALLY)


@FUZZ
@given(fuzz_spec(huge=True))
def test_fuzz_huge_specs_against_brute_force(case: tuple[dict, list[str], dict]) -> None:
    _spec_case(case, TALLY_HUGE)


def _spec_case(case: tuple[dict, list[str], dict], tally: dict) -> None:
    spec, rels, doms = case

    def body() -> None:
        cs = compile_spec(spec, Budget(nodes=20_000, seconds=5.0))
        sols = [dict(zip(FIELDS, vals)) for vals in itertools.product(*(doms[f] for f in FIELDS))
                if _oracle(rels, dict(zip(FIELDS, vals)))]
        for vals in itertools.islice(itertools.product(*(doms[f] for f in FIELDS)), 60):
            rec = dict(zip(FIELDS, vals))
            assert (cs.check(rec) == []) == _oracle(rels, rec), (rels, rec)
        try:
            got = cs.solve()
        except Unsatisfiable:
            assert not sols, (rels, sols[:3])
            return
        except BudgetExceeded:
            tally["budget"] += 1
            raise
        assert _oracle(rels, got) and cs.check(got) == [], (rels, got)
        mentioned = all(any(f in r for r in rels) for f in FIELDS)
        if mentioned:
            assert cs.count() == len(sols), (rels, len(sols))

    _run_case(body, tally)


JUNK = st.recursive(st.none() | st.booleans() | st.integers(-(10**40), 10**40) | st.floats(allow_nan=False)
                    | st.text(max_size=8), lambda c: st.lists(c, max_size=4) | st.dictionaries(
                        st.sampled_from(["x", "y", "z", "a", "type"]), c, max_size=4), max_leaves=12)


@FUZZ
@given(JUNK)
def test_fuzz_records_never_crash(rec: Any) -> None:
    cs = compile_spec(SMALL)

    def body() -> None:
        out = cs.check(rec)
        assert isinstance(out, list)
        for v in out:
            assert len(str(v)) < 2000

    _run_case(body)


@FUZZ
@given(st.one_of(st.text(max_size=200), st.binary(max_size=100),
                 JUNK.map(lambda j: json.dumps(j)),
                 st.builds(lambda d, k, v: json.dumps({**SMALL, "properties": {**SMALL["properties"], k: v}})[:d],
                           st.integers(1, 2000), st.sampled_from(["x", "a", "q"]), JUNK)))
def test_fuzz_spec_texts_give_spec_errors(text: Any) -> None:
    def body() -> None:
        compile_spec(text)

    _run_case(body)


@FUZZ
@given(st.text(alphabet="xyz0123456789+-*/%()[]<>=!.,: andortifmsuc\"'", max_size=40))
def test_fuzz_relation_texts(expr: str) -> None:
    def body() -> None:
        cs = compile_spec({**SMALL, "x-factorspec": {"relations": [{"name": "r", "expr": expr}]}},
                          Budget(nodes=5_000, seconds=2.0))
        for rec in ({"x": 0, "a": []}, {"x": 5, "a": [1, 2]}):
            cs.check(rec)

    _run_case(body)


def test_fuzz_tally_printed() -> None:
    """Runs last in this module: the table of the issue (inputs, clear errors, crashes, ...)."""
    print("\nfuzz tally: " + ", ".join(f"{k} {v}" for k, v in TALLY.items()))
    print("fuzz tally, huge magnitudes: " + ", ".join(f"{k} {v}" for k, v in TALLY_HUGE.items()))
    for t in (TALLY, TALLY_HUGE):
        assert t["crashes"] == 0 and t["answers wrong"] == 0 and t["hangs"] == 0
