"""Where the shared data lives (NATURAL PLAN, JSONSchemaBench), without hard-coding one machine.

Lookup order:
  1. the environment variable FACTORSPEC_SHARED_DATA (taken as is, even if it does not exist,
     so that a wrong setting shows up as "not found" rather than silently falling back);
  2. ``<repo>/../shared/data`` (CI runs in a fresh clone with ``shared/`` beside it).
When neither is there, `shared_data_dir` raises `SharedDataNotFound` naming both.
"""
from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "FACTORSPEC_SHARED_DATA"
NATURAL_PLAN_FILE = ("natural_plan", "trip_planning_100.json")


class SharedDataNotFound(FileNotFoundError):
    """Neither $FACTORSPEC_SHARED_DATA nor ``../shared/data`` beside the checkout is there."""


def repo_root() -> Path:
    """The checkout this package was imported from (the directory holding `factorspec/`)."""
    return Path(__file__).resolve().parents[1]


def beside_checkout() -> Path:
    """``shared/data`` in the directory that holds the checkout (the second lookup place)."""
    return repo_root().parent / "shared" / "data"


def shared_data_dir() -> Path:
    """The shared data directory (see the module docstring for the lookup order)."""
    env = os.environ.get(ENV_VAR, "").strip()
    if env:
        return Path(env).expanduser()
    beside = beside_checkout()
    if beside.is_dir():
        return beside
    raise SharedDataNotFound(
        f"shared data directory not found: ${ENV_VAR} is not set and {beside} (shared/data beside "
        f"the checkout) does not exist; set ${ENV_VAR} to the directory holding natural_plan/ "
        f"and jsonschemabench/, or put it at {beside}")


def shared_data_path(*parts: str) -> Path:
    """A path under the shared data directory (not checked for existence)."""
    return shared_data_dir().joinpath(*parts)


def natural_plan_file() -> Path:
    """The NATURAL PLAN trip-planning data file (may not exist on a machine without the data)."""
    return shared_data_path(*NATURAL_PLAN_FILE)
