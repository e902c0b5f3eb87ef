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

