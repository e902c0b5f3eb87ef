#!/usr/bin/env bash
# SGLang on one GPU (H200; about 6-8 minutes): FactorSpec's SGLang tests on CUDA, then the NATURAL
# PLAN benchmark (microbench/gpu_sglang_bench.py): xgrammar syntax-only, NGRAM + xgrammar,
# FactorSpec backend + FactorSpec drafts. Results in $OUT (default microbench/out/sglang).
# Usage: bash microbench/gpu_sglang.sh   [env: OUT=dir, N=instances (48), DRAFT=16, SKIP_INSTALL=1]
# Needs a CUDA machine with sglang==0.5.23 and its CUDA deps (pip install "sglang==0.5.23": the
# full install with its CUDA torch, sglang-kernel and flashinfer); nothing here runs on CPU.
set -u
cd "$(dirname "$0")/.."
OUT="${OUT:-microbench/out/sglang}"
N="${N:-48}"
DRAFT="${DRAFT:-16}"
mkdir -p "$OUT"
unset TRITON_INTERPRET
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export SGLANG_CACHE_DIR="${SGLANG_CACHE_DIR:-$(mktemp -d)}"

if [ -z "${SKIP_INSTALL:-}" ] && ! python -c "import sglang, sgl_kernel" 2>/dev/null; then
    timeout 240 pip install -q "sglang==0.5.23" > "$OUT/install.txt" 2>&1
    echo "install rc=$?" | tee "$OUT/summary.txt"
fi
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python -c "import torch, sglang; print('torch', torch.__version__, 'sglang', sglang.__version__)"; } > "$OUT/env.txt" 2>&1

# The integration tests again, on a machine where sglang imports for real (no stubs needed).
timeout 120 python -m pytest -q -rs -p no:cacheprovider tests/integrations/test_sglang_integration.py \
    > "$OUT/tests.txt" 2>&1
echo "sglang tests rc=$? ($(tail -1 "$OUT/tests.txt"))" | tee -a "$OUT/summary.txt"

timeout 420 python microbench/gpu_sglang_bench.py --out "$OUT" --n "$N" --draft-tokens "$DRAFT" \
    > "$OUT/bench.txt" 2>&1
echo "bench rc=$?" | tee -a "$OUT/summary.txt"
tail -5 "$OUT/bench.txt" >> "$OUT/summary.txt"
cat "$OUT/summary.txt"
