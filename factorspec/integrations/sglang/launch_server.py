"""``python -m factorspec.integrations.sglang.launch_server [FactorSpec flags] [SGLang flags]``

Starts SGLang's HTTP server (``sglang.launch_server``) with FactorSpec as grammar backend and,
unless ``--no-factorspec-drafter``, as the NGRAM worker's drafter. Adds to SGLang's arguments,
unless they are given explicitly:

    --grammar-backend factorspec
    --speculative-algorithm NGRAM --speculative-num-draft-tokens <--factorspec-draft-tokens>

FactorSpec flags (consumed here, not passed to SGLang):

    --factorspec-drafter / --no-factorspec-drafter   FactorSpec drafts for NGRAM (default on)
    --factorspec-draft-tokens N                      verify nodes per request incl. the root (16)
    --factorspec-plain-json {factorspec,xgrammar}    who serves schemas without x-factorspec

SGLang starts its scheduler and detokenizer in spawned processes. Both registrations reach them
two ways: this module is re-imported there as ``__mp_main__`` (it imports the integration at the
top), and a ``sglang.srt.plugins`` entry point (``factorspec =
factorspec.integrations.sglang:plugin``) is put on ``PYTHONPATH`` through a generated
``.dist-info`` folder, which SGLang's ``load_plugins()`` runs in every process.

``--device cpu`` (a CPU-only machine): sets ``SGLANG_USE_CPU_ENGINE=1`` and ``SGLANG_CACHE_DIR``
(when unset) before SGLang is imported, and adds, unless given, ``--attention-backend
torch_native --disable-overlap-schedule --disable-cuda-graph --max-total-tokens 8192`` and
``--dtype`` as ``factorspec.models`` loads on this CPU (float32 where bf16 matmuls are slow). The
``sgl_kernel`` CPU ops and torch_native's verify mode come from
:mod:`factorspec.integrations.sglang.cpu`, installed by the package import below (also in the
scheduler process, which re-imports this module).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Sequence

CPU_DEFAULTS: tuple[tuple[str, str | None], ...] = (
    ("--attention-backend", "torch_native"), ("--disable-overlap-schedule", None),
    ("--disable-cuda-graph", None), ("--max-total-tokens", "8192"))


def cpu_requested(argv: Sequence[str]) -> bool:
    """``--device cpu`` among the arguments."""
    argv = list(argv)
    return any(a == "--device=cpu" or (a == "--device" and i + 1 < len(argv) and argv[i + 1] == "cpu")
               for i, a in enumerate(argv))


def _cpu_environment(argv: Sequence[str]) -> None:
    # read by SGLang at import time: set before the package import below pulls SGLang in
    if cpu_requested(argv):
        os.environ.setdefault("SGLANG_USE_CPU_ENGINE", "1")
        if not os.environ.get("SGLANG_CACHE_DIR"):
            os.environ["SGLANG_CACHE_DIR"] = tempfile.mkdtemp(prefix="factorspec-sglang-cache-")


_cpu_environment(sys.argv[1:])

# registers the backend and installs the CPU path (also in the children, which re-import this module)
import factorspec.integrations.sglang as fs_sglang

PLUGIN_DIST = "factorspec_sglang_plugin"


def split_args(argv: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--factorspec-drafter", dest="drafter", action="store_true", default=True)
    p.add_argument("--no-factorspec-drafter", dest="drafter", action="store_false")
    p.add_argument("--factorspec-draft-tokens", type=int, default=16)
    p.add_argument("--factorspec-plain-json", choices=["factorspec", "xgrammar"], default="factorspec")
    return p.parse_known_args(list(argv))


def _has_flag(args: Sequence[str], flag: str) -> bool:
    return any(a == flag or a.startswith(flag + "=") for a in args)


def sglang_argv(ns: argparse.Namespace, rest: Sequence[str]) -> list[str]:
    """SGLang's argument list with FactorSpec's defaults filled in."""
    out = list(rest)
    if cpu_requested(out):
        for flag, value in CPU_DEFAULTS:
            if not _has_flag(out, flag):
                out += [flag] if value is None else [flag, value]
        if not _has_flag(out, "--dtype"):
            from factorspec.models.dtype import cpu_dtype_name

            out += ["--dtype", cpu_dtype_name()]
    if not _has_flag(out, "--grammar-backend"):
        out += ["--grammar-backend", "factorspec"]
    if ns.drafter:
        if not _has_flag(out, "--speculative-algorithm"):
            out += ["--speculative-algorithm", "NGRAM"]
        if not _has_flag(out, "--speculative-num-draft-tokens"):
            out += ["--speculative-num-draft-tokens", str(ns.factorspec_draft_tokens)]
    return out


def write_plugin_dist(root: str | None = None) -> str:
    """A ``.dist-info`` folder declaring the ``sglang.srt.plugins`` entry point; returns the
    folder to put on ``sys.path`` / ``PYTHONPATH``."""
    root = root or tempfile.mkdtemp(prefix="factorspec-sglang-plugin-")
    info = os.path.join(root, f"{PLUGIN_DIST}-0.0.0.dist-info")
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "METADATA"), "w", encoding="utf-8") as f:
        f.write(f"Metadata-Version: 2.1\nName: {PLUGIN_DIST}\nVersion: 0.0.0\n")
    with open(os.path.join(info, "entry_points.txt"), "w", encoding="utf-8") as f:
        f.write("[sglang.srt.plugins]\nfactorspec = factorspec.integrations.sglang:plugin\n")
    return root


def prepare_environment(ns: argparse.Namespace) -> str:
    os.environ["FACTORSPEC_SGLANG_DRAFTER"] = "1" if ns.drafter else "0"
    os.environ["FACTORSPEC_SGLANG_PLAIN_JSON"] = ns.factorspec_plain_json
    root = write_plugin_dist()
    os.environ["PYTHONPATH"] = root + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")
    if root not in sys.path:
        sys.path.insert(0, root)
    fs_sglang.register()
    if ns.drafter:
        fs_sglang.install_drafter()
    return root


def main(argv: Sequence[str] | None = None) -> int:
    ns, rest = split_args(sys.argv[1:] if argv is None else argv)
    _cpu_environment(rest)
    prepare_environment(ns)
    args = sglang_argv(ns, rest)

    from sglang.launch_server import run_server
    from sglang.srt.plugins import load_plugins
    from sglang.srt.server_args import prepare_server_args
    from sglang.srt.utils import kill_process_tree

    load_plugins()
    server_args = prepare_server_args(args)
    try:
        run_server(server_args)
    finally:
        kill_process_tree(os.getpid(), include_parent=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
