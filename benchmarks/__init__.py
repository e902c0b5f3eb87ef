"""Benchmarks and evaluation on top of FactorSpec, kept out of the library (docs/architecture.md).

- `natural_plan/`: NATURAL PLAN trip planning: parse instances, convert them to specs, check
  plans independently, generate synthetic instances; `factorspec natural-plan`;
- `runner`: decode NATURAL PLAN instances through the reference engine under one configuration;
- `commands`: `factorspec run` (the main job) and `factorspec bench` (every configuration side
  by side);
- `gate`: the CI regression gate on hardware-independent figures (`python -m benchmarks.gate`);
- `baselines`: the constraints FactorSpec is compared against (no mask, xgrammar, xgrammar plus
  n-gram drafts);
- `vllm_e2e`: end-to-end NATURAL PLAN runs through vLLM, one engine configuration per process;
- `pool_overhead`: round-trip overhead of the CPU mask worker pool.
"""
