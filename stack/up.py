"""`engramlog up`: PostgreSQL, Redis, migrations, Dramatiq workers and the API, in the foreground. Ctrl-C / SIGTERM /
SIGHUP stops everything in reverse order, at any moment, start-up included: the handlers are installed before the
first child starts. Each child gets ENGRAMLOG_STOP_GRACE_S after its stop signal, then SIGKILL; and every child dies
with `up` even when `up` itself is SIGKILLed (a parent-death signal: infra/lifeline.py). A child that exits is
restarted after an exponential back-off. One `up` per data dir, enforced with a file lock; a `stack.json` left by an
`up` that died is removed.
"""

from __future__ import annotations

import fcntl
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

import httpx
import psutil
import structlog

from infra import lifeline
from infra.loopback import is_loopback_address
from infra.settings import STACK_STATE_FILE, Settings, read_stack_state
from migrations.runner import upgrade_to_head
from stack.postgres import EmbeddedPostgres
from stack.redis import EmbeddedRedis
from stack.state import LOCK_FILE, write_stack_state
from stack.stop import stop_child

log = structlog.get_logger(__name__)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class StackError(RuntimeError):
    pass


class Stopping(Exception):  # noqa: N818 - not an error: a stop signal unwinding start-up or supervision
    """Raised in the main thread by a stop signal, so that whatever runs unwinds through Stack.stop()."""


class ChildRestarts:
    """Back-off for a child that keeps exiting: base, 2·base, 4·base … up to max_s; a run of stable_s resets it."""

    def __init__(self, base_s: float = 1.0, max_s: float = 60.0, stable_s: float = 60.0) -> None:
        self.base_s, self.max_s, self.stable_s = base_s, max_s, stable_s
        self.crashes = 0

    def exited(self, ran_s: float) -> float:
        """Record an exit after running ran_s seconds; the delay before the next start."""
        if ran_s >= self.stable_s:
            self.crashes = 0
        self.crashes += 1
        return min(self.max_s, self.base_s * 2 ** (self.crashes - 1))


class Stack:
    def __init__(self, settings: Settings, workers: int = 1, threads: int = 2) -> None:
        self.settings = settings
        self.data_dir = settings.stack.data_dir
        self.workers = workers
        self.threads = threads
        self.host = settings.stack.host
        if not settings.api.api_keys and not is_loopback_address(self.host):
            raise StackError(f"refusing to serve on {self.host}: ENGRAMLOG_API_KEYS is unset, so the API has no "
                             "authentication and serves loopback only. Set ENGRAMLOG_API_KEYS=key:tenant,... or "
                             "ENGRAMLOG_HOST=127.0.0.1")
        self.postgres: EmbeddedPostgres | None = None
        self.redis: EmbeddedRedis | None = None
        self.children: dict[str, subprocess.Popen[bytes]] = {}
        self.stopping = False
        self._started_at: dict[str, float] = {}
        self._restarts: dict[str, ChildRestarts] = {}
        self.restart_at: dict[str, float] = {}
        self._children_before: set[int] | None = None  # this process's children before start(): not ours to stop
        self._lock: IO[str] | None = None
        self.database_url = settings.stack.database_url
        self.redis_url = settings.stack.redis_url

    @property
    def api_url(self) -> str:
        """Where this machine reaches the API (a wildcard bind is reached on loopback)."""
        host = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(self.host, self.host)
        return f"http://[{host}]:{self.settings.stack.port}" if ":" in host else f"http://{host}:{self.settings.stack.port}"

    def _take_lock(self) -> None:
        self.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        lock = open(self.data_dir / LOCK_FILE, "a+")  # noqa: SIM115 - held for the stack's lifetime
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip() or "another process"
            lock.close()
            raise StackError(f"engramlog is already running on data dir {self.data_dir} (pid {holder}); "
                             "stop it first or pass another --data-dir") from None
        self._lock = lock
        lock.seek(0)
        lock.truncate()
        lock.write(str(os.getpid()))
        lock.flush()
        stale = read_stack_state(self.data_dir)
        if (self.data_dir / STACK_STATE_FILE).exists():  # we hold the lock: whoever wrote it is gone
            log.warning("stack.stale_state_removed", pid=(stale or {}).get("pid"), data_dir=str(self.data_dir))
            (self.data_dir / STACK_STATE_FILE).unlink()

    def _check_port(self) -> None:
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as s:
            try:
                s.bind((self.host, self.settings.stack.port))
            except OSError:
                raise StackError(f"port {self.settings.stack.port} on {self.host} is in use; pass --port") from None

    def child_env(self) -> dict[str, str]:
        return {**os.environ, "DATABASE_URL": self.database_url, "REDIS_URL": self.redis_url,
                "ENGRAMLOG_DATA_DIR": str(self.data_dir), "HF_HUB_OFFLINE": "1", lifeline.ENV: "1",
                "ENGRAMLOG_WORKERS": str(self.workers)}  # the worker processes split the projections among them

    def commands(self) -> dict[str, list[str]]:
        """The supervised children, in start order."""
        api_processes = self.settings.stack.api_processes
        return {
            "worker": [sys.executable, "-m", "dramatiq", "workers.main", "--processes", str(self.workers),
                       "--threads", str(self.threads), "--queues", "projections", "ingest", "lifecycle"],
            "api": [sys.executable, "-m", "uvicorn", "api.main:app", "--host", self.host, "--port",
                    str(self.settings.stack.port), "--timeout-keep-alive", str(self.settings.stack.keep_alive_s),
                    *(["--workers", str(api_processes)] if api_processes > 1 else []), "--log-level", "warning"],
        }

    def start_child(self, name: str, now: float | None = None) -> subprocess.Popen[bytes]:
        """Start one child; `now` is the supervising clock's reading (time.monotonic() unless given), so a run's
        length is measured on the clock `supervise` is handed."""
        proc = subprocess.Popen(self.commands()[name], env=self.child_env(), start_new_session=True,
                                preexec_fn=lifeline.preexec(signal.SIGKILL))  # dies with up, even a SIGKILLed up
        self.children[name] = proc
        self._started_at[name] = time.monotonic() if now is None else now
        return proc

    def check_stop(self) -> None:
        """Raise Stopping when a stop signal came. The signal's handler raises it too, wherever the main thread is;
        library code that catches every Exception can swallow that one (a SIGHUP during start-up then left `up`
        supervising, deaf to the next signals), so start-up and supervision ask between their steps."""
        if self.stopping:
            raise Stopping

    def start(self) -> None:
        self._children_before = {p.pid for p in psutil.Process().children()}
        self._take_lock()
        self._check_port()
        if not self.database_url:
            self.postgres = EmbeddedPostgres(self.data_dir, die_with_parent=True)
            self.database_url = self.postgres.start()
        self.check_stop()
        if not self.redis_url:
            self.redis = EmbeddedRedis(self.data_dir, die_with_parent=True)
            self.redis_url = self.redis.start()
        self.check_stop()
        upgrade_to_head(self.database_url)
        log.info("migrations.done")
        self.check_stop()
        write_stack_state(self.data_dir, {"database_url": self.database_url, "redis_url": self.redis_url,
                                          "api_url": self.api_url, "pid": os.getpid()})
        for name in self.commands():
            self.check_stop()
            self.start_child(name)
        self._wait_healthy()
        log.info("engramlog.up", api=self.api_url, data_dir=str(self.data_dir))

    def _wait_healthy(self) -> None:
        timeout_s = self.settings.stack.up_health_timeout_s
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self.check_stop()
            self._check_children()
            try:
                if httpx.get(f"{self.api_url}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        raise StackError(f"the API did not answer /healthz within {timeout_s:g} s (ENGRAMLOG_UP_HEALTH_TIMEOUT_S)")

    def _check_children(self) -> None:
        for name, proc in self.children.items():
            if proc.poll() is not None:
                raise StackError(f"{name} exited with code {proc.returncode}")

    def supervise(self, now: float) -> None:
        """One pass: schedule the restart of each child that exited, start those whose back-off is over."""
        for name, proc in list(self.children.items()):
            if name in self.restart_at or proc.poll() is None:
                continue
            restarts = self._restarts.setdefault(name, ChildRestarts())
            delay = restarts.exited(ran_s=now - self._started_at.get(name, now))
            self.restart_at[name] = now + delay
            log.warning("child.exited", child=name, code=proc.returncode, crashes=restarts.crashes,
                        restart_in_s=delay)
        for name, at in list(self.restart_at.items()):
            if now >= at:
                del self.restart_at[name]
                log.info("child.restarting", child=name, pid=self.start_child(name, now).pid)

    def wait(self) -> None:
        while True:
            self.check_stop()
            self.supervise(time.monotonic())
            time.sleep(0.5)

    def _reap_strays(self) -> None:
        """A child whose start a signal interrupted (before it was recorded) is still ours: stop it too."""
        if self._children_before is None:
            return
        strays = [p for p in psutil.Process().children() if p.pid not in self._children_before]
        for proc in strays:
            try:
                proc.terminate()
            except psutil.NoSuchProcess:
                continue
        _, alive = psutil.wait_procs(strays, timeout=self.settings.stack.stop_grace_s)
        for proc in alive:
            try:
                proc.kill()
            except psutil.NoSuchProcess:
                continue
        psutil.wait_procs(alive, timeout=10)
        if strays:
            log.warning("stopped.strays", pids=[p.pid for p in strays])

    def stop(self) -> None:
        self.stopping = True
        for name in ("api", "worker"):
            proc = self.children.pop(name, None)
            if proc is not None and stop_child(proc, signal.SIGTERM, self.settings.stack.stop_grace_s):
                log.info("stopped", process=name)
        if self.redis:
            self.redis.stop(self.settings.stack.stop_grace_s)
        if self.postgres:
            self.postgres.stop(self.settings.stack.stop_grace_s)
        self._reap_strays()
        if self._lock:  # only the holder of the lock wrote the state file
            (self.data_dir / STACK_STATE_FILE).unlink(missing_ok=True)
            self._lock.close()
            self._lock = None


def run_foreground(settings: Settings, workers: int) -> None:
    stack = Stack(settings, workers)

    received: list[str] = []

    def on_signal(signum: int, frame: object) -> None:
        # No logging here: a log line takes its output's lock, which the interrupted main thread may hold.
        if stack.stopping:
            return  # already stopping: let it finish in order
        stack.stopping = True
        received.append(signal.Signals(signum).name)
        raise Stopping

    previous = {sig: signal.signal(sig, on_signal) for sig in STOP_SIGNALS}  # before the first child starts
    try:
        stack.start()
        stack.wait()
    except Stopping:
        log.info("engramlog.stopping", signal=received[0] if received else None)
    finally:
        stack.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def data_path(value: str) -> Path:
    return Path(value).expanduser().resolve()
