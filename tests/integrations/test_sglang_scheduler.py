"""SGLang's real scheduler on CPU (``sglang==0.5.23``) with FactorSpec: ``sglang.Engine`` with
``--speculative-algorithm NGRAM`` + ``--grammar-backend factorspec`` + FactorSpec's drafter on
NATURAL PLAN specs with relations, token-identical to the same engine without speculation; and
the HTTP server (``python -m factorspec.integrations.sglang.launch_server --device cpu``) answering
an OpenAI-style ``response_format`` request, a malformed spec with HTTP 400, and /health after it.

Slow (real model, three SGLang engine starts): runs with ``FACTORSPEC_RUN_SLOW=1``. The server
is started first, in its own process, so it boots while the Engine tests run. Skipped, with the
reason, when sglang is not importable (see docs/integrations.md)."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

try:
    from . import sglang_stubs  # type: ignore[no-redef]
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import sglang_stubs  # type: ignore[no-redef]

import sglang_engine_runs  # noqa: E402 - beside this file (sys.path above)

_ok, _why = sglang_stubs.sglang_available()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not _ok, reason=_why or "sglang not importable")]

REPO = Path(__file__).resolve().parents[2]
MODEL = sglang_engine_runs.MODEL
MAX_NEW = sglang_engine_runs.MAX_NEW
SERVER_BOOT_S = 900


def _problems():
    return sglang_engine_runs.scheduler_problems()


@pytest.fixture(scope="module")
def model_dir():
    from factorspec.integrations.vllm.models import hf_model_dir

    return str(hf_model_dir(MODEL))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_DETACH = (
    "import subprocess, sys\n"
    "log = open(sys.argv[1], 'wb')\n"
    "p = subprocess.Popen(sys.argv[2:], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)\n"
    "print(p.pid)\n"
)


def _alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.fixture(scope="module", autouse=True)
def server(model_dir):
    """The HTTP server through FactorSpec's launcher (NGRAM + FactorSpec drafter by default),
    started before the Engine tests and shut down after the module. Detached (its parent exits at
    once): ``Engine.shutdown()`` kills every descendant of this process, which would take a
    server started as our child with it."""
    import signal

    port = _free_port()
    fd, log = tempfile.mkstemp(prefix="factorspec-sglang-server-", suffix=".log")
    os.close(fd)
    cmd = [sys.executable, "-m", "factorspec.integrations.sglang.launch_server", "--device", "cpu",
           "--model-path", model_dir, "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning",
           "--factorspec-draft-tokens", "16"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    out = subprocess.run([sys.executable, "-c", _DETACH, log, *cmd], cwd=str(REPO), env=env, check=True,
                         capture_output=True, text=True, timeout=120)
    pid = int(out.stdout.strip())
    info = {"pid": pid, "url": f"http://127.0.0.1:{port}", "log": log, "t0": time.time()}
    yield info
    if _alive(pid):
        try:
            os.killpg(pid, signal.SIGTERM)
            for _ in range(60):
                if not _alive(pid):
                    break
                time.sleep(1)
            else:
                os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _log_tail(info, n=4000):
    try:
        return Path(info["log"]).read_text(errors="replace")[-n:]
    except OSError:
        return ""


def _http(method, url, body=None, timeout=600):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


@pytest.fixture(scope="module")
def ready_server(server):
    deadline = server["t0"] + SERVER_BOOT_S
    while time.time() < deadline:
        if not _alive(server["pid"]):
            pytest.fail(f"SGLang server exited:\n{_log_tail(server)}", pytrace=False)
        try:
            status, _ = _http("GET", server["url"] + "/health", timeout=5)
            if status == 200:
                server["boot_s"] = time.time() - server["t0"]
                return server
        except (urllib.error.URLError, ConnectionError, OSError):
            pass
        time.sleep(2)
    pytest.fail(f"SGLang server not healthy after {SERVER_BOOT_S} s:\n{_log_tail(server)}", pytrace=False)


def _scheduler_part(run):
    """This module's requests of a shared engine run (sglang_engine_runs)."""
    part = sglang_engine_runs.SCHEDULER
    return {**run, "outs": run["outs"][part], "schemas": run["schemas"][part], "choice": _problems()[0]}


@pytest.fixture(scope="module")
def spec_run():
    return _scheduler_part(sglang_engine_runs.engine_run("fixed"))


@pytest.fixture(scope="module")
def plain_run(spec_run):  # after spec_run: one engine at a time
    return _scheduler_part(sglang_engine_runs.engine_run("none"))


def test_sglang_engine_ngram_factorspec_drafter_records_valid(spec_run):
    from factorspec.graph import compile_spec
    from benchmarks.natural_plan import check_plan

    for k, (out, schema) in enumerate(zip(spec_run["outs"], spec_run["schemas"])):
        rec = json.loads(out["text"])
        assert compile_spec(json.loads(schema)).check(rec) == [], out["text"]
        if k == 0:
            assert check_plan(spec_run["choice"], rec) == [], out["text"]
        meta = out["meta_info"]
        # speculation ran, and FactorSpec's certain drafts were accepted many at a time
        assert meta["finish_reason"]["type"] == "stop"
        assert meta["spec_verify_ct"] >= 1
        assert meta["completion_tokens"] >= 4 * meta["spec_verify_ct"], meta
    print(f"\nsglang engine NGRAM+FactorSpec: start {spec_run['start_s']:.0f} s, 2 records in {spec_run['gen_s']:.1f} s, "
          + ", ".join(f"{o['meta_info']['completion_tokens']} tokens/{o['meta_info']['spec_verify_ct']} verify steps"
                      for o in spec_run["outs"]))


def test_sglang_engine_ngram_token_identical_to_no_speculation(spec_run, plain_run):
    for a, b in zip(spec_run["outs"], plain_run["outs"]):
        assert a["output_ids"] == b["output_ids"]
        assert a["text"] == b["text"]
        assert not b["meta_info"].get("spec_verify_ct")
    print(f"\nsglang engine no speculation: start {plain_run['start_s']:.0f} s, 2 records in {plain_run['gen_s']:.1f} s")


def test_sglang_server_response_format_with_relations(ready_server):
    from factorspec.graph import compile_spec
    from benchmarks.natural_plan import check_plan, json_prompt, to_spec

    choice, _ = _problems()
    spec = to_spec(choice)
    t0 = time.time()
    status, body = _http("POST", ready_server["url"] + "/v1/chat/completions", {
        "model": "default", "messages": [{"role": "user", "content": json_prompt(choice)}],
        "temperature": 0, "max_tokens": MAX_NEW,
        "response_format": {"type": "json_schema", "json_schema": {"name": "trip", "schema": spec}}})
    assert status == 200, body
    rec = json.loads(json.loads(body)["choices"][0]["message"]["content"])
    assert compile_spec(spec).check(rec) == [] and check_plan(choice, rec) == []
    print(f"\nsglang server: healthy after {ready_server['boot_s']:.0f} s, record in {time.time() - t0:.1f} s")


def test_sglang_server_malformed_spec_is_400_and_server_stays_healthy(ready_server):
    choice, _ = _problems()
    from benchmarks.natural_plan import to_spec

    bad = to_spec(choice)
    bad["x-factorspec"]["relations"] = [{"name": "broken", "expr": "itinerary[0].no_such_field == 1 and ("}]
    status, body = _http("POST", ready_server["url"] + "/v1/chat/completions", {
        "model": "default", "messages": [{"role": "user", "content": "x"}], "temperature": 0, "max_tokens": 8,
        "response_format": {"type": "json_schema", "json_schema": {"name": "bad", "schema": bad}}})
    assert status == 400, (status, body)
    assert "FactorSpec" in body
    status, _ = _http("GET", ready_server["url"] + "/health", timeout=60)
    assert status == 200
    status, body = _http("POST", ready_server["url"] + "/generate", {
        "text": "Hello", "sampling_params": {"temperature": 0, "max_new_tokens": 2}})
    assert status == 200, body
