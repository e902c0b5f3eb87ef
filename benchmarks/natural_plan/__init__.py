"""NATURAL PLAN trip planning: parse instances, compile them to FactorSpec specs, check plans
independently, and generate synthetic instances of any size."""
from benchmarks.natural_plan.check import check_plan, iter_plans
from benchmarks.natural_plan.generate import CITY_POOL, generate, generate_file
from benchmarks.natural_plan.problem import (
    Event,
    Leg,
    NaturalPlanError,
    TripProblem,
    json_prompt,
    load_instances,
    parse_instance,
)
from benchmarks.natural_plan.trip_spec import golden_record, to_spec

__all__ = [
    "CITY_POOL", "Event", "Leg", "NaturalPlanError", "TripProblem", "check_plan", "generate",
    "generate_file", "golden_record", "iter_plans", "json_prompt", "load_instances",
    "parse_instance", "to_spec",
]
