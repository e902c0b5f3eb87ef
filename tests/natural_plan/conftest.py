"""Shared fixtures: the NATURAL PLAN data file (skipped with a reason when it is absent)."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from benchmarks.natural_plan import TripProblem, parse_instance
from factorspec.data import SharedDataNotFound, natural_plan_file

REPO = Path(__file__).resolve().parents[2]


def _candidates() -> list[str]:
    try:
        shared = str(natural_plan_file())
    except SharedDataNotFound:
        shared = ""
    return [os.environ.get("FACTORSPEC_NATURAL_PLAN_DATA", ""), shared]


def data_path() -> Path | None:
    for c in _candidates():
        if c and Path(c).is_file():
            return Path(c)
    return None


@pytest.fixture(scope="session")
def data_file() -> Path:
    p = data_path()
    if p is None:
        pytest.skip("NATURAL PLAN data file not found (set FACTORSPEC_SHARED_DATA or FACTORSPEC_NATURAL_PLAN_DATA)")
    return p


@pytest.fixture(scope="session")
def raw_data(data_file: Path) -> dict[str, dict[str, Any]]:
    return json.loads(data_file.read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def problems(raw_data: dict[str, dict[str, Any]]) -> dict[str, TripProblem]:
    return {iid: parse_instance(iid, raw) for iid, raw in raw_data.items()}
