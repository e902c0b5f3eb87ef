"""CPU mask workers: processes that keep each request's matcher, compute the next step's bitmask
rows (into one shared-memory block) and drafts while the model's forward pass runs.

Imports numpy and the core only; no torch, no engine."""
from factorspec.workers.pool import MaskWorkerPool, PoolError, StepHandle
from factorspec.workers.protocol import RequestFailed, StepItem, StepResult, StepTimeout, WorkerCrashed
from factorspec.workers.vocab_recipes import BytesVocab, ModelVocab, TokenizerImage, as_vocab_factory

__all__ = ["BytesVocab", "MaskWorkerPool", "ModelVocab", "PoolError", "RequestFailed", "StepHandle",
           "StepItem", "StepResult", "StepTimeout", "TokenizerImage", "WorkerCrashed", "as_vocab_factory"]
