"""Sampling for the verify step: temperature, top-k, top-p and seeds, lossless under drafts.

FactorSpec's drafts are deterministic (certain runs and small trees of feasible values, no draft
model), so speculative sampling reduces to its simplest exact form: every verify row samples its
own token from the masked, tempered, filtered distribution of that position, and the accepted path
follows the child whose token equals the sample (as greedy verification follows the argmax). A
child c is then accepted with probability p(c), the rule of speculative sampling for a point-mass
proposal; with several children (a tree) the sample picks at most one of them, which is the
multi-draft rejection rule for distinct deterministic drafts. A certain token's masked distribution
is one-hot, so it is accepted with probability one. Rows off the accepted path are discarded, and
whether a row is on the path depends only on the samples of its ancestors, so the record is
distributed exactly as masked sampling one token per forward.

Seeds: each row's randomness is Gumbel noise over the whole vocabulary drawn from a generator
keyed by (request seed, absolute position of the sampled token). The noise of a position does not
depend on the draft shape, so a seeded request samples the same tokens with and without drafts
(given the same logits; forwards of different shapes can differ in the last float bits), and a
seeded run is reproducible. The order is xgrammar/vLLM's: the constraint mask first, then
temperature, then top-k, then top-p (nucleus: the smallest set of most likely tokens whose mass
reaches top_p; ties at the cut resolved by token order of a stable sort)."""
from __future__ import annotations

from dataclasses import dataclass

import torch

_MASK64 = (1 << 64) - 1


@dataclass(frozen=True)
class SamplingParams:
    """Per-request sampling settings. temperature 0 means greedy (masked argmax)."""

    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0  # 0 = no top-k cut
    seed: int | None = None

    def __post_init__(self) -> None:
        if not (isinstance(self.temperature, (int, float)) and self.temperature >= 0):
            raise ValueError(f"temperature must be a number >= 0, got {self.temperature!r}")
        if not (isinstance(self.top_p, (int, float)) and 0 < self.top_p <= 1):
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p!r}")
        if not (isinstance(self.top_k, int) and self.top_k >= 0):
            raise ValueError(f"top_k must be an integer >= 0, got {self.top_k!r}")
        if self.seed is not None and not isinstance(self.seed, int):
            raise ValueError(f"seed must be an integer, got {self.seed!r}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


GREEDY = SamplingParams()


def _splitmix64(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def position_seed(seed: int, position: int) -> int:
    """The generator seed of one (request seed, absolute token position): independent streams per
    position, so the noise of a position is the same whatever the draft shape."""
    return _splitmix64(_splitmix64(seed & _MASK64) ^ (position & _MASK64)) & ((1 << 63) - 1)


def gumbel_noise(seed: int, position: int, vocab_size: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """Standard Gumbel noise over the vocabulary for one position (float64 on the CPU generator,
    so the values do not depend on the device the logits live on)."""
    g = torch.Generator(device="cpu")
    g.manual_seed(position_seed(seed, position))
    u = torch.rand(vocab_size, generator=g, dtype=torch.float64)
    u = u.clamp_(min=torch.finfo(torch.float64).tiny)
    return (-torch.log(-torch.log(u))).to(device)


def filtered_logprobs(logits: torch.Tensor, params: SamplingParams) -> torch.Tensor:
    """Log-probabilities [V] (float64) of the distribution a row samples from: `logits` already
    masked (-inf where the constraint forbids), tempered, then cut by top-k and top-p."""
    x = logits.double() / params.temperature
    if params.top_k and params.top_k < x.shape[-1]:
        kth = torch.topk(x, params.top_k).values[-1]
        x = torch.where(x >= kth, x, torch.full_like(x, float("-inf")))
    lp = torch.log_softmax(x, dim=-1)
    if params.top_p < 1:
        order = torch.argsort(lp, descending=True, stable=True)
        p_sorted = lp[order].exp()
        before = torch.cumsum(p_sorted, dim=0) - p_sorted  # mass strictly above each token
        drop_sorted = before >= params.top_p
        drop_sorted[0] = False  # the most likely token always stays
        drop = torch.zeros_like(drop_sorted)
        drop[order] = drop_sorted
        lp = torch.where(drop, torch.full_like(lp, float("-inf")), lp)
        lp = torch.log_softmax(lp, dim=-1)
    return lp


def sample_row(logits: torch.Tensor, params: SamplingParams, seed: int, position: int) -> int:
    """One token from one masked row (Gumbel-max over the filtered log-probabilities)."""
    lp = filtered_logprobs(logits, params)
    noise = gumbel_noise(seed, position, lp.shape[-1], lp.device)
    return int(torch.argmax(lp + noise).item())


def sample_rows(logits: torch.Tensor, params: list[SamplingParams], seeds: list[int],
                positions: list[int]) -> torch.Tensor:
    """Tokens [n] for masked rows [n, V]: greedy rows take the argmax, the others sample."""
    out = torch.empty(logits.shape[0], dtype=torch.long)
    for i in range(logits.shape[0]):
        p = params[i]
        out[i] = int(torch.argmax(logits[i]).item()) if p.greedy else sample_row(logits[i], p, seeds[i], positions[i])
    return out
