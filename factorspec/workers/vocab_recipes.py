"""Picklable recipes for building a `TokenVocab` inside each worker process.

A vocabulary with its tries is large and, for a real tokenizer, holds an unpicklable encode
function, so workers build their own from a small recipe."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional


@dataclass(frozen=True)
class BytesVocab:
    """An explicit token-bytes list (greedy longest-match canonical encoding)."""

    token_bytes: tuple
    stop_ids: tuple
    vocab_size: Optional[int] = None
    name: str = ""

    def __call__(self) -> Any:
        from factorspec.graph.token_vocab import TokenVocab

        return TokenVocab(list(self.token_bytes), list(self.stop_ids), self.vocab_size, name=self.name)


@dataclass(frozen=True)
class ModelVocab:
    """The vocabulary of a registered model's tokenizer (`factorspec.models`), by name."""

    name: str
    vocab_size: Optional[int] = None

    def __call__(self) -> Any:
        from factorspec.models import load_tokenizer
        from factorspec.models.hf_vocab import vocab_for

        return vocab_for(load_tokenizer(self.name), self.vocab_size)


def as_vocab_factory(x: Any) -> Callable[[], Any]:
    """A model name, a `TokenVocab` without an encode function, or a picklable callable."""
    if isinstance(x, str):
        return ModelVocab(x)
    from factorspec.graph.token_vocab import TokenVocab

    if isinstance(x, TokenVocab):
        if x.encode_fn is not None:
            raise ValueError("a TokenVocab with a tokenizer encode function cannot be sent to worker "
                             "processes; pass the model name (or a ModelVocab) instead")
        return BytesVocab(tuple(x.token_bytes), tuple(x.stop_ids), x.vocab_size, x.name)
    if callable(x):
        return x
    raise TypeError(f"not a vocabulary recipe: {x!r}")
