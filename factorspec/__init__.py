"""FactorSpec: JSON Schema plus relations compiled to a factor graph with exact feasibility,
exact token masks and certain drafts."""

__version__ = "0.1.0"
