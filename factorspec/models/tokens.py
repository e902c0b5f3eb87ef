"""Exact token bytes, stop tokens and prompt building for the embedded tokenizers.

`token_bytes(tok)[i]` is the byte string token id i contributes when it appears inside text, so
that b"".join(token_bytes(tok)[i] for i in tok.encode(text)) == text.encode() for ordinary text.
Special/control tokens map to b"" and are listed by `special_token_ids`.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Sequence

_BYTE_FALLBACK = re.compile(r"^<0x([0-9A-Fa-f]{2})>$")

STOP_TOKEN_STRINGS = (
    "<|im_end|>",
    "<|endoftext|>",
    "<end_of_turn>",
    "<|eot_id|>",
    "<|end_of_text|>",
    "<eos>",
    "</s>",
)


@lru_cache(maxsize=1)
def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable unicode character map used by byte-level BPE."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(
        range(ord("®"), ord("ÿ") + 1)
    )
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


@lru_cache(maxsize=1)
def unicode_to_bytes() -> dict[str, int]:
    return {c: b for b, c in bytes_to_unicode().items()}


def _backend(tok: Any):
    return getattr(tok, "backend_tokenizer", None) or getattr(tok, "_tokenizer", None)


def tokenizer_kind(tok: Any) -> str:
    """'byte_level' (GPT-2 style BPE) or 'sentencepiece' ('▁' for space, <0xNN> byte fallback)."""
    be = _backend(tok)
    if be is not None:
        desc = f"{be.decoder!r} {be.pre_tokenizer!r}"
        if "ByteLevel" in desc:
            return "byte_level"
        if "Metaspace" in desc or "▁" in desc or "ByteFallback" in desc:
            return "sentencepiece"
    # slow tokenizers: guess from the vocabulary
    vocab = tok.get_vocab()
    if "<0x0A>" in vocab or any(t.startswith("▁") for t in list(vocab)[:5000]):
        return "sentencepiece"
    return "byte_level"


def special_token_ids(tok: Any) -> list[int]:
    """Ids of special/control tokens (they contribute no text bytes)."""
    ids = set(int(i) for i in getattr(tok, "all_special_ids", []) or [])
    for i, at in (getattr(tok, "added_tokens_decoder", None) or {}).items():
        if getattr(at, "special", False):
            ids.add(int(i))
    return sorted(ids)


def token_bytes(tok: Any, vocab_size: int | None = None) -> list[bytes]:
    """Exact byte string of every token id (length max(len(tok), vocab_size)); b'' for special
    tokens and for ids past the tokenizer's vocabulary (logit padding)."""
    n = len(tok)
    size = max(n, vocab_size or 0)
    kind = tokenizer_kind(tok)
    specials = set(special_token_ids(tok))
    added = {int(i): at for i, at in (getattr(tok, "added_tokens_decoder", None) or {}).items()}
    pieces = tok.convert_ids_to_tokens(list(range(n)))
    u2b = unicode_to_bytes()
    out: list[bytes] = [b""] * size
    for i, s in enumerate(pieces):
        if s is None or i in specials:
            continue
        if i in added:
            # literal added token: matched as raw text (normalised spaces for sentencepiece)
            content = added[i].content
            if kind == "sentencepiece":
                m = _BYTE_FALLBACK.match(content)
                if m:
                    out[i] = bytes([int(m.group(1), 16)])
                    continue
                content = content.replace("▁", " ")
            out[i] = content.encode("utf-8")
            continue
        if kind == "byte_level":
            try:
                out[i] = bytes(u2b[c] for c in s)
            except KeyError:  # not byte-level encoded (should not happen for vocab tokens)
                out[i] = s.encode("utf-8")
        else:
            m = _BYTE_FALLBACK.match(s)
            if m:
                out[i] = bytes([int(m.group(1), 16)])
            else:
                out[i] = s.replace("▁", " ").encode("utf-8")
    return out


def stop_token_ids(tok: Any) -> list[int]:
    """EOS plus the chat end-of-turn tokens the tokenizer has."""
    ids: list[int] = []
    eos = getattr(tok, "eos_token_id", None)
    if isinstance(eos, int):
        ids.append(eos)
    elif isinstance(eos, (list, tuple)):
        ids.extend(int(e) for e in eos)
    vocab = tok.get_vocab()
    specials = set(special_token_ids(tok))
    for s in STOP_TOKEN_STRINGS:
        i = vocab.get(s)
        # only control tokens: '</s>' is ordinary text in Qwen's and Gemma's vocabularies
        if i is not None and int(i) in specials and int(i) not in ids:
            ids.append(int(i))
    return ids


def logits_vocab_size(model: Any) -> int:
    """Number of logits the model produces per position (may exceed len(tokenizer))."""
    emb = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if emb is not None and getattr(emb, "weight", None) is not None:
        return int(emb.weight.shape[0])
    return int(model.config.vocab_size)


def build_prompt_ids(tok: Any, user_text: str, system: str | None = None) -> list[int]:
    """Token ids of a chat prompt (one user turn, optionally a system turn) ending where the
    assistant's answer starts; see `chat_prompt_ids`."""
    messages = [] if system is None else [("system", system)]
    return chat_prompt_ids(tok, messages + [("user", user_text)])


def chat_prompt_ids(tok: Any, messages: Sequence[tuple[str, str]]) -> list[int]:
    """Token ids of chat messages [(role, content), ...] ending where the assistant's answer
    starts.

    Uses the tokenizer's chat template when it has one; otherwise (e.g. Gemma base) the plain
    texts joined by blank lines, with BOS prepended if the tokenizer has one and does not add it
    itself."""
    if getattr(tok, "chat_template", None):
        ids = tok.apply_chat_template([{"role": r, "content": c} for r, c in messages],
                                      add_generation_prompt=True, tokenize=True)
        if hasattr(ids, "keys") and "input_ids" in ids:  # BatchEncoding in some versions
            ids = ids["input_ids"]
        return [int(i) for i in ids]
    text = "\n\n".join(c for _, c in messages)
    ids = [int(i) for i in tok.encode(text, add_special_tokens=False)]
    bos = getattr(tok, "bos_token_id", None)
    if isinstance(bos, int) and (not ids or ids[0] != bos):
        ids = [bos] + ids
    return ids
