"""The solver microbenchmark runs end to end (one small instance) and writes its reports."""
from __future__ import annotations

import json
from pathlib import Path

from microbench import solver_bench


def test_solver_bench_smoke(tmp_path: Path) -> None:
    assert solver_bench.main(["--sizes", "3", "--instances", "1", "--out-dir", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "solver_bench.json").read_text())
    (s,) = doc["summary"]
    assert s["cities"] == 3 and s["instances"] == 1 and s["slots_measured"] == 9
    assert s["slots_over_budget"] == 0 and s["solves_over_budget"] == 0
    assert doc["machine"]["python"] and doc["machine"]["cpu_model"]
    md = (tmp_path / "solver_bench.md").read_text()
    assert "| 3 |" in md and "p99" in md
