"""FactorSpec mask time per token on a seeded JSONSchemaBench sample, this checkout against a
reference checkout, side by side in one run (issue #12).

    python -m microbench mask_sample [--sample 150 --seed 0] [--cap 300] [--ref DIR]
        [--profile OUT.pstats] [--json OUT] [--md OUT]

The schemas, walk seeds, token pick and caps are `microbench.jsonschemabench`'s (`select`, `pick`,
`guarded`, Qwen's tokenizer): each schema FactorSpec compiles gets one seeded random walk over
FactorSpec's own mask (`Matcher.fill_next_token_bitmask` into an int32 row), every mask call timed
in thread CPU time and wall time; the first call on a fresh TextMachine is the first-mask time.

With --ref DIR (a checkout of an earlier commit, e.g. `git archive BASE | tar -x -C DIR`), two
worker processes run side by side, one importing `factorspec` from DIR and one from this checkout,
and the driver hands them the schemas alternately (schema i to the reference, then to this code),
so load changes touch both alike. Each worker hashes every mask row it computed: the run reports
on how many schemas the two produced the same rows (identical masks make identical walks).

Each position is labelled by what the mask had to do: `forced` (one forced token), `end`, or the
kinds of the configurations' top tasks (e.g. `T esc0 pend0` inside a string body, `K esc0` a
patterned key, `S+` inside a number or enum text), so the tail can be read by kind.

With --engines a third worker (this checkout's environment) replays each walk of this checkout on
xgrammar and llguidance (`jsonschemabench.Engines`: the same tokenizer, separators and compile
options): each compiles the schema, then its mask call is timed at every position of the same
token sequence until a token one of them rejects, so the three are compared on the same prefixes.

--profile OUT runs this checkout alone under cProfile (mask calls only) and writes the stats.
"""
from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Optional

import numpy as np

REPO = Path(__file__).resolve().parents[1]


# -- worker ----------------------------------------------------------------------------------------
def label(m: Any) -> str:
    """What the mask at this position had to do (read off the matcher after the call)."""
    if m.terminated:
        return "end"
    if m.plan:
        return "forced"
    kinds = set()
    for stack, _sol in m.configs:
        if not stack:
            kinds.add("final")
            continue
        top = stack[-1]
        k = top[0]
        if k == "T":
            kinds.add(f"T esc{top[3]} pend{top[4]}")
        elif k in ("R", "K"):
            kinds.add(f"{k} esc{top[4]}")
        elif k == "S":
            kinds.add("S+" if top[2] else "S")
        elif k == "L":
            kinds.add("L " + chr(top[1][0]))
        else:
            kinds.add(k)
    return " | ".join(sorted(kinds))


def _fs_engine(tokenizer: str) -> Any:
    """`jsonschemabench.Engines` for FactorSpec alone (no xgrammar or llguidance objects)."""
    from factorspec.models import load_tokenizer
    from factorspec.models.hf_vocab import vocab_for
    from microbench import jsonschemabench as jb

    eng = jb.Engines.__new__(jb.Engines)
    eng.tokenizer_name = tokenizer
    eng.tok = load_tokenizer(tokenizer)
    eng.v = vocab_for(eng.tok)
    eng.stop = set(eng.v.stop_ids)
    eng.words = eng.v.words
    eng.structural = np.asarray(eng.v.plain_len <= 0)
    return eng


def walk_one(eng: Any, rec: dict, seed: int, cap: int, prof: Any = None, walk_seconds: Optional[float] = None,
             longest: float = 0.0) -> dict:
    """Compile one schema and walk it, timing every mask call (the walk cut at `walk_seconds`,
    default `jsonschemabench.WALK_SECONDS`); with probability `longest` a step takes one of the
    longest allowed tokens (long strings and numbers, as the CI test's edge walk)."""
    from microbench import jsonschemabench as jb

    r: dict = {"id": rec["id"], "subset": rec["subset"]}
    t0 = time.perf_counter()
    try:
        handle = jb.guarded(jb.COMPILE_SECONDS, lambda: eng.compile("factorspec", rec["schema"]))
        r["compile"] = "ok"
    except jb._Timeout:
        r["compile"] = "timeout"
    except Exception as e:  # noqa: BLE001 - refusals are recorded, not timed
        r["compile"] = jb.error_class("factorspec", e)
    r["compile_ms"] = round(1e3 * (time.perf_counter() - t0), 2)
    if r["compile"] != "ok":
        return r
    rng = random.Random(seed)
    m = eng.matcher("factorspec", handle)
    cpu: list[float] = []
    wall: list[float] = []
    labels: list[str] = []
    tokens: list[int] = []
    digest = hashlib.sha1()
    r["outcome"] = "cap"

    def go() -> None:
        while len(cpu) < cap:
            if prof is not None:
                prof.enable()
            c0, w0 = time.thread_time(), time.perf_counter()
            row = m.mask()
            w1, c1 = time.perf_counter(), time.thread_time()
            if prof is not None:
                prof.disable()
            cpu.append(c1 - c0)
            wall.append(w1 - w0)
            labels.append(label(m.m))
            digest.update(row.tobytes())
            ids = jb.unpack(row, eng.v.vocab_size)
            if not len(ids):
                r["outcome"] = "dead end"
                return
            t = _longest(rng, eng, ids) if longest and rng.random() < longest else jb.pick(rng, eng, ids)
            tokens.append(t)
            if not m.accept(t):
                r["outcome"] = "reject"
                return
            if m.done():
                r["outcome"] = "finished"
                return

    try:
        jb.guarded(walk_seconds or jb.WALK_SECONDS, go)
    except jb._Timeout:
        r["outcome"] = "timeout"
    r.update(cpu=cpu, wall=wall, labels=labels, tokens=tokens, masks_sha1=digest.hexdigest())
    return r


def _longest(rng: random.Random, eng: Any, ids: np.ndarray) -> int:
    """One of the longest allowed tokens (seeded)."""
    lens = getattr(eng, "token_lens", None)
    if lens is None:
        lens = eng.token_lens = np.array([len(b) for b in eng.v.token_bytes]
                                         + [0] * (eng.v.vocab_size - len(eng.v.token_bytes)))
    ln = lens[ids]
    top = ids[ln == ln.max()]
    return int(top[rng.randrange(len(top))])


def replay_engines(eng: Any, rec: dict, tokens: list[int]) -> dict:
    """xgrammar and llguidance on FactorSpec's walk: compile each, then at every position of the
    token sequence time its mask call (wall) and accept the token; an engine that rejects a token
    stops there (its language differs on that prefix)."""
    from microbench import jsonschemabench as jb

    r: dict = {"id": rec["id"], "engines": {}}
    for k in ("xgrammar", "llguidance"):
        t0 = time.perf_counter()
        try:
            handle = eng.compile(k, rec["schema"])
        except Exception as e:  # noqa: BLE001 - refusals are recorded, not timed
            r["engines"][k] = {"compile": jb.error_class(k, e)}
            continue
        out: dict = {"compile": "ok", "compile_ms": round(1e3 * (time.perf_counter() - t0), 2), "wall": [],
                     "cpu": [], "outcome": "same walk"}
        m = eng.matcher(k, handle)
        for t in tokens:
            c0, w0 = time.thread_time(), time.perf_counter()
            m.mask()
            w1, c1 = time.perf_counter(), time.thread_time()
            out["wall"].append(w1 - w0)
            out["cpu"].append(c1 - c0)
            if not m.accept(t):
                out["outcome"] = "rejected a token"
                break
        r["engines"][k] = out
    return r


def engines_worker(args: argparse.Namespace) -> int:
    """Read 'index tokens...' lines from stdin, answer one JSON line each ('quit' ends)."""
    from microbench import jsonschemabench as jb

    eng = jb.Engines(args.tokenizer)
    recs = records(args)
    print(json.dumps({"ready": len(recs)}), flush=True)
    for line in sys.stdin:
        if line.strip() == "quit":
            break
        n, *toks = (int(x) for x in line.split())
        print(json.dumps(replay_engines(eng, recs[n], toks)), flush=True)
    return 0


def records(args: argparse.Namespace) -> list[dict]:
    """The schemas of this run: the ones `--ids-file` names (`Subset/id`, one a line, in that
    order), else the seeded sample."""
    from microbench import jsonschemabench as jb

    recs = jb.load_corpus(Path(args.data) if args.data else jb.default_data_dir())
    if not args.ids_file:
        return jb.select(recs, args.sample, args.seed)
    by = {f"{r['subset']}/{r['id']}": r for r in recs}
    # (not `jsonschemabench.read_ids`: with --ref this runs against the reference checkout's
    # harness, which may predate it)
    ids = [ln.strip() for ln in Path(args.ids_file).read_text(encoding="utf-8").splitlines() if ln.strip()]
    missing = [i for i in ids if i not in by]
    if missing:
        raise SystemExit(f"not in the corpus: {missing[:5]}")
    return [by[i] for i in ids]


def worker(args: argparse.Namespace) -> int:
    """Read schema indices from stdin, answer one JSON line each ('quit' ends)."""

    eng = _fs_engine(args.tokenizer)
    recs = records(args)
    print(json.dumps({"ready": len(recs)}), flush=True)
    for line in sys.stdin:
        if line.strip() == "quit":
            break
        n = int(line)
        r = walk_one(eng, recs[n], args.seed * 1_000_003 + n, args.cap, walk_seconds=args.walk_seconds,
                     longest=args.longest)
        print(json.dumps(r), flush=True)
    return 0


# -- driver ----------------------------------------------------------------------------------------
class Worker:
    """A worker process importing factorspec from `root` first."""

    def __init__(self, root: Path, args: argparse.Namespace, mode: str = "--worker") -> None:
        env = dict(os.environ, PYTHONPATH=f"{root}{os.pathsep}{REPO}")
        cmd = [sys.executable, str(Path(__file__).resolve()), mode, "--sample", str(args.sample),
               "--seed", str(args.seed), "--cap", str(args.cap), "--tokenizer", args.tokenizer]
        if args.ids_file:
            cmd += ["--ids-file", str(Path(args.ids_file).resolve())]
        if args.walk_seconds:
            cmd += ["--walk-seconds", str(args.walk_seconds)]
        if args.longest:
            cmd += ["--longest", str(args.longest)]
        if args.data:
            cmd += ["--data", args.data]
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=root)
        self.ready = self._read()["ready"]

    def _read(self) -> dict:
        assert self.p.stdout is not None
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError(f"worker exited with {self.p.wait()}")
        return json.loads(line)

    def run(self, n: int, tokens: tuple = ()) -> dict:
        assert self.p.stdin is not None
        self.p.stdin.write(" ".join(map(str, (n, *tokens))) + "\n")
        self.p.stdin.flush()
        return self._read()

    def close(self) -> None:
        assert self.p.stdin is not None
        self.p.stdin.write("quit\n")
        self.p.stdin.close()
        self.p.wait()


def _commit(root: Path) -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=root,
                             timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "factorspec"], capture_output=True, text=True,
                               cwd=root, timeout=10).stdout.strip()
        return out + (" (factorspec/ modified)" if dirty else "") if out else "?"
    except Exception:  # noqa: BLE001
        return "?"


def stats(xs: list[float]) -> dict:
    """Percentiles in microseconds."""
    if not xs:
        return {"n": 0}
    a = np.asarray(xs, dtype=float) * 1e6
    return {"n": int(a.size), **{f"p{q}": round(float(np.percentile(a, q)), 1) for q in (50, 90, 99)},
            "max": round(float(a.max()), 1), "mean": round(float(a.mean()), 1),
            "total_s": round(float(a.sum()) / 1e6, 2)}


def summarize(results: list[dict]) -> dict:
    walked = [r for r in results if r.get("compile") == "ok"]
    cpu = [t for r in walked for t in r["cpu"]]
    wall = [t for r in walked for t in r["wall"]]
    by: dict[str, list[float]] = collections.defaultdict(list)
    for r in walked:
        for t, lab in zip(r["cpu"], r["labels"]):
            by[lab].append(t)
    cut = float(np.percentile(cpu, 99)) if cpu else 0.0
    tail = collections.Counter(lab for r in walked for t, lab in zip(r["cpu"], r["labels"]) if t >= cut)
    kinds = sorted(by.items(), key=lambda kv: -sum(kv[1]))[:14]
    return {"compiled": len(walked), "outcomes": dict(collections.Counter(r["outcome"] for r in walked)),
            "cpu_us": stats(cpu), "wall_us": stats(wall),
            "first_cpu_us": stats([r["cpu"][0] for r in walked if r["cpu"]]),
            "first_wall_us": stats([r["wall"][0] for r in walked if r["wall"]]),
            "by_kind_cpu_us": {k: stats(v) for k, v in kinds}, "tail_p99_kinds": dict(tail.most_common(10))}


def per_schema(results: dict[str, list[dict]]) -> list[dict]:
    """Each schema's walk under each version: outcome, positions, mask CPU total and percentiles
    (us), and whether the rows were identical (with a reference)."""
    out = []
    vs = list(results)
    for rs in zip(*results.values()):
        row: dict = {"schema": f"{rs[0]['subset']}/{rs[0]['id']}"}
        for v, r in zip(vs, rs):
            row[v] = {"outcome": r.get("outcome", r.get("compile"))} | (
                {k: stats(r["cpu"]).get(k) for k in ("n", "p50", "p99", "max", "total_s")} if r.get("cpu") else {})
        if len(rs) == 2 and all(r.get("masks_sha1") for r in rs):
            row["same_masks"] = rs[0]["masks_sha1"] == rs[1]["masks_sha1"]
        out.append(row)
    return out


def engines_summary(replays: list[dict]) -> dict:
    """Mask times on the schemas all three compile, over the positions each engine followed
    FactorSpec's walk (its own figures beside FactorSpec's on the same positions)."""
    both = [r for r in replays if all(r["engines"][k].get("compile") == "ok" for k in ("xgrammar", "llguidance"))]
    out: dict = {"schemas": len(both), "compiled": {k: sum(1 for r in replays if r["engines"][k].get("compile") == "ok")
                                                     for k in ("xgrammar", "llguidance")},
                 "walked_to_end": {k: sum(1 for r in both if r["engines"][k]["outcome"] == "same walk")
                                   for k in ("xgrammar", "llguidance")}}
    n = [min(len(r["engines"][x]["cpu"]) for x in ("xgrammar", "llguidance")) for r in both]
    out["factorspec"] = {"cpu_us": stats([t for r, m in zip(both, n) for t in r["fs"]["cpu"][:m]]),
                         "wall_us": stats([t for r, m in zip(both, n) for t in r["fs"]["wall"][:m]])}
    for k in ("xgrammar", "llguidance"):
        out[k] = {"cpu_us": stats([t for r, m in zip(both, n) for t in r["engines"][k]["cpu"][:m]]),
                  "wall_us": stats([t for r, m in zip(both, n) for t in r["engines"][k]["wall"][:m]]),
                  "first_wall_us": stats([r["engines"][k]["wall"][0] for r in both if r["engines"][k]["wall"]])}
    out["factorspec"]["first_wall_us"] = stats([r["fs"]["wall"][0] for r in both if r["fs"]["wall"]])
    return out


def _cell(s: dict, k: str) -> str:
    x = s.get(k)
    return "" if x is None else f"{x:,.0f}" if x >= 100 else f"{x:,.1f}"


def to_markdown(res: dict) -> str:
    a = res["args"]
    title = "reference vs this checkout" if "reference" in res["versions"] else "this checkout"
    L = [f"# FactorSpec mask time per token, JSONSchemaBench sample: {title}", "",
         f"Command: `{res['command']}`", "",
         f"Run {res['started_utc']} to {res['finished_utc']} UTC ({res['seconds']:.0f} s); load average (1/5/15 min) "
         f"at start {res['load_start']}, at end {res['load_end']}; 2 cores shared with other jobs. Tokenizer "
         f"{a['tokenizer']}; sample {a['sample']} of the corpus, seed {a['seed']}, walks capped at {a['cap']} tokens "
         "(microbench/jsonschemabench.py's selection, seeds and token pick, FactorSpec's own mask).", ""]
    vs = list(res["versions"])
    L += ["| version | commit | compiled | positions | outcomes |", "|---|---|---:|---:|---|"]
    for v in vs:
        s = res["versions"][v]
        L.append(f"| {v} | {res['commits'][v]} | {s['compiled']} | {s['cpu_us']['n']:,} | "
                 + ", ".join(f"{k} {n}" for k, n in sorted(s["outcomes"].items())) + " |")
    if "identical" in res:
        d = res["identical"]
        L += ["", f"Mask rows identical (SHA-1 of every row of the walk) on {d['same']} of {d['compared']} walked "
                  f"schemas" + (f"; differing: {', '.join(d['differ'][:20])}" if d["differ"] else "") + "."]
    for unit, key, fkey in (("thread CPU", "cpu_us", "first_cpu_us"), ("wall", "wall_us", "first_wall_us")):
        L += ["", f"## Mask time per token, {unit} (us)", "",
              "| version | p50 | p90 | p99 | max | mean | total s | first mask p50 | first mask p99 | first mask max |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for v in vs:
            s, f = res["versions"][v][key], res["versions"][v][fkey]
            L.append(f"| {v} | " + " | ".join(_cell(s, k) for k in ("p50", "p90", "p99", "max", "mean", "total_s"))
                     + " | " + " | ".join(_cell(f, k) for k in ("p50", "p99", "max")) + " |")
    for v in vs:
        s = res["versions"][v]
        L += ["", f"## {v}: thread CPU by position kind (us; the 14 kinds with the most total time)", "",
              "| kind | positions | p50 | p90 | p99 | max | total s |", "|---|---:|---:|---:|---:|---:|---:|"]
        for k, st in s["by_kind_cpu_us"].items():
            L.append(f"| `{k}` | {st['n']:,} | " + " | ".join(_cell(st, q) for q in ("p50", "p90", "p99", "max",
                                                                                      "total_s")) + " |")
        L += ["", "Kinds of the positions at or above p99: "
              + ", ".join(f"`{k}` {n}" for k, n in s["tail_p99_kinds"].items()) + "."]
    if res.get("per_schema"):
        L += ["", "## Per schema: mask thread CPU (us) and total (s)", "",
              "| schema | " + " | ".join(f"{v} positions | {v} p50 | {v} p99 | {v} max | {v} total s" for v in vs)
              + " | same masks |", "|---|" + "---:|" * (5 * len(vs)) + "---|"]
        for row in res["per_schema"]:
            L.append(f"| {row['schema']} | " + " | ".join(
                " | ".join(_cell(row[v], k) if k != "n" else str(row[v].get("n", row[v]["outcome"]))
                           for k in ("n", "p50", "p99", "max", "total_s")) for v in vs)
                + f" | {row.get('same_masks', '')} |")
    e = res.get("engines")
    if e:
        L += ["", "## Beside xgrammar and llguidance (same run, FactorSpec's walk replayed)", "",
              f"On the {e['schemas']} walked schemas that xgrammar ({e['compiled']['xgrammar']}) and llguidance "
              f"({e['compiled']['llguidance']}) compile too, each engine's mask call is timed at every position of "
              "this checkout's walk up to the first token one of them rejects (walks followed to the end: "
              + ", ".join(f"{k} {n}" for k, n in e["walked_to_end"].items()) + "); FactorSpec's figures are this "
              "checkout's on the same positions. Wall and thread CPU, us:", "",
              "| engine | positions | CPU p50 | CPU p90 | CPU p99 | CPU max | wall p50 | wall p90 | wall p99 "
              "| wall max | first mask wall p50 | first mask wall max |", "|---|---:|" + "---:|" * 10]
        for k in ("factorspec", "xgrammar", "llguidance"):
            c, w, f = e[k]["cpu_us"], e[k]["wall_us"], e[k]["first_wall_us"]
            L.append(f"| {k} | {c.get('n', 0):,} | " + " | ".join(_cell(c, q) for q in ("p50", "p90", "p99", "max"))
                     + " | " + " | ".join(_cell(w, q) for q in ("p50", "p90", "p99", "max")) + " | "
                     + " | ".join(_cell(f, q) for q in ("p50", "max")) + " |")
    L += ["", "## Method", "", __doc__.split("\n\n", 2)[2].strip(), ""]
    return "\n".join(L)


def drive(args: argparse.Namespace) -> dict:
    from microbench import jsonschemabench as jb

    load_start = " ".join(f"{x:.2f}" for x in os.getloadavg())
    started, t0 = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()), time.time()
    roots = {"reference": Path(args.ref).resolve(), "this checkout": REPO} if args.ref else {"this checkout": REPO}
    workers = {k: Worker(root, args) for k, root in roots.items()}
    n = next(iter(workers.values())).ready
    results: dict[str, list[dict]] = {k: [] for k in workers}
    others = Worker(REPO, args, "--engines-worker") if args.engines else None
    replays: list[dict] = []
    try:
        for i in range(n):
            for k, w in workers.items():
                results[k].append(w.run(i))
            mine = results["this checkout"][-1]
            if others is not None and mine.get("compile") == "ok" and mine["outcome"] != "timeout":
                replays.append(others.run(i, tuple(mine["tokens"])) | {"fs": mine})
            if args.progress and (i + 1) % args.progress == 0:
                print(f"{i + 1}/{n} {time.time() - t0:.0f}s load {os.getloadavg()[0]:.2f}", file=sys.stderr, flush=True)
    finally:
        for w in [*workers.values(), *([others] if others is not None else [])]:
            w.close()
    for rs in results.values():
        for r in rs:
            r.pop("tokens", None)
    res: dict = {"command": "python -m microbench mask_sample " + " ".join(args.argv),
                 "args": vars(args) | {"argv": None},
                 "started_utc": started, "finished_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
                 "seconds": round(time.time() - t0, 1), "load_start": load_start,
                 "load_end": " ".join(f"{x:.2f}" for x in os.getloadavg()),
                 "commits": {k: args.ref_commit if k == "reference" and args.ref_commit else _commit(root)
                             for k, root in roots.items()},
                 "versions": {k: summarize(rs) for k, rs in results.items()}}
    if others is not None:
        res["engines"] = engines_summary(replays)
    if args.ref:
        a, b = results["reference"], results["this checkout"]
        both = [(x, y) for x, y in zip(a, b) if x.get("compile") == "ok" and y.get("compile") == "ok"
                and x["outcome"] != "timeout" and y["outcome"] != "timeout"]
        differ = [f"{x['subset']}/{x['id']}" for x, y in both if x["masks_sha1"] != y["masks_sha1"]]
        res["identical"] = {"compared": len(both), "same": len(both) - len(differ), "differ": differ,
                            "not_compared": [f"{x['subset']}/{x['id']}" for x, y in zip(a, b) if (x, y) not in both]}
    if args.ids_file:
        res["per_schema"] = per_schema(results)
    del jb
    return res


def profile(args: argparse.Namespace) -> None:
    """This checkout alone, mask calls under cProfile; prints the top functions."""
    import cProfile
    import pstats


    eng = _fs_engine(args.tokenizer)
    recs = records(args)
    prof = cProfile.Profile()
    results = [walk_one(eng, rec, args.seed * 1_000_003 + n, args.cap, prof, args.walk_seconds, args.longest)
               for n, rec in enumerate(recs)]
    prof.dump_stats(args.profile)
    print(json.dumps(summarize(results), indent=1))
    pstats.Stats(args.profile).sort_stats("tottime").print_stats(30)


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    from microbench import jsonschemabench as jb

    ap = argparse.ArgumentParser(prog="python -m microbench mask_sample", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=None, help="directory of *.jsonl (default: shared data jsonschemabench/)")
    ap.add_argument("--sample", type=int, default=150)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cap", type=int, default=jb.STEP_CAP)
    ap.add_argument("--tokenizer", default=jb.TOKENIZER)
    ap.add_argument("--ref", default=None, help="a reference checkout to run side by side")
    ap.add_argument("--ref-commit", default=None, help="the reference's commit, when DIR is not a git checkout")
    ap.add_argument("--profile", default=None, help="cProfile this checkout alone, stats to this path")
    ap.add_argument("--json", default="microbench/results/masks_jsonschemabench_sample.json")
    ap.add_argument("--md", default=None)
    ap.add_argument("--ids-file", default=None, help="walk these schemas (`Subset/id` a line) instead of a sample")
    ap.add_argument("--walk-seconds", type=float, default=None,
                    help=f"wall guard per walk (default {jb.WALK_SECONDS}); a walk cut by it is left out of the "
                         "identical-masks comparison")
    ap.add_argument("--longest", type=float, default=0.0,
                    help="share of steps that take one of the longest allowed tokens (default 0)")
    ap.add_argument("--progress", type=int, default=25)
    ap.add_argument("--engines", action="store_true",
                    help="also time xgrammar and llguidance on this checkout's walks (a third worker)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--engines-worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    return args


def main(argv: Optional[list[str]] = None) -> int:
    args = parse_args(argv)
    if args.worker:
        return worker(args)
    if args.engines_worker:
        return engines_worker(args)
    if args.profile:
        profile(args)
        return 0
    res = drive(args)
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    md = to_markdown(res)
    Path(args.md or str(Path(args.json).with_suffix(".md"))).write_text(md, encoding="utf-8")
    print(md)
    differ = res.get("identical", {}).get("differ")
    if differ:
        print(f"MASKS DIFFER on {len(differ)} schemas: {differ}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
