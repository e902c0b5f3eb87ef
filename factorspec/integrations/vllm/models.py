"""Hugging Face model directories for vLLM and SGLang, built from FactorSpec's embedded GGUF models.

Both engines load a model directory (config.json with `architectures`, safetensors, tokenizer
files). `hf_model_dir(name)` converts the embedded GGUF once (through `factorspec.models.load_model`
/ `load_tokenizer`, which cache a bf16 safetensors copy and the tokenizer) and assembles
``<cache>/models/<name>/hf-bf16/``: config.json (with `architectures` filled in), the weights and
copies of the tokenizer files. Later calls return the directory at once.

Tied embeddings: the bf16 cache is written by ``safetensors.save_model``, which stores a tied
tensor once, under ``lm_head.weight``. Engines' loaders skip ``lm_head.*`` for tied models and
read ``model.embed_tokens.weight`` (SGLang's Llama loader then leaves the embedding at zero: every
output token is 0, with no error), so the directory's weights always carry the embedding under
``model.embed_tokens.weight`` and, for tied models, no ``lm_head.weight``."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

_ARCH = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "gemma3_text": "Gemma3ForCausalLM"}


EMBED_KEY = "model.embed_tokens.weight"
HEAD_KEY = "lm_head.weight"
OUT_DIR = "hf-bf16"  # was "vllm-bf16" (tied embedding only as lm_head.weight): rebuilt, not reused


def _weight_keys(path: Path) -> set[str]:
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        return set(f.keys())


def _dir_ok(out: Path) -> bool:
    if not ((out / "config.json").is_file() and (out / "tokenizer_config.json").is_file()):
        return False
    try:
        return EMBED_KEY in _weight_keys(out / "model.safetensors")
    except Exception:  # noqa: BLE001 - unreadable or missing weights: rebuild
        return False


def _write_weights(src: Path, dst: Path, tied: bool) -> None:
    """``dst``: ``src``'s tensors with the embedding under ``model.embed_tokens.weight`` (a link
    to ``src`` when it already is)."""
    keys = _weight_keys(src)
    if EMBED_KEY in keys:
        os.symlink(src.resolve(), dst)
        return
    if HEAD_KEY not in keys:
        raise ValueError(f"{src}: neither {EMBED_KEY} nor {HEAD_KEY} present; cannot build the embedding")
    from safetensors.torch import load_file, save_file

    tensors = load_file(str(src))
    head = tensors.pop(HEAD_KEY)
    tensors[EMBED_KEY] = head
    if not tied:  # an untied head stays (never seen: save_model drops only shared tensors)
        tensors[HEAD_KEY] = head.clone()
    save_file(tensors, str(dst), metadata={"format": "pt"})


def hf_model_dir(name: str) -> Path:
    """An engine-loadable (vLLM, SGLang) model directory for a registered model name (e.g.
    'smollm2-135m'), embedding stored as ``model.embed_tokens.weight``."""
    from factorspec.models.registry import model_cache_dir, resolve

    key = resolve(name).cache_key
    base = model_cache_dir(key)
    out = base / OUT_DIR
    if _dir_ok(out):
        return out
    weights = base / "bfloat16"
    tokdir = base / "tokenizer"
    if not (weights / "model.safetensors").is_file():
        import torch

        from factorspec.models import load_model

        # load_model caches the safetensors directory of the dtype it is given as a side effect;
        # named here, since its default follows this CPU (float32 where bf16 is slow)
        load_model(name, dtype=torch.bfloat16)
    if not (tokdir / "tokenizer_config.json").is_file():
        from factorspec.models import load_tokenizer

        load_tokenizer(name)
    tmp = base / f"{OUT_DIR}.tmp{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    if not (weights / "config.json").is_file():
        raise RuntimeError(f"{weights}: the bfloat16 cache of {name!r} was not written (config.json missing)")
    cfg = json.loads((weights / "config.json").read_text())
    if not cfg.get("architectures"):
        mt = cfg.get("model_type", "")
        if mt not in _ARCH:
            raise ValueError(f"no architecture known for model_type {mt!r}")
        cfg["architectures"] = [_ARCH[mt]]
    (tmp / "config.json").write_text(json.dumps(cfg, indent=1))
    for f in weights.iterdir():
        if f.name == "config.json":
            continue
        if f.name == "model.safetensors":
            _write_weights(f, tmp / f.name, bool(cfg.get("tie_word_embeddings", False)))
        else:
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
