"""`engramlog up` as a user runs it: a real foreground process, stopped with SIGINT / SIGTERM."""

from __future__ import annotations

import http.client
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil
import pytest
from conftest import ROOT, wait_until


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _up(data_dir: Path, port: int, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "cli.main", "up", "--data-dir", str(data_dir), "--port", str(port)],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def _seed_models(data_dir: Path) -> None:
    """Hard-link the session's finished ONNX exports into data_dir/models, so the stack under test does not export
    the same model again (exporting is tested in tests/integration/test_embedding_backend.py)."""
    session_models = Path(os.environ["ENGRAMLOG_DATA_DIR"]) / "models"
    for export in session_models.glob("*"):
        if not export.name.startswith(".") and (export / "manifest.json").exists():
            shutil.copytree(export, data_dir / "models" / export.name, copy_function=_link_or_copy)


def _link_or_copy(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:  # another file system
        shutil.copy2(source, target)


def _descendants(proc: subprocess.Popen[bytes]) -> list[psutil.Process]:
    try:
        return psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _stop(proc: subprocess.Popen[bytes], sig: int) -> list[psutil.Process]:
    children = _descendants(proc)
    proc.send_signal(sig)
    proc.wait(60)
    _, alive = psutil.wait_procs(children, timeout=10)
    return alive


def _healthy(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _answers_after_idle(port: int, idle_s: float) -> int | None:
    """Two requests on one connection, idle_s apart (as a client's pool reuses one): the second's status, or None
    when the server closed the connection meanwhile (http.client does not reconnect an open connection)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/healthz")
        assert conn.getresponse().read() and conn.sock is not None
        time.sleep(idle_s)
        try:
            conn.request("GET", "/healthz")
            response = conn.getresponse()
            response.read()
            return response.status
        except (ConnectionError, http.client.HTTPException):
            return None
    finally:
        conn.close()


@pytest.mark.parametrize("services", ["embedded", "urls"])
def test_up_serves_then_stops_everything(tmp_path: Path, services: str) -> None:
    env = {**os.environ}
    if services == "embedded":  # no URLs: the stack starts its own PostgreSQL and Redis in the data dir
        env.pop("DATABASE_URL", None)
        env.pop("REDIS_URL", None)
    port = _free_port()
    data_dir = tmp_path / "stack"
    _seed_models(data_dir)
    proc = _up(data_dir, port, env)
    try:
        assert wait_until(lambda: _healthy(port) or proc.poll() is not None, timeout=120)
        assert _healthy(port), proc.stdout.read().decode()[-3000:] if proc.poll() is not None else "not healthy"
        written = httpx.post(f"http://127.0.0.1:{port}/v1/memories",
                             json={"content": f"the {services} stack remembers herons", "agent_id": services})
        assert written.status_code == 201
        answer = httpx.post(f"http://127.0.0.1:{port}/v1/recall", timeout=30,
                            json={"query": "herons", "agent_id": services, "min_position": written.json()["position"]})
        assert answer.status_code == 200 and answer.json()["results"][0]["content"].endswith("herons")

        if services == "urls":
            # The API keeps an idle connection past httpx's pool expiry (5 s): uvicorn's own 5 s raced a client
            # reusing a connection idle just under it.
            assert _answers_after_idle(port, 6.0) == 200

        second = _up(data_dir, _free_port(), env)
        out, _ = second.communicate(timeout=60)
        assert second.returncode != 0
        assert b"already running" in out
    finally:
        alive = _stop(proc, signal.SIGINT if services == "embedded" else signal.SIGTERM)
    assert proc.returncode is not None
    assert alive == [], f"left behind: {alive}"
    assert not (data_dir / "stack.json").exists()
