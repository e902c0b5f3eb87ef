#!/usr/bin/env bash
# SGLang on one GPU: FactorSpec's SGLang tests on CUDA, then the NATURAL PLAN benchmark
# (microbench/gpu_sglang_bench.py): xgrammar syntax-only, NGRAM + xgrammar, FactorSpec backend +
# FactorSpec drafts. Results in $OUT (default microbench/out/sglang).
# Usage: bash microbench/gpu_sglang.sh   [env: OUT=dir, N=instances (48), DRAFT=16, PYTHON=python3,
#                                          ALLOW_PIP_INSTALL=1 to pip install sglang when it is missing]
#
# NOT RUNNABLE ON THIS WORKPLACE'S DEVICE MACHINE (nvidia-h200), and it has never run anywhere:
#   - sglang is not in that image and nothing can be downloaded there (no network);
#   - it cannot be carried: the call's whole working tree is limited to 64 MiB, and the wheels
#     alone are far over it (sizes read from `pip download --no-deps` for cp312 manylinux x86_64,
#     2026-11-30): sglang 0.5.23 39.0 MB, sglang-kernel 0.4.10 373.0 MB, flashinfer-python 0.7.2
#     65.2 MB, and sglang 0.5.23 pins torch==2.14.1 (554.6 MB, plus its CUDA libraries) while the
#     image has torch 2.11.0; flash-attn-4, sgl-deep-gemm, tilelang, ... come on top;
#   - the embedded model's GGUF (491 MB) cannot travel either (gpu_sglang_bench.py needs it).
# It needs a CUDA machine with internet access (or sglang==0.5.23 and its CUDA stack installed)
# and the default model installed. On the device machine use microbench/gpu_all.sh instead (the
# reference engine on CUDA with a random-init model of the same shapes, the kernels, xgrammar).
set -u
cd "$(dirname "$0")/.."
OUT="${OUT:-microbench/out/sglang}"
N="${N:-48}"
DRAFT="${DRAFT:-16}"
mkdir -p "$OUT"
unset TRITON_INTERPRET
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export SGLANG_CACHE_DIR="${SGLANG_CACHE_DIR:-$(mktemp -d)}"

PY="${PYTHON:-python3}"
if ! "$PY" -c "import sgl_kernel, sglang" 2>/dev/null; then
    if [ -z "${ALLOW_PIP_INSTALL:-}" ]; then
        echo "sglang/sgl_kernel not importable; this script cannot run here (see its header). On a machine" \
             "with internet access: ALLOW_PIP_INSTALL=1 bash microbench/gpu_sglang.sh" | tee "$OUT/summary.txt"
        exit 2
    fi
    timeout 600 "$PY" -m pip install -q "sglang==0.5.23" > "$OUT/install.txt" 2>&1
    echo "install rc=$?" | tee "$OUT/summary.txt"
fi
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  "$PY" -c "import torch, sglang; print('torch', torch.__version__, 'sglang', sglang.__version__)"; } > "$OUT/env.txt" 2>&1

# The integration tests again, on a machine where sglang imports for real (no stubs needed).
timeout 120 "$PY" -m pytest -q -rs -p no:cacheprovider tests/integrations/test_sglang_integration.py \
    > "$OUT/tests.txt" 2>&1
echo "sglang tests rc=$? ($(tail -1 "$OUT/tests.txt"))" | tee -a "$OUT/summary.txt"

timeout 420 "$PY" microbench/gpu_sglang_bench.py --out "$OUT" --n "$N" --draft-tokens "$DRAFT" \
    > "$OUT/bench.txt" 2>&1
echo "bench rc=$?" | tee -a "$OUT/summary.txt"
tail -5 "$OUT/bench.txt" >> "$OUT/summary.txt"
cat "$OUT/summary.txt"
