"""Picklable recipes for building a `TokenVocab` inside each worker process.

A vocabulary with its tries is large and, for a real tokenizer, holds an unpicklable encode
function, so workers build their own from a recipe: a small one (`ModelVocab`: load the model's
tokenizer, seconds and transformers' imports in every worker) or a prebuilt image of it
(`TokenizerImage`: token bytes plus the fast tokenizer's JSON, built once by the pool, so that
every worker, a replacement included, starts in about a second, importing no transformers)."""
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

    def image(self) -> Optional[TokenizerImage]:
        """This vocabulary prebuilt once (in the caller's process): a worker then starts from
        its token bytes and the fast tokenizer's own serialization, with no transformers (nor
        torch) to import. None when the tokenizer has no fast backend or its backend's encoding
        differs from the tokenizer's on the probe texts (the workers then load the model)."""
        from factorspec.models import load_tokenizer
        from factorspec.models.hf_vocab import vocab_for

        tok = load_tokenizer(self.name)
        return TokenizerImage.of(tok, vocab_for(tok, self.vocab_size))


# texts on which a backend's encoding must equal the tokenizer's before an image is used
_PROBES = ('{"a": 1}', '{"city": "Paris", "day": 12}', ' "x", "y"]', 'Hello, world! 123 4567',
           '  two  spaces', 'ünïcödé – “quotes” 漢字', '{"nested": {"k": [true, false, null]}}', '\n\t"\\u00e9"')


@dataclass(frozen=True)
class TokenizerImage:
    """A prebuilt vocabulary: token bytes, stop tokens and the fast tokenizer's JSON (the
    `tokenizers` library encodes, exactly as the tokenizer does). Builds a worker's
    `TokenVocab` without loading transformers; made by `ModelVocab.image` or `TokenizerImage.of`."""

    token_bytes: tuple
    stop_ids: tuple
    vocab_size: int
    tokenizer_json: str
    name: str = ""

    @classmethod
    def of(cls, tok: Any, vocab: Any) -> Optional[TokenizerImage]:
        """The image of `vocab` (built from the transformers tokenizer `tok`), or None."""
        backend = getattr(tok, "backend_tokenizer", None)
        if backend is None:
            return None
        try:
            from tokenizers import Tokenizer

            clone = Tokenizer.from_str(backend.to_str())
            for text in _PROBES:
                if clone.encode(text, add_special_tokens=False).ids != list(tok.encode(text, add_special_tokens=False)):
                    return None
        except Exception:  # noqa: BLE001 - no image: the workers build from the model
            return None
        return cls(tuple(vocab.token_bytes), tuple(vocab.stop_ids), vocab.vocab_size, backend.to_str(), vocab.name)

    def __call__(self) -> Any:
        from tokenizers import Tokenizer

        from factorspec.graph.token_vocab import TokenVocab

        tk = Tokenizer.from_str(self.tokenizer_json)
        return TokenVocab(list(self.token_bytes), list(self.stop_ids), self.vocab_size,
                          encode=lambda s: tk.encode(s, add_special_tokens=False).ids, name=self.name)


@dataclass(frozen=True)
class RecipeFile:
    """A large recipe (an image is megabytes) pickled once into a file: what a worker process
    receives is this path, so that starting one (a replacement, in the middle of a step) costs
    the parent no pickling and no megabytes through the process server."""

    path: str

    def __call__(self) -> Any:
        import pickle

        with open(self.path, "rb") as f:
            return pickle.load(f)()


def as_vocab_factory(x: Any) -> Callable[[], Any]:
    """A model name, a `TokenVocab` without an encode function, or a picklable callable (a
    recipe with an `image()` method, like `ModelVocab`, may be prebuilt by the pool)."""
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
