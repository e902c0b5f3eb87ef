"""The `factorspec` command line.

  factorspec check SPEC RECORD      exit 0 valid, 1 violations (each printed), 2 bad spec/input
  factorspec solve SPEC [--count]   print one valid record (or the count); exit 3 unsatisfiable,
                                    2 bad spec/input, 4 budget exceeded
  factorspec natural-plan ...       NATURAL PLAN files to spec files (benchmarks.natural_plan.command)
  factorspec run / bench ...        decode NATURAL PLAN with the reference engine (benchmarks.commands)

SPEC is a spec document (docs/spec.md), or an object {"spec": ..., "prompt": ..., "golden": ...}
as written by `factorspec natural-plan --to-specs`; RECORD is a JSON file or `-` for stdin.
`natural-plan`, `run` and `bench` are thin entry points into the top-level `benchmarks`
package (installed beside `factorspec`): each registers itself through a `register(subparsers)`
hook, imported when the parser is built, never when this module or the library is imported.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Optional, Sequence

from factorspec import __version__
from factorspec.errors import BudgetExceeded, FactorSpecError, SpecError, Unsatisfiable

EXIT_OK, EXIT_INVALID, EXIT_ERROR, EXIT_UNSAT, EXIT_BUDGET = 0, 1, 2, 3, 4


class InputError(Exception):
    """A file could not be read or is not JSON (exit 2)."""


def _read_json(path: str, what: str) -> Any:
    try:
        if path == "-":
            text = sys.stdin.read()
        else:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read {what} {path}: {e}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{what} {path} is not valid JSON: {e}") from None
    except RecursionError:
        raise InputError(f"{what} {path} nests too deeply") from None


def spec_document(doc: Any) -> Any:
    """The spec inside a `--to-specs` file ({"spec": ..., ...}), or the document itself."""
    if isinstance(doc, dict) and isinstance(doc.get("spec"), dict) and "type" not in doc \
            and "properties" not in doc:
        return doc["spec"]
    return doc


def load_spec(path: str, nodes: Optional[int] = None, seconds: Optional[float] = None) -> Any:
    """Read and compile SPEC; raises InputError or SpecError."""
    from factorspec.graph import Budget, compile_spec

    doc = spec_document(_read_json(path, "spec"))
    budget = Budget()
    if nodes is not None:
        budget.nodes = nodes
    if seconds is not None:
        budget.seconds = seconds
    try:
        return compile_spec(doc, budget)
    except RecursionError:
        raise SpecError("", "the spec nests too deeply") from None


def _error(message: str, code: int = EXIT_ERROR) -> int:
    print(f"factorspec: error: {message}", file=sys.stderr)
    return code


def cmd_check(args: argparse.Namespace) -> int:
    if args.spec == "-" and args.record == "-":
        return _error("SPEC and RECORD cannot both be stdin")
    try:
        cs = load_spec(args.spec)
        record = _read_json(args.record, "record")
    except (InputError, FactorSpecError) as e:
        return _error(str(e))
    violations = cs.check(record)
    if not violations:
        print("valid")
        return EXIT_OK
    print(f"invalid: {len(violations)} violation{'s' if len(violations) != 1 else ''}")
    for v in violations:
        print(f"  {v}")
    return EXIT_INVALID


def cmd_solve(args: argparse.Namespace) -> int:
    try:
        cs = load_spec(args.spec, args.max_nodes, args.max_seconds)
    except (InputError, FactorSpecError) as e:
        return _error(str(e))
    try:
        if args.count:
            n = cs.count(args.limit)
            more = " (limit reached)" if n >= args.limit else ""
            print(f"valid records{more}: {n}")
        else:
            print(cs.canonical_text(cs.solve()))
        return EXIT_OK
    except Unsatisfiable as e:
        print(f"unsatisfiable: {e}")
        texts = {r.name: r.text for r in cs.relations}
        for name in e.relations:
            if name in texts:
                print(f"  {name}: {texts[name]}")
        return EXIT_UNSAT
    except BudgetExceeded as e:
        return _error(str(e), EXIT_BUDGET)
    except FactorSpecError as e:
        return _error(str(e))


def _register_benchmark_commands(sub: Any, problems: list[str]) -> None:
    """`run` and `bench` (benchmarks.commands). A failure to import them is reported in --help,
    not fatal, so that `check`/`solve` keep working when an optional dependency of `run` is
    missing."""
    try:
        from benchmarks.commands import register
    except Exception as e:  # noqa: BLE001 - an optional command must not break check/solve
        problems.append(f"benchmarks.commands: {type(e).__name__}: {e}")
        return
    register(sub)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="factorspec",
        description="Compile a JSON Schema plus relations into a factor graph with an exact "
                    "feasibility check (docs/spec.md).")
    parser.add_argument("--version", action="version", version=f"factorspec {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("check", help="check a record against a spec (exit 0 valid, 1 invalid, 2 error)",
                       description="Exit 0 if RECORD satisfies SPEC; exit 1 and print every violated "
                                   "relation; exit 2 for a bad spec or unreadable input.")
    p.add_argument("spec", metavar="SPEC", help="spec JSON file ('-' for stdin)")
    p.add_argument("record", metavar="RECORD", help="record JSON file ('-' for stdin)")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("solve", help="print one valid record, or count them (exit 3 unsatisfiable)",
                       description="Print one valid record as JSON (canonical text), or with --count "
                                   "the number of valid records (of the slots relations constrain). "
                                   "Exit 3 when unsatisfiable (naming the conflicting relations), 2 "
                                   "for a bad spec, 4 when the search budget is exceeded.")
    p.add_argument("spec", metavar="SPEC", help="spec JSON file ('-' for stdin)")
    p.add_argument("--count", action="store_true", help="print the number of valid records instead")
    p.add_argument("--limit", type=int, default=10**9, help="stop counting at this many (default 1e9)")
    p.add_argument("--max-nodes", type=int, default=None, metavar="N", help="search node budget")
    p.add_argument("--max-seconds", type=float, default=None, metavar="S", help="search time budget")
    p.set_defaults(func=cmd_solve)

    from benchmarks.natural_plan.command import register as register_natural_plan
    register_natural_plan(sub)

    problems: list[str] = []
    _register_benchmark_commands(sub, problems)
    if problems:
        parser.epilog = "unavailable subcommand modules: " + "; ".join(problems)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
