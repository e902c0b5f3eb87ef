"""SGLang's real scheduler on a CPU-only machine: what ``sglang==0.5.23`` lacks there.

On CPU (``SGLANG_USE_CPU_ENGINE=1``, ``--device cpu``) SGLang imports, at module load, eight ops
from ``sgl_kernel`` and ``sgl_kernel.speculative.reconstruct_indices_from_tree_mask``. PyPI's
``sgl-kernel`` is a CUDA build (no CPU wheel, no sdist), so ``import sglang.srt...`` fails there.
:func:`install` provides those names as torch implementations of the same contracts (SGLang's own
Triton kernels, in the files that import them, are the reference; the tests compare the two under
``TRITON_INTERPRET=1``), only when the real ``sgl_kernel`` does not provide them. Plain decoding
calls none of them; NGRAM calls the KV warm-up copy, both cache-location assigners, the tree-mask
reconstruction, greedy tree verify and the accept-out fill.

It also registers, for ``--attention-backend torch_native``, :class:`TorchNativeVerifyAttnBackend`:
SGLang's ``TorchNativeAttnBackend`` has no speculative target-verify mode (its extend path asserts
one query run per prefix); the subclass runs tree-masked SDPA over the committed prefix plus the
drafts and leaves every other mode to the parent.

:func:`install` must run before SGLang's modules are imported, in every SGLang process: the
package ``factorspec.integrations.sglang`` calls it first thing; scheduler and detokenizer
processes started by :func:`cpu_engine` run :func:`run_scheduler_process` /
:func:`run_detokenizer_process`, which import this module (hence install) before SGLang. The
torchvision stub is installed only when SGLang's import chain needs it and no real torchvision
imports (PyPI's torchvision wheels pin CUDA torch builds).

Nothing here is imported by FactorSpec's core; it needs torch (and SGLang for the backend).
"""
from __future__ import annotations

import ctypes
import importlib
import importlib.machinery
import importlib.util
import os
import sys
import tempfile
import types
from typing import Any

import torch

__all__ = [
    "CPU_OPS",
    "cpu_engine",
    "cpu_engine_kwargs",
    "cpu_environment",
    "install",
    "installed",
    "run_detokenizer_process",
    "run_scheduler_process",
    "verify_backend_class",
]

_STATE: dict[str, Any] = {"ops": [], "torchvision": False, "attention": False}


# -- the sgl_kernel CPU ops (torch) ----------------------------------------------------------------
def copy_all_layer_kv_cache_cpu(data_ptrs: torch.Tensor, strides: torch.Tensor, tgt_loc: torch.Tensor,
                                src_loc: torch.Tensor) -> None:
    """For every buffer ``i`` (base address ``data_ptrs[i]``, row size ``strides[i]`` bytes), copy
    row ``src_loc[k]`` to row ``tgt_loc[k]``. All source rows are read before any is written (the
    Triton kernel loads a tile of locations, then stores it), so overlapping moves are safe."""
    n = int(tgt_loc.numel())
    if n != int(src_loc.numel()):
        raise ValueError(f"copy_all_layer_kv_cache_cpu: {n} targets for {src_loc.numel()} sources")
    if n == 0:
        return
    tgt = tgt_loc.reshape(-1).to(torch.int64)
    src = src_loc.reshape(-1).to(torch.int64)
    rows = int(max(int(tgt.max()), int(src.max()))) + 1
    for ptr, stride in zip(data_ptrs.reshape(-1).tolist(), strides.reshape(-1).tolist()):
        stride = int(stride)
        raw = (ctypes.c_uint8 * (rows * stride)).from_address(int(ptr))
        buf = torch.frombuffer(raw, dtype=torch.uint8).view(rows, stride)
        buf[tgt] = buf[src]


def _segments(start_offset: torch.Tensor, end_offset: torch.Tensor) -> list[tuple[int, int, int]]:
    """(start, end, output offset) per request: output offsets are the running sum of lengths."""
    out, off = [], 0
    for s, e in zip(start_offset.reshape(-1).tolist(), end_offset.reshape(-1).tolist()):
        s, e = int(s), int(e)
        out.append((s, e, off))
        off += max(e - s, 0)
    return out


def assign_extend_cache_locs_cpu(req_pool_indices: torch.Tensor, req_to_token: torch.Tensor,
                                 start_offset: torch.Tensor, end_offset: torch.Tensor,
                                 out_cache_loc: torch.Tensor, pool_len: int) -> None:
    """``out_cache_loc`` = concatenation over requests of ``req_to_token[req, start:end]``."""
    table = req_to_token.reshape(-1)
    for req, (s, e, off) in zip(req_pool_indices.reshape(-1).tolist(), _segments(start_offset, end_offset)):
        if e > s:
            base = int(req) * int(pool_len)
            out_cache_loc[off:off + e - s] = table[base + s:base + e].to(out_cache_loc.dtype)


def assign_req_to_token_pool_cpu(req_pool_indices: torch.Tensor, req_to_token: torch.Tensor,
                                 start_offset: torch.Tensor, end_offset: torch.Tensor,
                                 out_cache_loc: torch.Tensor, pool_len: int) -> None:
    """The inverse: ``req_to_token[req, start:end]`` = this request's run of ``out_cache_loc``."""
    table = req_to_token.view(-1)
    for req, (s, e, off) in zip(req_pool_indices.reshape(-1).tolist(), _segments(start_offset, end_offset)):
        if e > s:
            base = int(req) * int(pool_len)
            table[base + s:base + e] = out_cache_loc[off:off + e - s].to(table.dtype)


def assign_draft_cache_locs_contiguous_cpu(req_pool_indices: torch.Tensor, req_to_token: torch.Tensor,
                                           seq_lens: torch.Tensor, out_cache_loc: torch.Tensor,
                                           pool_len: int, topk: int, num_cols: int) -> None:
    """Request ``b``'s ``topk * num_cols`` slots from ``seq_lens[b]`` on, at ``b * topk * num_cols``."""
    width = int(topk) * int(num_cols)
    table = req_to_token.reshape(-1)
    for b, (req, s) in enumerate(zip(req_pool_indices.reshape(-1).tolist(), seq_lens.reshape(-1).tolist())):
        base = int(req) * int(pool_len) + int(s)
        out_cache_loc[b * width:(b + 1) * width] = table[base:base + width].to(out_cache_loc.dtype)


def fill_accept_out_cache_loc_cpu(accept_index: torch.Tensor, out_cache_loc: torch.Tensor,
                                  accept_out_cache_loc: torch.Tensor) -> None:
    """Compact: the ``k``-th non-negative entry of ``accept_index`` (flat order) writes
    ``out_cache_loc[accept_index[...]]`` to ``accept_out_cache_loc[k]``."""
    idx = accept_index.reshape(-1)
    keep = idx[idx != -1].to(torch.int64)
    if keep.numel():
        accept_out_cache_loc[:keep.numel()] = out_cache_loc[keep].to(accept_out_cache_loc.dtype)


def fill_bonus_tokens_cpu(accept_tokens: torch.Tensor, accept_lens: torch.Tensor, bonus_tokens: torch.Tensor,
                          accept_stride: int) -> None:
    """``bonus_tokens[b]`` = the last accepted token of request ``b`` (``accept_lens`` includes it)."""
    bs = int(accept_lens.numel())
    if bs == 0:
        return
    flat = accept_tokens.reshape(-1)
    idx = torch.arange(bs, dtype=torch.int64) * int(accept_stride) + accept_lens.reshape(-1).to(torch.int64) - 1
    bonus_tokens[:bs] = flat[idx].to(bonus_tokens.dtype)


def build_tree_kernel_efficient_cpu(parent_list: torch.Tensor, selected_index: torch.Tensor,
                                    verified_seq_len: torch.Tensor, tree_mask: torch.Tensor,
                                    positions: torch.Tensor, retrieve_index: torch.Tensor,
                                    retrieve_next_token: torch.Tensor, retrieve_next_sibling: torch.Tensor,
                                    topk: int, depth: int, draft_token_num: int, tree_mask_mode: int) -> None:
    """EAGLE's tree construction (``sgl_build_tree_kernel_efficient_triton``, step for step):
    retrieval links from each node's parent, then per node its mask row and depth. Modes 0
    (FULL_MASK, rows over prefix + drafts, prefix columns left as given) and 1 (QLEN_ONLY)."""
    mode = int(tree_mask_mode)
    if mode not in (0, 1):
        raise NotImplementedError("build_tree_kernel_efficient_cpu: QLEN_ONLY_BITPACKING is not implemented")
    N, topk, depth = int(draft_token_num), int(topk), int(depth)
    bs = int(verified_seq_len.numel())
    seq = [int(x) for x in verified_seq_len.reshape(-1).tolist()]
    pl = parent_list.reshape(-1).tolist()
    pl_stride = parent_list.stride(0) if parent_list.dim() > 1 else parent_list.shape[0]
    si = selected_index.reshape(-1).tolist() if selected_index.is_contiguous() else selected_index.contiguous().reshape(-1).tolist()
    si_stride = selected_index.shape[1] if selected_index.dim() > 1 else selected_index.shape[0]
    rnt = retrieve_next_token.view(-1)
    rns = retrieve_next_sibling.view(-1)
    ri = retrieve_index.view(-1)
    pos = positions.view(-1)
    mask = tree_mask.view(-1)
    prefix_sum = 0
    for b in range(bs):
        seq_len = seq[b]
        sel = si[b * si_stride:b * si_stride + N - 1]
        par = pl[b * pl_stride:]

        def find(token: int, sel: list = sel) -> int:
            for p in range(N - 1):
                if sel[p] == token:
                    return p
            return -1

        pos[b * N] = seq_len
        for i in range(N - 1, 0, -1):
            ri[b * N + i] = b * N + i
            parent_tb = sel[i - 1] // topk
            if parent_tb == 0:
                parent_position = 0
            else:
                p = find(par[parent_tb])
                parent_position = p + 1 if p >= 0 else -1
            if parent_position >= 0:
                nxt = int(rnt[b * N + parent_position])
                rnt[b * N + parent_position] = i
                if nxt != -1:
                    rns[b * N + i] = nxt
        ri[b * N] = b * N
        seq_tree_idx = N * N * b + prefix_sum * N
        for x in range(N):
            if mode == 0:
                row = seq_tree_idx + (seq_len + N) * x + seq_len + 1
            else:
                row = N * N * b + N * x + 1
            mask[row - 1] = True
            mask[row:row + N - 1] = False
            if x > 0:
                cur, d, go = x - 1, 0, True
                for _ in range(depth):
                    if not go:
                        break
                    d += 1
                    mask[row + cur] = True
                    parent_tb = sel[cur] // topk
                    if parent_tb == 0:
                        go = False
                    else:
                        p = find(par[parent_tb])
                        if p < 0:
                            go = False
                        else:
                            cur = p
                pos[b * N + x] = d + seq_len
        prefix_sum += seq_len


def verify_tree_greedy_cpu(predicts: torch.Tensor, accept_index: torch.Tensor, accept_token_num: torch.Tensor,
                           candidates: torch.Tensor, retrive_index: torch.Tensor, retrive_next_token: torch.Tensor,
                           retrive_next_sibling: torch.Tensor, target_predict: torch.Tensor) -> None:
    """Greedy tree verification (``verify_tree_greedy_kernel_triton``): from the root, follow the
    first child whose token equals the target's argmax at the last accepted node; record accepted
    nodes in ``accept_index`` (root first), their count (root excluded) in ``accept_token_num``,
    and the target tokens at the accepted nodes in ``predicts``. Argument names keep SGLang's
    ``retrive_*`` spelling (its call sites pass them by keyword)."""
    bs, N = candidates.shape[0], candidates.shape[1]
    S = accept_index.shape[1]
    cand = candidates.reshape(bs, N).tolist()
    ri = retrive_index.reshape(bs, N).tolist()
    nt = retrive_next_token.reshape(bs, N).tolist()
    ns = retrive_next_sibling.reshape(bs, N).tolist()
    tp = target_predict.reshape(-1).tolist()
    pred = predicts.view(-1)
    for b in range(bs):
        last = int(ri[b][0])
        accept_index[b, 0] = last
        n, cur = 0, 0
        for _ in range(1, S):
            cur = nt[b][cur]
            target = tp[last]
            matched = False
            for _ in range(N):
                if cur == -1:
                    break
                if cand[b][cur] == target:
                    pred[last] = target
                    n += 1
                    accept_index[b, n] = ri[b][cur]
                    last = int(ri[b][cur])
                    matched = True
                    break
                cur = ns[b][cur]
            if not matched:
                break
        accept_token_num[b] = n
        pred[last] = tp[last]


def reconstruct_indices_from_tree_mask(tree_mask: torch.Tensor, verified_seq_len: torch.Tensor,
                                       positions: torch.Tensor, retrieve_index: torch.Tensor,
                                       retrieve_next_token: torch.Tensor, retrieve_next_sibling: torch.Tensor,
                                       batch_size: int, draft_token_num: int) -> None:
    """NGRAM verify metadata from the ``[bs, n, n]`` ancestor-or-self mask (the contract in
    SGLang's ``reconstruct_tree.py``): depth + prefix length as position, ``b * n + i`` as
    retrieval index, first child and next sibling (smallest later node with the same parent)."""
    bs, n = int(batch_size), int(draft_token_num)
    if bs == 0:
        return
    m = tree_mask.reshape(-1)[:bs * n * n].reshape(bs, n, n).to(torch.bool)
    idx = torch.arange(n)
    anc = m & (idx[None, None, :] < idx[None, :, None])  # [b, i, j]: j strict ancestor of i
    depth = anc.sum(dim=2).to(torch.int64)
    pos = depth + verified_seq_len.reshape(-1)[:bs].to(torch.int64)[:, None]
    parent = torch.where(anc, idx[None, None, :].expand(bs, n, n), torch.full((), -1)).amax(dim=2)  # [b, i]
    big = torch.full((), n)
    child = torch.where(anc, idx[None, :, None].expand(bs, n, n), big).amin(dim=1)  # [b, j] first k with j anc of k
    next_token = torch.where(child < n, child, torch.full((), -1))
    same = (parent[:, :, None] == parent[:, None, :]) & (idx[:, None] > idx[None, :])[None]  # [b, k, tid]
    sib = torch.where(same, idx[None, :, None].expand(bs, n, n), big).amin(dim=1)  # [b, tid]
    next_sibling = torch.where((parent >= 0) & (sib < n), sib, torch.full((), -1))
    positions.view(-1)[:bs * n] = pos.reshape(-1).to(positions.dtype)
    retrieve_index.view(-1)[:bs * n] = torch.arange(bs * n, dtype=retrieve_index.dtype)
    retrieve_next_token.view(-1)[:bs * n] = next_token.reshape(-1).to(retrieve_next_token.dtype)
    retrieve_next_sibling.view(-1)[:bs * n] = next_sibling.reshape(-1).to(retrieve_next_sibling.dtype)


CPU_OPS = {
    "copy_all_layer_kv_cache_cpu": copy_all_layer_kv_cache_cpu,
    "assign_extend_cache_locs_cpu": assign_extend_cache_locs_cpu,
    "assign_req_to_token_pool_cpu": assign_req_to_token_pool_cpu,
    "assign_draft_cache_locs_contiguous_cpu": assign_draft_cache_locs_contiguous_cpu,
    "fill_accept_out_cache_loc_cpu": fill_accept_out_cache_loc_cpu,
    "fill_bonus_tokens_cpu": fill_bonus_tokens_cpu,
    "build_tree_kernel_efficient_cpu": build_tree_kernel_efficient_cpu,
    "verify_tree_greedy_cpu": verify_tree_greedy_cpu,
}
SPECULATIVE_OPS = {"reconstruct_indices_from_tree_mask": reconstruct_indices_from_tree_mask}


# -- installation ----------------------------------------------------------------------------------
def _import_or_none(name: str) -> types.ModuleType | None:
    if name in sys.modules:
        return sys.modules[name]
    try:
        return importlib.import_module(name)
    except Exception:  # noqa: BLE001 - a CUDA build fails on CPU with OSError/ImportError/RuntimeError
        sys.modules.pop(name, None)
        return None


def _install_sgl_kernel() -> list[str]:
    """Put the torch ops into ``sgl_kernel`` / ``sgl_kernel.speculative`` where the real package
    lacks them (absent, or a build that does not import here). Returns the names provided."""
    pkg = _import_or_none("sgl_kernel")
    if pkg is None:
        pkg = types.ModuleType("sgl_kernel")
        pkg.__spec__ = importlib.machinery.ModuleSpec("sgl_kernel", None, is_package=True)
        pkg.__path__ = []  # type: ignore[attr-defined]
        pkg.__doc__ = "torch stand-ins for sgl_kernel's CPU ops (factorspec.integrations.sglang.cpu)"
        pkg.__factorspec_stub__ = True  # type: ignore[attr-defined]
        sys.modules["sgl_kernel"] = pkg
    elif os.environ.get("SGLANG_USE_CPU_ENGINE", "0") != "1":
        return []  # a working sgl_kernel and SGLang's GPU path: it imports none of the *_cpu names
    added = []
    for name, fn in CPU_OPS.items():
        if not hasattr(pkg, name):
            setattr(pkg, name, fn)
            added.append(name)
    spec_mod = _import_or_none("sgl_kernel.speculative") if not getattr(pkg, "__factorspec_stub__", False) else None
    if spec_mod is None:
        spec_mod = sys.modules.get("sgl_kernel.speculative") or types.ModuleType("sgl_kernel.speculative")
        spec_mod.__spec__ = importlib.machinery.ModuleSpec("sgl_kernel.speculative", None)
        sys.modules["sgl_kernel.speculative"] = spec_mod
        pkg.speculative = spec_mod  # type: ignore[attr-defined]
    for name, fn in SPECULATIVE_OPS.items():
        if not hasattr(spec_mod, name):
            setattr(spec_mod, name, fn)
            added.append(f"speculative.{name}")
    return added


def _stub_getattr(modname: str):
    def __getattr__(name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        # names imported at module load (InterpolationMode, ...) resolve to inert placeholders
        return type(name, (), {"__module__": modname})
    return __getattr__


def _install_torchvision() -> bool:
    """A minimal ``torchvision`` when none imports: SGLang's multimodal processors import it at
    module load on the scheduler's import chain (text models never call it)."""
    if importlib.util.find_spec("torchvision") is not None and _import_or_none("torchvision") is not None:
        return False
    if "torchvision" in sys.modules:
        return False
    try:  # transformers caches "is torchvision available?": ask first, while the answer is "no"
        from transformers.utils import import_utils as _tf_import_utils

        _tf_import_utils.is_torchvision_available()
    except Exception:  # noqa: BLE001,S110 - transformers absent or changed: nothing to pre-cache
        pass
    tv = types.ModuleType("torchvision")
    tv.__spec__ = importlib.machinery.ModuleSpec("torchvision", None, is_package=True)
    tv.__path__ = []  # type: ignore[attr-defined]
    tv.__version__ = "0.0.0+factorspec-stub"  # type: ignore[attr-defined]
    for sub in ("transforms", "transforms.functional", "io", "ops", "datasets", "models"):
        m = types.ModuleType(f"torchvision.{sub}")
        m.__spec__ = importlib.machinery.ModuleSpec(f"torchvision.{sub}", None)
        m.__getattr__ = _stub_getattr(f"torchvision.{sub}")  # type: ignore[attr-defined]
        if "." not in sub:
            setattr(tv, sub, m)
        sys.modules[f"torchvision.{sub}"] = m
    sys.modules["torchvision.transforms"].functional = sys.modules["torchvision.transforms.functional"]
    sys.modules["torchvision"] = tv
    return True


def install(attention: bool = True) -> dict[str, Any]:
    """Provide what SGLang's CPU path needs and this machine lacks (idempotent; call before any
    ``sglang`` import). ``attention``: also register :class:`TorchNativeVerifyAttnBackend` as
    ``torch_native`` (imports SGLang's attention registry, so only after the ops are in place).
    Returns what was installed."""
    if not _STATE["ops"]:
        _STATE["ops"] = _install_sgl_kernel() or ["(real sgl_kernel)"]
    if not _STATE["torchvision"]:
        _STATE["torchvision"] = _install_torchvision() or "real"
    if attention and not _STATE["attention"]:
        _register_attention()
        _STATE["attention"] = True
    return dict(_STATE)


def installed() -> dict[str, Any]:
    return dict(_STATE)


# -- torch_native attention with speculative target-verify ----------------------------------------
def _verify_backend_class():
    from sglang.srt.layers.attention.torch_native_backend import TorchNativeAttnBackend
    from sglang.srt.mem_cache.memory_pool import KVWriteLoc

    class _TorchNativeVerifyAttnBackend(TorchNativeAttnBackend):
        """``torch_native`` plus TARGET_VERIFY: request ``b``'s ``N`` verify queries attend to its
        committed prefix (``seq_lens[b]`` tokens, all visible) and to the drafts its tree mask
        allows (``custom_mask``: ``[bs, N, N]`` ancestor-or-self, or SGLang's full per-request
        ``[N, prefix + N]`` layout). With ``spec_info.factorspec_qo_lens`` (per-request widths)
        request ``b`` has only its first ``n_b`` nodes in the batch, packed: ``sum_b n_b`` queries."""

        def forward_extend(self, q, k, v, layer, forward_batch, save_kv_cache=True):
            if not forward_batch.forward_mode.is_target_verify():
                return super().forward_extend(q, k, v, layer, forward_batch, save_kv_cache=save_kv_cache)
            return self._forward_target_verify(q, k, v, layer, forward_batch, save_kv_cache)

        def _forward_target_verify(self, q, k, v, layer, forward_batch, save_kv_cache):
            spec = forward_batch.spec_info
            N = int(spec.draft_token_num)
            cache_loc = forward_batch.out_cache_loc
            if save_kv_cache and k is not None and v is not None:
                self.token_to_kv_pool.set_kv_buffer(layer, KVWriteLoc(cache_loc, self.swa_out_cache_loc), k, v)
            H, D, Dv = layer.tp_q_head_num, layer.qk_head_dim, layer.v_head_dim
            q_ = q.reshape(-1, H, D)
            o = q.new_empty((q_.shape[0], H * Dv))
            o_ = o.view(-1, H, Dv)
            k_cache = self.token_to_kv_pool.get_key_buffer(layer.layer_id)
            v_cache = self.token_to_kv_pool.get_value_buffer(layer.layer_id)
            req_to_token = self.req_to_token_pool.req_to_token
            seq_lens = forward_batch.seq_lens_cpu if forward_batch.seq_lens_cpu is not None else forward_batch.seq_lens.cpu()
            seq_lens = [int(x) for x in seq_lens.tolist()]
            bs = len(seq_lens)
            reqs = forward_batch.req_pool_indices.tolist()
            cm = spec.custom_mask.reshape(-1).to(torch.bool)
            qlen_only = cm.numel() == bs * N * N
            # per-request widths (factorspec ngram_worker): request b's first n_b of its N nodes,
            # packed in q/k/v and out_cache_loc; its mask block stays [N, N]
            qo = getattr(spec, "factorspec_qo_lens", None)
            if qo is not None and not qlen_only:
                raise NotImplementedError("ragged tree verify needs the [bs, N, N] tree mask")
            window = layer.sliding_window_size if (layer.sliding_window_size is not None
                                                   and layer.sliding_window_size > -1) else None
            off = 0
            q_off = 0
            for b in range(bs):
                L = seq_lens[b]
                n = N if qo is None else int(qo[b])
                if qlen_only:
                    tree = cm[b * N * N:(b + 1) * N * N].view(N, N)[:n, :n]
                    mask = torch.cat([torch.ones((n, L), dtype=torch.bool, device=tree.device), tree], dim=1)
                else:
                    mask = cm[off:off + N * (L + N)].view(N, L + N)
                    off += N * (L + N)
                if window is not None:  # k visible iff k_pos >= q_pos - window (positions: prefix, then depths)
                    depth = mask[:, L:].sum(dim=1) - 1
                    q_pos = L + depth
                    k_pos = torch.cat([torch.arange(L, device=mask.device), q_pos])
                    mask = mask & (k_pos[None, :] >= q_pos[:, None] - window)
                locs = torch.cat([req_to_token[reqs[b], :L].to(torch.int64),
                                  cache_loc[q_off:q_off + n].to(torch.int64)])
                qb = q_[q_off:q_off + n].movedim(0, 1)  # [H, n, D]
                kb = k_cache[locs].movedim(0, 1).to(qb.dtype)
                vb = v_cache[locs].movedim(0, 1).to(qb.dtype)
                out = torch.nn.functional.scaled_dot_product_attention(
                    qb.unsqueeze(0), kb.unsqueeze(0), vb.unsqueeze(0), attn_mask=mask.to(qb.device),
                    scale=layer.scaling, enable_gqa=layer.tp_q_head_num != layer.tp_k_head_num)
                o_[q_off:q_off + n] = out.squeeze(0).movedim(1, 0)
                q_off += n
            if q_off != q_.shape[0]:
                raise RuntimeError(f"tree verify: {q_.shape[0]} queries for {q_off} nodes")
            return o

    _TorchNativeVerifyAttnBackend.__name__ = "TorchNativeVerifyAttnBackend"
    _TorchNativeVerifyAttnBackend.__qualname__ = "TorchNativeVerifyAttnBackend"
    return _TorchNativeVerifyAttnBackend


_VERIFY_CLS = None


def __getattr__(name: str):
    if name == "TorchNativeVerifyAttnBackend":
        return verify_backend_class()
    raise AttributeError(name)


def verify_backend_class():
    """:class:`TorchNativeVerifyAttnBackend` (built on first use: it subclasses SGLang's class)."""
    global _VERIFY_CLS
    if _VERIFY_CLS is None:
        _VERIFY_CLS = _verify_backend_class()
    return _VERIFY_CLS


def create_torch_native_verify_backend(runner: Any):
    return verify_backend_class()(runner)


def _register_attention() -> None:
    from sglang.srt.layers.attention.attention_registry import ATTENTION_BACKENDS

    ATTENTION_BACKENDS["torch_native"] = create_torch_native_verify_backend


# -- processes and the Engine helper ---------------------------------------------------------------
def run_scheduler_process(*args: Any, **kwargs: Any) -> Any:
    """SGLang's scheduler process entry, after :func:`install` (this module is imported, by
    pickle, in the fresh process before SGLang is) and FactorSpec's registrations."""
    install()
    _register_factorspec()
    from sglang.srt.managers.scheduler import run_scheduler_process as _run

    return _run(*args, **kwargs)


def run_detokenizer_process(*args: Any, **kwargs: Any) -> Any:
    install(attention=False)
    from sglang.srt.managers.detokenizer_manager import run_detokenizer_process as _run

    return _run(*args, **kwargs)


def _register_factorspec() -> None:
    import factorspec.integrations.sglang as fs_sglang

    fs_sglang.register()
    from factorspec.integrations.sglang.ngram_worker import drafter_requested

    if drafter_requested():
        fs_sglang.install_drafter()


def cpu_environment(cache_dir: str | None = None) -> dict[str, str]:
    """Environment SGLang's CPU path reads (set before SGLang is imported: some are read at
    import). ``SGLANG_CACHE_DIR`` defaults to a fresh temporary folder unless already set."""
    env = {"SGLANG_USE_CPU_ENGINE": "1"}
    env["SGLANG_CACHE_DIR"] = cache_dir or os.environ.get("SGLANG_CACHE_DIR") or \
        tempfile.mkdtemp(prefix="factorspec-sglang-cache-")
    return env


def cpu_engine_kwargs(**overrides: Any) -> dict[str, Any]:
    """``sglang.Engine`` keyword arguments for a CPU-only machine (measured: the default KV pool
    allocates 5.7 GB and takes 36 s; 8192 tokens is plenty for tests). The dtype is the one
    ``factorspec.models`` loads on this CPU (float32 where bf16 matmuls are slow: SmolLM2's five
    test requests generate in 31 s instead of 84 s, token-identical, on the 2-core CI host)."""
    from factorspec.models.dtype import cpu_dtype_name

    kw: dict[str, Any] = {"device": "cpu", "attention_backend": "torch_native", "disable_overlap_schedule": True,
                          "disable_cuda_graph": True, "max_total_tokens": 8192, "grammar_backend": "factorspec"}
    if "dtype" not in overrides:
        kw["dtype"] = cpu_dtype_name()
    kw.update(overrides)
    return kw


def cpu_engine(model_path: str, drafter: bool = True, draft_tokens: int = 16, ragged: bool = False,
               stats_path: str | None = None, **overrides: Any):
    """An ``sglang.Engine`` on CPU with FactorSpec as grammar backend and, when ``drafter``, NGRAM
    speculation with FactorSpec's drafts (``speculative_num_draft_tokens=draft_tokens``). Extra
    keyword arguments go to the Engine (``drafter=False`` and no ``speculative_algorithm``: no
    speculation). ``ragged``: per-request verify widths (``FACTORSPEC_SGLANG_RAGGED``);
    ``stats_path``: one JSON line per verify forward (``FACTORSPEC_SGLANG_STATS``). Scheduler and
    detokenizer processes run this module's entry points (and inherit the environment)."""
    for k, v in cpu_environment().items():
        os.environ.setdefault(k, v)
    os.environ["FACTORSPEC_SGLANG_DRAFTER"] = "1" if drafter else "0"
    os.environ["FACTORSPEC_SGLANG_RAGGED"] = "1" if ragged else "0"
    if stats_path:
        os.environ["FACTORSPEC_SGLANG_STATS"] = str(stats_path)
    else:
        os.environ.pop("FACTORSPEC_SGLANG_STATS", None)
    install()
    _register_factorspec()
    from sglang.srt.entrypoints.engine import (
        Engine,  # sglang.Engine is a lazy proxy: not subclassable
    )

    kw = cpu_engine_kwargs(model_path=model_path, **overrides)
    if drafter:
        kw.setdefault("speculative_algorithm", "NGRAM")
        kw.setdefault("speculative_num_draft_tokens", int(draft_tokens))

    class FactorSpecCPUEngine(Engine):
        run_scheduler_process_func = staticmethod(run_scheduler_process)
        run_detokenizer_process_func = staticmethod(run_detokenizer_process)

    return FactorSpecCPUEngine(**kw)
