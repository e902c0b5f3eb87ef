"""Every Triton kernel compiles for GPUTarget("cuda", 90, 32) on this CPU-only machine.

The interpreter runs code the compiler rejects, so the interpreter tests alone prove little about
the GPU. The compiles run in one subprocess without TRITON_INTERPRET (see gpu_compile_cases.py).
"""
import json
import os
import subprocess
import sys

import pytest

from gpu_compile_cases import CASES

pytest.importorskip("triton")

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(os.path.dirname(_HERE))


@pytest.fixture(scope="module")
def compiled():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([_ROOT, env.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [sys.executable, os.path.join(_HERE, "gpu_compile_cases.py")],
        env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout)


@pytest.mark.parametrize("case", sorted(CASES))
def test_compiles_for_sm90(compiled, case):
    assert compiled[case] == "ok", compiled[case]
