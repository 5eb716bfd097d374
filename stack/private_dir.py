"""A directory for a trusted unix socket: 0700 and owned by the stack's user, or the stack refuses to start.

The embedded servers trust whoever reaches their socket, and the fallback for long data dirs lives in the shared
temp dir, where another local user could make the directory (or a symlink, or a socket) first. So an existing one
is accepted only when it is a real directory (not a link), owned by us, and open to nobody else.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import tempfile
from collections.abc import Collection
from pathlib import Path


def fallback_dir(name: str, key: Path) -> Path:
    """The temp-dir home of a socket whose path under `key` would be too long: one per data dir, not per process."""
    digest = hashlib.sha256(str(key).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"engramlog-{name}-{digest}"


def remove_fallback_dir(path: Path) -> None:
    """Remove a socket's temp-dir home (fallback_dir) once its server has stopped and taken its socket away, so a
    stack on a long data dir leaves nothing in the shared temp dir. One that still holds anything (a server killed
    before it could remove its socket) stays, and the next start accepts it; a socket dir inside the data dir is not
    touched."""
    if path.parent == Path(tempfile.gettempdir()) and path.name.startswith("engramlog-"):
        with contextlib.suppress(OSError):
            path.rmdir()


def ensure_private_dir(path: Path, what: str, owners: Collection[int] = ()) -> None:
    """Make `path` 0700 (under any umask) or accept it only if it is already ours and 0700-or-tighter.

    `owners`: other uids that may own it (PostgreSQL's, when root demotes the server to its own user).
    """
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = os.lstat(path)
    allowed = {os.geteuid(), *owners}
    if not stat.S_ISDIR(st.st_mode):
        raise RuntimeError(f"{path} is not a directory; refusing to put {what} there")
    if st.st_uid not in allowed:
        raise RuntimeError(f"{path} is owned by uid {st.st_uid}, not this user; refusing to put {what} there")
    if stat.S_IMODE(st.st_mode) & 0o077:
        raise RuntimeError(f"{path} is open to other users (mode {oct(stat.S_IMODE(st.st_mode))}); refusing to "
                           f"put {what} there (remove it, or chmod 700 it if it is yours)")
