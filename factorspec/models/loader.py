"""Offline loading of tokenizers and models (transformers) for named models, GGUF files and
Hugging Face model directories.

GGUF weights are dequantised by transformers. Derived artefacts are cached under
``<cache>/models/<name>/``: ``tokenizer/`` (save_pretrained of the tokenizer) and
``<dtype>/`` (a safetensors model directory), so later loads skip the GGUF parsing."""
from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path
from typing import Any

from factorspec.models.registry import ResolvedModel, model_cache_dir, resolve

_LOCK = threading.Lock()


def _offline_env() -> None:
    # Everything is local: never reach for the hub.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def _atomic_save(obj: Any, final: Path, **kw: Any) -> None:
    tmp = final.with_name(final.name + f".tmp{os.getpid()}")
    if tmp.exists():
        shutil.rmtree(tmp)
    obj.save_pretrained(str(tmp), **kw)
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)


def load_tokenizer(name_or_path: str | os.PathLike | None = None, *, use_cache: bool = True):
    """AutoTokenizer for a named model, a GGUF file or a model directory (offline)."""
    _offline_env()
    from transformers import AutoTokenizer

    r: ResolvedModel = resolve(name_or_path)
    if r.gguf_file is None:
        return AutoTokenizer.from_pretrained(str(r.directory))
    cached = model_cache_dir(r.cache_key) / "tokenizer"
    if use_cache and (cached / "tokenizer_config.json").is_file():
        return AutoTokenizer.from_pretrained(str(cached))
    tok = AutoTokenizer.from_pretrained(str(r.directory), gguf_file=r.gguf_file)
    if use_cache:
        with _LOCK:
            try:
                _atomic_save(tok, cached)
            except Exception:  # caching is an optimisation only
                pass
    return tok


def _dtype_name(dtype: Any) -> str:
    return str(dtype).replace("torch.", "")


def load_model(name_or_path: str | os.PathLike | None = None, dtype: Any = None, *,
               use_cache: bool = True, device: str = "cpu"):
    """AutoModelForCausalLM (eval mode) for a named model, a GGUF file or a model directory.

    GGUF weights are dequantised to `dtype` (default: `models.dtype.default_dtype`, bfloat16 where
    this CPU computes it fast); the converted model is cached as
    a safetensors directory for fast reloads."""
    _offline_env()
    from transformers import AutoModelForCausalLM

    from factorspec.models.dtype import default_dtype
    from factorspec.models.threads import configure_torch_threads

    configure_torch_threads()
    if dtype is None:
        dtype = default_dtype(device)
    r = resolve(name_or_path)
    if r.gguf_file is None:
        model = AutoModelForCausalLM.from_pretrained(str(r.directory), dtype=dtype)
        return model.to(device).eval()
    cached = model_cache_dir(r.cache_key) / _dtype_name(dtype)
    if use_cache and (cached / "config.json").is_file():
        model = AutoModelForCausalLM.from_pretrained(str(cached), dtype=dtype)
        return model.to(device).eval()
    model = _load_gguf_model(r.directory / r.gguf_file, dtype)
    if use_cache:
        with _LOCK:
            try:
                _save_plain(model, cached)
            except Exception:  # caching is an optimisation only
                pass
    return model.to(device).eval()


def _load_gguf_model(path: Path, dtype: Any):
    """Dense (dequantised) model from a GGUF file.

    transformers insists on `accelerate` being importable for GGUF loading although the dense
    CPU path does not use it; when it is missing we lift that check for the duration of the call."""
    import transformers.modeling_utils as mu
    from transformers import AutoModelForCausalLM

    kwargs: dict[str, Any] = {"gguf_file": path.name, "dtype": dtype}
    try:
        from transformers import GgufConfig

        kwargs["quantization_config"] = GgufConfig(gguf_file=str(path), dequantize=True)
    except ImportError:  # older transformers: always dequantises
        pass
    saved = mu.is_accelerate_available
    try:
        if not saved():
            mu.is_accelerate_available = lambda *a, **k: True
        try:
            model = AutoModelForCausalLM.from_pretrained(str(path.parent), **kwargs)
        except (TypeError, ValueError):
            kwargs.pop("quantization_config", None)
            model = AutoModelForCausalLM.from_pretrained(str(path.parent), **kwargs)
    finally:
        mu.is_accelerate_available = saved
    return model


def _save_plain(model: Any, final: Path) -> None:
    """Save a dense model as config.json + model.safetensors (without its GGUF quantizer)."""
    from safetensors.torch import save_model

    tmp = final.with_name(final.name + f".tmp{os.getpid()}")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    config = model.config.to_dict()
    config.pop("quantization_config", None)
    config.pop("_name_or_path", None)
    import json

    (tmp / "config.json").write_text(json.dumps(config, indent=1, default=str))
    if getattr(model, "generation_config", None) is not None:
        try:
            model.generation_config.save_pretrained(str(tmp))
        except Exception:
            pass
    save_model(model, str(tmp / "model.safetensors"))
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)
