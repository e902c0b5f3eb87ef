#!/usr/bin/env bash
# One-shot GPU check of factorspec.kernels (a few minutes in all): CUDA correctness against the
# torch references and xgrammar, the sglang cross-checks if sglang is importable, then the
# microbenchmarks. Results go to $OUT (default microbench/out), summary in $OUT/summary.txt.
# Usage: bash microbench/gpu_check.sh   [env: OUT=dir, BENCH_LIMIT=seconds (default 240), PYTHON=python3]
# On this workplace's device machine run microbench/gpu_all.sh instead: it installs the carried
# xgrammar wheels first, adds the engine on CUDA and fits one time-boxed call.
set -u
cd "$(dirname "$0")/.."
OUT="${OUT:-microbench/out}"
BENCH_LIMIT="${BENCH_LIMIT:-240}"
PY="${PYTHON:-python3}"
mkdir -p "$OUT"
unset TRITON_INTERPRET
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; "$PY" -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } > "$OUT/env.txt" 2>&1

timeout 120 "$PY" microbench/gpu_correctness.py > "$OUT/correctness.txt" 2>&1
echo "correctness rc=$? ($(tail -1 "$OUT/correctness.txt"))" | tee "$OUT/summary.txt"

# SGLang cross-checks run on CUDA when sglang is installed (skipped with a reason otherwise).
# The conftest of tests/kernels sets TRITON_INTERPRET=1 for the CPU suite; these two cross-checks
# use CUDA tensors, so run them with a plain pytest invocation that overrides it.
timeout 120 env TRITON_INTERPRET=0 "$PY" -m pytest -q -rs -p no:cacheprovider \
    tests/kernels/test_sglang_crosscheck.py > "$OUT/sglang.txt" 2>&1
echo "sglang cross-check rc=$? ($(tail -1 "$OUT/sglang.txt"))" | tee -a "$OUT/summary.txt"

timeout "$BENCH_LIMIT" "$PY" -m pytest -q -p no:cacheprovider microbench/test_kernels_bench.py \
    --benchmark-only --benchmark-json="$OUT/bench.json" \
    --benchmark-columns=min,median,mean,rounds --benchmark-sort=name > "$OUT/bench.txt" 2>&1
echo "bench rc=$?" | tee -a "$OUT/summary.txt"

"$PY" microbench/gpu_summary.py bench "$OUT/bench.json" >> "$OUT/summary.txt" 2>&1
cat "$OUT/summary.txt"
