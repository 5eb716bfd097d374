"""The embedded PostgreSQL (`--auth=trust`) and Redis (no password) are reachable by the stack's user only.

Their unix sockets are 0700 in 0700 directories: another local user cannot connect (as a superuser, with
`COPY … TO PROGRAM`, for PostgreSQL). Checked on the servers this test session runs, and, as root, by
connecting as `nobody`.
"""

from __future__ import annotations

import os
import pwd
import socket
import stat
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest


def _pg_socket_dir() -> Path:
    host = parse_qs(urlsplit(os.environ["DATABASE_URL"]).query).get("host", [""])[0]
    if not host.startswith("/"):
        pytest.skip("DATABASE_URL is not the embedded server")
    return Path(host)


def _redis_socket() -> Path:
    url = os.environ["REDIS_URL"]
    if not url.startswith("unix://"):
        pytest.skip("REDIS_URL is not the embedded server")
    return Path(url.removeprefix("unix://"))


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def _as_nobody_connects(socket_path: Path) -> bool:
    """Fork, become `nobody`, connect: only plain syscalls in the child (no interpreter to start as nobody)."""
    nobody = pwd.getpwnam("nobody")
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 3
        try:
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(str(socket_path))
            code = 0
        except OSError:
            code = 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) in (0, 1)
    return os.WEXITSTATUS(status) == 0


@pytest.mark.parametrize("server", ["postgres", "redis"])
def test_the_socket_and_its_directory_are_private(server: str) -> None:
    sock = _pg_socket_dir() / ".s.PGSQL.5432" if server == "postgres" else _redis_socket()
    assert _mode(sock) == 0o700, oct(_mode(sock))
    assert _mode(sock.parent) == 0o700, oct(_mode(sock.parent))
    if os.geteuid() == 0:
        assert not _as_nobody_connects(sock)


@pytest.mark.skipif(os.geteuid() != 0, reason="making a directory of another user needs root")
def test_a_socket_directory_someone_else_made_is_refused(tmp_path: Path) -> None:
    from stack.postgres import EmbeddedPostgres

    pg = EmbeddedPostgres(tmp_path / "data")
    pg.socket_dir = tmp_path / "planted"  # as the /tmp fallback for long paths could be, made by another user
    pg.socket_dir.mkdir(mode=0o777)
    os.chown(pg.socket_dir, pwd.getpwnam("nobody").pw_uid, -1)
    with pytest.raises(RuntimeError, match="refusing"):
        pg.start()
    assert pg.process is None
