"""The `factorspec` command line.

  factorspec check SPEC RECORD      exit 0 valid, 1 violations (each printed), 2 bad spec/input
  factorspec solve SPEC [--count]   print one valid record (or the count); exit 3 unsatisfiable,
                                    2 bad spec/input, 4 budget exceeded
  factorspec generate SPEC --prompt TEXT   one record for one prompt (exit 0 valid, 1 not, 2 bad input)
  factorspec run --requests FILE    a user's own requests (JSONL, factorspec.requests_file)
  factorspec run                    the main job: the shared NATURAL PLAN instances (benchmarks.commands)
  factorspec natural-plan ...       NATURAL PLAN files to spec files (benchmarks.natural_plan.command)
  factorspec bench ...              every decoding configuration side by side (benchmarks.commands)

SPEC is a spec document (docs/spec.md), or an object {"spec": ..., "prompt": ..., "golden": ...}
as written by `factorspec natural-plan --to-specs`; RECORD is a JSON file or `-` for stdin.
`natural-plan`, `bench` and `run`'s NATURAL PLAN job are thin entry points into the top-level
`benchmarks` package (installed beside `factorspec`), imported when the parser is built or the
command runs, never when this module or the library is imported; `generate` and
`run --requests` are the library's own (factorspec.generation).
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Optional, Sequence

from factorspec import __version__
from factorspec.errors import BudgetExceeded, FactorSpecError, InputLimitError, SpecError, Unsatisfiable

EXIT_OK, EXIT_INVALID, EXIT_ERROR, EXIT_UNSAT, EXIT_BUDGET = 0, 1, 2, 3, 4
MAX_VIOLATIONS_SHOWN = 100  # a record with 10^6 bad items prints the first ones and a count


class InputError(Exception):
    """A file could not be read or is not JSON (exit 2)."""


def _read_json(path: str, what: str) -> Any:
    """Read one JSON document within the input limits (factorspec.graph.limits): the size is
    checked before the file is read, the digits and nesting while it is parsed."""
    from factorspec.graph.limits import MAX_INPUT_BYTES, elide, load_json

    try:
        if path == "-":
            text = sys.stdin.read(MAX_INPUT_BYTES + 1)
        else:
            import os

            size = os.path.getsize(path)
            if size > MAX_INPUT_BYTES:
                raise InputError(f"{what} {path} has {size} bytes (limit MAX_INPUT_BYTES = {MAX_INPUT_BYTES})")
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read {what} {path}: {elide(str(e))}") from None
    try:
        return load_json(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{what} {path} is not valid JSON: {e}") from None
    except InputLimitError as e:
        raise InputError(f"{what} {path}: {e}") from None


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
    from factorspec.graph.limits import elide

    print(f"factorspec: error: {elide(message, 2000)}", file=sys.stderr)
    return code


def cmd_check(args: argparse.Namespace) -> int:
    if args.spec == "-" and args.record == "-":
        return _error("SPEC and RECORD cannot both be stdin")
    try:
        cs = load_spec(args.spec)
        record = _read_json(args.record, "record")
    except (InputError, FactorSpecError) as e:
        return _error(str(e))
    try:
        violations = cs.check(record)
    except RecursionError:
        return _error("the record nests too deeply to check")
    except FactorSpecError as e:  # a limit of the record (MAX_DEPTH), named
        return _error(f"record {args.record}: {e}")
    if not violations:
        print("valid")
        soft = cs.soft_violations(record)  # preferences not met: reported, never invalid
        if soft:
            print(f"soft: {len(soft)} preference{'s' if len(soft) != 1 else ''} not met "
                  f"(penalty {cs.soft_penalty(record)})")
            for v in soft[:MAX_VIOLATIONS_SHOWN]:
                print(f"  {v}")
        return EXIT_OK
    print(f"invalid: {len(violations)} violation{'s' if len(violations) != 1 else ''}")
    for v in violations[:MAX_VIOLATIONS_SHOWN]:
        print(f"  {v}")
    if len(violations) > MAX_VIOLATIONS_SHOWN:
        print(f"  ... and {len(violations) - MAX_VIOLATIONS_SHOWN} more")
        if violations[-1].relation == "limit":  # the check stopped at MAX_VIOLATIONS: say so
            print(f"  {violations[-1]}")
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
        elif args.prefer_soft:
            from factorspec.graph.soft import solve_preferring
            pref = solve_preferring(cs)
            print(cs.canonical_text(pref.record))
            if pref.kept or pref.left_out:  # stdout stays the record alone
                print(f"soft: met {', '.join(pref.kept) or 'none'}; not met {', '.join(pref.left_out) or 'none'}",
                      file=sys.stderr)
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


def _register_optional(modname: str, sub: Any, problems: list[str]) -> None:
    """A benchmarks subcommand module's `register(sub)`. A failure to import it is reported in
    --help, not fatal, so that check/solve/generate keep working without it."""
    try:
        import importlib

        register = importlib.import_module(modname).register
    except Exception as e:  # noqa: BLE001 - an optional command must not break the others
        problems.append(f"{modname}: {type(e).__name__}: {e}")
        return
    register(sub)


def _add_model_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=None,
                   help="model name (qwen2.5-coder-0.5b default, smollm2-135m, gemma3-270m), a GGUF file or a "
                        "Hugging Face model directory")
    p.add_argument("--max-width", type=int, default=64, help="most draft nodes verified per request and forward")
    p.add_argument("--workers", type=int, default=1,
                   help="CPU mask worker processes (masks of every draft node computed during the forward); "
                        "0: in-process")


def _progress(rec: Any) -> None:
    state = "valid" if rec.valid else ("spec error" if rec.error else "INVALID")
    print(f"[run] {rec.id}: {state} tokens={rec.tokens} steps={rec.verify_steps} seconds={rec.seconds}"
          + (f" ({rec.error})" if rec.error else "")
          + (f" violations: {'; '.join(rec.violations[:3])}" if rec.violations else ""),
          file=sys.stderr, flush=True)


def cmd_run(args: argparse.Namespace) -> int:
    if args.requests is None:
        from benchmarks.commands import cmd_run as natural_plan_job

        return int(natural_plan_job(args))
    if args.natural_plan is not None or args.limit is not None:
        return _error("--requests cannot be combined with --natural-plan or --limit")
    import os

    from factorspec.generation import RecordGenerator, summarize
    from factorspec.requests_file import load_requests

    try:
        reqs = load_requests(args.requests)  # every line checked before the model loads
    except FactorSpecError as e:
        return _error(str(e))
    with RecordGenerator(args.model, workers=args.workers, batch=args.batch, max_width=args.max_width) as gen:
        rows = gen.generate(reqs, on_done=_progress)
        wall = gen.wall_seconds
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r.as_json(), ensure_ascii=False) + "\n")
    s = summarize(rows, wall)
    print(json.dumps(s, indent=2))
    return EXIT_OK if s["valid"] == s["requests"] else EXIT_INVALID


def cmd_generate(args: argparse.Namespace) -> int:
    from factorspec.generation import RecordGenerator
    from factorspec.requests_file import RequestsFileError, parse_request

    try:
        prompt = sys.stdin.read() if args.prompt == "-" else args.prompt
        spec = spec_document(_read_json(args.spec, "spec"))
        obj: dict[str, Any] = {"id": "generate", "spec": spec, "prompt": prompt, "max_tokens": args.max_tokens,
                               "temperature": args.temperature, "top_p": args.top_p, "top_k": args.top_k}
        if args.seed is not None:
            obj["seed"] = args.seed
        req = parse_request(obj, "generate", ".", "generate")
    except (InputError, RequestsFileError) as e:
        return _error(str(e))
    with RecordGenerator(args.model, workers=args.workers, batch=1, max_width=args.max_width) as gen:
        (rec,) = gen.generate([req])
    if rec.error:
        return _error(rec.error)
    if not rec.valid:
        print(f"invalid record ({rec.finish_reason}): {'; '.join(rec.violations)}\n{rec.text}", file=sys.stderr)
        return EXIT_INVALID
    print(json.dumps(rec.record, ensure_ascii=False))
    print(f"tokens {rec.tokens}, verify steps {rec.verify_steps}, seconds {rec.seconds}"
          + (f", seed {rec.seed}" if rec.seed is not None else ""), file=sys.stderr)
    return EXIT_OK


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
    p.add_argument("--prefer-soft", action="store_true",
                   help="meet soft relations greedily by weight (kept and left-out ones on stderr)")
    p.set_defaults(func=cmd_solve)

    p = sub.add_parser("generate", help="one record for one prompt (exit 0 valid, 1 not, 2 bad input)",
                       description="Decode one record of SPEC for a prompt with FactorSpec (masks, certain "
                                   "runs and draft trees); print it as JSON. Exit 1 if it is not valid, 2 "
                                   "for a bad spec or input.")
    p.add_argument("spec", metavar="SPEC", help="spec JSON file ('-' for stdin)")
    p.add_argument("--prompt", required=True, help="the prompt text, or '-' to read it from stdin")
    p.add_argument("--max-tokens", type=int, default=512)
    p.add_argument("--temperature", type=float, default=0.0, help="0 (default): greedy")
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--top-k", type=int, default=0)
    p.add_argument("--seed", type=int, default=None)
    _add_model_args(p)
    p.set_defaults(func=cmd_generate)

    p = sub.add_parser("run", help="decode a user's requests (--requests FILE.jsonl) or, by default, the "
                                   "shared NATURAL PLAN instances (the main job)",
                       description="With --requests: one request a line (id, prompt or chat messages, spec "
                                   "inline or a path, max_tokens, temperature, top_p, top_k, seed); see "
                                   "README. Without: FactorSpec on the shared NATURAL PLAN instances. Writes "
                                   "one JSON line per request to --out, progress on stderr, a summary on "
                                   "stdout; exit 1 if any record is invalid.")
    p.add_argument("--requests", default=None, metavar="FILE", help="requests JSONL file")
    p.add_argument("--natural-plan", default=None, help="NATURAL PLAN file (default: the shared one)")
    p.add_argument("--limit", type=int, default=None, help="first N NATURAL PLAN instances")
    p.add_argument("--batch", type=int, default=1)
    _add_model_args(p)
    p.add_argument("--out", required=True, help="output JSONL")
    p.set_defaults(func=cmd_run)

    problems: list[str] = []
    _register_optional("benchmarks.natural_plan.command", sub, problems)
    _register_optional("benchmarks.commands", sub, problems)
    if problems:
        parser.epilog = "unavailable subcommand modules: " + "; ".join(problems)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
