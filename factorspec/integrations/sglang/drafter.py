"""FactorSpec drafts in SGLang's NGRAM verify format.

SGLang's NGRAM worker (``sglang/srt/speculative/ngram_worker.py``, 0.5.23) hands its verify step,
per decode batch of ``bs`` requests and a fixed ``N = --speculative-num-draft-tokens``:

- ``req_drafts``: ``[bs * N]`` int64, per request the root (last committed token) then N-1 drafts;
- ``mask``: ``[bs * N * N]`` bool, row-major per request, ``mask[i, j]`` = node j is node i or an
  ancestor of it;

and derives positions and ``retrive_index / retrive_next_token / retrive_next_sibling`` from the
mask (``reconstruct_indices_from_tree_mask``). :class:`FactorSpecDrafter` produces exactly those
two arrays from FactorSpec drafts (certain run + small tree per request, each at its own width
``w_b <= N - 1``), builds the mask and retrieval arrays with FactorSpec's kernel
:func:`factorspec.kernels.build_tree_verify_inputs`, and fills grammar mask rows for every verify
position.

Widths, fixed (``ragged=False``, SGLang's own layout): SGLang's verify forward is ``N`` tokens per
request, so a request whose width is below ``N - 1`` is padded. Pads hang below the root and
repeat the root's first child (or, with no draft, the first token allowed at the root); the greedy
verifier takes the first matching sibling, so a duplicate is never chosen over the real node, and
a pad accepted on its own is the target's own masked greedy choice, so acceptance stays exact.

Widths, ragged (``ragged=True``): request ``b`` has ``n_b = 1 + w_b`` real nodes, built by
:func:`factorspec.kernels.build_tree_verify_inputs` over the ragged trees (``cu_nodes``), and
``qo_lens[b] = n_b``. The arrays keep NGRAM's ``[bs * N]`` / ``[bs * N * N]`` shapes (SGLang's
retrieval, KV move and sampling index them as ``b * N + j``), but the ``N - n_b`` slots past
``n_b`` are inert: their mask row is the node alone (no ancestor), so the tree reconstruction
gives them no parent and neither the greedy verifier nor the grammar walk can reach them. The
worker (:mod:`factorspec.integrations.sglang.ngram_worker`) then forwards only the ``n_b``
real nodes of each request (``sum_b n_b`` tokens, packed) and scatters their logits back.

Overlap: :meth:`FactorSpecDrafter.prefetch` computes, on a background thread, the next step's
drafts for the acceptance outcomes the constraints make certain (every certain token is accepted;
the bonus token is known where the next position is forced or has at most ``max_branches``
choices), on cloned matchers. Started right after the drafts are handed over, it runs while the
target forward runs; the next :meth:`draft` looks the result up by the tokens actually accepted.

Needs torch and ``factorspec.kernels``; does not import sglang.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
import torch

from factorspec.constraint import DraftTree
from factorspec.graph.matcher import Matcher
from factorspec.integrations.bitmask_rows import fill_row


def _matcher_of(g: Any) -> Matcher:
    return g if isinstance(g, Matcher) else g.matcher


def _accepted_of(g: Any) -> Optional[list[int]]:
    return getattr(g, "accepted_tokens", None)


@dataclass
class NgramDrafts:
    """One batch's drafts in NGRAM's layout plus what FactorSpec knows about them."""

    draft_tokens: np.ndarray  # [bs * N] int64: per request root, then N - 1 nodes
    tree_mask: np.ndarray  # [bs * N * N] bool, ancestor-or-self
    parents: list[list[int]]  # per request N local parents (root -1)
    widths: list[int]  # real (non-pad) draft tokens per request
    certain: list[list[bool]]  # per request N flags (root True; pads False)
    num_draft_tokens: int = 0
    trees: list[DraftTree] = field(default_factory=list)
    # nodes to verify per request: N each (fixed), or 1 + width (ragged: the slots past it are inert)
    qo_lens: list[int] = field(default_factory=list)
    ragged: bool = False

    @property
    def batch_size(self) -> int:
        return len(self.widths)


class FactorSpecDrafter:
    """Per-request FactorSpec drafts for an SGLang verify step of ``num_draft_tokens`` nodes.

    ``width_fn(grammar, batch_size) -> int`` picks each request's width (default ``N - 1``,
    since SGLang pays for N tokens per request anyway); it is clipped to ``[0, N - 1]``."""

    def __init__(self, num_draft_tokens: int, width_fn: Optional[Callable[[Any, int], int]] = None,
                 max_branches: int = 4, prefetch: bool = True) -> None:
        if num_draft_tokens < 1:
            raise ValueError("num_draft_tokens must be >= 1 (the root)")
        self.N = int(num_draft_tokens)
        self.width_fn = width_fn
        self.max_branches = max_branches
        self.stats = {"drafted": 0, "prefetch_hits": 0, "prefetch_misses": 0}
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="factorspec-draft") if prefetch else None
        self._pending: Optional[Future] = None
        self._lock = threading.Lock()
        # id(grammar) -> (base accepted tokens, width, {accepted-suffix tuple: DraftTree})
        self._cache: dict[int, tuple[tuple[int, ...], int, dict]] = {}

    # -- single request ---------------------------------------------------------------------------
    def width_for(self, grammar: Any, batch_size: int) -> int:
        w = self.N - 1 if self.width_fn is None else int(self.width_fn(grammar, batch_size))
        return max(0, min(self.N - 1, w))

    def draft(self, grammar: Any, width: int) -> DraftTree:
        """FactorSpec's draft (certain run, then a small tree) from the grammar's current state."""
        m = _matcher_of(grammar)
        if width <= 0 or m.is_terminated():
            return DraftTree()
        hit = self._lookup(grammar, width)
        if hit is not None:
            self.stats["prefetch_hits"] += 1
            return hit
        if self._pool is not None:
            self.stats["prefetch_misses"] += 1
        self.stats["drafted"] += 1
        return m.draft(width, self.max_branches)

    # -- batch: NGRAM layout ----------------------------------------------------------------------
    def pad_tree(self, grammar: Any, tree: DraftTree) -> tuple[list[int], list[int], list[bool]]:
        """(tokens, parents, certain) of the N - 1 non-root nodes: the tree, then pads below the root."""
        n_pad = self.N - 1 - len(tree)
        if n_pad < 0:
            raise ValueError(f"draft of {len(tree)} tokens exceeds N - 1 = {self.N - 1}")
        toks = list(tree.tokens)
        par = [p + 1 for p in tree.parents]  # local node index: root is 0, draft k is k + 1
        cert = list(tree.certain)
        if n_pad:
            if tree.tokens:
                pad = tree.tokens[0]
            else:
                m = _matcher_of(grammar)
                allowed = m.allowed_tokens()
                pad = int(allowed[0]) if len(allowed) else 0
            toks += [pad] * n_pad
            par += [0] * n_pad
            cert += [False] * n_pad
        return toks, par, cert

    def build(self, grammars: Sequence[Any], roots: Sequence[int],
              trees: Optional[Sequence[DraftTree]] = None, widths: Optional[Sequence[int]] = None,
              ragged: bool = False) -> NgramDrafts:
        """Drafts for a batch (``grammars[b]``: a SGLangFactorSpecGrammar or Matcher at the state after
        ``roots[b]``) in NGRAM's ``req_drafts`` / ``mask`` layout; the mask comes from
        :func:`factorspec.kernels.build_tree_verify_inputs`. ``ragged``: no pads, each request
        verifies its own ``1 + width`` nodes (module docstring)."""
        from factorspec.kernels import build_tree_verify_inputs

        bs, N = len(grammars), self.N
        self.wait()
        if widths is None:
            widths = [self.width_for(g, bs) for g in grammars]
        if trees is None:
            trees = [self.draft(g, w) for g, w in zip(grammars, widths)]
        if ragged:
            return self._build_ragged(roots, trees)
        tokens = np.empty(bs * N, dtype=np.int64)
        parents: list[list[int]] = []
        certain: list[list[bool]] = []
        for b, (g, tree) in enumerate(zip(grammars, trees)):
            toks, par, cert = self.pad_tree(g, tree)
            tokens[b * N] = int(roots[b])
            tokens[b * N + 1:(b + 1) * N] = toks
            parents.append([-1] + par)
            certain.append([True] + cert)
        vi = build_tree_verify_inputs(parents, None, [0] * bs, build_full_mask=False, backend="torch")
        mask = vi.tree_mask_qlen.numpy().astype(bool, copy=False)
        return NgramDrafts(tokens, mask, parents, [len(t) for t in trees], certain, N, list(trees), [N] * bs)

    def _build_ragged(self, roots: Sequence[int], trees: Sequence[DraftTree]) -> NgramDrafts:
        """Ragged layout: request ``b``'s ``n_b`` real nodes at ``b * N ..``, the rest inert."""
        from factorspec.kernels import build_tree_verify_inputs

        bs, N = len(trees), self.N
        tokens = np.empty(bs * N, dtype=np.int64)
        parents: list[list[int]] = []
        certain: list[list[bool]] = []
        for b, tree in enumerate(trees):
            if len(tree) > N - 1:
                raise ValueError(f"draft of {len(tree)} tokens exceeds N - 1 = {N - 1}")
            n = 1 + len(tree)
            tokens[b * N] = int(roots[b])
            tokens[b * N + 1:b * N + n] = tree.tokens
            tokens[b * N + n:(b + 1) * N] = int(roots[b])  # inert slots: never forwarded nor reached
            parents.append([-1] + [p + 1 for p in tree.parents])
            certain.append([True] + list(tree.certain))
        vi = build_tree_verify_inputs(parents, None, [0] * bs, build_full_mask=False, backend="torch")
        qlen = vi.tree_mask_qlen.numpy().astype(bool, copy=False)
        mask = np.zeros((bs, N, N), dtype=bool)
        mask[:, np.arange(N), np.arange(N)] = True  # inert slots: the node alone, no parent
        off = 0
        for b, par in enumerate(parents):
            n = len(par)
            mask[b, :n, :n] = qlen[off:off + n * n].reshape(n, n)
            off += n * n
        return NgramDrafts(tokens, mask.reshape(-1), parents, [len(t) for t in trees], certain, N, list(trees),
                           [len(p) for p in parents], True)

    def verify_inputs(self, drafts: NgramDrafts, prefix_lens: Sequence[int], device: Any = "cpu",
                      build_full_mask: bool = True):
        """Positions, attention masks and ``retrive_*`` arrays for the verify forward
        (:class:`factorspec.kernels.TreeVerifyInputs`; ``retrive_index`` is ``b * N + j``,
        SGLang's layout, because every request has exactly N nodes)."""
        from factorspec.kernels import build_tree_verify_inputs, flatten_parents

        par, cu = flatten_parents(drafts.parents, device)
        pl = torch.as_tensor(list(prefix_lens), dtype=torch.int64, device=device)
        return build_tree_verify_inputs(par, cu, pl, max_nodes=self.N, build_full_mask=build_full_mask)

    def tree_bitmask(self, grammars: Sequence[Any], drafts: NgramDrafts, vocab_size: int,
                     out: Optional[torch.Tensor] = None) -> torch.Tensor:
        """Grammar mask rows for every verify position: ``[bs * N, ceil(V / 32)]`` int32, row
        ``b * N + j`` = the mask after the path root..j. Same semantics as SGLang's
        ``traverse_tree`` (a node whose token its parent's row forbids can never be accepted; its
        row stays all-allowed), computed on cloned matchers so the grammars are untouched."""
        bs, N = drafts.batch_size, self.N
        words = (vocab_size + 31) // 32
        if out is None:
            out = torch.full((bs * N, words), -1, dtype=torch.int32)
        for b, g in enumerate(grammars):
            m = _matcher_of(g).clone()
            par = drafts.parents[b]  # N nodes (fixed) or the n_b real ones (ragged)
            toks = drafts.draft_tokens[b * N:(b + 1) * N]
            children: list[list[int]] = [[] for _ in range(N)]
            for j in range(1, len(par)):
                children[par[j]].append(j)
            rows = out[b * N:(b + 1) * N]
            # depth-first: (node, entering?)
            stack: list[tuple[int, bool]] = [(0, True)]
            while stack:
                j, enter = stack.pop()
                if not enter:
                    m.rollback(1)
                    continue
                if j:
                    t = int(toks[j])
                    word = int(rows[par[j], t // 32]) if t < vocab_size else 0
                    if not (word >> (t % 32)) & 1 or not m.accept_token(t):
                        continue
                    stack.append((j, False))
                if m.is_terminated():
                    continue
                fill_row(m, rows, j)
                for c in reversed(children[j]):
                    stack.append((c, True))
        return out

    # -- overlap: next-step drafts while the forward runs -----------------------------------------
    def prefetch(self, grammars: Sequence[Any], drafts: NgramDrafts, widths: Optional[Sequence[int]] = None) -> None:
        """Start computing next-step drafts for the certain acceptance outcomes (background
        thread). Safe to skip; :meth:`draft` falls back to computing on demand."""
        if self._pool is None:
            return
        self.wait()
        jobs = []
        for b, g in enumerate(grammars):
            acc = _accepted_of(g)
            if acc is None:
                continue
            w = widths[b] if widths is not None else self.width_for(g, len(grammars))
            jobs.append((id(g), tuple(acc), _matcher_of(g).clone(), drafts.trees[b], w))
        if jobs:
            self._pending = self._pool.submit(self._prefetch_jobs, jobs)

    def wait(self) -> None:
        f, self._pending = self._pending, None
        if f is not None:
            f.result()

    def forget(self, grammar: Any) -> None:
        with self._lock:
            self._cache.pop(id(grammar), None)

    def close(self) -> None:
        self.wait()
        if self._pool is not None:
            self._pool.shutdown(wait=True)

    def _lookup(self, grammar: Any, width: int) -> Optional[DraftTree]:
        acc = _accepted_of(grammar)
        if acc is None:
            return None
        with self._lock:
            entry = self._cache.get(id(grammar))
        if entry is None:
            return None
        base, w, table = entry
        n = len(base)
        if w != width or len(acc) < n or tuple(acc[:n]) != base:
            return None
        return table.get(tuple(acc[n:]))

    def _prefetch_jobs(self, jobs) -> None:
        for gid, base, m, tree, width in jobs:
            table: dict = {}
            for path in _leaf_paths(tree):
                for t in path:
                    if not m.accept_token(t):
                        break
                else:
                    if not m.is_terminated():
                        if m.plan or len(m.allowed_tokens()) <= self.max_branches:
                            nxt = [m.plan[0]] if m.plan else [int(i) for i in m.allowed_tokens()]
                            for bonus in nxt:
                                if bonus in m.vocab.stop_ids or not m.accept_token(bonus):
                                    continue
                                table[tuple(path) + (bonus,)] = m.draft(width, self.max_branches) \
                                    if not m.is_terminated() else DraftTree()
                                m.rollback(1)
                extra = m.num_accepted() - len(base)
                if extra > 0:
                    m.rollback(extra)
            with self._lock:
                self._cache[gid] = (base, width, table)


def _leaf_paths(tree: DraftTree) -> list[list[int]]:
    """Token paths root -> each node that has no child (the empty path when the tree is empty)."""
    n = len(tree)
    if n == 0:
        return [[]]
    has_child = [False] * n
    for p in tree.parents:
        if p >= 0:
            has_child[p] = True
    out = []
    for k in range(n):
        if has_child[k]:
            continue
        path, j = [], k
        while j >= 0:
            path.append(tree.tokens[j])
            j = tree.parents[j]
        out.append(path[::-1])
    return out
