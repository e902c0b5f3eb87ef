"""NATURAL PLAN under each solver backend: the solver questions, and decoding without a model.

    python -m microbench.natural_plan_backends solver [--sizes 3,5,10,20,30,50]
    python -m microbench.natural_plan_backends decode [--sizes 3,5,10,20,30,50] [--backends own,auto]

`solver`: the trip-planning rows of microbench/results/solver_backends.{json,md} (issue #13), the
same questions as the other families there (`solver_families.walk_backends`: the root search,
then `feasible_values` of each slot along one decoding walk taking the smallest feasible value,
own / cpsat / auto asked in turn at each slot), pooled over the instances of one city count.

`decode`: token-level decoding with the draft engine (`Matcher.draft`, `factorspec.draft`) and a
scripted model in place of a neural one, under each backend, to show that the default backend
(`auto`) changes nothing the decoder sees: the masks at every position, every draft tree (tokens,
parents, certain flags), the record, the tokens per verify step. Two scripted models:
  * teacher: writes the instance's golden plan (`canonical_text`, the matcher's own tokenization);
  * random: at each position a seeded uniform choice among the tokens the mask allows (a
    different valid record per seed, found by the masks alone).
A verify step is simulated as the engine's greedy verification does it: the model's token at each
position of the draft tree is accepted while it matches a child of the node reached, and the
model's own token after the last match is the step's bonus token. Results:
microbench/results/natural_plan_decode.{json,md}.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

from benchmarks.natural_plan import generate_file, golden_record, parse_instance, to_spec
from factorspec.data import natural_plan_file
from factorspec.errors import BudgetExceeded
from factorspec.graph import Budget, compile_spec
from factorspec.graph.matcher import Matcher

RESULTS = Path(__file__).resolve().parent / "results"
SHARED = (3, 4, 5, 6, 7, 8, 9, 10)
SIZES = (3, 5, 10, 20, 30, 50)
SEED = 0  # of the generated instances (benchmarks.natural_plan.generate)
TOKENIZER = "smollm2-135m"
WIDTH = 64  # draft nodes per verify step (the engine's default max_width)
# shared instances with more than one valid plan (tests/graph/test_natural_plan_core.py): where
# the uniform model's records can differ from the golden plan, decode adds them
MULTI = {10: ("trip_planning_example_1450", "trip_planning_example_1511")}


def instances(size: int, count: int) -> list[tuple[str, Any]]:
    """(source, TripProblem): the shared data's first `count` instances of `size` cities (by id),
    else `count` instances from the seeded generator."""
    if size in SHARED and natural_plan_file().is_file():
        raw = json.loads(natural_plan_file().read_text(encoding="utf-8"))
        got = sorted((parse_instance(i, r) for i, r in raw.items() if r.get("num_cities") == str(size)),
                     key=lambda p: int(p.id.rsplit("_", 1)[1]))
        return [("shared", p) for p in got[:count]]
    return [("generated", parse_instance(i, r)) for i, r in generate_file(size, SEED, count).items()]


# -- solver rows ------------------------------------------------------------------------------------
def solver_rows(sizes: tuple[int, ...], count: int, big_count: int) -> dict[str, dict]:
    """One row per city count: `walk_backends` on each instance, the questions pooled."""
    from microbench import solver_families as F

    def pct(xs: list[float], q: float) -> float:
        xs = sorted(xs)
        return round(xs[min(len(xs) - 1, int(q * len(xs)))] * 1000, 2)

    rows: dict[str, dict] = {}
    for n in sizes:
        got = instances(n, count if n <= 10 else big_count)
        load = [round(x, 2) for x in os.getloadavg()]
        walks = []
        for _, p in got:
            w = F.walk_backends(to_spec(p), 10**6, keep_times=True)
            walks.append(w)
            print(f"{n} cities {p.id}: " + json.dumps({be: {k: v for k, v in w[be].items() if "times" not in k}
                                                       for be in F.BACKENDS}), flush=True)
        row: dict[str, Any] = {"load": load, "instances": [p.id for _, p in got]}
        for be in F.BACKENDS:
            ts = [t for w in walks for t in w[be]["times"]]
            cs = [t for w in walks for t in w[be]["cpu_times"]]
            row[be] = {"questions": len(ts), "p50_ms": pct(ts, 0.5), "p99_ms": pct(ts, 0.99), "max_ms": pct(ts, 1.0),
                       "budget_hits": sum(w[be]["budget_hits"] for w in walks),
                       "cpu_p50_ms": pct(cs, 0.5), "cpu_p99_ms": pct(cs, 0.99)}
        row["answers_agree"] = all(w["answers_agree"] for w in walks)
        row["load_end"] = [round(x, 2) for x in os.getloadavg()]
        src = got[0][0] if got else "none"
        rows[f"NATURAL PLAN {n} cities ({len(got)} {src} instance{'s' if len(got) != 1 else ''})"] = row
    return rows


# -- decoding without a model ---------------------------------------------------------------------
def _vocab() -> Any:
    from factorspec.models import load_tokenizer
    from factorspec.models.hf_vocab import vocab_for

    return vocab_for(load_tokenizer(TOKENIZER))


Model = Callable[[Matcher, int], int]  # (matcher at a position, index of the position) -> token


def teacher(tokens: list[int]) -> Model:
    return lambda m, i: tokens[i]


def uniform(seed: int) -> Model:
    rnd = random.Random(seed)

    def pick(m: Matcher, i: int) -> int:
        ids = sorted(int(t) for t in m.allowed_tokens())
        return ids[rnd.randrange(len(ids))]
    return pick


def decode(m: Matcher, model: Model, width: int = WIDTH, max_tokens: int = 20000) -> dict[str, Any]:
    """Greedy speculative decoding of `model` with the matcher's drafts (see module docstring).
    `mask_trace`: a digest of every mask (the allowed token ids at each position), `draft_trace`
    of every draft tree: two runs that agree on them saw the same masks and drafts throughout.
    (Draft trees can differ where masks agree: branch order follows the solver's witness.)"""
    hm, hd = hashlib.sha256(), hashlib.sha256()
    steps = drafted = certain = accepted = accepted_certain = 0
    out: list[int] = []
    while not m.is_terminated() and len(out) < max_tokens:
        d = m.draft(width)
        hd.update(json.dumps([d.tokens, d.parents, d.certain]).encode())
        drafted += len(d.tokens)
        certain += sum(d.certain)
        steps += 1
        node = -1
        while True:
            allowed = m.allowed_tokens()
            hm.update(allowed.tobytes())
            t = model(m, len(out))
            if not m.accept_token(t):
                raise AssertionError(f"the model's token {t} is not allowed after {len(out)} tokens")
            out.append(t)
            child = next((k for k in range(len(d.tokens)) if d.parents[k] == node and d.tokens[k] == t), None)
            if child is None or m.is_terminated():  # the bonus token (or the stop token) ends the step
                if child is not None:
                    accepted += 1
                    accepted_certain += d.certain[child]
                break
            accepted += 1
            accepted_certain += d.certain[child]
            node = child
    text = bytes(m.text).decode()
    return {"tokens": len(out), "verify_steps": steps, "tokens_per_verify_step": round(len(out) / max(1, steps), 3),
            "drafted": drafted, "drafted_certain": certain, "accepted": accepted, "accepted_certain": accepted_certain,
            "text_sha": hashlib.sha256(text.encode()).hexdigest()[:16],
            "mask_trace": hm.hexdigest()[:16], "draft_trace": hd.hexdigest()[:16],
            "record": json.loads(text) if m.is_terminated() else None}


def decode_instance(problem: Any, vocab: Any, backend: str, seeds: tuple[int, ...], seconds: float) -> dict:
    """Teacher and uniform decodes of one instance under one backend, each on a fresh compile (no
    memo shared between them), with the solver's questions and budget hits counted."""
    spec = to_spec(problem)
    out: dict[str, Any] = {}
    models: list[tuple[str, Optional[int]]] = [("teacher", None)] + [("uniform", s) for s in seeds]
    for name, seed in models:
        cs = compile_spec(spec, budget=Budget(seconds=seconds, backend=backend))
        m = Matcher.for_spec(cs, vocab)
        if seed is None:
            path = Matcher.for_spec(cs, vocab).token_path(cs.canonical_text(golden_record(problem)).encode())
            assert path is not None, problem.id
            model = teacher(path)
        else:
            model = uniform(seed)
        t0, c0 = time.perf_counter(), time.thread_time()
        try:
            r = decode(m, model)
            r["budget_hit"] = False
        except BudgetExceeded as e:
            r = {"budget_hit": True, "error": str(e)}
        r["wall_s"], r["cpu_s"] = round(time.perf_counter() - t0, 3), round(time.thread_time() - c0, 3)
        if r.get("record") is not None:
            r["valid"] = cs.check(r["record"]) == []
            r["golden"] = r["record"] == golden_record(problem)
        out[name if seed is None else f"uniform seed {seed}"] = r
    return out


def decode_main(sizes: tuple[int, ...], count: int, big_count: int, backends: list[str], seeds: tuple[int, ...],
                seconds: float, big_seeds: tuple[int, ...] = (1,), out: str = "") -> None:
    from factorspec.graph.backends import cpsat

    cpsat.available()
    vocab = _vocab()
    doc: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "tokenizer": TOKENIZER,
                           "width": WIDTH, "budget_s": seconds, "backends": backends, "seeds": list(seeds),
                           "load_start": [round(x, 2) for x in os.getloadavg()], "instances": [],
                           "out": out or str(RESULTS / "natural_plan_decode.json")}
    for n in sizes:
        got = instances(n, count if n <= 10 else big_count)
        have = {p.id for _, p in got}
        got += [("shared", p) for _, p in instances(n, 10**6) if p.id in MULTI.get(n, ()) and p.id not in have]
        for source, p in got:
            row: dict[str, Any] = {"id": p.id, "cities": p.n, "source": source,
                                   "load": [round(x, 2) for x in os.getloadavg()]}
            for be in backends:
                row[be] = decode_instance(p, vocab, be, seeds if n <= 10 else big_seeds, seconds)
                for v in row[be].values():  # records are long and their digest is in text_sha
                    v.pop("record", None)
            ref = row[backends[0]]
            row["same"] = all({k: v for k, v in row[be][mdl].items() if k not in ("wall_s", "cpu_s", "draft_trace")}
                              == {k: v for k, v in ref[mdl].items() if k not in ("wall_s", "cpu_s", "draft_trace")}
                              for be in backends[1:] for mdl in ref)
            row["same_drafts"] = all(row[be][mdl].get("draft_trace") == ref[mdl].get("draft_trace")
                                     for be in backends[1:] for mdl in ref)
            doc["instances"].append(row)
            brief = {be: {mdl: {k: r.get(k) for k in ("tokens_per_verify_step", "budget_hit", "wall_s", "cpu_s",
                                                      "mask_trace", "draft_trace")}
                          for mdl, r in row[be].items()} for be in backends}
            print(f"{n} cities {p.id}: same={row['same']} drafts={row['same_drafts']} {json.dumps(brief)}",
                  file=sys.stderr, flush=True)
            _write(doc)  # after each instance: a long run cut short keeps what it measured
    doc["complete"] = True
    _write(doc)


def _write(doc: dict) -> None:
    doc["load_end"] = [round(x, 2) for x in os.getloadavg()]
    out = Path(doc["out"])
    out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    write_decode_md(out.with_suffix(".md"), doc)


def write_decode_md(path: Path, doc: dict) -> None:
    bes = doc["backends"]
    lines = ["# NATURAL PLAN decoding under each solver backend (no model)", "",
             f"`python -m microbench.natural_plan_backends decode` ({doc['date']}); tokenizer {doc['tokenizer']}, "
             f"draft width {doc['width']}, {doc['budget_s']} s budget per solver question. Load average (1, 5, 15 min) "
             f"at start {doc['load_start']}, end {doc['load_end']} (shared 2-core machine; times are wall clock)."
             + ("" if doc.get("complete") else " **Partial: the run was cut before its last instance.**"), "",
             "Per instance and scripted model (teacher: the golden plan; uniform: a seeded uniform choice among the "
             "allowed tokens): tokens / verify steps (tokens per verify step), drafted certain tokens, accepted draft "
             "tokens, budget hits, wall s, per backend. `same`: every mask, draft tree, record and count identical "
             "across backends, draft trees aside (digests of all masks and of all drafts are in the .json as "
             "`mask_trace` and `draft_trace`); `drafts`: every draft tree identical too (branch order follows the "
             "solver's witness, which a backend may find differently).", "",
             "| cities | instance | model | " + " | ".join(bes) + " | same | drafts | load |",
             "|---|---|---|" + "---|" * len(bes) + "---|---|---|"]
    for r in doc["instances"]:
        for mdl in r[bes[0]]:
            cells = []
            for be in bes:
                x = r[be][mdl]
                if x.get("budget_hit"):
                    cells.append(f"budget hit ({x['wall_s']} s)")
                else:
                    cells.append(f"{x['tokens']} / {x['verify_steps']} ({x['tokens_per_verify_step']}), certain "
                                 f"{x['drafted_certain']}, acc {x['accepted']}, valid {x['valid']}, {x['wall_s']} s")
            lines.append(f"| {r['cities']} | {r['id']} | {mdl} | " + " | ".join(cells)
                         + f" | {r['same']} | {r['same_drafts']} | {r['load'][0]} |")
    hits = {be: sum(v.get("budget_hit", False) for r in doc["instances"] for v in r[be].values()) for be in bes}
    lines += ["", f"Budget hits: {hits}. Instances with any difference: "
              f"{[r['id'] for r in doc['instances'] if not r['same']] or 'none'}.", ""]
    path.write_text("\n".join(lines), encoding="utf-8")


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m microbench.natural_plan_backends", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=("solver", "decode"))
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--instances", type=int, default=3, help="instances per shared city count (10 or fewer)")
    ap.add_argument("--generated", type=int, default=1, help="instances per generated city count")
    ap.add_argument("--backends", default="own,auto", help="decode: comma-separated backends, the first the reference")
    ap.add_argument("--seeds", default="1,2", help="decode: seeds of the uniform model, 10 cities or fewer")
    ap.add_argument("--big-seeds", default="1", help="decode: seeds of the uniform model, more than 10 cities")
    ap.add_argument("--out", default="",
                    help="decode: results file (default: microbench/results/natural_plan_decode.json)")
    ap.add_argument("--budget", type=float, default=30.0, help="decode: seconds per solver question")
    args = ap.parse_args(argv)
    sizes = tuple(int(x) for x in args.sizes.split(","))
    if args.what == "solver":
        from microbench import solver_families as F

        F.backends_main(["natplan"], natplan=(sizes, args.instances, args.generated))
    else:
        decode_main(sizes, args.instances, args.generated, args.backends.split(","),
                    tuple(int(s) for s in args.seeds.split(",") if s), args.budget,
                    tuple(int(s) for s in args.big_seeds.split(",") if s), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
