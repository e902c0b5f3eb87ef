"""The SGLang benchmark's aggregation on tiny fake results (no model, no SGLang): summaries, the
NGRAM sweep's choice, the markdown table and issue #15's must-show comparison."""
from __future__ import annotations

import json

from benchmarks import sglang_e2e as e2e


def _rec(tokens: int, verify: int, seconds: float, valid: bool = True) -> dict:
    return {"tokens": tokens, "spec_verify_ct": verify, "forwards": 1 + verify if verify else tokens,
            "seconds": seconds, "valid": valid, "spec_valid": valid}


def _doc(config: str, batch: int, k, records: list[dict], steps=None, load=(1.0, 1.0, 1.0)) -> dict:
    return {"config": config, "model": "fake", "k": k, "batch": batch, "records": records,
            "summary": e2e.summarize(records, steps), "load_before": list(load), "load_after": [2.0, 2.0, 2.0]}


def test_sglang_summary_counts_tokens_forwards_and_constraint_share():
    recs = [_rec(91, 1, 2.0), _rec(51, 2, 4.0, valid=False)]
    steps = [{"bs": 1, "N": 128, "forward_tokens": 92, "seconds": 1.0, "corpus_s": 0.0,
              "factorspec_draft_s": 0.05, "grammar_mask_s": 0.05, "step_s": 2.0},
             {"bs": 2, "N": 128, "forward_tokens": 100, "seconds": 1.0, "corpus_s": 0.0,
              "factorspec_draft_s": 0.1, "grammar_mask_s": 0.0, "step_s": 2.0}]
    s = e2e.summarize(recs, steps)
    assert (s["n"], s["valid"], s["tokens"], s["forwards"], s["verify_steps"]) == (2, 1, 142, 5, 3)
    assert s["tokens_per_verify_step"] == (142 - 2) / 3  # the first token of each record is the prefill's
    assert s["forwards_per_record"] == 2.5 and s["seconds_per_record"] == 3.0
    assert s["valid_records_per_s"] == 1 / 6.0
    assert (s["verify_forward_tokens"], s["verify_forward_slots"]) == (192, 384)
    assert abs(s["constraint_share_of_step"] - 0.2 / 4.0) < 1e-12
    none = e2e.summarize([_rec(90, 0, 30.0)])
    assert none["tokens_per_verify_step"] is None and none["forwards"] == 90


def test_sglang_best_ngram_width_is_fastest_per_record():
    sums = {2: {"n": 2, "seconds_per_record": 5.0, "tokens_per_verify_step": 1.5},
            4: {"n": 2, "seconds_per_record": 4.0, "tokens_per_verify_step": 2.5},
            8: {"n": 2, "seconds_per_record": 4.0, "tokens_per_verify_step": 3.0},
            16: {"n": 0}}
    assert e2e.best_ngram_k(sums) == 8  # tie on seconds: more tokens per verify step
    assert e2e.best_ngram_k({16: {"n": 0}}) is None


def _docs() -> list[dict]:
    fs_steps = [{"bs": 1, "N": 128, "forward_tokens": 92, "seconds": 1.0, "factorspec_draft_s": 0.02,
                 "grammar_mask_s": 0.02, "step_s": 1.0}]
    return [
        _doc("xgrammar", 1, None, [_rec(90, 0, 30.0, valid=False)]),
        _doc("xgrammar_ngram", 1, 2, [_rec(90, 60, 40.0, valid=False)]),
        _doc("xgrammar_ngram", 1, 4, [_rec(91, 30, 35.0, valid=False)]),
        _doc("factorspec_draft", 1, 128, [_rec(91, 1, 3.0)], fs_steps),
        _doc("factorspec_draft_ragged", 1, 128, [_rec(91, 1, 2.5)], fs_steps),
        _doc("factorspec_draft", 8, 128, [_rec(91, 1, 3.0), _rec(91, 1, 3.0, valid=False)], fs_steps),
        _doc("xgrammar_ngram", 8, 4, [_rec(90, 30, 2.0)] * 2),
        _doc("factorspec", 8, None, []),  # no record: left out
    ]


def test_sglang_markdown_table_rows():
    docs = _docs()
    rows = e2e.table_rows(docs)
    assert len(rows) == 7 and all(len(r) == len(e2e.COLUMNS) for r in rows)
    by = {(r[1], r[2], r[3]): r for r in rows}
    r = by[("factorspec_draft_ragged", "1", "128")]
    assert r[5] == "1/1" and r[8] == "90.00" and r[11] == "2.50" and r[13] == "4.0%" and r[14] == "1.0 -> 2.0"
    assert by[("xgrammar", "1", "-")][8] == "-" and by[("xgrammar", "1", "-")][5] == "0/1"
    text = e2e.markdown_table(docs)
    assert text.count("\n") == 1 + len(rows) and text.startswith("| model | config |")


def test_sglang_must_show_compares_factorspec_with_ngram_best_width():
    ms = {(m["model"], m["batch"]): m for m in e2e.must_show(_docs())}
    b1 = ms[("fake", 1)]
    assert b1["ngram_k"] == 4 and b1["factorspec"] == "factorspec_draft_ragged"  # both: fastest per record
    assert b1["tps_ratio"] == 90.0 / 3.0 and b1["all_valid"] and b1["ahead"]
    b8 = ms[("fake", 8)]
    assert not b8["all_valid"] and not b8["ahead"]  # one invalid record; NGRAM's 2.0 s beats 3.0 s
    md = e2e.must_show_markdown(_docs())
    assert "| fake | 1 | factorspec_draft_ragged (128) | 90.00 | 4 | 3.00 | 30.0x | yes | 2.50 vs 35.00 | yes |" in md


def test_sglang_table_command_writes_markdown(tmp_path, capsys):
    files = []
    for i, d in enumerate(_docs()):
        f = tmp_path / f"{i}.json"
        f.write_text(json.dumps(d), encoding="utf-8")
        files.append(str(f))
    out = tmp_path / "table.md"
    assert e2e.main(["table", *files, "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert text == capsys.readouterr().out and "30.0x" in text and "factorspec_draft_ragged" in text


def test_sglang_out_path_names_ngram_width_only():
    assert e2e.out_path("d", "m", "xgrammar_ngram", 8, 4, "sweep-").name == "sweep-m-xgrammar_ngram-k4-b8.json"
    assert e2e.out_path("d", "m", "factorspec_draft", 1, 128).name == "m-factorspec_draft-b1.json"
