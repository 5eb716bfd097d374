"""The embedded PostgreSQL (`--auth=trust`) and Redis (no password) are reachable by the stack's user only.

Their unix sockets are 0700 in 0700 directories: another local user cannot connect (as a superuser, with
`COPY … TO PROGRAM`, for PostgreSQL). Checked on the servers this test session runs, and, as root, by
connecting as `nobody`. The temp-dir fallback for long data dirs is held to the same rule: a directory someone
else made (or bound a socket in) first is refused. As root, PostgreSQL's own user is let through to its files by
an ACL entry for it alone, never by `o+x` on the parents.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import stat
import subprocess
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


def _long_data_dir(tmp_path: Path) -> Path:
    """A data dir whose socket path would pass the ~107-byte limit, so the socket falls back to the temp dir."""
    return tmp_path / ("d" * 60) / ("e" * 60)


def test_the_redis_fallback_socket_is_in_a_private_directory_of_this_user(tmp_path: Path) -> None:
    from stack.redis import EmbeddedRedis

    redis = EmbeddedRedis(_long_data_dir(tmp_path))
    home = redis.socket.parent
    assert not home.is_relative_to(redis.dir)
    try:
        redis.start()
        st = os.lstat(home)
        assert stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid()
        assert stat.S_IMODE(st.st_mode) == 0o700, oct(stat.S_IMODE(st.st_mode))
        assert _mode(redis.socket) == 0o700
        if os.geteuid() == 0:
            assert not _as_nobody_connects(redis.socket)
    finally:
        redis.stop()
        removed = not home.exists()  # the server took its socket away, and the stop its home in the shared temp dir
        shutil.rmtree(home, ignore_errors=True)
    assert removed


def _plant(home: Path, how: str, tmp_path: Path) -> None:
    if how == "symlink":
        target = tmp_path / "elsewhere"
        target.mkdir(mode=0o700)
        home.symlink_to(target)
        return
    home.mkdir(mode=0o777)
    os.chmod(home, 0o777)
    if how == "foreign owner":
        os.chown(home, pwd.getpwnam("nobody").pw_uid, -1)
        os.chmod(home, 0o700)  # even a private-looking one: it is not ours


@pytest.mark.parametrize("how", [
    "open to all",
    "symlink",
    pytest.param("foreign owner", marks=pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")),
])
def test_a_redis_socket_directory_someone_else_prepared_is_refused(tmp_path: Path, how: str) -> None:
    """Someone binds the fallback socket path first, waiting for the queue's traffic: Redis refuses to start."""
    from stack.redis import EmbeddedRedis

    redis = EmbeddedRedis(_long_data_dir(tmp_path))
    home = redis.socket.parent
    _plant(home, how, tmp_path)
    listener = socket.socket(socket.AF_UNIX)
    try:
        listener.bind(str(redis.socket))
        listener.listen()
        listener.setblocking(False)
        with pytest.raises(RuntimeError, match="refusing"):
            redis.start()
        assert redis.process is None
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody was sent there
    finally:
        listener.close()
        if home.is_symlink():
            home.unlink()
        else:
            shutil.rmtree(home, ignore_errors=True)


def _can_search(path: Path, uid: int, gid: int) -> bool:
    return subprocess.run(["test", "-x", str(path)], user=uid, group=gid, extra_groups=[], cwd="/").returncode == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="PostgreSQL runs as its own user only when the stack runs as root")
def test_as_root_postgres_reaches_a_private_data_dir_without_opening_it_to_others(tmp_path: Path) -> None:
    from stack.postgres import EmbeddedPostgres

    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    inner = private / "inner"
    inner.mkdir(mode=0o750)
    pg = EmbeddedPostgres(inner / "data")
    assert pg._ids is not None
    nobody = pwd.getpwnam("nobody")
    try:
        pg.start()
        assert pg.process is not None and pg.process.poll() is None
    finally:
        pg.stop()
    for path in (private, inner):
        assert _can_search(path, *pg._ids)
        assert not _can_search(path, nobody.pw_uid, nobody.pw_gid)
        assert _mode(path) & 0o007 == 0, oct(_mode(path))  # no o+x anywhere


@pytest.mark.skipif(os.geteuid() != 0, reason="another user to grant to needs root")
def test_the_search_grant_keeps_the_group_and_others_as_they_were(tmp_path: Path) -> None:
    from stack.postgres import _demote
    from stack.search_grant import grant_search

    ids = _demote()
    assert ids is not None
    top = tmp_path / "top"
    top.mkdir(mode=0o700)
    below = top / "below"
    below.mkdir(mode=0o755)
    os.chmod(top, 0o740)  # the group may list it but not search it: it must not gain search
    group_member = pwd.getpwnam("nobody")
    os.chown(top, -1, group_member.pw_gid)
    grant_search(below, *ids)
    assert _can_search(below, *ids)
    assert not _can_search(below, group_member.pw_uid, group_member.pw_gid)
    assert _mode(top) & 0o007 == 0
    grant_search(below, *ids)  # again: nothing left to grant, nothing changes
    assert _can_search(below, *ids)
