#!/usr/bin/env bash
# The one-shot GPU run: everything we want from one lease of the device machine (one H200), in
# ONE `run` call of about 4-5 minutes (an estimate: this has never run on a GPU; hard cap
# TOTAL_S=450 s inside the script).
#
# Before the call, HERE (needs pip access and the default model; ~15 s):
#     bash microbench/gpu_prepare.sh        # .whl/ (~7 MB) and .gpu_carry/ (~12 MB), git-ignored
# Then the device call, exactly:
#     run(command="bash microbench/gpu_all.sh", carry=[".whl", ".gpu_carry"], timeout_s=540)
# Device time: ~1-2 min start + ~4-5 min (at most 7.5) for the command: 6-10 of the 15 minutes,
# too little for a second full run; call give_back right after it. Results: 7 files under $OUT
# (summary.txt, env.txt, correctness.txt, bench.json, bench.txt, engine.json, engine.log); the
# summary is also printed last, so the reply's output_tail holds it.
#
# The working tree travels as it is, uncommitted edits included: run it from a tree whose tests
# pass (other sessions' half-done edits travel too).
#
# Steps, each under its own `timeout` (cut to the time left):
#   0. install the carried wheels into /tmp/site (device README recipe) -> xgrammar importable (<=90 s)
#   1. kernel correctness: Triton on CUDA vs the torch references and xgrammar (gpu_correctness.py,
#      <=110 s; one line per case, so a cut run still reports what it reached)
#   2. the reference engine on CUDA (gpu_engine.py, <=220 s, no new run started after 170 s;
#      engine.json is rewritten after every run): RANDOM-INIT Qwen2.5-0.5B-shaped model in bf16
#      with the real tokenizer, 8 NATURAL PLAN instances, syntax / fs_mask / fs_full /
#      fs_full+pool (4 CPU mask workers), batch 1 and 8. Timings are real; validity/acceptance
#      are NOT the real model's. Exit 3 if the Triton bitmask kernel was not what ran.
#   3. kernel microbenchmarks (pytest-benchmark, microbench/test_kernels_bench.py; the time left)
# gpu_check.sh's SGLang cross-check is left out: sglang cannot be installed there (gpu_sglang.sh).
#
# DRY_RUN_CPU=1: the same plumbing on this CPU machine (no GPU figures at all): the wheel set is
# installed for cp312 into a scratch folder (not used), correctness in its smoke mode under
# TRITON_INTERPRET=1, a tiny engine run (--device cpu --tiny, 1 instance), batch-1 microbenchmarks
# with the Triton path interpreted. OUT defaults to /tmp/gpuh_all_<pid>.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
PY="${PYTHON:-python3}"
DRY="${DRY_RUN_CPU:-}"
OUT="${OUT:-/tmp/gpuh_all_$$}"
TOTAL_S="${TOTAL_S:-450}"
mkdir -p "$OUT"
T0=$(date +%s)
S="$OUT/summary.txt"
: > "$S"
say() { echo "$*" | tee -a "$S"; }
# a step's timeout: what it asks for, cut to the time left minus a reserve for the summary
tmo() { local want=$1 left; left=$(( T0 + TOTAL_S - $(date +%s) - 20 )); [ "$left" -lt "$want" ] && want=$left
        [ "$want" -lt 5 ] && want=5; echo "$want"; }
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export FACTORSPEC_CACHE="${FACTORSPEC_CACHE:-/tmp/gpuh_fscache}"

if [ -n "$DRY" ]; then
    say "== CPU DRY RUN (DRY_RUN_CPU=1): plumbing only, NO GPU figures; $(date -u +%FT%TZ)"
    export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
else
    say "== GPU one-shot $(date -u +%FT%TZ); engine model: RANDOM-INIT (timings real; validity/acceptance not the model's)"
    unset TRITON_INTERPRET FACTORSPEC_KERNEL_BACKEND
fi

# ---------------------------------------------------------------- 0. wheels + environment
E="$OUT/env.txt"
nwhl=$(ls .whl/*.whl 2>/dev/null | wc -l)
if [ -z "$DRY" ]; then
    timeout "$(tmo 90)" "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl > "$E" 2>&1
    rc=$?
    export PYTHONPATH="$ROOT:/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
else
    # cp312 wheels cannot load here: install them for cp312 into a scratch folder (checks the set
    # is complete and consistent), then leave it off the path
    SITE=$(mktemp -d /tmp/gpuh_site_XXXX)
    timeout "$(tmo 90)" "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --only-binary=:all: --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64 \
        --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 --target "$SITE" .whl/*.whl > "$E" 2>&1
    rc=$?
    rm -rf "$SITE"
    export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
fi
say "wheels: $nwhl carried, install rc=$rc ($(du -sh .whl 2>/dev/null | cut -f1)); .gpu_carry $(du -sh .gpu_carry 2>/dev/null | cut -f1)"
{
    echo "== nvidia-smi"; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1
    echo "== python"; command -v "$PY"; "$PY" -VV
    "$PY" - <<'PY' 2>&1
import importlib.metadata as md
for m in ("torch", "triton", "transformers", "tokenizers", "numpy", "xgrammar", "pydantic", "apache-tvm-ffi",
          "typing-extensions", "pytest", "pytest-benchmark"):
    try:
        print(f"{m} {md.version(m)}")
    except md.PackageNotFoundError:
        print(f"{m} MISSING")
import torch
print("cuda available", torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")
try:
    import xgrammar
    print("xgrammar imports from", xgrammar.__file__)
except Exception as e:
    print("xgrammar import FAILED:", type(e).__name__, e)
PY
} >> "$E" 2>&1
say "env: $(grep -E '^(torch|triton|xgrammar) |^cuda available|import FAILED' "$E" | paste -sd';' -)"

# ---------------------------------------------------------------- 1. kernel correctness
if [ -n "$DRY" ]; then
    timeout "$(tmo 120)" env FACTORSPEC_SMOKE=1 "$PY" microbench/gpu_correctness.py > "$OUT/correctness.txt" 2>&1
else
    timeout "$(tmo 110)" "$PY" microbench/gpu_correctness.py > "$OUT/correctness.txt" 2>&1
fi
say "correctness rc=$?"
"$PY" microbench/gpu_summary.py correctness "$OUT/correctness.txt" | tee -a "$S"

# ---------------------------------------------------------------- 2. the engine on the device
if [ -n "$DRY" ]; then
    EARGS=(--device cpu --tiny --limit 1 --batches 1 --workers 1 --configs syntax,fs_mask,fs_full,fs_full+pool)
    ET=$(tmo 180)
else
    EARGS=(--device cuda --limit 8 --batches 1,8 --workers 4 --configs syntax,fs_mask,fs_full,fs_full+pool --progress)
    ET=$(tmo 220)
fi
# start no new run in the last ~50 s of the step (a run rewrites engine.json when it ends)
timeout "$ET" "$PY" microbench/gpu_engine.py "${EARGS[@]}" --budget-s $((ET > 80 ? ET - 50 : ET / 2)) \
    --out "$OUT/engine.json" > "$OUT/engine.log" 2>&1
say "engine rc=$? (0 ok; 2 a run errored; 3 Triton not dispatched on CUDA; 124 timeout)"
"$PY" microbench/gpu_summary.py engine "$OUT/engine.json" | tee -a "$S"

# ---------------------------------------------------------------- 3. kernel microbenchmarks
BARGS=()
if [ -n "$DRY" ]; then  # batch 1 only, the "ours" side through the Triton interpreter
    export TRITON_INTERPRET=1 FACTORSPEC_KERNEL_BACKEND=triton
    BARGS=(-k "1-ours or 1-torch or 1-xgrammar")
fi
timeout "$(tmo 110)" "$PY" -m pytest -q -p no:cacheprovider microbench/test_kernels_bench.py "${BARGS[@]}" \
    --benchmark-only --benchmark-json="$OUT/bench.json" \
    --benchmark-columns=min,median,mean,rounds --benchmark-sort=name > "$OUT/bench.txt" 2>&1
say "bench rc=$? ($(grep -E '(passed|failed|error)' "$OUT/bench.txt" | tail -1))"
unset TRITON_INTERPRET FACTORSPEC_KERNEL_BACKEND
"$PY" microbench/gpu_summary.py bench "$OUT/bench.json" | tee -a "$S" > /dev/null

say "total $(( $(date +%s) - T0 ))s; files in $OUT: $(ls "$OUT" | paste -sd' ' -)"
echo "=================== summary.txt"
cat "$S"
