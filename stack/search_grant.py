"""Let one user (PostgreSQL's, when root runs the stack) search the directories down to a path, and no one else.

PostgreSQL refuses to run as root, so root demotes it to its own user, which must reach its binaries and data dir.
Adding `o+x` to every parent would open them to every local user; a POSIX ACL entry `user:<uid>:--x` on just the
directories that block it opens them to that user alone. The ACL is written as the kernel's
`system.posix_acl_access` xattr (the pylibacl binding ships no wheels and would need libacl headers to build).
"""

from __future__ import annotations

import errno
import os
import struct
import subprocess
from pathlib import Path

import structlog

log = structlog.get_logger(__name__)

_XATTR = "system.posix_acl_access"
_VERSION = 2
_USER_OBJ, _USER, _GROUP_OBJ, _GROUP, _MASK, _OTHER = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20
_UNDEFINED_ID = 0xFFFFFFFF
_ENTRY = struct.Struct("<HHI")  # tag, perm, id
_SEARCH = 0o1


def _entries(path: Path) -> list[tuple[int, int, int]]:
    """The directory's access ACL, or the three entries its mode bits amount to when it has none."""
    try:
        raw = os.getxattr(path, _XATTR, follow_symlinks=False)
    except OSError as exc:
        if exc.errno != errno.ENODATA:
            raise
        mode = os.lstat(path).st_mode
        return [(_USER_OBJ, (mode >> 6) & 7, _UNDEFINED_ID), (_GROUP_OBJ, (mode >> 3) & 7, _UNDEFINED_ID),
                (_OTHER, mode & 7, _UNDEFINED_ID)]
    return [_ENTRY.unpack_from(raw, offset) for offset in range(4, len(raw), _ENTRY.size)]


def _with_search_for(entries: list[tuple[int, int, int]], uid: int) -> list[tuple[int, int, int]]:
    others = [e for e in entries if not (e[0] == _USER and e[2] == uid) and e[0] != _MASK]
    users = [e for e in entries if e[0] == _USER and e[2] == uid]
    granted = (_USER, (users[0][1] if users else 0) | _SEARCH, uid)
    old_mask = next((e[1] for e in entries if e[0] == _MASK), None)
    group_class = [e for e in others if e[0] in (_GROUP_OBJ, _USER, _GROUP)]
    if old_mask is None:  # no extended ACL yet: the mask is the group's own bits, so the group gains nothing
        mask = next(e[1] for e in group_class if e[0] == _GROUP_OBJ) | _SEARCH
    else:
        mask = old_mask | _SEARCH
        if not old_mask & _SEARCH and any(e[1] & _SEARCH for e in group_class):
            raise PermissionError("widening its ACL mask would let others search it too")
    return sorted([*others, granted, (_MASK, mask, _UNDEFINED_ID)], key=lambda e: (e[0], e[2]))


def _grant(path: Path, uid: int) -> None:
    entries = _with_search_for(_entries(path), uid)
    raw = struct.pack("<I", _VERSION) + b"".join(_ENTRY.pack(*e) for e in entries)
    os.setxattr(path, _XATTR, raw, follow_symlinks=False)


def _first_blocked(dirs: list[Path], uid: int, gid: int) -> Path | None:
    """The first of `dirs` (top-down) that `uid` cannot search, asked of the kernel as that user."""
    script = 'for d do [ -x "$d" ] || { printf %s "$d"; exit 0; }; done'
    out = subprocess.run(["sh", "-c", script, "sh", *map(str, dirs)], user=uid, group=gid, extra_groups=[],
                         capture_output=True, text=True, check=True, cwd="/")
    return Path(out.stdout) if out.stdout else None


def grant_search(path: Path, uid: int, gid: int) -> None:
    """Make `path` and every directory above it searchable by `uid`, changing only those that block it."""
    dirs = [*reversed(path.resolve().parents), path.resolve()]
    granted: set[Path] = set()
    while (blocked := _first_blocked(dirs, uid, gid)) is not None:
        try:
            if blocked in granted:
                raise PermissionError("the ACL entry was written but the kernel still refuses the search")
            granted.add(blocked)
            _grant(blocked, uid)
        except OSError as exc:
            raise RuntimeError(
                f"PostgreSQL runs as uid {uid} (it refuses root) and cannot reach {blocked}, and granting that user "
                f"alone search there failed ({exc}): run the stack as a normal user, or use a data dir under "
                "directories that user can search") from exc
        log.warning("stack.granted_search", path=str(blocked), uid=uid)
        dirs = dirs[dirs.index(blocked):]
