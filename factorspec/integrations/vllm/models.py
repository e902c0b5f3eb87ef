"""Hugging Face model directories for vLLM, built from FactorSpec's embedded GGUF models.

vLLM loads a model directory (config.json with `architectures`, safetensors, tokenizer files).
`hf_model_dir(name)` converts the embedded GGUF once (through `factorspec.models.load_model` /
`load_tokenizer`, which cache a bf16 safetensors copy and the tokenizer) and assembles
``<cache>/models/<name>/vllm-bf16/``: config.json (with `architectures` filled in), links to the
weights and copies of the tokenizer files. Later calls return the directory at once."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

_ARCH = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "gemma3_text": "Gemma3ForCausalLM"}


def hf_model_dir(name: str) -> Path:
    """A vLLM-loadable model directory for a registered model name (e.g. 'smollm2-135m')."""
    from factorspec.models.registry import model_cache_dir, resolve

    key = resolve(name).cache_key
    base = model_cache_dir(key)
    out = base / "vllm-bf16"
    if (out / "config.json").is_file() and (out / "tokenizer_config.json").is_file():
        return out
    weights = base / "bfloat16"
    tokdir = base / "tokenizer"
    if not (weights / "model.safetensors").is_file():
        import torch

        from factorspec.models import load_model

        del torch  # load_model caches the bf16 safetensors directory as a side effect
        load_model(name)
    if not (tokdir / "tokenizer_config.json").is_file():
        from factorspec.models import load_tokenizer

        load_tokenizer(name)
    tmp = base / f"vllm-bf16.tmp{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    cfg = json.loads((weights / "config.json").read_text())
    if not cfg.get("architectures"):
        mt = cfg.get("model_type", "")
        if mt not in _ARCH:
            raise ValueError(f"no vLLM architecture known for model_type {mt!r}")
        cfg["architectures"] = [_ARCH[mt]]
    (tmp / "config.json").write_text(json.dumps(cfg, indent=1))
    for f in weights.iterdir():
        if f.name != "config.json":
            os.symlink(f.resolve(), tmp / f.name)
    for f in tokdir.iterdir():
        shutil.copy(f, tmp / f.name)
    if out.exists():
        shutil.rmtree(out)
    os.replace(tmp, out)
    return out


if __name__ == "__main__":
    import sys

    for n in sys.argv[1:] or ["smollm2-135m"]:
        print(hf_model_dir(n))
