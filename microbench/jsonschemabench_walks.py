"""Soundness walks on chosen JSONSchemaBench schemas: `python -m microbench jsonschemabench_walks`.

For each schema (ids from `--ids-file`, a JSON list or one `Subset/id` a line; or `--newly A.json
B.json`: the ones FactorSpec compiles in compile-all result B but not in A) and each seed, runs
tests.graph.test_jsonschemabench.run_one: compile, a seeded token walk whose mask must stay a
subset of xgrammar's for the first `--xgrammar-steps` steps (none by default), then a walk that
favours the longest tokens; no mask may be empty (dead end), every finished record must pass
`cs.check` and the `jsonschema` validator.

Each (schema, seed) runs in a worker process with a hard wall-clock cap (`--timeout`): a worker
past it is killed and the case is recorded as a hang, so one slow schema cannot stall the run.
Writes one JSON line per case (`--out`, flushed as it goes) and a summary JSON (`--json`) with the
counts, the slowest cases and the load average at start and end.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path
from typing import Any, Optional

from microbench.jsonschemabench import read_ids


def newly_compiled(before: Path, after: Path) -> list[str]:
    """`Subset/id` of the schemas FactorSpec compiles in `after` (a compile-all result) but not in
    `before`."""
    def ok(p: Path) -> list[str]:
        d = json.loads(p.read_text())
        i = d["per_schema"]["engines"].index("factorspec")
        return [k for k, v in d["per_schema"]["status"].items() if v[i] == 0]
    old = set(ok(before))
    return [k for k in ok(after) if k not in old]


class _NoXgrammar:
    """Stands in for xgrammar's compiler when the walks are not compared with its mask."""

    def compile_json_schema(self, *args: Any, **kw: Any) -> None:
        return None


def _worker(conn: Any, cap: int, edge: bool, xgr_steps: int) -> None:
    """Runs cases sent over `conn` until it gets None; answers each with run_one's record."""
    sys.setrecursionlimit(20000)
    from tests.graph import test_jsonschemabench as jsb
    gc = jsb._compiler() if xgr_steps else _NoXgrammar()
    import xgrammar  # noqa: F401 - the walk imports it; load it before the clock starts
    jsb.load_vocab(jsb.QWEN)
    conn.send("ready")
    while True:
        job = conn.recv()
        if job is None:
            return
        rec, seed = job
        t = time.perf_counter()
        res = jsb.run_one(rec, seed, gc, cap=cap, edge=edge, xgr_steps=xgr_steps)
        res["seed"] = seed
        res["wall_s"] = round(time.perf_counter() - t, 3)
        res.pop("trace", None) if res.get("result") == "passed" else None
        conn.send(res)


class _Slot:
    """One worker process and the case it is running."""

    def __init__(self, cap: int, edge: bool, xgr_steps: int) -> None:
        self.cap, self.edge, self.xgr_steps = cap, edge, xgr_steps
        self.start()

    def start(self) -> None:
        self.conn, child = mp.Pipe()
        self.proc = mp.Process(target=_worker, args=(child, self.cap, self.edge, self.xgr_steps), daemon=True)
        self.proc.start()
        self.job: Optional[tuple[dict, int]] = None
        self.t0 = 0.0
        self.ready = False

    def kill(self) -> None:
        self.proc.kill()
        self.proc.join()


def run(cases: list[tuple[dict, int]], workers: int, timeout: float, cap: int, edge: bool,
        xgr_steps: int, out: Any) -> list[dict]:
    """Every case through `workers` processes, each case cut at `timeout` seconds (wall)."""
    todo = list(reversed(cases))
    slots = [_Slot(cap, edge, xgr_steps) for _ in range(max(1, min(workers, len(cases))))]
    results: list[dict] = []

    def done(res: dict) -> None:
        results.append(res)
        out.write(json.dumps(res, default=str) + "\n")
        out.flush()

    while todo or any(s.job for s in slots):
        for s in slots:
            if not s.ready:
                if s.conn.poll():
                    s.ready = s.conn.recv() == "ready"
                elif not s.proc.is_alive():
                    s.start()
                continue
            if s.job is None and todo:
                s.job = todo.pop()
                s.t0 = time.monotonic()
                s.conn.send(s.job)
        time.sleep(0.05)
        for s in slots:
            if s.job is None:
                continue
            rec, seed = s.job
            if s.conn.poll():
                try:
                    done(s.conn.recv())
                except EOFError:  # the worker died (segfault, out of memory)
                    done({"id": rec["id"], "subset": rec["subset"], "seed": seed, "result": "crash",
                          "detail": f"worker exit {s.proc.exitcode}"})
                    s.kill()
                    s.start()
                    continue
                s.job = None
            elif not s.proc.is_alive():
                done({"id": rec["id"], "subset": rec["subset"], "seed": seed, "result": "crash",
                      "detail": f"worker exit {s.proc.exitcode}"})
                s.start()
            elif time.monotonic() - s.t0 > timeout:
                done({"id": rec["id"], "subset": rec["subset"], "seed": seed, "result": "hang",
                      "detail": f"killed after {timeout}s wall"})
                s.kill()
                s.start()
    for s in slots:
        s.conn.send(None)
        s.proc.join(5)
    return results


def summarise(results: list[dict]) -> dict:
    """Counts by outcome; dead ends and invalid records told apart from other failures."""
    def kind(r: dict) -> str:
        if r["result"] != "failure":
            return r["result"]
        d = r.get("detail") or ""
        if "dead end" in d or "no token allowed" in d:
            return "dead_end"
        if "fails jsonschema" in d or "fails the spec" in d:
            return "invalid"
        if "but not xgrammar" in d:
            return "outside_xgrammar"
        return "crash"
    counts: dict[str, int] = {}
    for r in results:
        counts[kind(r)] = counts.get(kind(r), 0) + 1
    walked = [r for r in results if r["result"] == "passed"]
    return {
        "cases": len(results),
        "schemas": len({(r["subset"], r["id"]) for r in results}),
        "outcomes": counts,
        "walks": sum(1 + ("edge_steps" in r) for r in walked),
        "finished": sum(bool(r.get("finished")) + bool(r.get("edge_finished")) for r in walked),
        "failures": [{k: r.get(k) for k in ("subset", "id", "seed", "result", "detail")}
                     for r in results if r["result"] not in ("passed", "spec_error")],
        "slowest": sorted(({"case": f"{r['subset']}/{r['id']}#{r['seed']}", "s": r.get("wall_s")}
                           for r in results if r.get("wall_s") is not None),
                          key=lambda x: -x["s"])[:15],
    }


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m microbench jsonschemabench_walks", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ids-file", type=Path)
    ap.add_argument("--newly", type=Path, nargs=2, metavar=("BEFORE", "AFTER"))
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--cap", type=int, default=200, help="step cap of the xgrammar-checked walk")
    ap.add_argument("--xgrammar-steps", type=int, default=0,
                    help="steps whose mask must be a subset of xgrammar's (0: validator only; xgrammar "
                         "reads oneOf as anyOf and drops sibling properties, so it differs on many)")
    ap.add_argument("--no-edge", action="store_true", help="skip the longest-token walk")
    ap.add_argument("--timeout", type=float, default=120.0, help="wall seconds per (schema, seed)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, required=True, help="JSON lines, one per case")
    ap.add_argument("--json", type=Path, help="summary")
    a = ap.parse_args(argv)
    if a.ids_file:
        ids = read_ids(a.ids_file)
    elif a.newly:
        ids = newly_compiled(*a.newly)
    else:
        ap.error("--ids-file or --newly")
    from tests.graph import test_jsonschemabench as jsb
    by = {f"{r['subset']}/{r['id']}": r for r in jsb.load_all()}
    missing = [i for i in ids if i not in by]
    if missing:
        print(f"not in the corpus: {missing[:5]} ({len(missing)})", file=sys.stderr)
        return 2
    cases = [(by[i], s) for i in ids for s in range(a.seeds)]
    load0, t0 = os.getloadavg(), time.time()
    with a.out.open("w") as out:
        results = run(cases, a.workers, a.timeout, a.cap, not a.no_edge, a.xgrammar_steps, out)
    summ = summarise(results)
    summ.update(args={k: str(v) for k, v in vars(a).items()}, seconds=round(time.time() - t0, 1),
                load_start=" ".join(f"{x:.2f}" for x in load0),
                load_end=" ".join(f"{x:.2f}" for x in os.getloadavg()),
                started_utc=time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t0)))
    text = json.dumps(summ, indent=1)
    if a.json:
        a.json.write_text(text + "\n")
    print(json.dumps({k: summ[k] for k in ("cases", "schemas", "outcomes", "walks", "finished", "seconds")}))
    return 0 if set(summ["outcomes"]) <= {"passed", "spec_error"} else 1


if __name__ == "__main__":
    sys.exit(main())
