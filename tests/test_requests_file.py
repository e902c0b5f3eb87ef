"""The requests file of `factorspec run --requests`: the shipped example parses, and every kind of
bad line is a clear error naming the line and the field."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from factorspec.graph import compile_spec
from factorspec.requests_file import RequestsFileError, load_requests

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_example_requests_parse_and_compile():
    reqs = load_requests(str(EXAMPLES / "requests.jsonl"))
    assert [r.id for r in reqs] == ["invoice-acme", "meetings-tuesday", "seating-dinner", "budget-offsite", "trip-europe"]
    names = {Path(r.spec_source).name for r in reqs}
    assert names == {p.name for p in EXAMPLES.glob("*.spec.json")}  # one request for each example spec
    assert any(r.temperature > 0 for r in reqs) and any(r.temperature == 0 for r in reqs)
    assert any(r.messages for r in reqs) and any(r.prompt for r in reqs)
    for r in reqs:
        compile_spec(r.spec)


def _write(tmp_path: Path, lines: list) -> str:
    p = tmp_path / "r.jsonl"
    p.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    return str(p)


SPEC = {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 3}},
        "required": ["a"], "additionalProperties": False}


@pytest.mark.parametrize("line, needle", [
    ("{not json", "not valid JSON"),
    ([1, 2], "must be a JSON object"),
    ({"prompt": "x"}, "missing 'spec'"),
    ({"spec": SPEC}, "exactly one of 'prompt'"),
    ({"spec": SPEC, "prompt": "x", "messages": [{"role": "user", "content": "y"}]}, "exactly one of 'prompt'"),
    ({"spec": SPEC, "prompt": ""}, "'prompt' must be a non-empty string"),
    ({"spec": SPEC, "messages": [{"role": "robot", "content": "y"}]}, "role must be system, user or assistant"),
    ({"spec": SPEC, "messages": []}, "'messages' must be a non-empty list"),
    ({"spec": "nope.json", "prompt": "x"}, "'spec' file not found"),
    ({"spec": 3, "prompt": "x"}, "'spec' must be an object or a path"),
    ({"spec": SPEC, "prompt": "x", "temperature": -0.1}, "'temperature' must be in"),
    ({"spec": SPEC, "prompt": "x", "temperature": "hot"}, "'temperature' must be a number"),
    ({"spec": SPEC, "prompt": "x", "top_p": 0}, "'top_p' must be in (0.0, 1.0]"),
    ({"spec": SPEC, "prompt": "x", "top_k": 2.5}, "'top_k' must be an integer"),
    ({"spec": SPEC, "prompt": "x", "seed": -1}, "'seed' must be >= 0"),
    ({"spec": SPEC, "prompt": "x", "max_tokens": 0}, "'max_tokens' must be >= 1"),
    ({"spec": SPEC, "prompt": "x", "temprature": 1}, "unknown field(s) ['temprature']"),
])
def test_bad_lines_name_line_and_field(tmp_path, line, needle):
    path = _write(tmp_path, [{"id": "ok", "spec": SPEC, "prompt": "fine"}, line])
    with pytest.raises(RequestsFileError) as e:
        load_requests(path)
    assert f"{path}:2: " in str(e.value)
    assert needle in str(e.value)


def test_duplicate_ids_and_empty_file(tmp_path):
    path = _write(tmp_path, [{"id": "a", "spec": SPEC, "prompt": "x"}, {"id": "a", "spec": SPEC, "prompt": "y"}])
    with pytest.raises(RequestsFileError, match="duplicate id 'a' \\(first on line 1\\)"):
        load_requests(path)
    empty = tmp_path / "e.jsonl"
    empty.write_text("\n\n")
    with pytest.raises(RequestsFileError, match="no requests"):
        load_requests(str(empty))
    with pytest.raises(RequestsFileError, match="cannot read"):
        load_requests(str(tmp_path / "missing.jsonl"))
