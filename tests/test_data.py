"""factorspec.data: the shared data directory is $FACTORSPEC_SHARED_DATA, else shared/data beside
the checkout, else a clear error naming both (no machine path is built in)."""
from __future__ import annotations

from pathlib import Path

import pytest

from factorspec import data


def test_env_var_wins_even_when_missing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(data.ENV_VAR, str(tmp_path / "nowhere"))
    assert data.shared_data_dir() == tmp_path / "nowhere"
    assert data.natural_plan_file() == tmp_path / "nowhere" / "natural_plan" / "trip_planning_100.json"


def test_beside_the_checkout(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(data.ENV_VAR, raising=False)
    monkeypatch.setattr(data, "repo_root", lambda: tmp_path / "checkout")
    (tmp_path / "shared" / "data").mkdir(parents=True)
    assert data.shared_data_dir() == tmp_path / "shared" / "data"
    assert data.shared_data_path("jsonschemabench") == tmp_path / "shared" / "data" / "jsonschemabench"


def test_neither_names_both(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(data.ENV_VAR, "  ")  # blank counts as unset
    monkeypatch.setattr(data, "repo_root", lambda: tmp_path / "checkout")
    with pytest.raises(data.SharedDataNotFound) as ei:
        data.shared_data_dir()
    msg = str(ei.value)
    assert "$FACTORSPEC_SHARED_DATA" in msg and str(tmp_path / "shared" / "data") in msg
    assert isinstance(ei.value, FileNotFoundError)
    with pytest.raises(data.SharedDataNotFound):
        data.natural_plan_file()


def test_no_machine_path_in_the_module() -> None:
    assert "/work/" not in Path(data.__file__).read_text(encoding="utf-8")
