"""`factorspec natural-plan`: NATURAL PLAN files to spec files, and synthetic instances.

Two forms share one subcommand:
  factorspec natural-plan FILE --to-specs DIR
  factorspec natural-plan generate --cities N --seed S --count K --out FILE
The first positional is FILE unless it is the word `generate` (a data file of that name can
be given as ./generate). One positional plus checked option sets keeps both forms in a single
argparse subparser, which nested subparsers cannot do with a free positional FILE.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Sequence

from benchmarks.natural_plan.generate import CITY_POOL, generate_file
from benchmarks.natural_plan.problem import NaturalPlanError, parse_instance
from benchmarks.natural_plan.trip_spec import golden_record, to_spec

_GEN_OPTS = ("cities", "seed", "count", "out")


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add the `natural-plan` subcommand to an argparse subparsers object; sets func=run."""
    p = subparsers.add_parser(
        "natural-plan",
        help="NATURAL PLAN trip planning: write spec files, or generate instances",
        description=(
            "factorspec natural-plan FILE --to-specs DIR\n"
            "factorspec natural-plan generate --cities N --seed S --count K --out FILE"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("target", metavar="FILE|generate",
                   help="a NATURAL PLAN JSON file, or the word 'generate'")
    p.add_argument("--to-specs", metavar="DIR", dest="to_specs",
                   help="write DIR/<instance id>.json = {spec, prompt, golden} for every instance")
    p.add_argument("--cities", type=int, metavar="N", help="generate: number of cities")
    p.add_argument("--seed", type=int, metavar="S", help="generate: seed")
    p.add_argument("--count", type=int, metavar="K", help="generate: number of instances")
    p.add_argument("--out", metavar="FILE", help="generate: output file (JSON object keyed by id)")
    p.set_defaults(func=run, _natural_plan_parser=p)
    return p


def _err(message: str) -> int:
    print(f"factorspec natural-plan: error: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    """Dispatch on the first positional; returns the exit code (0 ok, 2 usage/data error)."""
    parser: argparse.ArgumentParser | None = getattr(args, "_natural_plan_parser", None)

    def usage(message: str) -> int:
        if parser is not None:
            parser.print_usage(sys.stderr)
        return _err(message)

    if args.target == "generate":
        if args.to_specs is not None:
            return usage("--to-specs does not go with 'generate'")
        missing = [f"--{o}" for o in _GEN_OPTS if getattr(args, o) is None]
        if missing:
            return usage("generate needs " + ", ".join(missing))
        if not 2 <= args.cities <= len(CITY_POOL):
            return usage(f"--cities must be in 2..{len(CITY_POOL)}")
        if args.count < 1:
            return usage("--count must be at least 1")
        return _generate(args.cities, args.seed, args.count, args.out)
    given = [f"--{o}" for o in _GEN_OPTS if getattr(args, o) is not None]
    if given:
        return usage(f"{', '.join(given)} only go with 'generate'")
    if args.to_specs is None:
        return usage("FILE needs --to-specs DIR")
    return _to_specs(args.target, args.to_specs)


def _write_json(path: str, obj: Any) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(obj, fh, indent=2, ensure_ascii=False)
        fh.write("\n")


def _to_specs(path: str, out_dir: str) -> int:
    """Parse every instance first, then write: a bad instance leaves no partial output."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError) as e:
        return _err(f"cannot read {path}: {e}")
    if not isinstance(data, dict):
        return _err(f"{path} is not a JSON object keyed by instance id")
    docs: dict[str, dict[str, Any]] = {}
    for iid, raw in data.items():
        if not iid or iid in (".", "..") or "/" in iid or "\\" in iid or "\0" in iid:
            return _err(f"instance id {iid!r} cannot be a file name")
        if not isinstance(raw, dict):
            return _err(f"instance {iid}: record is not a JSON object")
        try:
            problem = parse_instance(iid, raw)
        except NaturalPlanError as e:
            return _err(f"instance {e}")
        docs[iid] = {"spec": to_spec(problem), "prompt": problem.prompt, "golden": golden_record(problem)}
    try:
        os.makedirs(out_dir, exist_ok=True)
        for iid, doc in docs.items():
            _write_json(os.path.join(out_dir, f"{iid}.json"), doc)
    except OSError as e:
        return _err(f"cannot write to {out_dir}: {e}")
    print(f"wrote {len(docs)} spec files to {out_dir}", file=sys.stderr)
    return 0


def _generate(n: int, seed: int, count: int, out: str) -> int:
    data = generate_file(n, seed, count)
    try:
        _write_json(out, data)
    except OSError as e:
        return _err(f"cannot write {out}: {e}")
    print(f"wrote {len(data)} instances to {out}", file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Standalone entry (`python -m benchmarks.natural_plan.command natural-plan ...`); the main
    `factorspec` CLI registers the same subcommand."""
    parser = argparse.ArgumentParser(prog="factorspec")
    sub = parser.add_subparsers(dest="command", required=True)
    register(sub)
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
