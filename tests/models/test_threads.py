"""Torch thread sizing from the usable CPUs: cgroup v1 and v2 quotas, unlimited, unreadable."""
from __future__ import annotations

import os

from factorspec.models.threads import _cgroup_quota, usable_cpus


def test_cgroup_v2_quota_rounds_up(tmp_path):
    (tmp_path / "cpu.max").write_text("150000 100000\n")
    assert _cgroup_quota(tmp_path) == 2


def test_cgroup_v2_unlimited(tmp_path):
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert _cgroup_quota(tmp_path) is None


def test_cgroup_v1_quota(tmp_path):
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("300000\n")
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert _cgroup_quota(tmp_path) == 3
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    assert _cgroup_quota(tmp_path) is None


def test_unreadable_quota_is_no_limit(tmp_path):
    (tmp_path / "cpu.max").write_text("garbage\n")
    assert _cgroup_quota(tmp_path) is None
    assert _cgroup_quota(tmp_path / "absent") is None


def test_usable_cpus_never_exceeds_affinity_or_quota(tmp_path):
    (tmp_path / "cpu.max").write_text("100000 100000\n")
    assert usable_cpus(tmp_path) == 1
    assert 1 <= usable_cpus(tmp_path / "absent") <= len(os.sched_getaffinity(0))



def test_one_thread_where_more_are_slower(monkeypatch):
    import pytest

    torch = pytest.importorskip("torch")
    from factorspec.models import threads

    before = torch.get_num_threads()
    monkeypatch.delenv("FACTORSPEC_TORCH_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(threads, "usable_cpus", lambda root=threads._CGROUP: 2)
    try:
        torch.set_num_threads(2)
        monkeypatch.setattr(threads, "_matmul_seconds", lambda n, **kw: 1.0 if n > 1 else 0.9)
        assert threads.configure_torch_threads() == 1  # busy CPUs: two threads lose to one
        torch.set_num_threads(2)
        monkeypatch.setattr(threads, "_matmul_seconds", lambda n, **kw: 0.5 if n > 1 else 1.0)
        assert threads.configure_torch_threads() == 2
        monkeypatch.setenv("FACTORSPEC_TORCH_THREADS", "1")
        assert threads.configure_torch_threads() == 1
    finally:
        torch.set_num_threads(before)
