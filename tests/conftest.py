"""Suite-wide: the `slow` marker (tests that load a real model run when FACTORSPEC_RUN_SLOW=1,
as CI does)."""
import os

import pytest


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: loads a real model (set FACTORSPEC_RUN_SLOW=1 to run)")


def pytest_collection_modifyitems(config, items):
    if os.environ.get("FACTORSPEC_RUN_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow: set FACTORSPEC_RUN_SLOW=1 to run")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
