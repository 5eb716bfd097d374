"""Failures inside a deep recall are the model's to read and the audit's to keep, never a 500: a sandbox worker
killed under a session ends its block with an error (the next block runs on a fresh one); a sandbox that cannot be
started is that block's error; a block stopped at its own time limit is not run on again (its session is
dropped); a model reply of an unexpected JSON shape is a ModelError with its reason (stopped "error")."""

from __future__ import annotations

import os
import signal
from typing import Any

import psutil
import pytest

import deep_recall.sandbox as sandbox_module
from tests.deep_recall_support import ROOT, Raw, code, last_user, point_route_at


def _ask(client, question: str) -> dict[str, Any]:
    r = client.post("/v1/deep_recall", json={"question": question})
    assert r.status_code == 200, r.text
    body = r.json()
    record = client.get(f"/v1/recalls/{body['recall_id']}")
    assert record.status_code == 200, record.text
    return {**body, "audit": record.json()["explanation"]["deep_recall"]}


def _kill_sandbox_workers() -> int:
    """SIGKILL this process's sandbox workers (the app runs in-process): a crash under every session."""
    killed = 0
    for child in psutil.Process().children():
        try:
            if "monty" in child.name() or "monty" in " ".join(child.cmdline()):
                os.kill(child.pid, signal.SIGKILL)
                killed += 1
        except psutil.Error:
            continue
    return killed


def test_a_killed_worker_ends_its_block_with_an_audited_error_and_the_next_block_runs(client, models,
                                                                                       monkeypatch) -> None:
    point_route_at(models, monkeypatch)
    killed: list[int] = []

    def crash_then_read(_messages: list[dict[str, Any]]) -> str:
        killed.append(_kill_sandbox_workers())
        return code("print(x + 1)")

    models.script(ROOT, code("x = 41", "print('set')"), crash_then_read, code("print('fresh', 1 + 1)"),
                  "FINAL: recovered")
    body = _ask(client, "survive a crash")
    assert killed and killed[0] >= 1
    assert body["stopped"] == "final" and body["answer"] == "recovered"
    told = last_user(models.of(ROOT)[2]["messages"])
    assert "SandboxCrashed" in told and "variables defined so far are lost" in told
    crashed = body["audit"]["iterations"][1]["blocks"][0]
    assert "SandboxCrashed" in crashed["error"]
    assert "fresh 2" in body["audit"]["iterations"][2]["blocks"][0]["output"]


def test_a_sandbox_that_cannot_start_is_the_blocks_error(client, models, monkeypatch) -> None:
    point_route_at(models, monkeypatch)

    class NoWorkers:
        def checkout(self, **_: Any) -> Any:
            raise TimeoutError("no monty worker free after 5 s")

    monkeypatch.setattr(sandbox_module, "pool", lambda _settings: NoWorkers())
    models.script(ROOT, code("print('never runs')"), "FINAL: told")
    body = _ask(client, "no sandbox at all")
    assert body["stopped"] == "final" and body["answer"] == "told"
    told = last_user(models.of(ROOT)[1]["messages"])
    assert "SandboxCrashed: no sandbox could be started (TimeoutError: no monty worker free after 5 s)" in told
    assert "no sandbox could be started" in body["audit"]["iterations"][0]["blocks"][0]["error"]


def test_a_session_is_not_reused_after_its_block_timed_out(client, models, monkeypatch) -> None:
    point_route_at(models, monkeypatch, deep_block_timeout_s=1.0)
    models.script(ROOT, "```python\nx = 41\n```\n```python\nwhile True:\n    x += 1\n```",
                  code("print(x)"), "FINAL: done")
    body = _ask(client, "time out then read")
    told = last_user(models.of(ROOT)[1]["messages"])
    assert "TimeoutError" in told and "SandboxRestarted" in told
    assert "NameError" in body["audit"]["iterations"][1]["blocks"][0]["error"]  # a fresh session: no half-run x
    assert body["stopped"] == "final"


@pytest.mark.parametrize(("provider", "stream", "reply"), [
    ("openai", False, {"choices": [{"message": ["not", "an", "object"]}]}),
    ("openai", False, {"choices": [{"message": {"content": {"parts": [1]}}}]}),
    ("openai", False, ["a", "list"]),
    ("openai", False, {"choices": "none", "usage": 7}),
    ("openai", True, {"choices": [{"delta": "text"}]}),
    ("openai", True, ["a", "list"]),
    ("anthropic", False, {"content": "text, not blocks"}),
    ("anthropic", False, {"content": [{"type": "text", "text": 12}], "usage": []}),
])
def test_a_model_reply_of_an_unexpected_shape_is_a_model_error(client, models, monkeypatch, provider: str,
                                                               stream: bool, reply: Any) -> None:
    configure = point_route_at(models, monkeypatch, llm_provider=provider, llm_stream=stream)
    if provider == "anthropic":
        configure(llm_base_url=models.url.removesuffix("/v1"))  # it posts to {base}/v1/messages
    models.script(ROOT, Raw(reply))
    body = _ask(client, f"an odd reply {provider} {stream} {reply!r}")
    assert body["stopped"] == "error", body
    assert "model error" in body["reason"] and "unreadable" in body["reason"], body["reason"]
