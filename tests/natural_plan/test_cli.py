"""The natural-plan subcommand, through main(argv), register() and `python -m`."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.natural_plan import check_plan, parse_instance
from benchmarks.natural_plan.command import main, register

REPO = Path(__file__).resolve().parents[2]


def test_to_specs(data_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "specs"
    assert main(["natural-plan", str(data_file), "--to-specs", str(out)]) == 0
    files = sorted(out.iterdir())
    assert len(files) == 75
    doc = json.loads(files[0].read_text(encoding="utf-8"))
    assert set(doc) == {"spec", "prompt", "golden"}
    iid = files[0].stem
    assert doc["spec"]["title"] == iid
    raw = json.loads(data_file.read_text(encoding="utf-8"))[iid]
    assert doc["prompt"].startswith(raw["prompt_0shot"])
    assert check_plan(parse_instance(iid, raw), doc["golden"]) == []


def test_generate_then_to_specs(tmp_path: Path) -> None:
    out = tmp_path / "gen.json"
    assert main(["natural-plan", "generate", "--cities", "12", "--seed", "4", "--count", "3",
                 "--out", str(out)]) == 0
    data = json.loads(out.read_text(encoding="utf-8"))
    assert list(data) == [f"generated_n12_s4_{k}" for k in range(3)]
    specs = tmp_path / "specs"
    assert main(["natural-plan", str(out), "--to-specs", str(specs)]) == 0
    assert sorted(p.name for p in specs.iterdir()) == [f"generated_n12_s4_{k}.json" for k in range(3)]


def test_parse_error_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gen = tmp_path / "gen.json"
    assert main(["natural-plan", "generate", "--cities", "4", "--seed", "0", "--count", "2",
                 "--out", str(gen)]) == 0
    data = json.loads(gen.read_text(encoding="utf-8"))
    data["generated_n4_s0_1"]["prompt_0shot"] = data["generated_n4_s0_1"]["prompt_0shot"].replace(
        "You only take", "We only take")
    gen.write_text(json.dumps(data), encoding="utf-8")
    capsys.readouterr()
    out = tmp_path / "specs"
    assert main(["natural-plan", str(gen), "--to-specs", str(out)]) == 2
    err = capsys.readouterr().err
    assert "generated_n4_s0_1" in err and "We only take" in err
    assert not out.exists()   # nothing half-written


@pytest.mark.parametrize("argv", [
    ["natural-plan", "generate", "--cities", "5"],
    ["natural-plan", "generate", "--cities", "5", "--seed", "1", "--count", "1", "--out", "x", "--to-specs", "d"],
    ["natural-plan", "generate", "--cities", "500", "--seed", "1", "--count", "1", "--out", "x"],
    ["natural-plan", "some.json"],
    ["natural-plan", "some.json", "--to-specs", "d", "--cities", "3"],
])
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert "error:" in capsys.readouterr().err


def test_missing_file_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["natural-plan", str(tmp_path / "nope.json"), "--to-specs", str(tmp_path / "d")]) == 2
    assert "nope.json" in capsys.readouterr().err


def test_register_into_a_host_parser(tmp_path: Path) -> None:
    """The way the main factorspec CLI uses it: register, parse, args.func(args)."""
    host = argparse.ArgumentParser(prog="factorspec")
    sub = host.add_subparsers(dest="command")
    register(sub)
    args = host.parse_args(["natural-plan", "generate", "--cities", "3", "--seed", "0", "--count", "1",
                            "--out", str(tmp_path / "g.json")])
    assert args.func(args) == 0 and (tmp_path / "g.json").is_file()


def test_python_dash_m(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "benchmarks.natural_plan.command", "natural-plan", "generate",
                        "--cities", "3", "--seed", "9", "--count", "2", "--out", str(tmp_path / "g.json")],
                       env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert len(json.loads((tmp_path / "g.json").read_text(encoding="utf-8"))) == 2
