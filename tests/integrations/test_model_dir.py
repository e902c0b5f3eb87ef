"""hf_model_dir builds the engine directory from the bfloat16 cache whatever dtype this CPU prefers.

CI once failed here: on a CPU where bfloat16 probed slow, load_model's default cached float32
and hf_model_dir then read a bfloat16 config.json that was never written."""
from __future__ import annotations

import json

import pytest
import torch

import factorspec.models as fm
from factorspec.integrations.vllm import models as vm
from factorspec.models import dtype as fdtype


def _fake_load_model(calls):
    def load(name, dtype=None, **kw):
        from factorspec.models.registry import model_cache_dir, resolve

        chosen = dtype if dtype is not None else fdtype.default_dtype()
        calls.append(chosen)
        out = model_cache_dir(resolve(name).cache_key) / str(chosen).removeprefix("torch.")
        out.mkdir(parents=True, exist_ok=True)
        (out / "config.json").write_text(json.dumps({"model_type": "llama", "tie_word_embeddings": True}))
        from safetensors.torch import save_file

        save_file({vm.EMBED_KEY: torch.zeros(2, 2, dtype=chosen)}, str(out / "model.safetensors"))
    return load


def _fake_load_tokenizer(name, **kw):
    from factorspec.models.registry import model_cache_dir, resolve

    d = model_cache_dir(resolve(name).cache_key) / "tokenizer"
    d.mkdir(parents=True, exist_ok=True)
    (d / "tokenizer_config.json").write_text("{}")


@pytest.mark.parametrize("preferred", ["float32", "bfloat16"])
def test_model_dir_uses_bfloat16_cache_whatever_the_cpu_prefers(tmp_path, monkeypatch, preferred):
    monkeypatch.setenv("FACTORSPEC_CACHE", str(tmp_path))
    monkeypatch.setenv(fdtype.ENV_VAR, preferred)
    fdtype.cpu_dtype_name.cache_clear()
    calls: list = []
    monkeypatch.setattr(fm, "load_model", _fake_load_model(calls))
    monkeypatch.setattr(fm, "load_tokenizer", _fake_load_tokenizer)
    try:
        out = vm.hf_model_dir("smollm2-135m")
    finally:
        fdtype.cpu_dtype_name.cache_clear()
    assert calls == [torch.bfloat16]
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["architectures"] == [vm._ARCH["llama"]]
    assert (out / "model.safetensors").exists() and (out / "tokenizer_config.json").is_file()


def test_model_dir_says_when_the_cache_was_not_written(tmp_path, monkeypatch):
    monkeypatch.setenv("FACTORSPEC_CACHE", str(tmp_path))
    monkeypatch.setattr(fm, "load_model", lambda *a, **k: None)
    monkeypatch.setattr(fm, "load_tokenizer", _fake_load_tokenizer)
    with pytest.raises(RuntimeError, match="config.json missing"):
        vm.hf_model_dir("smollm2-135m")
