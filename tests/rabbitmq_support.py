"""A real rabbitmq-server for tests, of the test's own (Debian's package: `apt-get install rabbitmq-server`): its own
node name, ports, data and log dirs, Erlang cookie (HOME) and epmd port, so it touches nothing of another's;
stopped, its epmd with it."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import psutil

# The server script itself: the /usr/sbin wrapper would switch to the rabbitmq user.
SERVER = "/usr/lib/rabbitmq/bin/rabbitmq-server"


def missing() -> str | None:
    """Why no server can be started here, or None."""
    if not Path(SERVER).exists() or shutil.which("erl") is None and not Path("/usr/lib/erlang").exists():
        return "rabbitmq-server is not installed (Debian: apt-get install rabbitmq-server)"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RabbitServer:
    def __init__(self, base: Path) -> None:
        self.base = base
        self.port, self.dist_port, self.epmd_port = _free_port(), _free_port(), _free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.port}/%2F"

    def _env(self) -> dict[str, str]:
        (self.base / "enabled_plugins").write_text("[].\n")
        return {**os.environ, "HOME": str(self.base), "RABBITMQ_NODENAME": f"engramlog{self.port}@localhost",
                "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1", "RABBITMQ_NODE_PORT": str(self.port),
                "RABBITMQ_DIST_PORT": str(self.dist_port), "ERL_EPMD_PORT": str(self.epmd_port),
                "RABBITMQ_MNESIA_BASE": str(self.base / "mnesia"), "RABBITMQ_LOG_BASE": str(self.base / "log"),
                "RABBITMQ_ENABLED_PLUGINS_FILE": str(self.base / "enabled_plugins"),
                "RABBITMQ_PID_FILE": str(self.base / "rabbit.pid"), "RABBITMQ_CONFIG_FILE": str(self.base / "none"),
                "RABBITMQ_ADVANCED_CONFIG_FILE": str(self.base / "none.config")}

    def start(self, timeout: float = 180.0) -> RabbitServer:
        import pika

        log = open(self.base / "server.out", "wb")  # noqa: SIM115 - the server's lifetime
        self.proc = subprocess.Popen([SERVER], env=self._env(), stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"rabbitmq-server exited: {(self.base / 'server.out').read_text()[-2000:]}")
            try:
                pika.BlockingConnection(pika.URLParameters(self.url)).close()
                return self
            except Exception:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"rabbitmq-server did not accept connections in {timeout} s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        for p in psutil.process_iter(["name"]):  # the epmd it started (a daemon), found by its own port
            try:
                if p.info["name"] == "epmd" and p.environ().get("ERL_EPMD_PORT") == str(self.epmd_port):
                    p.kill()
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                pass
