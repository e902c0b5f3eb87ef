#!/usr/bin/env bash
# One-shot GPU check of factorspec.kernels (a few minutes in all): CUDA correctness against the
# torch references and xgrammar, the sglang cross-checks if sglang is importable, then the
# microbenchmarks. Results go to $OUT (default microbench/out), summary in $OUT/summary.txt.
# Usage: bash microbench/gpu_check.sh   [env: OUT=dir, BENCH_LIMIT=seconds (default 240)]
set -u
cd "$(dirname "$0")/.."
OUT="${OUT:-microbench/out}"
BENCH_LIMIT="${BENCH_LIMIT:-240}"
mkdir -p "$OUT"
unset TRITON_INTERPRET
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } > "$OUT/env.txt" 2>&1

timeout 120 python microbench/gpu_correctness.py > "$OUT/correctness.txt" 2>&1
echo "correctness rc=$? ($(tail -1 "$OUT/correctness.txt"))" | tee "$OUT/summary.txt"

# SGLang cross-checks run on CUDA when sglang is installed (skipped with a reason otherwise).
# The conftest of tests/kernels sets TRITON_INTERPRET=1 for the CPU suite; these two cross-checks
# use CUDA tensors, so run them with a plain pytest invocation that overrides it.
timeout 120 env TRITON_INTERPRET=0 python -m pytest -q -rs -p no:cacheprovider \
    tests/kernels/test_sglang_crosscheck.py > "$OUT/sglang.txt" 2>&1
echo "sglang cross-check rc=$? ($(tail -1 "$OUT/sglang.txt"))" | tee -a "$OUT/summary.txt"

timeout "$BENCH_LIMIT" python -m pytest -q -p no:cacheprovider microbench/test_kernels_bench.py \
    --benchmark-only --benchmark-json="$OUT/bench.json" \
    --benchmark-columns=min,median,mean,rounds --benchmark-sort=name > "$OUT/bench.txt" 2>&1
echo "bench rc=$?" | tee -a "$OUT/summary.txt"

python - "$OUT/bench.json" >> "$OUT/summary.txt" 2>&1 <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    sys.exit(f"no benchmark results ({e}); see bench.txt")
med = {b["name"]: b["stats"]["median"] * 1e6 for b in d["benchmarks"]}
for name in sorted(med):
    print(f"{name:45s} {med[name]:10.1f} us (median)")
for b in (1, 64, 512):
    o, x = med.get(f"test_bitmask[{b}-ours]"), med.get(f"test_bitmask[{b}-xgrammar]")
    if o and x:
        print(f"kernel 1 batch {b}: ours / xgrammar = {o / x:.3f} (goal at 512: <= 1.1)")
for k in ("test_tree_verify_inputs", "test_assemble_drafts", "test_verify_tree_greedy"):
    v = med.get(f"{k}[64-ours]")
    if v:
        print(f"{k} batch 64 width 16: {v:.1f} us (goal < 20 us)")
PY
cat "$OUT/summary.txt"
