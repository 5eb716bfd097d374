"""Test fixtures on real parts: embedded PostgreSQL + pgvector, a real redis-server, real Dramatiq workers.

Tests come by kind: tests/unit (pure: no server), tests/integration (PostgreSQL, Redis, workers; services called
directly) and tests/e2e (HTTP through the app, CLI and servers as subprocesses). The servers start once per
session, on first use: the `servers` fixture, which `engine`, `app`, `http`, `client`, `worker` and `start_worker`
depend on, and before any test under tests/integration or tests/e2e. They stop at the end of the session, leaving
no process behind, so `pytest tests/unit` starts none. Tests isolate themselves by tenant: every test that writes
uses its own tenant name; a module that rebuilds or verifies whole projections, or scans every table, is marked
`own_database` and runs on a copy of the migrated, empty database (`_own_database`). Under pytest-xdist (`make
test` runs `-n 2 --dist loadfile`) each worker process has its own data directory, PostgreSQL and Redis, so a test
that stops Redis or kills workers touches only its own.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent
# Test folders whose every test needs the servers (a test may call get_engine() without asking for `engine`).
NEEDS_SERVERS = (TESTS / "integration", TESTS / "e2e")
_STATE: dict[str, object] = {}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "own_database: the module runs on a database of its own (_own_database)")
    if getattr(config.option, "numprocesses", None) and not os.environ.get("PYTEST_XDIST_WORKER"):
        return  # pytest-xdist's controller runs no test: each worker (a process of its own) sets up its own servers
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ.setdefault("ENGRAMLOG_POLL_INTERVAL_S", "0.5")
    os.environ.setdefault("ENGRAMLOG_WORKER_HEARTBEAT_S", "1")
    # Dramatiq's idle consumer polls Redis with a backoff up to its worker timeout (1000 ms by default): a write's
    # wake-up then waits up to a second for the worker, and a stopping worker as long. 100 ms in the tests.
    os.environ.setdefault("dramatiq_worker_timeout", "100")
    os.environ.setdefault("ENGRAMLOG_MIN_POSITION_WAIT_S", "30")  # a cold worker on a slow CI machine
    data_dir = Path(tempfile.mkdtemp(prefix="engramlog-test-"))
    _STATE["data_dir"] = data_dir
    os.environ["ENGRAMLOG_DATA_DIR"] = str(data_dir)
    from stack.postgres import EmbeddedPostgres
    from stack.redis import EmbeddedRedis

    # Both embedded servers listen on a unix socket inside data_dir, so their URLs are known before they start.
    # They are set now, before any project module is imported (settings and the broker read them at import), and
    # the servers themselves start only when a test needs them (`_ensure_servers`).
    if not os.environ.get("DATABASE_URL"):
        pg = EmbeddedPostgres(data_dir)
        _STATE["pg"] = pg
        os.environ["DATABASE_URL"] = pg.url
    if not os.environ.get("REDIS_URL"):
        redis = EmbeddedRedis(data_dir)
        _STATE["redis"] = redis
        os.environ["REDIS_URL"] = redis.url
    if "infra.settings" in sys.modules:  # imported early by a plugin: forget what it read before the env was set
        sys.modules["infra.settings"].get_settings.cache_clear()


def _ensure_servers() -> None:
    """Start the embedded servers (those not given by DATABASE_URL / REDIS_URL) and migrate, once a session."""
    if _STATE.get("started"):
        return
    _STATE["started"] = True
    for name in ("pg", "redis"):
        server = _STATE.get(name)
        if server is not None:
            server.start()  # type: ignore[attr-defined]
    from migrations.runner import upgrade_to_head

    upgrade_to_head(os.environ["DATABASE_URL"])


# The migrated, empty database, copied for each module marked `own_database` (a copy takes milliseconds where the
# migrations take seconds); migrated on first use, and connected to by nothing else, so a copy never finds it in use.
# Named per process, in case DATABASE_URL names one cluster for several xdist workers.
TEMPLATE_DATABASE = f"engramlog_template_{os.getpid()}"


def _database_name(url: str) -> str:
    from sqlalchemy.engine import make_url

    return str(make_url(url).database)


def _run_admin(sql: str) -> None:
    """One statement outside a transaction on the cluster's `postgres` database (CREATE / DROP DATABASE)."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url
    from sqlalchemy.pool import NullPool

    from infra.db import normalise_url

    admin = create_engine(make_url(normalise_url(_STATE.get("shared_url") or os.environ["DATABASE_URL"]))
                          .set(database="postgres"), poolclass=NullPool, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(sql))
    finally:
        admin.dispose()


@pytest.fixture(scope="module", autouse=True)
def _own_database(request: pytest.FixtureRequest) -> Iterator[None]:
    """A module marked `pytest.mark.own_database` runs on a database of its own, a copy of the migrated template:
    its rebuilds, verifies and whole-database scans then cost what its own writes cost, not whatever the modules
    before it on this xdist worker wrote. DATABASE_URL points at it for the module (settings, engines, and the
    workers and CLIs the module starts read it); the shared database is back afterwards."""
    if request.node.get_closest_marker("own_database") is None:
        yield
        return
    _ensure_servers()
    from sqlalchemy.engine import make_url

    from infra.db import engine_for
    from infra.settings import get_settings

    shared = _STATE.setdefault("shared_url", os.environ["DATABASE_URL"])
    if not _STATE.get("template"):
        from migrations.runner import upgrade_to_head

        _run_admin(f'CREATE DATABASE "{TEMPLATE_DATABASE}"')
        _STATE["template"] = "embedded" if "pg" in _STATE else "external"
        template = make_url(str(shared)).set(database=TEMPLATE_DATABASE).render_as_string(hide_password=False)
        upgrade_to_head(template)
        engine_for(template, statement_timeout_s=0).dispose()  # the migrations' connections: a copy needs none
    name = f"own_{request.node.name.removesuffix('.py')[:40]}_{uuid.uuid4().hex[:6]}"
    _run_admin(f'CREATE DATABASE "{name}" TEMPLATE "{TEMPLATE_DATABASE}"')
    own = make_url(str(shared)).set(database=name).render_as_string(hide_password=False)
    os.environ["DATABASE_URL"] = own
    get_settings.cache_clear()
    try:
        yield
    finally:
        os.environ["DATABASE_URL"] = str(shared)
        get_settings.cache_clear()
        engine_for(own).dispose()
        _run_admin(f'DROP DATABASE "{name}" WITH (FORCE)')


def _stop_servers() -> None:
    if _STATE.pop("template", None) == "external":  # on an external cluster the template is ours to drop
        _run_admin(f'DROP DATABASE IF EXISTS "{TEMPLATE_DATABASE}" WITH (FORCE)')
    for name in ("redis", "pg"):
        server = _STATE.pop(name, None)
        if server is not None and _STATE.get("started"):
            server.stop()  # type: ignore[attr-defined]
    data_dir = _STATE.pop("data_dir", None)
    if data_dir:
        shutil.rmtree(data_dir, ignore_errors=True)  # type: ignore[arg-type]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Every test under tests/integration and tests/e2e gets the servers before any of its fixtures runs (a
    module-scoped fixture of its own may read DATABASE_URL)."""
    if any(item.path.is_relative_to(folder) for folder in NEEDS_SERVERS):
        _ensure_servers()


def pytest_sessionfinish(session: pytest.Session) -> None:
    _stop_servers()


def pytest_unconfigure(config: pytest.Config) -> None:
    _stop_servers()  # a safety net: pytest_sessionfinish has normally stopped them


@pytest.fixture(scope="session")
def servers() -> None:
    """The embedded PostgreSQL (migrated to head) and Redis, started on first use."""
    _ensure_servers()


@pytest.fixture(scope="module")
def engine(servers, _own_database):
    """The database of this module: the shared one, or its own when it is marked `own_database`."""
    from infra.db import get_engine

    return get_engine()


@pytest.fixture
def tenant() -> str:
    """A tenant of this test's own, so tests never see each other's data."""
    return f"t-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="session")
def app(servers):
    from api.app import create_app

    return create_app()


@pytest.fixture
def http(app):
    """An HTTP client on the real app (single default tenant: ENGRAMLOG_API_KEYS unset), from loopback as the
    keyless API requires."""
    from fastapi.testclient import TestClient

    with TestClient(app, base_url="http://127.0.0.1", client=("127.0.0.1", 50000)) as client:
        yield client


@pytest.fixture
def client(app, tenant, monkeypatch):
    """An HTTP client whose API key maps to this test's own tenant (ENGRAMLOG_API_KEYS set to that one key)."""
    from fastapi.testclient import TestClient

    import api.context
    from infra.settings import get_settings, replace

    key = f"key-{tenant}"
    settings = replace(get_settings(), api_keys={key: tenant})
    monkeypatch.setattr(api.context, "get_settings", lambda: settings)
    with TestClient(app, headers={"Authorization": f"Bearer {key}"}) as c:
        yield c


class WorkerProcess:
    """A real `dramatiq workers.main` process; the fixture stops it at the end of the test."""

    def __init__(self, extra_env: dict[str, str] | None = None, processes: int = 1, threads: int = 2) -> None:
        self.env = {**os.environ, **(extra_env or {})}
        self.processes, self.threads = processes, threads
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> WorkerProcess:
        cmd = [sys.executable, "-m", "dramatiq", "workers.main", "--processes", str(self.processes),
               "--threads", str(self.threads), "--queues", "projections", "ingest"]
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=self.env, start_new_session=True)
        return self

    def kill(self) -> None:
        """SIGKILL the whole process group: no clean shutdown, no acks."""
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture
def worker(servers) -> Iterator[WorkerProcess]:
    w = WorkerProcess().start()
    yield w
    w.stop()


@pytest.fixture
def start_worker(servers) -> Iterator[object]:
    """Factory for tests that need to start, kill and restart workers themselves."""
    started: list[WorkerProcess] = []

    def make(**kwargs: object) -> WorkerProcess:
        w = WorkerProcess(**kwargs).start()  # type: ignore[arg-type]
        started.append(w)
        return w

    yield make
    for w in started:
        w.stop()


def wait_until(predicate, timeout: float = 60.0, interval: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


@pytest.fixture(scope="module")
def models():
    """The deep-recall tests' scripted model server on loopback (tests/deep_recall_support.py), one per module."""
    from tests.deep_recall_support import start_scripted_models

    scripted, server, thread = start_scripted_models()
    yield scripted
    server.should_exit = True
    thread.join(10)
