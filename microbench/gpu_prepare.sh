#!/usr/bin/env bash
# Prepare, HERE (a machine with pip access and the default model installed), what the one-shot
# GPU run (microbench/gpu_all.sh) carries to the device machine, which can download nothing:
#   .whl/        cp312 manylinux x86_64 wheels of what the device image lacks: xgrammar and its
#                needs missing there (apache-tvm-ffi, pydantic, pydantic-core, annotated-types,
#                typing-inspection) plus typing-extensions (pydantic needs >= 4.14.1; the image's
#                version is not recorded). About 7 MB.
#   .gpu_carry/  tokenizer/ (the default model's tokenizer files, ~11 MB; the 491 MB GGUF cannot
#                travel: gpu_engine.py builds a random-init model of the same shapes) and
#                data/natural_plan/trip_planning_100.json (~0.9 MB; ../shared does not travel).
# Both folders are listed in .git/info/exclude (local only, never committed) and named in the
# run's `carry`. Idempotent; re-creates both folders from scratch.
# Usage: bash microbench/gpu_prepare.sh      [env: PYTHON=python3]
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"

# Keep in step with the versions the code is tested with (setup.py pins xgrammar==0.2.7). One
# version of each: two stop the whole install on the device.
WHEELS=(
    xgrammar==0.2.7
    apache-tvm-ffi==0.1.15.post2
    pydantic==2.13.4
    pydantic-core==2.46.4
    annotated-types==0.7.0
    typing-inspection==0.4.2
    typing-extensions==4.16.0
)

EXCLUDE="$(git rev-parse --git-path info/exclude)"
mkdir -p "$(dirname "$EXCLUDE")"
for p in /.whl/ /.gpu_carry/; do
    grep -qxF "$p" "$EXCLUDE" 2>/dev/null || echo "$p" >> "$EXCLUDE"
done

# 1. wheels: the device README's recipe, verbatim
rm -rf .whl && mkdir -p .whl
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl "${WHEELS[@]}" 2>&1 \
    | { grep -v '^WARNING: Location' || true; }
n=$(ls .whl/*.whl | wc -l)
[ "$n" -eq "${#WHEELS[@]}" ] || { echo "expected ${#WHEELS[@]} wheels, got $n" >&2; exit 1; }
echo "== Requires-Dist of the carried wheels (extras skipped; everything else is in the image or carried)"
for f in .whl/*.whl; do
    echo "$(basename "$f"): $(unzip -p "$f" '*.dist-info/METADATA' | grep '^Requires-Dist' | grep -v 'extra ==' \
        | sed 's/^Requires-Dist: //' | paste -sd';' -)"
done

# 1b. where a CPython 3.12 exists here (PY312, else pyenv's), install the set as the device will and
# import what can be imported without torch: pydantic (+ its compiled core) and xgrammar's native
# binding through the carried tvm-ffi
is312() { [ -n "$1" ] && "$1" -c "import sys; assert sys.version_info[:2] == (3, 12)" 2>/dev/null; }
if ! is312 "${PY312:-}"; then
    PY312=""
    for c in python3.12 "$HOME"/.pyenv/versions/3.12*/bin/python3.12 /usr/bin/python3.12; do
        if is312 "$c"; then PY312=$c; break; fi
    done
fi
if [ -n "$PY312" ]; then
    SITE=$(mktemp -d /tmp/gpuh_site312_XXXX)
    "$PY312" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl \
        2>&1 | { grep -v "Running pip as the 'root' user" || true; }
    PYTHONPATH="$SITE" "$PY312" - "$SITE" <<'PY'
import sys, types
import pydantic, tvm_ffi

class M(pydantic.BaseModel):
    x: int

assert M(x="3").x == 3
pkg = types.ModuleType("xgrammar")  # xgrammar/__init__ imports torch: load only the native binding
pkg.__path__ = [sys.argv[1] + "/xgrammar"]
sys.modules["xgrammar"] = pkg
import xgrammar.load_binding as lb

assert lb.LIB is not None
print(f"cp312 check ({sys.version.split()[0]}): wheels install; pydantic {pydantic.VERSION} and xgrammar's binding load")
PY
    rm -rf "$SITE"
else
    echo "no CPython 3.12 here: the cp312 install was not tried (set PY312=/path/to/python3.12)"
fi

# 2. tokenizer + data
rm -rf .gpu_carry && mkdir -p .gpu_carry/tokenizer .gpu_carry/data/natural_plan
"$PY" - <<'PY'
import shutil
from pathlib import Path

from factorspec.data import natural_plan_file
from factorspec.models import DEFAULT_MODEL, load_tokenizer, resolve
from factorspec.models.registry import model_cache_dir

load_tokenizer(DEFAULT_MODEL)  # builds the cached tokenizer from the GGUF if not there yet
src = model_cache_dir(resolve(DEFAULT_MODEL).cache_key) / "tokenizer"
for f in sorted(src.iterdir()):
    if f.is_file():
        shutil.copy2(f, Path(".gpu_carry/tokenizer") / f.name)
data = natural_plan_file()
if not data.is_file():
    raise SystemExit(f"NATURAL PLAN data not found at {data} (set FACTORSPEC_SHARED_DATA)")
shutil.copy2(data, ".gpu_carry/data/natural_plan/trip_planning_100.json")
print(f"tokenizer from {src}; data from {data}")
PY
# the carried tokenizer loads on its own (as it will on the device) and encodes like the original
"$PY" - <<'PY'
from factorspec.models import DEFAULT_MODEL, load_tokenizer

a, b = load_tokenizer(".gpu_carry/tokenizer"), load_tokenizer(DEFAULT_MODEL)
s = '{"itinerary": [{"city": "Zürich", "start_day": 1}]}'
from factorspec.models import build_prompt_ids

assert a.encode(s) == b.encode(s) and len(a) == len(b), "carried tokenizer differs"
assert build_prompt_ids(a, s) == build_prompt_ids(b, s), "carried chat template differs"
print(f"carried tokenizer ok ({len(a)} tokens)")
PY

# 3. sizes: everything that travels must stay under 64 MiB per call
tree=$(git ls-files -co --exclude-standard -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
whl=$(du -sb .whl | cut -f1)
carry=$(du -sb .gpu_carry | cut -f1)
total=$((tree + whl + carry))
printf '%-34s %8.1f MiB\n' "working tree (tracked + untracked)" "$(echo "$tree/1048576" | bc -l)" \
    ".whl" "$(echo "$whl/1048576" | bc -l)" ".gpu_carry" "$(echo "$carry/1048576" | bc -l)" \
    "total (limit 64 MiB)" "$(echo "$total/1048576" | bc -l)"
[ "$total" -lt $((60 * 1048576)) ] || { echo "too large to travel" >&2; exit 1; }
echo "ready: call the device with carry [\".whl\", \".gpu_carry\"] (see microbench/gpu_all.sh)"
