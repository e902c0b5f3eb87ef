"""The prepared GPU one-shot (microbench/gpu_all.sh and friends), exercised on CPU: the scripts
parse, the device call stated in gpu_all.sh fits the device tool's limits, and gpu_engine.py runs
the reference engine end to end with a tiny random model and the real tokenizer. No GPU figure
comes from here."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MB = ROOT / "microbench"
SCRIPTS = ["gpu_all.sh", "gpu_prepare.sh", "gpu_check.sh", "gpu_sglang.sh"]


def _env(**extra: str) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1",
               TOKENIZERS_PARALLELISM="false", **extra)
    env.pop("TRITON_INTERPRET", None)
    env.pop("FACTORSPEC_KERNEL_BACKEND", None)
    return env


@pytest.mark.parametrize("name", SCRIPTS)
def test_scripts_parse(name):
    subprocess.run(["bash", "-n", str(MB / name)], check=True)


def test_stated_device_call_fits_the_limits():
    head = (MB / "gpu_all.sh").read_text()
    m = re.search(r'run\(command="([^"]+)", carry=(\[[^\]]*\]), timeout_s=(\d+)\)', head)
    assert m, "gpu_all.sh states the exact run call in its header"
    command, carry, timeout_s = m.group(1), json.loads(m.group(2)), int(m.group(3))
    assert len(command) <= 2000 and 1 <= len(carry) <= 8 and timeout_s <= 600
    total = int(re.search(r'TOTAL_S="\$\{TOTAL_S:-(\d+)\}"', head).group(1))
    assert total + 30 <= timeout_s, "the script's own cap leaves the call's timeout a margin"
    # the carried folders are the ones gpu_prepare.sh makes and git ignores
    prep = (MB / "gpu_prepare.sh").read_text()
    for path in carry:
        assert f"/{path}/" in prep


def test_carried_xgrammar_is_the_pinned_one():
    pin = re.search(r'"xgrammar==([\d.]+)"', (ROOT / "setup.py").read_text()).group(1)
    assert f"xgrammar=={pin}" in (MB / "gpu_prepare.sh").read_text()


def test_gpu_sglang_refuses_honestly_without_sglang(tmp_path):
    pytest.importorskip("torch")
    # asked of a fresh interpreter, as the script asks it: in this process another test module
    # may have put a CPU stub of sgl_kernel in sys.modules
    env = _env(OUT=str(tmp_path), PYTHON=sys.executable)
    probe = subprocess.run([sys.executable, "-c", "import sgl_kernel, sglang"], env=env,
                           capture_output=True, timeout=120)
    if probe.returncode == 0:
        pytest.skip("sglang's kernels are installed here: the script would really run")
    r = subprocess.run(["bash", str(MB / "gpu_sglang.sh")], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and "cannot run here" in r.stdout


def _microbench(name: str):
    """A module of microbench/ (a folder of scripts, not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"_gpu_scripts_{name}", MB / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _tokenizer_or_skip():
    pytest.importorskip("transformers")
    from benchmarks.commands import _default_data
    from factorspec.models import ModelNotAvailable

    gpu_engine = _microbench("gpu_engine")
    try:
        from factorspec.models import load_tokenizer

        load_tokenizer(gpu_engine.default_tokenizer())
    except ModelNotAvailable as e:
        pytest.skip(f"default model's tokenizer not installed: {e}")
    if not Path(gpu_engine.default_data()).is_file() and not Path(_default_data()).is_file():
        pytest.skip("NATURAL PLAN data not found")


def test_gpu_engine_runs_on_cpu_with_a_tiny_random_model(tmp_path):
    _tokenizer_or_skip()
    out = tmp_path / "engine.json"
    r = subprocess.run([sys.executable, str(MB / "gpu_engine.py"), "--device", "cpu", "--tiny", "--limit", "1",
                        "--batches", "1", "--warmup-tokens", "0", "--configs", "fs_mask,fs_full", "--out", str(out)],
                       env=_env(), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    d = json.loads(out.read_text())
    assert "RANDOM-INIT" in d["label"] and d["model"]["config"]["vocab_size"] == 151936
    runs = {s["name"]: s for s in d["runs"]}
    assert set(runs) == {"fs_mask", "fs_full"} and not d["errors"]
    for s in runs.values():
        assert s["valid_rate"] == 1.0, s["odd_finishes"]  # FactorSpec masks: every record valid
        assert s["engine_steps"] >= 1 and s["decode_seconds_per_record"] > 0
        assert "random-init" in s["label"]
    assert runs["fs_mask"]["tokens_per_verify_step"] == 1.0
    assert runs["fs_full"]["tokens_per_verify_step"] > 10  # certain runs verified in bulk
    assert d["exactness"] == {"fs_full_vs_fs_mask_batch1": "1/1"}
    # on CPU the engine's masked argmax goes through factorspec.kernels' torch side
    assert d["dispatch"]["ok"] and d["dispatch"]["expected"] == "kernels.apply_bitmask: torch"
    _microbench("gpu_summary").engine(str(out))  # the summary reads it without complaint


@pytest.mark.slow
def test_gpu_all_dry_run_on_cpu(tmp_path):
    """The whole one-shot in its CPU dry-run mode (needs `bash microbench/gpu_prepare.sh` first)."""
    if not (ROOT / ".whl").is_dir() or not (ROOT / ".gpu_carry" / "tokenizer").is_dir():
        pytest.skip("run `bash microbench/gpu_prepare.sh` first (.whl and .gpu_carry are local only)")
    _tokenizer_or_skip()
    r = subprocess.run(["bash", str(MB / "gpu_all.sh")], env=_env(DRY_RUN_CPU="1", OUT=str(tmp_path)),
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["bench.json", "bench.txt", "correctness.txt", "engine.json", "engine.log", "env.txt",
                     "summary.txt"]
    summary = (tmp_path / "summary.txt").read_text()
    assert "NO GPU figures" in summary and "install rc=0" in summary
    assert re.search(r"correctness: \d+ ok, 0 FAIL", summary)
    assert "engine rc=0" in summary and "kernel dispatch ok=True" in summary
    assert "bench rc=0" in summary
