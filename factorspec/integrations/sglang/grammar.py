"""FactorSpec as an SGLang grammar backend (``--grammar-backend factorspec``).

``json_schema`` requests are compiled by the backend's :class:`~factorspec.graph.compiler.
SpecCompiler` (relations under ``"x-factorspec"``; plain schemas work too; one compiled spec and
byte automaton per schema, LRU-bounded) and served by one :class:`~factorspec.graph.matcher.
Matcher` per request. Other grammar kinds (regex, EBNF, structural tags, ``$$ANY$$``) go to an
inner xgrammar backend, so the server stays a drop-in. Both write xgrammar's bitmask layout
(``int32 [rows, ceil(V / 32)]``, bit ``j % 32`` of word ``j // 32``, 1 = allowed, -1 = free), so
one batch may mix FactorSpec and xgrammar requests: SGLang applies the whole batch's mask through
any one grammar's ``apply_vocab_mask``.

Interface matched: ``sglang==0.5.23``, ``sglang/srt/constrained/base_grammar_backend.py``.
"""
from __future__ import annotations

import json
import logging
from typing import Any, List, Optional, Sequence, Tuple

import torch
from sglang.srt.constrained.base_grammar_backend import (
    BaseGrammarBackend,
    BaseGrammarObject,
    GrammarStats,
    InvalidGrammarObject,
)

from factorspec.errors import FactorSpecError
from factorspec.graph.compiler import SpecCompiler
from factorspec.graph.matcher import Matcher
from factorspec.graph.spec import CompiledSpec
from factorspec.graph.textstate import TextMachine
from factorspec.graph.token_vocab import TokenVocab
from factorspec.integrations.bitmask_rows import fill_row

logger = logging.getLogger(__name__)

BACKEND_NAME = "factorspec"
MAX_ROLLBACK_TOKENS = 200  # same bound as SGLang's xgrammar grammars (not enforced: history is kept)


def allocate_token_bitmask(vocab_size: int, batch_size: int) -> torch.Tensor:
    """xgrammar's ``allocate_token_bitmask``: ``[batch, ceil(V / 32)]`` int32, all -1 (free)."""
    pin = torch.cuda.is_available()
    return torch.full((batch_size, (vocab_size + 31) // 32), -1, dtype=torch.int32, pin_memory=pin)


def apply_token_bitmask(logits: torch.Tensor, vocab_mask: torch.Tensor) -> None:
    """Set disallowed logits to -inf in place (rows of ``vocab_mask`` match rows of ``logits``).

    CUDA/XPU: SGLang's own Triton kernel (what its xgrammar backend calls); CPU: FactorSpec's
    torch path (:func:`factorspec.kernels.apply_bitmask`), same layout."""
    if logits.device.type in {"cuda", "xpu", "musa"}:
        from sglang.kernels.ops.grammar.bitmask_ops import apply_token_bitmask_inplace_triton

        apply_token_bitmask_inplace_triton(logits, vocab_mask.to(logits.device, non_blocking=True))
        return
    from factorspec.kernels import apply_bitmask

    apply_bitmask(logits, vocab_mask.to(logits.device), backend="torch")


class SGLangFactorSpecGrammar(BaseGrammarObject):
    """One request's constraint: SGLang's grammar-object contract over a FactorSpec Matcher.

    SGLang's contract (what the scheduler and the speculative tree traversal rely on):
    ``accept_token`` raises on a token the mask did not allow (SGLang aborts the request);
    ``rollback(k)`` undoes the last k accepted tokens (used after tree traversal and by
    speculative verification); ``copy()`` returns a fresh grammar at the initial state (the
    backend caches one compiled object per schema and copies it per request);
    ``fill_vocab_mask`` writes a full row (every word), so a reused buffer needs no reset.
    """

    def __init__(self, spec: CompiledSpec, machine: TextMachine, vocab: TokenVocab, key_string: str = "",
                 grammar_stats: Optional[GrammarStats] = None, matcher: Optional[Matcher] = None) -> None:
        super().__init__()
        self.spec = spec
        self.machine = machine
        self.vocab = vocab
        self.key_string = key_string
        self.grammar_stats = grammar_stats
        self.matcher = matcher if matcher is not None else Matcher(machine, vocab)
        self.accepted_tokens: List[int] = []

    # -- token state ------------------------------------------------------------------------------
    def accept_token(self, token: int) -> None:
        if self.is_terminated():
            return  # like xgrammar's object: tokens after termination are ignored
        self.current_token = token
        if not self.matcher.accept_token(int(token)):
            raise ValueError(
                f"FactorSpec: token {token} is not allowed here (after {len(self.accepted_tokens)} tokens, "
                f"text so far {bytes(self.matcher.text)[-80:]!r}); key {self.key_string[:200]!r}"
            )
        self.accepted_tokens.append(int(token))

    def rollback(self, k: int) -> None:
        if k <= 0:
            return
        self.matcher.rollback(k)
        del self.accepted_tokens[-k:]

    def is_terminated(self) -> bool:
        return self.matcher.is_terminated()

    def copy(self) -> "SGLangFactorSpecGrammar":
        stats = None
        if self.grammar_stats is not None:
            import dataclasses

            stats = dataclasses.replace(self.grammar_stats, is_cache_hit=True, tree_traversal_time=[])
        return SGLangFactorSpecGrammar(self.spec, self.machine, self.vocab, self.key_string, stats)

    # -- vocab masks ------------------------------------------------------------------------------
    def allocate_vocab_mask(self, vocab_size: int, batch_size: int, device) -> torch.Tensor:
        return allocate_token_bitmask(vocab_size, batch_size)

    def fill_vocab_mask(self, vocab_mask: torch.Tensor, idx: int) -> None:
        # Writes the whole row (zeroes past FactorSpec's vocabulary), so no reset is needed.
        fill_row(self.matcher, vocab_mask, idx)

    @staticmethod
    def reset_vocab_mask(vocab_mask: torch.Tensor) -> None:
        vocab_mask.fill_(-1)

    @staticmethod
    def move_vocab_mask(vocab_mask: torch.Tensor, device) -> torch.Tensor:
        return vocab_mask.to(device, non_blocking=True)

    @staticmethod
    def apply_vocab_mask(logits: torch.Tensor, vocab_mask: torch.Tensor) -> None:
        apply_token_bitmask(logits, vocab_mask)

    # -- jump forward -----------------------------------------------------------------------------
    def try_jump_forward(self, tokenizer) -> Optional[Tuple[List[int], str]]:
        """The certain run from here (tokens the constraints force), or None when the next token
        is a free choice. The returned tokens are FactorSpec's canonical tokenization."""
        run = self.matcher.certain_run(4096)
        run = [t for t in run if t not in self.vocab.stop_ids]
        if not run:
            return None
        text = b"".join(self.vocab.token_bytes[t] for t in run)
        return run, text.decode("utf-8", errors="replace")

    def jump_forward_str_state(self, helper: Tuple[List[int], str]) -> Tuple[str, int]:
        _, text = helper
        return text, -1

    def jump_and_retokenize(self, old_output_ids: List[int], new_output_ids: List[int], next_state: int) -> None:
        k = 0
        for i, old_id in enumerate(old_output_ids):
            if i < len(new_output_ids) and old_id == new_output_ids[i]:
                k = i + 1
            else:
                break
        if k < len(old_output_ids):
            self.rollback(len(old_output_ids) - k)
        for t in new_output_ids[k:]:
            self.accept_token(t)

    # -- FactorSpec extras ------------------------------------------------------------------------
    def draft(self, max_tokens: int):
        """FactorSpec's certain run plus a small tree (``factorspec.constraint.DraftTree``)."""
        if self.is_terminated() or max_tokens <= 0:
            from factorspec.constraint import DraftTree

            return DraftTree()
        return self.matcher.draft(max_tokens)

    def __repr__(self) -> str:
        return f"SGLangFactorSpecGrammar(key={self.key_string[:60]!r}, accepted={len(self.accepted_tokens)})"


def vocab_from_tokenizer(tokenizer: Any, vocab_size: int, eos_token_ids: Optional[Sequence[int]] = None) -> TokenVocab:
    """FactorSpec's TokenVocab for SGLang's tokenizer; the model's EOS ids (what SGLang treats as
    stop tokens) are added to the tokenizer's own stop tokens."""
    from factorspec.models.tokens import stop_token_ids, token_bytes

    tok = tokenizer
    tb = token_bytes(tok, vocab_size)
    stops = set(stop_token_ids(tok)) | set(int(i) for i in (eos_token_ids or ()))
    stops = {s for s in stops if 0 <= s < max(vocab_size, len(tb))}
    return TokenVocab(tb, sorted(stops), vocab_size or len(tb),
                      encode=lambda s: tok.encode(s, add_special_tokens=False),
                      name=getattr(tok, "name_or_path", ""))


def _has_relations(doc: Any) -> bool:
    return isinstance(doc, dict) and "x-factorspec" in doc


class FactorSpecGrammarBackend(BaseGrammarBackend):
    """Compiles ``json_schema`` keys with FactorSpec; delegates the rest to xgrammar.

    ``plain_json``: "factorspec" (default) serves plain schemas with FactorSpec as well;
    "xgrammar" sends schemas without ``x-factorspec`` to xgrammar."""

    def __init__(self, tokenizer: Any, vocab_size: int, eos_token_ids: Optional[Sequence[int]] = None,
                 fallback: Optional[BaseGrammarBackend] = None, plain_json: str = "factorspec",
                 cache_limit: int = 256) -> None:
        super().__init__()
        self.tokenizer = tokenizer
        self.vocab_size = vocab_size
        self.vocab = vocab_from_tokenizer(tokenizer, vocab_size, eos_token_ids)
        self.fallback = fallback
        self.plain_json = plain_json
        self.compiler = SpecCompiler(cache_enabled=True, cache_limit=cache_limit)

    # SGLang calls these on the backend too (e.g. for allocating the batch mask).
    allocate_vocab_mask = staticmethod(lambda vocab_size, batch_size, device: allocate_token_bitmask(vocab_size, batch_size))
    move_vocab_mask = staticmethod(SGLangFactorSpecGrammar.move_vocab_mask)
    apply_vocab_mask = staticmethod(apply_token_bitmask)

    @property
    def is_support_token_filter(self) -> bool:
        return self.fallback is not None and self.fallback.is_support_token_filter

    def set_token_filter(self, vocab_mask, token_ids, batch_idx, is_allowed=True, reset_vocab_mask=True):
        if self.fallback is not None:
            self.fallback.set_token_filter(vocab_mask, token_ids, batch_idx, is_allowed, reset_vocab_mask)

    def compile(self, key_string: str) -> SGLangFactorSpecGrammar:
        """Compile a schema string (raises FactorSpecError / ValueError on a bad spec)."""
        cc = self.compiler.compile(json.loads(key_string))
        return SGLangFactorSpecGrammar(cc.spec, cc.machine, self.vocab, key_string, GrammarStats(dispatch_type="json"))

    def dispatch_json(self, key_string: str) -> BaseGrammarObject:
        if key_string == "$$ANY$$":
            return self._delegate("json", key_string)
        try:
            doc = json.loads(key_string)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            logger.error("FactorSpec: invalid json_schema %r: %s", key_string[:200], e)
            return InvalidGrammarObject(f"FactorSpec: json_schema is not valid JSON: {e}")
        if self.plain_json == "xgrammar" and not _has_relations(doc) and self.fallback is not None:
            return self._delegate("json", key_string)
        try:
            return self.compile(key_string)
        except (FactorSpecError, ValueError, TypeError, KeyError, RecursionError) as e:
            logger.error("FactorSpec: cannot compile json_schema %r: %s", key_string[:200], e)
            return InvalidGrammarObject(f"FactorSpec: {type(e).__name__}: {e}")

    def _delegate(self, kind: str, key_string: str) -> BaseGrammarObject:
        if self.fallback is None:
            return InvalidGrammarObject(f"FactorSpec backend: {kind} grammars need the xgrammar fallback, which is not available")
        return getattr(self.fallback, f"dispatch_{kind}")(key_string)

    def dispatch_regex(self, key_string: str) -> BaseGrammarObject:
        return self._delegate("regex", key_string)

    def dispatch_ebnf(self, key_string: str) -> BaseGrammarObject:
        return self._delegate("ebnf", key_string)

    def dispatch_structural_tag(self, key_string: str) -> BaseGrammarObject:
        return self._delegate("structural_tag", key_string)

    def reset(self) -> None:
        super().reset()
        self.compiler.clear_cache()
        if self.fallback is not None:
            self.fallback.reset()


def _make_fallback(tokenizer: Any, vocab_size: int, eos_token_ids) -> Optional[BaseGrammarBackend]:
    try:
        from sglang.srt.constrained.xgrammar_backend import XGrammarGrammarBackend

        return XGrammarGrammarBackend(tokenizer, vocab_size=vocab_size,
                                      model_eos_token_ids=list(eos_token_ids) if eos_token_ids else None,
                                      any_whitespace=False)
    except Exception as e:  # noqa: BLE001 - the fallback is optional
        logger.warning("FactorSpec backend: no xgrammar fallback for regex/EBNF (%s)", e)
        return None


def create_factorspec_backend(server_args: Any, tokenizer: Any, vocab_size: int,
                              eos_token_ids: Optional[set] = None) -> FactorSpecGrammarBackend:
    """The factory SGLang's ``create_grammar_backend`` calls for ``--grammar-backend factorspec``
    (signature ``(server_args, tokenizer, vocab_size, eos_token_ids)``)."""
    import os

    plain = os.environ.get("FACTORSPEC_SGLANG_PLAIN_JSON", "factorspec")
    fallback = _make_fallback(tokenizer, vocab_size, eos_token_ids)
    return FactorSpecGrammarBackend(tokenizer, vocab_size, sorted(eos_token_ids or ()), fallback, plain)
