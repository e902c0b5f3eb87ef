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

Sampling (`Request.sampling`: temperature, top-k, top-p, seed): every verify row samples its
token from its masked distribution instead of taking the argmax, and verification follows the
sampled tokens exactly as it follows argmaxes (see factorspec.engine.sampling for why this is
lossless with deterministic drafts and trees, and why a seeded request samples the same tokens
with and without drafts).

With a `MaskWorkerPool` (`Engine(..., pool=pool)`), requests that carry a spec (`Request.spec`)
keep their matcher in a CPU worker process instead: each step sends the tokens accepted since the
last step, the worker answers with the draft (phase 1, which the forward needs), and writes the
bitmask rows of the root and every draft node into shared memory while the forward runs (phase 2,
needed only for verification). Drafts depend on the previous step's accepted tokens, so they are
made between forwards; the mask rows, the larger share of the constraint work, overlap it.
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import torch

from factorspec import kernels
from factorspec.constraint import DraftTree, RequestConstraint, fill_tree_bitmask, truncate_draft
from factorspec.engine.kvstore import KVStore
from factorspec.engine.sampling import GREEDY, SamplingParams, sample_row

MODES = ("spec", "chain", "greedy")


@dataclass
class TreeBatch:
    """Inputs of one verify forward over B requests (each: root + its draft nodes): the padded
    [B, N] rows transformers takes (a dense 4D mask) and the flat layout of factorspec.kernels."""

    input_ids: torch.Tensor  # [B, N] long (padding: 0)
    position_ids: torch.Tensor  # [B, N] long
    attn: torch.Tensor  # [B, 1, N, L + N] bool, True = may attend
    depth: torch.Tensor  # [B, N] long (padding: -1)
    n_nodes: list[int]  # real nodes per row (root included)
    flat_tokens: torch.Tensor  # [T] per request root then draft nodes
    flat_parents: torch.Tensor  # [T] local parents
    cu_nodes: torch.Tensor  # [B + 1]


def tree_batch(roots: Sequence[int], drafts: Sequence[tuple[Sequence[int], Sequence[int]]],
               prefix_lens: Sequence[int], cache_len: int, device: torch.device | str = "cpu") -> TreeBatch:
    """Tree-attention inputs for a batch, through factorspec.kernels: kernel 3 flattens the ragged
    drafts (verify tokens, local parents, offsets), kernel 2 gives positions and the q-length-only
    tree mask; the rows are then laid out in the padded [B, N] form.

    Row b has node 0 = root (its last committed token, not yet in the KV cache) and nodes 1..n =
    draft tokens `drafts[b][0]` with parents `drafts[b][1]` (-1 = root, else an earlier index).
    Row b's committed KV occupies cache slots [0, prefix_lens[b]) of a cache of length
    `cache_len`; node i attends to its row's prefix and its ancestors (and itself) among the new
    slots; padding nodes attend to themselves only. Position ids are prefix_len + depth."""
    B = len(roots)
    n_nodes = [1 + len(d[0]) for d in drafts]
    N = max(n_nodes)
    db = kernels.assemble_drafts_from_lists(roots, [[] for _ in range(B)],
                                            [(list(d[0]), list(d[1])) for d in drafts], device=device)
    prefix_t = torch.tensor(list(prefix_lens), dtype=torch.int64, device=device)
    sq = sum(n * n for n in n_nodes)
    tv = kernels.build_tree_verify_inputs(db.parents, db.cu_nodes, prefix_t, build_full_mask=False, sizes=(N, 0, sq))
    node_b = torch.repeat_interleave(torch.arange(B, device=device), torch.tensor(n_nodes, device=device))
    node_j = torch.arange(int(sum(n_nodes)), device=device) - db.cu_nodes[:-1].repeat_interleave(
        torch.tensor(n_nodes, device=device))
    ids = torch.zeros(B, N, dtype=torch.long, device=device)
    ids[node_b, node_j] = db.tokens
    pos = prefix_t.unsqueeze(1).expand(B, N).clone()
    pos[node_b, node_j] = tv.positions
    depth = torch.full((B, N), -1, dtype=torch.long, device=device)
    depth[node_b, node_j] = tv.positions - prefix_t[node_b]
    anc = torch.eye(N, dtype=torch.bool, device=device).repeat(B, 1, 1)  # padding: itself only
    off = 0
    for b, n in enumerate(n_nodes):
        anc[b, :n, :n] = tv.tree_mask_qlen[off : off + n * n].view(n, n)
        off += n * n
    prefix = torch.arange(cache_len, device=device).unsqueeze(0) < prefix_t.unsqueeze(1)  # [B, L]
    real = depth >= 0
    attn = torch.cat([(prefix.unsqueeze(1) & real.unsqueeze(-1)), anc], dim=2).unsqueeze(1)
    return TreeBatch(input_ids=ids, position_ids=pos, attn=attn, depth=depth, n_nodes=n_nodes,
                     flat_tokens=db.tokens, flat_parents=db.parents, cu_nodes=db.cu_nodes)


def verify_batch(pred: torch.Tensor, tb: TreeBatch) -> list[tuple[list[int], int]]:
    """Greedy verification of every request through kernel 4 (one launch on CUDA): (accepted
    draft node indices, bonus token) each; `pred` is the masked argmax of every verify row in the
    flat order (request by request)."""
    r = kernels.verify_tree_greedy(tb.flat_tokens, pred.to(device=tb.flat_tokens.device, dtype=tb.flat_tokens.dtype),
                                   tb.flat_parents, tb.cu_nodes, max_nodes=max(tb.n_nodes))
    acc_idx, acc_len, bonus = r.accept_index.tolist(), r.accept_length.tolist(), r.bonus_token.tolist()
    cu = tb.cu_nodes.tolist()
    return [([acc_idx[b][i] - cu[b] - 1 for i in range(1, acc_len[b] + 1)], int(bonus[b]))
            for b in range(len(tb.n_nodes))]


def masked_argmax(logits: torch.Tensor, bitmask: torch.Tensor, row_map: torch.Tensor | None) -> torch.Tensor:
    """Mask rows `row_map` (all rows if None) of `logits` in place with `bitmask`; return the
    argmax of every row (ties -> lowest index): factorspec.kernels.apply_bitmask's fused pass."""
    if not bitmask.shape[0]:
        return logits.argmax(dim=-1)
    return kernels.apply_bitmask(logits, bitmask, row_map, return_argmax=True)



@dataclass
class Request:
    """One generation request. `width` overrides the engine's width policy for this request.

    `spec` (a FactorSpec spec document, dict or JSON text) instead of `constraint`: the request is
    served by the engine's mask worker pool (the engine must have one). `sampling`: greedy by
    default; a request without a seed gets one drawn at admission (Result.seed)."""

    prompt_ids: Sequence[int]
    constraint: RequestConstraint | None = None
    max_new_tokens: int = 256
    width: int | Callable[["RequestState", int], int] | None = None
    id: Any = None
    spec: Any = None
    sampling: SamplingParams = GREEDY


@dataclass
class RequestStats:
    tokens: int = 0  # generated tokens (stop token included)
    verify_steps: int = 0  # decoding forwards this request took part in
    forward_passes: int = 0  # verify_steps + prefill forwards
    prefill_tokens: int = 0
    drafted_tokens: int = 0  # draft nodes sent to verification
    accepted_draft_tokens: int = 0  # draft nodes accepted
    seconds: float = 0.0  # wall time from admission to finish
    prefill_seconds: float = 0.0  # wall time of this request's prefill forward


@dataclass
class Result:
    request: Request
    tokens: list[int]
    finish_reason: str  # "stop", "length", "no_allowed_token", "constraint_rejected"
    stats: RequestStats
    seed: int | None = None  # the sampling seed used (None for greedy requests)


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
    rid: Any = None  # key in the mask worker pool (pooled requests only)
    seed: int | None = None  # sampling seed (sampled requests only)
    unsent: list[int] = field(default_factory=list)  # tokens committed since the pool last saw them


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
    """Engine over a transformers causal LM (greedy or sampled per request).

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
        pool: Any = None,
    ) -> None:
        self.model = model.eval()
        self.pool = pool  # factorspec.workers.MaskWorkerPool serving requests that carry a spec
        self._rids = 0
        # wall seconds per phase, summed over the engine's life (prefill; per step: drafts, i.e.
        # waiting for phase 1; forward, the decoder body; masks, i.e. the in-process walk or
        # waiting for phase 2; verify: output projection of the rows not forced by their mask,
        # masked argmax, tree verification and KV commit)
        self.timings: dict[str, float] = {"prefill": 0.0, "drafts": 0.0, "forward": 0.0, "masks": 0.0,
                                          "verify": 0.0}
        self.tokenizer = tokenizer
        if stop_token_ids is None and tokenizer is not None:
            from factorspec.models.tokens import stop_token_ids as _stops

            stop_token_ids = _stops(tokenizer)
        self.stop_token_ids = set(int(t) for t in (stop_token_ids or []))
        self.width = fixed_width(width) if isinstance(width, int) else width
        self.max_width = max_width
        self.lm_head = model.get_output_embeddings()
        self.vocab_size = vocab_size or int(self.lm_head.weight.shape[0])
        self.words = (self.vocab_size + 31) // 32  # int32 bitmask words a row (xgrammar's layout)
        self.decoder = getattr(model, model.base_model_prefix, None) or model.model
        cfg = model.config.get_text_config(decoder=True) if hasattr(model.config, "get_text_config") else model.config
        self.softcap = getattr(cfg, "final_logit_softcapping", None)
        layer_types = getattr(cfg, "layer_types", None) or []
        self.sliding_window = getattr(cfg, "sliding_window", None) if "sliding_attention" in layer_types else None
        self.mask_mapping = "sliding_attention" in layer_types or "full_attention" in layer_types
        self.device = next(model.parameters()).device
        self.dtype = next(model.parameters()).dtype
        self._seeds = random.SystemRandom()  # seeds for sampled requests that bring none

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

    # ------------------------------------------------------------------ main loop
    def generate(self, requests: Sequence[Request], batch_size: int = 8, mode: str = "spec") -> list[Result]:
        """Generate for all requests (continuous batching, at most `batch_size` at once).

        mode: "spec" (draft trees verified in one forward), "chain" (only the first-child chain of
        each draft), "greedy" (no drafts: one token per request per forward, masked)."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        pending = list(range(len(requests)))[::-1]
        results: list[Result | None] = [None] * len(requests)
        if any(r.spec is not None for r in requests):
            self._check_pool(batch_size)
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
                        results[st.index] = Result(st.request, st.tokens, st.finish_reason, st.stats, st.seed)
                        if st.rid is not None:
                            self.pool.remove_request(st.rid)
                kv.keep_rows(keep)
                active = [active[r] for r in keep]
        return results  # type: ignore[return-value]

    def _admit(self, index: int, req: Request, kv: KVStore) -> RequestState:
        prompt = [int(t) for t in req.prompt_ids]
        if not prompt:
            raise ValueError("empty prompt")
        st = RequestState(index=index, request=req, root=prompt[-1], t0=time.perf_counter())
        if not req.sampling.greedy:
            st.seed = req.sampling.seed if req.sampling.seed is not None else self._seeds.getrandbits(63)
        if req.spec is not None:
            if req.constraint is not None:
                raise ValueError("a request has either a constraint or a spec, not both")
            self._rids += 1
            st.rid = ("engine", id(self), self._rids)
            # compiled in the worker while the prefill below runs
            self.pool.add_request(st.rid, req.spec, prompt_ids=prompt)
        if len(prompt) > 1:
            t = time.perf_counter()
            cache = self._prefill(prompt[:-1])
            kv.add_row(cache, len(prompt) - 1)
            st.stats.prefill_seconds = time.perf_counter() - t
            self.timings["prefill"] += st.stats.prefill_seconds
            st.stats.forward_passes += 1
            st.stats.prefill_tokens = len(prompt) - 1
        else:
            kv.add_row(None, 0)
        if req.max_new_tokens <= 0:
            st.finish_reason = "length"
        return st

    def _check_pool(self, batch_size: int) -> None:
        if self.pool is None:
            raise ValueError("requests with a spec need an engine with a mask worker pool (Engine(..., pool=...))")
        need = batch_size * (self.max_width + 1)
        if self.pool.max_rows < need:
            raise ValueError(f"the mask worker pool has {self.pool.max_rows} rows; batch {batch_size} at max width "
                             f"{self.max_width} needs {need}")
        if self.pool.words != self.words:
            raise ValueError(f"the mask worker pool's rows have {self.pool.words} words; the logits need {self.words}")

    def _policy(self, st: RequestState) -> int | WidthPolicy:
        return st.request.width if st.request.width is not None else self.width

    def _cap(self, st: RequestState) -> int:
        """The most draft nodes this request may send: the engine's cap and its token budget."""
        return max(0, min(self.max_width, st.request.max_new_tokens - len(st.tokens) - 1))

    def _width(self, st: RequestState, batch: int) -> int:
        w = self._policy(st)
        w = w if isinstance(w, int) else w(st, batch)
        return max(0, min(int(w), self._cap(st)))

    def _pool_width(self, st: RequestState, batch: int) -> tuple[int, Any]:
        """(width, policy the worker applies) for a pooled request: a policy that reads the
        constraint says so through `for_worker(cap)` and runs in the worker, capped here; others
        run here."""
        w = self._policy(st)
        remote = getattr(w, "for_worker", None)
        if remote is not None:
            return remote(self._cap(st))
        return self._width(st, batch), None

    def _submit_pool(self, active: list[RequestState], mode: str) -> Any:
        from factorspec.workers.protocol import StepItem

        B, R = len(active), self.max_width + 1
        items = []
        for b, st in enumerate(active):
            if st.rid is None or st.finish_reason is not None:
                continue
            w, policy = self._pool_width(st, B) if mode != "greedy" else (0, None)
            items.append(StepItem(st.rid, tuple(st.unsent), row=b * R, draft_width=w, tree=True,
                                  chain=(mode == "chain"), width_policy=policy))
            st.unsent = []
        return self.pool.submit_step(items) if items else None

    def _step(self, active: list[RequestState], kv: KVStore, mode: str) -> None:
        B = len(active)
        if B == 0:
            return
        t0 = time.perf_counter()
        handle = self._submit_pool(active, mode) if self.pool is not None else None
        drafts: list[DraftTree] = []
        for st in active:
            d = DraftTree()
            c = st.request.constraint
            if mode != "greedy" and c is not None and st.finish_reason is None:
                try:
                    w = self._width(st, B)
                    if w > 0:
                        d = c.draft(w)
                        d = truncate_draft(d, w, chain=(mode == "chain"))
                except Exception as e:  # a failing constraint ends its own request only
                    self._fail(st, e)
                    d = DraftTree()
            drafts.append(d)
        if handle is not None:
            got = self.pool.collect_drafts(handle)
            for b, st in enumerate(active):
                r = got.get(st.rid) if st.rid is not None else None
                if r is None:
                    continue
                if not r.ok:
                    self._fail(st, r.error)
                elif r.terminated:  # the constraint ended without the engine seeing a stop token
                    st.finish_reason = "stop"
                else:
                    drafts[b] = r.draft
        t1 = time.perf_counter()
        self.timings["drafts"] += t1 - t0
        L = kv.length
        tb = tree_batch(
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
        h_rows = hidden.reshape(B * N, -1).index_select(0, rows)  # [T, H]
        if h_rows.device.type != "cpu":
            torch.cuda.synchronize(h_rows.device)  # the forward's time is the forward's, not the masks'
        t2 = time.perf_counter()
        self.timings["forward"] += t2 - t1
        pooled = self.pool.collect(handle) if handle is not None else {}
        # masks: one bitmask row per real node
        offsets = np.cumsum([0] + tb.n_nodes)
        T = int(offsets[-1])
        bitmask = np.full((T, self.words), -1, dtype=np.int32)
        valid_nodes: list[list[bool]] = []
        constrained_rows: list[int] = []
        R = self.max_width + 1
        for b, (st, d) in enumerate(zip(active, drafts)):
            c = st.request.constraint
            o, n = int(offsets[b]), len(d) + 1
            if st.rid is not None:
                r = pooled.get(st.rid)
                if r is not None and r.ok and r.valid is not None and len(r.valid) == n:
                    bitmask[o : o + n] = self.pool.bitmask[b * R : b * R + n]
                    valid_nodes.append(list(r.valid))
                else:
                    if r is not None and not r.ok:
                        self._fail(st, r.error)
                    bitmask[o : o + n] = 0
                    valid_nodes.append([False] * n)
                constrained_rows.extend(range(o, o + n))
                continue
            if c is None:
                valid_nodes.append([True] * n)
                continue
            try:
                valid_nodes.append(fill_tree_bitmask(c, d, bitmask, o))
            except Exception as e:
                self._fail(st, e)
                valid_nodes.append([False] * n)
            constrained_rows.extend(range(o, o + n))
        t3 = time.perf_counter()
        self.timings["masks"] += t3 - t2
        sampled = self._sampled_rows(active, tb, offsets)
        pred_t, dead_t = self._masked_predict(h_rows, bitmask, constrained_rows, sampled)
        pred, dead = pred_t.tolist(), dead_t.tolist()
        verified = verify_batch(pred_t, tb)
        keep: list[list[int]] = []
        for b, (st, d) in enumerate(zip(active, drafts)):
            o = int(offsets[b])
            st.stats.verify_steps += 1
            st.stats.forward_passes += 1
            st.stats.drafted_tokens += len(d)
            if st.finish_reason is not None:
                keep.append([])
                continue
            path, bonus = verified[b]
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
        self.timings["verify"] += time.perf_counter() - t3

    @staticmethod
    def _sampled_rows(active: list[RequestState], tb: TreeBatch,
                      offsets: np.ndarray) -> dict[int, tuple[SamplingParams, int, int]]:
        """Flat verify row -> (params, seed, absolute position of the token it samples) for the
        rows of sampled requests (node j of request b predicts position position_ids[b, j] + 1)."""
        out: dict[int, tuple[SamplingParams, int, int]] = {}
        for b, st in enumerate(active):
            if st.seed is None or st.finish_reason is not None:
                continue
            o = int(offsets[b])
            pos = tb.position_ids[b, : tb.n_nodes[b]].tolist()
            for j, p in enumerate(pos):
                out[o + j] = (st.request.sampling, st.seed, int(p) + 1)
        return out

    def _masked_predict(self, h_rows: torch.Tensor, bitmask: np.ndarray, constrained_rows: list[int],
                        sampled: dict[int, tuple[SamplingParams, int, int]] | None = None,
                        ) -> tuple[torch.Tensor, torch.Tensor]:
        """The token of every verify row (masked argmax, or a masked sample for the rows in
        `sampled`), and whether the row allows no token.

        A row whose mask allows exactly one token (a certain position: nearly every row of a
        NATURAL PLAN record) has that token as its masked argmax, and as its only possible sample,
        whatever the logits, so the output projection (hidden x vocabulary, a quarter of a small
        model's compute at a 151,936-token vocabulary) runs only on the other rows. Same result as
        projecting all."""
        T = h_rows.shape[0]
        forced = np.full(T, -1, dtype=np.int64)
        empty = np.zeros(T, dtype=bool)
        if constrained_rows:
            con = np.asarray(constrained_rows, dtype=np.int64)
            sub = bitmask[con].view(np.uint32)
            nz = sub != 0
            count = nz.sum(axis=1)
            word = nz.argmax(axis=1)
            w = sub[np.arange(len(con)), word].astype(np.uint64)
            single = (count == 1) & ((w & (w - 1)) == 0)
            tok = word * 32 + np.log2(np.maximum(w, 1).astype(np.float64)).astype(np.int64)
            single &= tok < self.vocab_size
            forced[con[single]] = tok[single]
            empty[con[count == 0]] = True
        need = np.flatnonzero((forced < 0) & ~empty)
        pred = torch.from_numpy(forced)
        dead = torch.from_numpy(empty)
        if len(need):
            need_t = torch.from_numpy(need).to(h_rows.device)
            logits = self._logits(h_rows.index_select(0, need_t))  # [T', V]
            is_con = np.zeros(T, dtype=bool)
            if constrained_rows:
                is_con[constrained_rows] = True
            local = np.flatnonzero(is_con[need])  # constrained rows among those projected
            if len(local) and len(local) < len(need):
                bm = torch.from_numpy(bitmask[need[local]]).to(logits.device)
                row_map = torch.from_numpy(local).to(logits.device)
            else:
                bm = torch.from_numpy(bitmask[need] if len(local) else bitmask[:0]).to(logits.device)
                row_map = None
            p = masked_argmax(logits, bm, row_map)
            d = torch.isneginf(logits.gather(1, p.view(-1, 1)).view(-1))
            if sampled:
                for i, row in enumerate(need.tolist()):
                    if row in sampled and not bool(d[i]):
                        params, seed, position = sampled[row]
                        p[i] = sample_row(logits[i], params, seed, position)
            pred[need] = p.cpu()
            dead[need] = d.cpu()
        return pred, dead

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
            if st.rid is not None:
                st.unsent.append(tok)  # the worker's matcher accepts it at the next step
            st.root = tok
            if tok in self.stop_token_ids or (c is not None and c.is_terminated()):
                st.finish_reason = "stop"
                return
            if len(st.tokens) >= st.request.max_new_tokens:
                st.finish_reason = "length"
                return

