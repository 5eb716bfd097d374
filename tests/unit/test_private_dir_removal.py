"""stack/private_dir.remove_fallback_dir: a socket's temp-dir home goes once empty, and only that."""

from __future__ import annotations

import tempfile
from pathlib import Path

from stack.private_dir import fallback_dir, remove_fallback_dir


def test_an_empty_fallback_dir_is_removed(tmp_path: Path) -> None:
    home = fallback_dir("pg", tmp_path / "data")
    home.mkdir(mode=0o700)
    remove_fallback_dir(home)
    assert not home.exists()


def test_a_fallback_dir_still_holding_a_socket_stays(tmp_path: Path) -> None:
    """A server killed before it removed its socket: the next start accepts the dir as it is."""
    home = fallback_dir("redis", tmp_path / "data")
    home.mkdir(mode=0o700)
    try:
        (home / "redis.sock").touch()
        remove_fallback_dir(home)
        assert (home / "redis.sock").exists()
    finally:
        (home / "redis.sock").unlink()
        home.rmdir()


def test_a_socket_dir_outside_the_temp_dir_is_never_touched(tmp_path: Path) -> None:
    run = tmp_path / "run"  # the socket dir inside a data dir
    run.mkdir()
    remove_fallback_dir(run)
    assert run.exists()
    other = Path(tempfile.mkdtemp(prefix="someone-else-"))  # in the temp dir, but not one of ours
    try:
        remove_fallback_dir(other)
        assert other.exists()
    finally:
        other.rmdir()
