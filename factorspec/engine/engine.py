"""Reference engine loop on transformers: greedy masked decoding with tree-verified drafts and
continuous batching over a ragged KV cache (CPU or GPU, any dtype).

Each step, every active request contributes its root (the last committed token, whose KV is not
yet cached) plus the nodes of its constraint's draft tree. One forward runs all of them with tree
attention (depth-based position ids; a 4D mask = the row's committed prefix + the node's tree
ancestors). The constraint's bitmask is applied at every node (walking accept_token /
fill_next_token_bitmask / rollback along the tree), the longest path whose tokens equal the
masked argmax of their parents is accepted, and the masked argmax at its end is the bonus token.
Only the accepted path's KV entries are kept (see kvstore.KVStore.commit), so the result equals
greedy masked decoding one token per forward (up to floating-point differences between forward
shapes).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import torch

from factorspec.engine.interface import DraftTree, RequestConstraint
from factorspec.engine.kvstore import KVStore
from factorspec.engine.ops import KERNELS, bitmask_words

MODES = ("spec", "chain", "greedy")


@dataclass
class Request:
    """One generation request. `width` overrides the engine's width policy for this request."""

    prompt_ids: Sequence[int]
    constraint: RequestConstraint | None = None
    max_new_tokens: int = 256
    width: int | Callable[["RequestState", int], int] | None = None
    id: Any = None


@dataclass
class RequestStats:
    tokens: int = 0  # generated tokens (stop token included)
    verify_steps: int = 0  # decoding forwards this request took part in
    forward_passes: int = 0  # verify_steps + prefill forwards
    prefill_tokens: int = 0
    drafted_tokens: int = 0  # draft nodes sent to verification
    accepted_draft_tokens: int = 0  # draft nodes accepted
    seconds: float = 0.0  # wall time from admission to finish


@dataclass
class Result:
    request: Request
    tokens: list[int]
    finish_reason: str  # "stop", "length", "no_allowed_token", "constraint_rejected"
    stats: RequestStats


@dataclass
class RequestState:
    index: int
    request: Request
    root: int  # last committed token (prompt's last token at first), not in the KV cache
    tokens: list[int] = field(default_factory=list)
    stats: RequestStats = field(default_factory=RequestStats)
    t0: float = 0.0
    finish_reason: str | None = None
    last_drafted: int = -1  # draft nodes sent in the previous step (-1: none yet)
    last_accepted: int = 0  # of which accepted


WidthPolicy = Callable[[RequestState, int], int]  # (state, active batch size) -> draft nodes


def fixed_width(width: int) -> WidthPolicy:
    return lambda state, batch: width


def adaptive_width(max_width: int = 64, min_width: int = 4, batch_scale: bool = True) -> WidthPolicy:
    """Full width while drafts are fully accepted (certain runs); after a rejection, twice the
    accepted length (at least `min_width`). With `batch_scale`, the cap shrinks as the batch grows
    (verify cost grows with the total number of tokens in the forward)."""

    def policy(state: RequestState, batch: int) -> int:
        cap = max_width // max(1, batch) if batch_scale else max_width
        cap = max(cap, min_width)
        if state.last_drafted <= 0 or state.last_accepted >= state.last_drafted:
            return cap
        return max(min_width, min(cap, 2 * (state.last_accepted + 1)))

    return policy


class Engine:
    """Greedy engine over a transformers causal LM.

    `stop_token_ids`: tokens that end a request (in addition to `constraint.is_terminated()`).
    `width`: default width policy (int or callable (state, batch_size) -> int), capped by
    `max_width`. `vocab_size`: number of logits (default: the model's output embedding rows)."""

    def __init__(
        self,
        model,
        tokenizer=None,
        *,
        stop_token_ids: Sequence[int] | None = None,
        width: int | WidthPolicy = 16,
        max_width: int = 64,
        vocab_size: int | None = None,
    ) -> None:
        self.model = model.eval()
        self.tokenizer = tokenizer
        if stop_token_ids is None and tokenizer is not None:
            from factorspec.models.tokens import stop_token_ids as _stops

            stop_token_ids = _stops(tokenizer)
        self.stop_token_ids = set(int(t) for t in (stop_token_ids or []))
        self.width = fixed_width(width) if isinstance(width, int) else width
        self.max_width = max_width
        self.lm_head = model.get_output_embeddings()
        self.vocab_size = vocab_size or int(self.lm_head.weight.shape[0])
        self.words = bitmask_words(self.vocab_size)
        self.decoder = getattr(model, model.base_model_prefix, None) or model.model
        cfg = model.config.get_text_config(decoder=True) if hasattr(model.config, "get_text_config") else model.config
        self.softcap = getattr(cfg, "final_logit_softcapping", None)
        layer_types = getattr(cfg, "layer_types", None) or []
        self.sliding_window = getattr(cfg, "sliding_window", None) if "sliding_attention" in layer_types else None
        self.mask_mapping = "sliding_attention" in layer_types or "full_attention" in layer_types
        self.device = next(model.parameters()).device
        self.dtype = next(model.parameters()).dtype

    # ------------------------------------------------------------------ forwards
    def _attn_arg(self, attn: torch.Tensor, pos_q: torch.Tensor, pos_k: torch.Tensor | None):
        """The model's attention_mask argument from a bool [B,1,N,K] mask."""
        if not self.mask_mapping:
            return attn
        masks = {"full_attention": attn}
        if self.sliding_window is not None and pos_k is not None:
            near = (pos_q.unsqueeze(-1) - pos_k.unsqueeze(1)) < self.sliding_window  # [B,N,K]
            masks["sliding_attention"] = attn & near.unsqueeze(1)
        else:
            masks["sliding_attention"] = attn
        return masks

    @torch.inference_mode()
    def _prefill(self, ids: Sequence[int]):
        from transformers.cache_utils import DynamicCache

        cache = DynamicCache()
        n = len(ids)
        x = torch.tensor([list(ids)], dtype=torch.long, device=self.device)
        pos = torch.arange(n, device=self.device).unsqueeze(0)
        causal = torch.ones(n, n, dtype=torch.bool, device=self.device).tril()[None, None]
        self.decoder(
            input_ids=x,
            attention_mask=self._attn_arg(causal, pos, pos),
            position_ids=pos,
            past_key_values=cache,
            use_cache=True,
        )
        return cache

    def _logits(self, hidden: torch.Tensor) -> torch.Tensor:
        logits = self.lm_head(hidden).float()
        if self.softcap:
            logits = torch.tanh(logits / self.softcap) * self.softcap
        return logits

    # ------------------------------------------------------------------ masks
    def _walk_masks(self, c: RequestConstraint, draft: DraftTree, bitmask: np.ndarray, row0: int) -> list[bool]:
        """Fill bitmask rows row0.. for the root and every draft node; returns per node (root
        first) whether the constraint accepts the path to it. Leaves `c` at the root state.

        A constraint may provide `fill_tree_bitmask(draft, bitmask, row0) -> list[bool]` doing
        the same in one call (e.g. natively); it is used when present."""
        fast = getattr(c, "fill_tree_bitmask", None)
        if fast is not None:
            return list(fast(draft, bitmask, row0))
        n = len(draft.tokens)
        valid = [True] * (n + 1)
        c.fill_next_token_bitmask(bitmask, row0)
        depth_of = [0] * n
        stack: list[int] = []  # draft nodes currently accepted into c (a root->node path)
        for k in range(n):
            p = draft.parents[k]
            if p >= 0 and not valid[p + 1]:
                valid[k + 1] = False
                continue
            want = depth_of[p] if p >= 0 else 0  # path length to the parent
            if len(stack) > want:
                c.rollback(len(stack) - want)
                del stack[want:]
            if not c.accept_token(int(draft.tokens[k])):
                valid[k + 1] = False
                continue
            stack.append(k)
            depth_of[k] = len(stack)
            if c.is_terminated():
                bitmask[row0 + k + 1] = 0
            else:
                c.fill_next_token_bitmask(bitmask, row0 + k + 1)
        if stack:
            c.rollback(len(stack))
        return valid

    # ------------------------------------------------------------------ main loop
    def generate(self, requests: Sequence[Request], batch_size: int = 8, mode: str = "spec") -> list[Result]:
        """Generate for all requests (continuous batching, at most `batch_size` at once).

        mode: "spec" (draft trees verified in one forward), "chain" (only the first-child chain of
        each draft), "greedy" (no drafts: one token per request per forward, masked)."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        pending = list(range(len(requests)))[::-1]
        results: list[Result | None] = [None] * len(requests)
        kv = KVStore.for_model(self.model)
        active: list[RequestState] = []
        with torch.inference_mode():
            while pending or active:
                while pending and len(active) < batch_size:
                    i = pending.pop()
                    st = self._admit(i, requests[i], kv)
                    active.append(st)
                self._step(active, kv, mode)
                keep = []
                for r, st in enumerate(active):
                    if st.finish_reason is None:
                        keep.append(r)
                    else:
                        st.stats.seconds = time.perf_counter() - st.t0
                        st.stats.tokens = len(st.tokens)
                        results[st.index] = Result(st.request, st.tokens, st.finish_reason, st.stats)
                kv.keep_rows(keep)
                active = [active[r] for r in keep]
        return results  # type: ignore[return-value]

    def _admit(self, index: int, req: Request, kv: KVStore) -> RequestState:
        prompt = [int(t) for t in req.prompt_ids]
        if not prompt:
            raise ValueError("empty prompt")
        st = RequestState(index=index, request=req, root=prompt[-1], t0=time.perf_counter())
        if len(prompt) > 1:
            cache = self._prefill(prompt[:-1])
            kv.add_row(cache, len(prompt) - 1)
            st.stats.forward_passes += 1
            st.stats.prefill_tokens = len(prompt) - 1
        else:
            kv.add_row(None, 0)
        if req.max_new_tokens <= 0:
            st.finish_reason = "length"
        return st

    def _width(self, st: RequestState, batch: int) -> int:
        w = st.request.width if st.request.width is not None else self.width
        w = w if isinstance(w, int) else w(st, batch)
        remaining = st.request.max_new_tokens - len(st.tokens) - 1
        return max(0, min(int(w), self.max_width, remaining))

    def _step(self, active: list[RequestState], kv: KVStore, mode: str) -> None:
        B = len(active)
        if B == 0:
            return
        drafts: list[DraftTree] = []
        for st in active:
            d = DraftTree()
            c = st.request.constraint
            if mode != "greedy" and c is not None and st.finish_reason is None:
                try:
                    w = self._width(st, B)
                    if w > 0:
                        d = c.draft(w)
                        d = _truncate(d, w, chain=(mode == "chain"))
                except Exception as e:  # a failing constraint ends its own request only
                    self._fail(st, e)
                    d = DraftTree()
            drafts.append(d)
        L = kv.length
        tb = KERNELS.build_tree_verify_inputs(
            [st.root for st in active], [(d.tokens, d.parents) for d in drafts], kv.lens, L, self.device
        )
        N = tb.input_ids.shape[1]
        cache = kv.as_cache()
        pos_k = torch.cat(
            [torch.arange(L, device=self.device).expand(B, L), tb.position_ids], dim=1
        )
        out = self.decoder(
            input_ids=tb.input_ids,
            attention_mask=self._attn_arg(tb.attn, tb.position_ids, pos_k),
            position_ids=tb.position_ids,
            past_key_values=cache,
            use_cache=True,
        )
        hidden = out.last_hidden_state  # [B, N, H]
        rows = torch.cat([torch.arange(n, device=self.device) + b * N for b, n in enumerate(tb.n_nodes)])
        logits = self._logits(hidden.reshape(B * N, -1).index_select(0, rows))  # [T, V]
        # masks: one bitmask row per real node
        offsets = np.cumsum([0] + tb.n_nodes)
        T = int(offsets[-1])
        bitmask = np.full((T, self.words), -1, dtype=np.int32)
        valid_nodes: list[list[bool]] = []
        constrained_rows: list[int] = []
        for b, (st, d) in enumerate(zip(active, drafts)):
            c = st.request.constraint
            if c is None:
                valid_nodes.append([True] * (len(d) + 1))
                continue
            try:
                valid_nodes.append(self._walk_masks(c, d, bitmask, int(offsets[b])))
            except Exception as e:
                self._fail(st, e)
                valid_nodes.append([False] * (len(d) + 1))
            constrained_rows.extend(range(int(offsets[b]), int(offsets[b + 1])))
        if constrained_rows and len(constrained_rows) < T:
            bm = torch.from_numpy(bitmask[constrained_rows]).to(logits.device)
            row_map = torch.tensor(constrained_rows, device=logits.device)
        else:
            bm = torch.from_numpy(bitmask if constrained_rows else bitmask[:0]).to(logits.device)
            row_map = None
        pred_t = KERNELS.masked_argmax(logits, bm, row_map)
        pred = pred_t.tolist()
        dead = torch.isneginf(logits.gather(1, pred_t.view(-1, 1)).view(-1)).tolist()
        keep: list[list[int]] = []
        for b, (st, d) in enumerate(zip(active, drafts)):
            o = int(offsets[b])
            st.stats.verify_steps += 1
            st.stats.forward_passes += 1
            st.stats.drafted_tokens += len(d)
            if st.finish_reason is not None:
                keep.append([])
                continue
            path, bonus = KERNELS.verify_tree_greedy(pred[o : o + len(d) + 1], d.tokens, d.parents)
            # a node is only accepted if the constraint accepts it (masked argmax guarantees
            # that except for unconstrained rows, where valid is all True)
            ok = []
            for k in path:
                if not valid_nodes[b][k + 1]:
                    break
                ok.append(k)
            if len(ok) < len(path):
                bonus = pred[o + (ok[-1] + 1 if ok else 0)]
            path = ok
            last = path[-1] + 1 if path else 0
            if dead[o + last]:
                st.finish_reason = "no_allowed_token"
                keep.append([0] + [k + 1 for k in path])
                new = [int(d.tokens[k]) for k in path]
                bonus = None
            else:
                keep.append([0] + [k + 1 for k in path])
                new = [int(d.tokens[k]) for k in path] + [int(bonus)]
            st.stats.accepted_draft_tokens += len(path)
            st.last_drafted, st.last_accepted = len(d), len(path)
            try:
                self._commit(st, new)
            except Exception as e:
                self._fail(st, e)
        kv.commit(cache, L, keep)

    @staticmethod
    def _fail(st: RequestState, e: Exception) -> None:
        """End one request whose constraint raised (budget hit, bad state); the batch goes on."""
        if st.finish_reason is None:
            st.finish_reason = f"constraint_error: {type(e).__name__}: {e}"

    def _commit(self, st: RequestState, new: list[int]) -> None:
        c = st.request.constraint
        for tok in new:
            if c is not None and not c.accept_token(tok):
                st.finish_reason = "constraint_rejected"
                return
            st.tokens.append(tok)
            st.root = tok
            if tok in self.stop_token_ids or (c is not None and c.is_terminated()):
                st.finish_reason = "stop"
                return
            if len(st.tokens) >= st.request.max_new_tokens:
                st.finish_reason = "length"
                return


def _truncate(d: DraftTree, width: int, chain: bool) -> DraftTree:
    """At most `width` nodes (a prefix in topological order keeps the tree closed); in chain mode
    only the first-child chain from the root."""
    if chain:
        toks, pars, cert = [], [], []
        last = -1
        for k in range(len(d.tokens)):
            if d.parents[k] == last and len(toks) < width:
                # index of this node in the new chain is len(toks); its parent is len(toks) - 1
                toks.append(d.tokens[k])
                pars.append(len(toks) - 2)
                cert.append(d.certain[k] if k < len(d.certain) else False)
                last = k
        return DraftTree(toks, pars, cert)
    if len(d.tokens) <= width:
        return d
    return DraftTree(list(d.tokens[:width]), list(d.parents[:width]), list(d.certain[:width]))
