"""`factorspec check` / `factorspec solve`: the exit-code contract other checks rely on.

check: 0 valid, 1 violations (each printed with name, text, paths and values), 2 bad spec or
unreadable input. solve: 0 with a record (or --count: the number, last word on stdout), 3
unsatisfiable (naming the conflicting relations), 2 bad spec, 4 budget exceeded."""
from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

from factorspec import cli
from factorspec.cli import main
from factorspec.graph import compile_spec

REPO = Path(__file__).resolve().parents[1]
EX = REPO / "examples"
INVOICE, INVOICE_REC = EX / "invoice.spec.json", EX / "invoice.record.json"
TRIP, TRIP_REC = EX / "trip_plan.spec.json", EX / "trip_plan.record.json"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def _write(tmp_path: Path, name: str, obj: object) -> str:
    p = tmp_path / name
    p.write_text(obj if isinstance(obj, str) else json.dumps(obj), encoding="utf-8")
    return str(p)


def test_check_valid(capsys: pytest.CaptureFixture[str]) -> None:
    for spec in sorted(EX.glob("*.spec.json")):
        rec = str(spec).replace(".spec.", ".record.")
        rc, out, _ = _run(capsys, "check", str(spec), rec)
        assert rc == 0 and out.strip() == "valid", spec


def test_check_invalid_prints_every_violation(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rec = json.loads(INVOICE_REC.read_text())
    rec["tax"] = 2.67  # breaks tax and total
    rc, out, _ = _run(capsys, "check", str(INVOICE), _write(tmp_path, "r.json", rec))
    assert rc == 1
    assert "2 violations" in out
    assert "tax: tax == round(subtotal * 0.08, 0.01)" in out and "tax=2.67" in out and "subtotal=33.48" in out
    assert "total: total == subtotal + tax" in out and "total=36.16" in out


def test_check_schema_violation_is_exit_1(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rec = json.loads(TRIP_REC.read_text())
    rec["itinerary"][0]["city"] = "Atlantis"
    rc, out, _ = _run(capsys, "check", str(TRIP), _write(tmp_path, "r.json", rec))
    assert rc == 1 and "schema" in out and "itinerary[0].city" in out


def test_check_record_from_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(TRIP_REC.read_text()))
    assert _run(capsys, "check", str(TRIP), "-")[0] == 0
    bad = json.loads(TRIP_REC.read_text())
    bad["itinerary"][0]["end_day"] = 6
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(bad)))
    rc, out, _ = _run(capsys, "check", str(TRIP), "-")
    assert rc == 1 and "stay_length [i=0]" in out and "fly_same_day [i=0]" in out


@pytest.mark.parametrize("what", ["missing_record", "record_not_json", "missing_spec", "spec_not_json",
                                  "bad_spec", "bad_relation", "both_stdin"])
def test_check_errors_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path, what: str) -> None:
    spec, rec = str(TRIP), str(TRIP_REC)
    if what == "missing_record":
        rec = str(tmp_path / "nope.json")
    elif what == "record_not_json":
        rec = _write(tmp_path, "r.json", "{not json")
    elif what == "missing_spec":
        spec = str(tmp_path / "nope.json")
    elif what == "spec_not_json":
        spec = _write(tmp_path, "s.json", "[1, 2")
    elif what == "bad_spec":
        doc = json.loads(TRIP.read_text())
        doc["properties"]["itinerary"]["items"]["properties"]["city"]["pattern"] = "^(a)\\1"
        spec = _write(tmp_path, "s.json", doc)
    elif what == "bad_relation":
        doc = json.loads(TRIP.read_text())
        doc["x-factorspec"]["relations"][2]["expr"] = "forall i: itinerary[i].nope == 1"
        spec = _write(tmp_path, "s.json", doc)
    else:
        spec = rec = "-"
    rc, out, err = _run(capsys, "check", spec, rec)
    assert rc == 2 and out == "" and err.startswith("factorspec: error:"), (out, err)
    if what == "bad_spec":
        assert "/properties/itinerary/items/properties/city/pattern" in err
    if what == "bad_relation":
        assert "/x-factorspec/relations/2" in err and "stay_length" in err and "'nope'" in err


def test_solve_prints_a_valid_record(capsys: pytest.CaptureFixture[str]) -> None:
    for spec in sorted(EX.glob("*.spec.json")):
        rc, out, _ = _run(capsys, "solve", str(spec))
        assert rc == 0, spec
        rec = json.loads(out)
        cs = compile_spec(json.loads(spec.read_text()))
        assert cs.check(rec) == [], spec
        assert out.strip() == cs.canonical_text(rec)  # canonical layout


def test_solve_count(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, "solve", str(TRIP), "--count")
    assert rc == 0 and int(out.split()[-1]) == 1
    rc, out, _ = _run(capsys, "solve", str(EX / "seating_plan.spec.json"), "--count")
    assert rc == 0 and int(out.split()[-1]) == 720
    rc, out, _ = _run(capsys, "solve", str(EX / "seating_plan.spec.json"), "--count", "--limit", "10")
    assert rc == 0 and int(out.split()[-1]) == 10 and "limit" in out


def test_solve_accepts_to_specs_files(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The {"spec", "prompt", "golden"} files that `natural-plan --to-specs` writes."""
    gen = tmp_path / "gen.json"
    assert main(["natural-plan", "generate", "--cities", "5", "--seed", "3", "--count", "2", "--out", str(gen)]) == 0
    out_dir = tmp_path / "specs"
    assert main(["natural-plan", str(gen), "--to-specs", str(out_dir)]) == 0
    capsys.readouterr()
    for f in sorted(out_dir.iterdir()):
        doc = json.loads(f.read_text())
        rc, out, _ = _run(capsys, "solve", str(f))
        assert rc == 0
        assert compile_spec(doc["spec"]).check(json.loads(out)) == []
        rc, out, _ = _run(capsys, "solve", str(f), "--count")
        assert rc == 0 and int(out.split()[-1]) >= 1
        assert _run(capsys, "check", str(f), _write(tmp_path, "g.json", doc["golden"]))[0] == 0


def test_solve_unsatisfiable_exit_3(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    doc = json.loads(TRIP.read_text())
    doc["x-factorspec"]["relations"].append({"name": "one_day_first", "expr": "itinerary[0].end_day == 1"})
    spec = _write(tmp_path, "s.json", doc)
    rc, out, _ = _run(capsys, "solve", spec)
    assert rc == 3
    assert "unsatisfiable" in out and "one_day_first" in out and "stay_length" in out
    assert "  one_day_first: itinerary[0].end_day == 1" in out
    assert _run(capsys, "solve", spec, "--count")[0] == 3


def test_solve_bad_spec_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    doc = json.loads(INVOICE.read_text())
    doc["properties"]["subtotal"]["type"] = "decimal"
    rc, out, err = _run(capsys, "solve", _write(tmp_path, "s.json", doc))
    assert rc == 2 and "/properties/subtotal/type" in err and out == ""
    rc, _, err = _run(capsys, "solve", str(tmp_path / "missing.json"))
    assert rc == 2 and "cannot read" in err


def test_solve_budget_exceeded_exit_4(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run(capsys, "solve", str(INVOICE), "--count", "--max-nodes", "3")
    assert rc == 4 and "budget exceeded" in err and out == ""


def test_natural_plan_is_registered(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as ei:
        main(["--help"])
    assert ei.value.code == 0
    out = capsys.readouterr().out
    for cmd in ("check", "solve", "natural-plan", "run", "bench"):
        assert cmd in out


def test_cli_module_does_not_import_benchmarks() -> None:
    """The benchmark commands are imported when the parser is built, not with the module."""
    code = ("import sys, factorspec.cli; "
            "bad = sorted(m for m in sys.modules if m == 'benchmarks' or m.startswith('benchmarks.')); "
            "assert not bad, bad; "
            "factorspec.cli.build_parser(); "
            "assert 'benchmarks.commands' in sys.modules and 'benchmarks.natural_plan.command' in sys.modules")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       cwd=str(REPO))
    assert p.returncode == 0, p.stderr


def test_benchmark_commands_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    """bench (and natural-plan) come from a benchmarks module's register(subparsers)."""
    fake = types.ModuleType("benchmarks.commands")

    def register(sub: object) -> None:
        p = sub.add_parser("hello-hook")  # type: ignore[attr-defined]
        p.set_defaults(func=lambda args: 7)

    fake.register = register  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "benchmarks.commands", fake)
    assert main(["hello-hook"]) == 7
    # a module that fails to import does not break check/solve; --help names it
    broken = types.ModuleType("benchmarks.commands")
    monkeypatch.setitem(sys.modules, "benchmarks.commands", broken)  # no register()
    assert main(["check", str(TRIP), str(TRIP_REC)]) == 0
    epilog = cli.build_parser().epilog or ""
    assert "benchmarks.commands: AttributeError" in epilog and "register" in epilog


@pytest.mark.skipif(shutil.which("factorspec") is None, reason="console script not installed")
def test_console_script() -> None:
    p = subprocess.run(["factorspec", "check", str(TRIP), str(TRIP_REC)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "valid"
    p = subprocess.run(["factorspec", "solve", str(TRIP)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and json.loads(p.stdout)["itinerary"][0]["start_day"] == 1
    p = subprocess.run([sys.executable, "-m", "factorspec.cli", "check", str(TRIP), "-"], input="{",
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2
