"""A stuck API does not outlive its stop: SIGTERM on a real uvicorn API with deep recalls stuck (blocks computing
forever under a long block limit, a model that takes its time) ends them at once: each answers "timeout" and is
audited, the API exits within seconds, and its sandbox workers are gone (none left running or defunct)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import psutil
from conftest import ROOT, wait_until
from test_stack_up import _free_port

from tests.deep_recall_support import ROOT as ROOT_MODEL
from tests.deep_recall_support import code

STUCK = 3


def _sandbox_workers(api: subprocess.Popen[bytes]) -> list[psutil.Process]:
    try:
        children = psutil.Process(api.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    found = []
    for child in children:
        try:
            if "monty" in " ".join(child.cmdline()) or child.name() == "monty":
                found.append(child)
        except psutil.Error:
            continue
    return found


def _gone(proc: psutil.Process) -> bool:
    try:
        return proc.status() == psutil.STATUS_ZOMBIE and not psutil.pid_exists(proc.ppid()) or not proc.is_running()
    except psutil.NoSuchProcess:
        return True


def test_sigterm_ends_stuck_deep_recalls_and_the_api_exits_reaping_its_workers(models, tmp_path: Path) -> None:
    models.reset()
    models.script(ROOT_MODEL, *[code("n = 0", "while True:", "    n += 1")] * (STUCK - 1))

    def slow(_messages: list[dict[str, Any]]) -> str:
        time.sleep(20)  # the model takes its time: the stop must not wait for it
        return "FINAL: too late"

    models.script(ROOT_MODEL, slow)
    port = _free_port()
    env = {**os.environ, "ENGRAMLOG_LLM_MODEL": ROOT_MODEL, "ENGRAMLOG_LLM_BASE_URL": models.url,
           "ENGRAMLOG_DEEP_SHORTCUT_HITS": "1000", "ENGRAMLOG_DEEP_BLOCK_TIMEOUT_S": "300",
           "ENGRAMLOG_DEEP_TIMEOUT_S": "600", "ENGRAMLOG_DEEP_TENANT_CONCURRENT": str(STUCK)}
    log = open(tmp_path / "api.log", "wb")  # noqa: SIM115 - closed below
    api = subprocess.Popen([sys.executable, "-m", "uvicorn", "api.main:app", "--host", "127.0.0.1", "--port",
                            str(port), "--log-level", "warning"], cwd=ROOT, env=env, stdout=log,
                           stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    answers: list[httpx.Response | Exception] = []

    def ask(i: int) -> None:
        try:
            answers.append(httpx.post(f"{url}/v1/deep_recall", json={"question": f"stuck {i}"}, timeout=120))
        except Exception as exc:  # recorded: the assertion below names it
            answers.append(exc)

    try:
        assert wait_until(lambda: _up(url) or api.poll() is not None, timeout=120), "the API did not start"
        assert api.poll() is None, (tmp_path / "api.log").read_text()[-3000:]
        askers = [threading.Thread(target=ask, args=(i,), daemon=True) for i in range(STUCK)]
        for t in askers:
            t.start()
        # Stuck: two blocks computing forever, one model call waiting.
        assert wait_until(lambda: len(models.of(ROOT_MODEL)) == STUCK, timeout=60)
        assert wait_until(lambda: len(_sandbox_workers(api)) >= STUCK - 1, timeout=30)
        time.sleep(1.0)
        workers = _sandbox_workers(api)
        stopped_at = time.monotonic()
        api.send_signal(signal.SIGTERM)
        api.wait(30)
        took = time.monotonic() - stopped_at
        for t in askers:
            t.join(30)
    finally:
        if api.poll() is None:
            api.kill()
            api.wait()
        log.close()
    print(f"SIGTERM to exit: {took:.2f} s with {STUCK} stuck deep recalls")
    assert took < 15, took
    assert len(answers) == STUCK
    for answer in answers:
        assert isinstance(answer, httpx.Response) and answer.status_code == 200, (answer, getattr(answer, "text", ""))
        assert answer.json()["stopped"] == "timeout", answer.json()
    assert wait_until(lambda: all(_gone(w) for w in workers), timeout=10), [(w.pid, w.status()) for w in workers
                                                                             if not _gone(w)]


def _up(url: str) -> bool:
    try:
        return httpx.get(f"{url}/v1/projections", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False
