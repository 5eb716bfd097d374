"""A real uvicorn server on a free loopback port serving the test app, with API keys of the tests' own tenants,
for the SDK and MCP tests (tests/e2e/test_sdk_*.py, test_mcp_*.py)."""

from __future__ import annotations

import socket
import threading
import time
import uuid
from collections.abc import Iterator

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LiveServer:
    """uvicorn in a thread of the test process: the same app object and settings as the other fixtures."""

    def __init__(self, app: object) -> None:
        import uvicorn

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, name="uvicorn-test", daemon=True)

    def start(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 120
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the test API server did not start")
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)


@pytest.fixture(scope="module")
def api_keys(app) -> Iterator[dict[str, str]]:
    """ENGRAMLOG_API_KEYS for this module: key → tenant; tests add their own (`tenant_key`)."""
    import api.context
    from infra.settings import get_settings, replace

    keys: dict[str, str] = {}
    settings = replace(get_settings(), api_keys=keys)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(api.context, "get_settings", lambda: settings)
        yield keys


@pytest.fixture
def tenant_key(api_keys, tenant) -> str:
    """An API key of this test's own tenant."""
    key = f"key-{tenant}-{uuid.uuid4().hex[:6]}"
    api_keys[key] = tenant
    return key


@pytest.fixture(scope="module")
def live_server(app, api_keys) -> Iterator[LiveServer]:
    server = LiveServer(app).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def module_worker(servers) -> Iterator[object]:
    """One real Dramatiq worker for the whole module (recall's read-your-writes waits for its projections)."""
    from conftest import WorkerProcess

    w = WorkerProcess().start()
    yield w
    w.stop()
