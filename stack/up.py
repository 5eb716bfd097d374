"""`engramlog up`: PostgreSQL, Redis, migrations, Dramatiq workers and the API, in the foreground.

Ctrl-C / SIGTERM stops everything in reverse order. One `up` per data dir, enforced with a file lock.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

import httpx
import structlog

from infra.settings import STACK_STATE_FILE, Settings
from migrations.runner import upgrade_to_head
from stack.postgres import EmbeddedPostgres
from stack.redis import EmbeddedRedis

log = structlog.get_logger(__name__)
LOOPBACK = ("127.0.0.1", "localhost", "::1")


class StackError(RuntimeError):
    pass


class Stack:
    def __init__(self, settings: Settings, workers: int = 1, threads: int = 2) -> None:
        self.settings = settings
        self.data_dir = settings.data_dir
        self.workers = workers
        self.threads = threads
        self.host = settings.host
        if not settings.api_keys and self.host not in LOOPBACK:
            log.warning("api.loopback_only", asked=self.host,
                        reason="ENGRAMLOG_API_KEYS is unset, so the API serves one tenant on loopback only")
            self.host = "127.0.0.1"
        self.postgres: EmbeddedPostgres | None = None
        self.redis: EmbeddedRedis | None = None
        self.children: dict[str, subprocess.Popen[bytes]] = {}
        self._lock: IO[str] | None = None
        self.database_url = settings.database_url
        self.redis_url = settings.redis_url

    @property
    def api_url(self) -> str:
        return f"http://{self.host}:{self.settings.port}"

    def _take_lock(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._lock = open(self.data_dir / "up.lock", "a+")  # noqa: SIM115 - held for the stack's lifetime
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock.seek(0)
            holder = self._lock.read().strip() or "another process"
            raise StackError(f"engramlog is already running on data dir {self.data_dir} (pid {holder}); "
                             "stop it first or pass another --data-dir") from None
        self._lock.seek(0)
        self._lock.truncate()
        self._lock.write(str(os.getpid()))
        self._lock.flush()

    def _check_port(self) -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((self.host, self.settings.port))
            except OSError:
                raise StackError(f"port {self.settings.port} on {self.host} is in use; pass --port") from None

    def child_env(self) -> dict[str, str]:
        return {**os.environ, "DATABASE_URL": self.database_url, "REDIS_URL": self.redis_url,
                "ENGRAMLOG_DATA_DIR": str(self.data_dir), "HF_HUB_OFFLINE": "1"}

    def start_worker(self) -> subprocess.Popen[bytes]:
        cmd = [sys.executable, "-m", "dramatiq", "workers.main", "--processes", str(self.workers),
               "--threads", str(self.threads), "--queues", "projections", "ingest", "lifecycle"]
        proc = subprocess.Popen(cmd, env=self.child_env(), start_new_session=True)
        self.children["worker"] = proc
        return proc

    def start(self) -> None:
        self._take_lock()
        self._check_port()
        if not self.database_url:
            self.postgres = EmbeddedPostgres(self.data_dir)
            self.database_url = self.postgres.start()
        if not self.redis_url:
            self.redis = EmbeddedRedis(self.data_dir)
            self.redis_url = self.redis.start()
        upgrade_to_head(self.database_url)
        log.info("migrations.done")
        (self.data_dir / STACK_STATE_FILE).write_text(json.dumps({
            "database_url": self.database_url, "redis_url": self.redis_url, "api_url": self.api_url,
            "pid": os.getpid()}, indent=2))
        self.start_worker()
        self.children["api"] = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "api.main:app", "--host", self.host, "--port",
             str(self.settings.port), "--log-level", "warning"],
            env=self.child_env(), start_new_session=True)
        self._wait_healthy()
        log.info("engramlog.up", api=self.api_url, data_dir=str(self.data_dir))

    def _wait_healthy(self, timeout_s: float = 120) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self._check_children()
            try:
                if httpx.get(f"{self.api_url}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        raise StackError("the stack did not become healthy in time")

    def _check_children(self) -> None:
        for name, proc in self.children.items():
            if proc.poll() is not None:
                raise StackError(f"{name} exited with code {proc.returncode}")

    def wait(self) -> None:
        stopping = False

        def on_signal(signum: int, frame: object) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, on_signal)
        signal.signal(signal.SIGTERM, on_signal)
        while not stopping:
            worker = self.children.get("worker")
            if worker is not None and worker.poll() is not None:
                log.warning("worker.exited", code=worker.returncode, action="restarting")
                self.start_worker()
            api = self.children.get("api")
            if api is not None and api.poll() is not None:
                raise StackError(f"api exited with code {api.returncode}")
            time.sleep(0.5)

    def stop(self) -> None:
        for name in ("api", "worker"):
            proc = self.children.pop(name, None)
            if proc is None or proc.poll() is not None:
                continue
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log.info("stopped", process=name)
        if self.redis:
            self.redis.stop()
        if self.postgres:
            self.postgres.stop()
        state = self.data_dir / STACK_STATE_FILE
        if state.exists():
            state.unlink()
        if self._lock:
            self._lock.close()
            self._lock = None


def run_foreground(settings: Settings, workers: int) -> None:
    stack = Stack(settings, workers)
    try:
        stack.start()
        stack.wait()
    finally:
        stack.stop()


def data_path(value: str) -> Path:
    return Path(value).expanduser().resolve()
