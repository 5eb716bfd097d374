"""Without API keys the API serves this machine only: bind address, peer address and Host header.

The keyless API has no authentication and one tenant, so anything that reaches it reads every memory, the log
and can rebuild. It refuses to start on a non-loopback address (command line and already-bound sockets), refuses
requests from other machines, and refuses a Host that is not a loopback name (a DNS-rebinding page sends its own).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest
from conftest import ROOT
from fastapi.testclient import TestClient

from infra.loopback import (
    ExposedWithoutKeys,
    host_header_is_loopback,
    refuse_exposed_without_keys,
    requested_bind_hosts,
)
from tests.log_support import opened_events

LOOPBACK_HOSTS = ("localhost", "localhost:8000", "127.0.0.1", "127.0.0.1:1234", "[::1]", "[::1]:8000", "LOCALHOST")
OTHER_HOSTS = ("evil.example", "evil.example:8000", "localhost.evil.example", "127.0.0.1.nip.io", "[::2]:80",
               "localhost:80x", "[::1]x", "", "0.0.0.0:8000", "192.168.1.10")


def test_host_header_names():
    assert all(host_header_is_loopback(h) for h in LOOPBACK_HOSTS)
    assert not any(host_header_is_loopback(h) for h in OTHER_HOSTS)
    assert not host_header_is_loopback(None)


def test_requested_bind_hosts_from_the_servers_command_line():
    env: dict[str, str] = {}
    assert requested_bind_hosts(["/x/bin/uvicorn", "api.main:app", "--host", "0.0.0.0"], env) == ["0.0.0.0"]
    assert requested_bind_hosts(["/x/uvicorn/__main__.py", "api.main:app", "--host=::"], env) == ["::"]
    assert requested_bind_hosts(["/x/bin/uvicorn", "api.main:app"], env) == ["127.0.0.1"]
    assert requested_bind_hosts(["/x/bin/uvicorn", "api.main:app"], {"UVICORN_HOST": "0.0.0.0"}) == ["0.0.0.0"]
    assert requested_bind_hosts(["/x/bin/uvicorn", "api.main:app", "--uds", "/tmp/s"], env) == []
    assert requested_bind_hosts(["/x/bin/gunicorn", "-b", "0.0.0.0:8000", "--bind=[::1]:9"], env) == ["0.0.0.0", "::1"]
    assert requested_bind_hosts(["/x/bin/gunicorn", "api.main:app"], {"GUNICORN_CMD_ARGS": "-b :80"}) == [""]
    assert requested_bind_hosts(["/x/bin/pytest"], env) == []


def test_refusal_names_the_address_and_the_way_out():
    refuse_exposed_without_keys(False, ["127.0.0.1", "::1", "localhost"])
    refuse_exposed_without_keys(True, ["0.0.0.0"])
    for exposed in ("0.0.0.0", "::", "", "10.1.2.3"):
        with pytest.raises(ExposedWithoutKeys, match="ENGRAMLOG_API_KEYS"):
            refuse_exposed_without_keys(False, ["127.0.0.1", exposed])


def test_uvicorn_on_all_interfaces_without_keys_refuses_to_start():
    env = {k: v for k, v in os.environ.items() if k != "ENGRAMLOG_API_KEYS"}
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.run([sys.executable, "-m", "uvicorn", "api.main:app", "--host", "0.0.0.0", "--port", str(port)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert "refusing to serve on 0.0.0.0" in proc.stderr + proc.stdout


def test_a_socket_already_bound_to_all_interfaces_fails_start_up():
    from api.app import create_app

    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        s.listen()
        with pytest.raises(ExposedWithoutKeys), TestClient(create_app()):
            pass


def test_up_refuses_a_public_host_without_keys(tmp_path):
    from infra.settings import get_settings, replace
    from stack.up import Stack, StackError

    settings = replace(get_settings(), data_dir=tmp_path, host="0.0.0.0", api_keys={})
    with pytest.raises(StackError, match="ENGRAMLOG_API_KEYS"):
        Stack(settings)
    Stack(replace(settings, api_keys={"k": "t"}))  # with keys it may serve other hosts


def test_other_host_header_is_refused_without_keys(http, engine):
    for host in OTHER_HOSTS:
        r = http.get("/v1/events", params={"limit": 1}, headers={"host": host})
        assert r.status_code == 403, (host, r.status_code, r.text)
        assert r.json()["error"] == "loopback_only" and "Host" in r.json()["detail"]
    content = f"rebound write {os.getpid()}"
    r = http.post("/v1/memories", json={"content": content}, headers={"host": "evil.example"})
    assert r.status_code == 403
    with engine.connect() as conn:
        assert not [e for e in opened_events(conn, "type = 'MemoryRecorded'") if e.data.get("content") == content]
    for host in LOOPBACK_HOSTS:
        assert http.get("/v1/events", params={"limit": 1}, headers={"host": host}).status_code == 200, host


def test_a_request_from_another_machine_is_refused_without_keys(app):
    with TestClient(app, base_url="http://127.0.0.1", client=("203.0.113.7", 40000)) as remote:
        r = remote.get("/v1/events", params={"limit": 1})
    assert r.status_code == 403 and "another machine" in r.json()["detail"]


def test_with_keys_any_host_and_peer_is_served(client):
    r = client.get("/v1/events", params={"limit": 1}, headers={"host": "memory.example.com"})
    assert r.status_code == 200, r.text
