"""An NGRAM worker whose drafts come from FactorSpec for FactorSpec-constrained requests.

SGLang 0.5.23 builds NGRAM verify steps in ``NGRAMWorker._prepare_for_speculative_decoding``:
``_prepare_draft_tokens(batch) -> (req_drafts [bs*N], mask [bs*N*N])``, then positions and
``retrive_*`` from the mask, the target verify forward, the grammar mask over the tree (host
work, after the forward is launched) and greedy tree verification. This subclass overrides only
``_prepare_draft_tokens``: the corpus still drafts (and learns) for every request, and the rows of
requests whose grammar is a :class:`~factorspec.integrations.sglang.grammar.SGLangFactorSpecGrammar` are
replaced by FactorSpec's drafts (:class:`~factorspec.integrations.sglang.drafter.FactorSpecDrafter`).
The next step's drafts are then prefetched on a background thread, which runs while the target
forward of this step runs.

SGLang runs NGRAM + grammar batches synchronously (``grammar_needs_sync``: the previous step's
accepted tokens are in ``req.output_ids`` and in the grammar before drafting), which is what lets
drafts be read off the grammar state; there is nothing to splice from the overlap future map.

Selected by :func:`install_drafter` (the launcher calls it in every SGLang process), which makes
``SpeculativeAlgorithm.NGRAM.create_worker`` return this class.
"""
from __future__ import annotations

import logging
import os
from typing import Any, List, Tuple

import numpy as np
from sglang.srt.speculative import ngram_worker as _ngram_worker_module
from sglang.srt.speculative.ngram_worker import NGRAMWorker

from factorspec.integrations.sglang.drafter import FactorSpecDrafter
from factorspec.integrations.sglang.grammar import SGLangFactorSpecGrammar

logger = logging.getLogger(__name__)

_ORIGINAL_NGRAM_WORKER = NGRAMWorker


def overwrite_with_factorspec(drafter: FactorSpecDrafter, reqs: List[Any], req_drafts: np.ndarray,
                              mask: np.ndarray, prefetch: bool = True) -> Tuple[np.ndarray, np.ndarray, Any]:
    """Replace the NGRAM rows of FactorSpec-constrained requests by FactorSpec drafts.

    ``req_drafts[b * N]`` (the corpus's root: the request's last token) is kept as the root.
    Returns ``(req_drafts, mask, NgramDrafts or None)``; the arrays are modified in place."""
    N = drafter.N
    rows = [i for i, r in enumerate(reqs) if isinstance(getattr(r, "grammar", None), SGLangFactorSpecGrammar)
            and not r.grammar.is_terminated()]
    if not rows:
        return req_drafts, mask, None
    grammars = [reqs[i].grammar for i in rows]
    roots = [int(req_drafts[i * N]) for i in rows]
    d = drafter.build(grammars, roots)
    for k, i in enumerate(rows):
        req_drafts[i * N:(i + 1) * N] = d.draft_tokens[k * N:(k + 1) * N]
        mask[i * N * N:(i + 1) * N * N] = d.tree_mask[k * N * N:(k + 1) * N * N]
    if prefetch:
        drafter.prefetch(grammars, d)
    return req_drafts, mask, d


class FactorSpecNGRAMWorker(_ORIGINAL_NGRAM_WORKER):
    """SGLang's NGRAM worker with FactorSpec drafts for FactorSpec-constrained requests."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.factorspec_drafter = FactorSpecDrafter(self.draft_token_num)
        self.factorspec_last = None
        logger.info("FactorSpec drafter active (N=%d draft tokens per request)", self.draft_token_num)

    def _prepare_draft_tokens(self, batch: Any) -> Tuple[np.ndarray, np.ndarray]:
        req_drafts, mask = super()._prepare_draft_tokens(batch)
        if self.factorspec_drafter.N != self.draft_token_num:  # adaptive speculation changed N
            self.factorspec_drafter.close()
            self.factorspec_drafter = FactorSpecDrafter(self.draft_token_num)
        req_drafts, mask, self.factorspec_last = overwrite_with_factorspec(
            self.factorspec_drafter, batch.reqs, req_drafts, mask)
        return req_drafts, mask


def install_drafter() -> None:
    """Make SGLang's NGRAM algorithm create :class:`FactorSpecNGRAMWorker` in this process."""
    _ngram_worker_module.NGRAMWorker = FactorSpecNGRAMWorker


def drafter_requested() -> bool:
    return os.environ.get("FACTORSPEC_SGLANG_DRAFTER", "0") not in ("", "0", "false", "no")
