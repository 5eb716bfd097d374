"""A stack of its own for the fault tests (tests/e2e/test_faults.py): PostgreSQL, Redis, the API (uvicorn on loopback,
keyless) and Dramatiq workers as separate processes, so PostgreSQL and Redis can be stopped and restarted without
disturbing the session's servers; and a steady write load over HTTP that records what was acknowledged.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from conftest import ROOT, WorkerProcess, wait_until
from sqlalchemy import Engine, create_engine, text

from infra.db import normalise_url


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FaultStack:
    """Servers in a temp dir of their own; the models come from the session's data dir (already exported)."""

    def __init__(self) -> None:
        from stack.postgres import EmbeddedPostgres
        from stack.redis import EmbeddedRedis

        self.dir = Path(tempfile.mkdtemp(prefix="engramlog-faults-"))
        self.pg = EmbeddedPostgres(self.dir)
        self.redis = EmbeddedRedis(self.dir)
        self.port = _free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.api: subprocess.Popen[bytes] | None = None
        self.workers: list[WorkerProcess] = []
        self.engine: Engine | None = None
        self.env: dict[str, str] = {}

    def start(self) -> FaultStack:
        from migrations.runner import upgrade_to_head

        database_url = self.pg.start()
        upgrade_to_head(database_url)
        self.env = {"DATABASE_URL": database_url, "REDIS_URL": self.redis.start(), "ENGRAMLOG_LOG_LEVEL": "warning",
                    "ENGRAMLOG_MIN_POSITION_WAIT_S": "30"}
        self.engine = create_engine(normalise_url(database_url), pool_size=2, pool_pre_ping=True)
        cmd = [sys.executable, "-m", "uvicorn", "api.main:app", "--host", "127.0.0.1", "--port", str(self.port),
               "--log-level", "warning"]
        self.api = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, **self.env}, start_new_session=True)
        assert wait_until(self._api_answers, timeout=180, interval=0.2), "the fault stack's API did not start"
        return self

    def _api_answers(self) -> bool:
        assert self.api is not None
        if self.api.poll() is not None:
            raise RuntimeError(f"the fault stack's API exited with {self.api.returncode}")
        try:
            httpx.get(f"{self.base_url}/healthz", timeout=2)
            return True
        except httpx.HTTPError:
            return False

    def start_worker(self, **env: str) -> WorkerProcess:
        worker = WorkerProcess(extra_env={**self.env, **env}).start()
        self.workers.append(worker)
        return worker

    def stop_workers(self) -> None:
        for worker in self.workers:
            worker.stop()
        self.workers.clear()

    def head(self) -> int:
        assert self.engine is not None
        with self.engine.connect() as conn:
            return conn.execute(text("SELECT coalesce(max(position), 0) FROM events")).scalar_one()

    def caught_up(self, position: int) -> bool:
        """Every projection has applied everything up to `position` (its whole transaction)."""
        from projections.registry import PROJECTORS
        from projections.runner import has_reached

        assert self.engine is not None
        try:
            with self.engine.connect() as conn:
                return all(has_reached(conn, p, position) for p in PROJECTORS.values())
        except Exception:  # the database is restarting
            return False

    def stop(self) -> None:
        self.stop_workers()
        if self.api is not None and self.api.poll() is None:
            self.api.terminate()
            try:
                self.api.wait(30)
            except subprocess.TimeoutExpired:
                self.api.kill()
                self.api.wait()
        if self.engine is not None:
            self.engine.dispose()
        self.redis.stop()
        self.pg.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def crash(server: object) -> None:
    """Stop an embedded server without its clean shutdown: PostgreSQL's immediate mode (SIGQUIT: no checkpoint,
    crash recovery at the next start), Redis SIGKILLed."""
    from stack.postgres import EmbeddedPostgres

    process: subprocess.Popen[bytes] = server.process  # type: ignore[attr-defined]
    process.send_signal(signal.SIGQUIT if isinstance(server, EmbeddedPostgres) else signal.SIGKILL)
    process.wait(30)


LETTERS = "bcdfghjklmnpqrstvwxz"


def marker(i: int) -> str:
    """A word of letters only that names write `i` (the tokenizer keeps it whole; no two writes share it)."""
    word = ""
    while True:
        i, r = divmod(i, len(LETTERS))
        word += LETTERS[r]
        if not i:
            break
    return "qu" + word + "vo"


@dataclass
class Acked:
    index: int
    memory_id: str
    position: int


@dataclass
class WriteLoad:
    """One writer posting memories one after another, every `interval_s`; a write is retried with its own
    idempotency key until it is acknowledged (201), so a write whose answer was lost is never written twice."""

    base_url: str
    agent_id: str
    interval_s: float = 0.05
    acked: list[Acked] = field(default_factory=list)
    statuses: Counter[str] = field(default_factory=Counter)  # every answer, "503" or "ConnectError" and the like
    unavailable_bodies: list[dict] = field(default_factory=list)  # a few 503 bodies (the JSON error shape)
    in_flight: int | None = None  # the write not yet acknowledged when the load stopped

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"load-{self.agent_id}", daemon=True)

    def content(self, i: int) -> str:
        return f"{self.agent_id} fault note {i}: the {marker(i)} ledger entry was filed under shelf {i % 17}"

    def start(self) -> WriteLoad:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)
        assert not self._thread.is_alive(), "the writer did not stop"

    def acked_since(self, mark: int) -> bool:
        return len(self.acked) > mark

    def _run(self) -> None:
        with httpx.Client(base_url=self.base_url, timeout=30) as client:
            i = 0
            while not self._stop.is_set():
                body = {"content": self.content(i), "agent_id": self.agent_id, "must_keep": True,
                        "idempotency_key": f"{self.agent_id}-{i}"}
                self.in_flight = i
                try:
                    r = client.post("/v1/memories", json=body)
                    self.statuses[str(r.status_code)] += 1
                except httpx.HTTPError as exc:  # the API is up but its answer was lost: retried like a 503
                    self.statuses[type(exc).__name__] += 1
                    r = None
                if r is not None and r.status_code == 201:
                    self.acked.append(Acked(i, r.json()["memory_id"], r.json()["position"]))
                    self.in_flight = None
                    i += 1
                elif r is not None and r.status_code == 503 and len(self.unavailable_bodies) < 5:
                    self.unavailable_bodies.append(r.json())
                self._stop.wait(self.interval_s)


def wait_acked(load: WriteLoad, more: int, timeout: float = 60) -> bool:
    """Wait until `more` writes beyond the current count are acknowledged."""
    mark = len(load.acked)
    return wait_until(lambda: len(load.acked) >= mark + more, timeout=timeout, interval=0.05)


@dataclass
class RecallLoad:
    """One reader recalling in the writer's scope every `interval_s`; records every answer's status."""

    base_url: str
    agent_id: str
    interval_s: float = 0.3
    statuses: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"recall-{self.agent_id}", daemon=True)

    def start(self) -> RecallLoad:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)
        assert not self._thread.is_alive(), "the reader did not stop"

    def _run(self) -> None:
        with httpx.Client(base_url=self.base_url, timeout=30) as client:
            while not self._stop.is_set():
                try:
                    r = client.post("/v1/recall", json={"query": "which ledger entry was filed under shelf 3?",
                                                        "agent_id": self.agent_id, "k": 3})
                    self.statuses[str(r.status_code)] += 1
                except httpx.HTTPError as exc:
                    self.statuses[type(exc).__name__] += 1
                self._stop.wait(self.interval_s)
