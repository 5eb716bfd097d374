"""The console's browser tests (tests/e2e/test_console_*.py): a live API with keys of two tenants and an operator,
a real worker, data written through the API, and headless Debian chromium driven by Playwright."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from sdk_support import LiveServer

ROOT = Path(__file__).resolve().parent.parent
SHOTS = ROOT / "bench" / "results" / "console"
SIZES = {"desktop": (1280, 800), "phone": (390, 844)}


def chromium_path() -> str | None:
    """Debian's chromium (make browser installs it); ENGRAMLOG_CHROMIUM names another."""
    given = os.environ.get("ENGRAMLOG_CHROMIUM")
    return given if given and Path(given).exists() else shutil.which("chromium") or shutil.which("chromium-browser")


@dataclass
class Stack:
    url: str
    tenant: str
    other: str
    tenant_key: str
    other_key: str
    operator_key: str
    ids: dict[str, Any] = field(default_factory=dict)

    def api(self, key: str) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {key}"}, timeout=120)

    def settle(self, key: str, position: int) -> None:
        with self.api(key) as c:
            assert c.get(f"/v1/positions/{position}", params={"wait": 60}).json()["recallable"]


@pytest.fixture(scope="module")
def stack(app, module_worker) -> Iterator[Stack]:
    """The API on a loopback port with three keys: a tenant's, another tenant's, and an operator's (first tenant)."""
    import api.context
    from infra.settings import get_settings, replace

    suffix = uuid.uuid4().hex[:8]
    s = Stack("", f"console-a-{suffix}", f"console-b-{suffix}", f"ka-{suffix}", f"kb-{suffix}", f"op-{suffix}")
    settings = replace(get_settings(), api_keys={s.tenant_key: s.tenant, s.other_key: s.other,
                                                 s.operator_key: s.tenant},
                       operator_keys=(s.operator_key,))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(api.context, "get_settings", lambda: settings)
        server = _started(LiveServer(app))
        s.url = server.url
        try:
            yield s
        finally:
            server.stop()


def _started(server: LiveServer, within_s: float = 600) -> LiveServer:
    """LiveServer.start with room for a loaded machine: the first start of a session exports the query-time models
    (minutes on a busy CPU)."""
    import time

    server.thread.start()
    deadline = time.monotonic() + within_s
    while not server.server.started:
        if not server.thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test API server did not start")
        time.sleep(0.1)
    return server


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    path = chromium_path()
    if path is None:
        pytest.skip("Debian's chromium is not installed (make browser: apt-get install chromium, as root)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (make install: the dev extra)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, headless=True, args=["--no-sandbox"])
        yield b
        b.close()


class Visitor:
    """A browser context signed in with one key; every page it opens is checked for script errors."""

    def __init__(self, browser: Any, stack: Stack, key: str | None, size: str = "desktop") -> None:
        w, h = SIZES[size]
        self.size, self.stack = size, stack
        self.context = browser.new_context(viewport={"width": w, "height": h})
        if key is not None:
            self.context.add_cookies([{"name": "engramlog_console_key", "value": key, "url": stack.url + "/console"}])
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def open(self, path: str, shot: str | None = None) -> Any:
        response = self.page.goto(self.stack.url + path)
        assert response is not None
        if shot:
            SHOTS.mkdir(parents=True, exist_ok=True)
            self.page.screenshot(path=str(SHOTS / f"{shot}-{self.size}.png"), full_page=True)
        return response

    def close(self) -> None:
        self.context.close()
