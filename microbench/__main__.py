"""Microbenchmarks: `python -m microbench SUBCOMMAND [args]`.

Each subcommand is a module `microbench.<name>` with `main(argv) -> int`. Add one by listing it in
SUBCOMMANDS (with a one-line description); unknown names are still tried as modules, so a new file
works before it is listed."""
from __future__ import annotations

import importlib
import sys
from typing import Optional

SUBCOMMANDS: dict[str, str] = {
    "masks": "mask time per token and certain/jump-forward shares, FactorSpec vs xgrammar (Qwen)",
    "jsonschemabench": "JSONSchemaBench side by side: FactorSpec, xgrammar, llguidance (compile, mask time "
                       "per token on one walk, soundness by jsonschema); --sample N --seed S",
    "linear_sums": "sum / count / weighted sums over 200-5,000 fixed items: solve, check, feasible_values, "
                   "exists and a matcher walk per backend (issue #14)",
    "mask_sample": "FactorSpec mask time per token on a seeded JSONSchemaBench sample, this checkout vs a "
                   "reference checkout side by side (thread CPU, wall, first mask; identical rows checked)",
    "empty_schemas": "the schemas FactorSpec proves to admit no value, walked with the engines that compile them: "
                     "every finished record must be invalid (an independent check of the proofs, issue #12)",
    "kill_readd": "CPU of a worker kill's re-adds in process: spec images loaded at the re-add vs specs a standby "
                  "held, and the moved requests' first step vs warm (issue #14)",
}
_MODULES: dict[str, str] = {}


def main(argv: Optional[list[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        for k, d in SUBCOMMANDS.items():
            print(f"  {k:16s} {d}")
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    modname = _MODULES.get(name, f"microbench.{name}")
    try:
        mod = importlib.import_module(modname)
    except ModuleNotFoundError as e:
        if e.name != modname:
            raise
        print(f"unknown subcommand {name!r}; known: {', '.join(SUBCOMMANDS)}", file=sys.stderr)
        return 2
    return int(mod.main(rest) or 0)


if __name__ == "__main__":
    sys.exit(main())
