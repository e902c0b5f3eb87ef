"""Triton kernels for FactorSpec's verify step, each with a plain torch reference.

Layout shared by all kernels: a batch of ``bs`` requests, request b owning verify nodes
``cu_nodes[b]:cu_nodes[b+1]`` (one logits row per node). Local node 0 is the root (the last
verified token); the others are draft tokens whose parent has a smaller local index, so a certain
run is the chain ``[-1, 0, 1, ...]``. Widths may differ per request (width 0 = root only).

Kernels (dispatch: Triton on CUDA tensors, torch on CPU; ``backend="triton"`` forces Triton on CPU
tensors under ``TRITON_INTERPRET=1``):

1. :func:`apply_bitmask`: xgrammar-layout token bitmasks over every verify row, optional fused
   argmax.
2. :func:`build_tree_verify_inputs`: positions, full / q-length-only / bit-packed tree attention
   masks and SGLang's ``retrive_*`` arrays.
3. :func:`assemble_drafts`: ragged certain runs + trees -> flat verify tokens and offsets (SGLang
   and vLLM shapes).
4. :func:`verify_tree_greedy`: accepted path, accepted length and bonus token.

Importing this package imports torch (not triton); ``factorspec`` itself does not import it.
"""
from ._backend import Backend, interpreter_enabled, use_triton
from .assemble import assemble_drafts, assemble_drafts_from_lists
from .assemble_torch import DraftBatch, assemble_drafts_torch
from .bitmask import apply_bitmask
from .bitmask_torch import apply_bitmask_torch, unpack_bitmask
from .tree_mask import build_tree_verify_inputs, check_trees, flatten_parents
from .tree_mask_torch import TreeVerifyInputs, build_tree_verify_inputs_torch, tree_sizes
from .verify import verify_tree_greedy
from .verify_torch import GreedyVerifyResult, verify_tree_greedy_torch

__all__ = [
    "Backend",
    "DraftBatch",
    "GreedyVerifyResult",
    "TreeVerifyInputs",
    "apply_bitmask",
    "apply_bitmask_torch",
    "assemble_drafts",
    "assemble_drafts_from_lists",
    "assemble_drafts_torch",
    "build_tree_verify_inputs",
    "build_tree_verify_inputs_torch",
    "check_trees",
    "flatten_parents",
    "interpreter_enabled",
    "unpack_bitmask",
    "tree_sizes",
    "use_triton",
    "verify_tree_greedy",
    "verify_tree_greedy_torch",
]
