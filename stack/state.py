"""The running stack's state file (`stack.json` in the data dir): written by `engramlog up`, read by the CLI.

The CLI sends its API key to the recorded `api_url` and opens the recorded database, and the default data dir is
relative to the current directory, so a `stack.json` is trusted only when this user owns it, the `up` that wrote
it still runs (its pid is alive and holds the data dir's lock) and the API it names is on this machine.
"""

from __future__ import annotations

import fcntl
import json
import os
import stat
from pathlib import Path
from typing import Any

import psutil

from infra.loopback import is_local_url
from infra.settings import STACK_STATE_FILE, read_stack_state

LOCK_FILE = "up.lock"


def write_stack_state(data_dir: Path, state: dict[str, Any]) -> None:
    """Atomically, readable by this user only."""
    path = data_dir / STACK_STATE_FILE
    scratch = data_dir / f".{STACK_STATE_FILE}.{os.getpid()}"
    fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(state, f, indent=2)
    os.replace(scratch, path)


def pid_alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:
        return True  # exists, but is not ours to inspect


def lock_is_held(data_dir: Path) -> bool:
    """Whether an `up` holds the data dir's lock (it does for its whole life)."""
    try:
        with open(data_dir / LOCK_FILE) as f:
            try:
                fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(f, fcntl.LOCK_UN)
            return False
    except OSError:
        return False


def stack_state_problem(data_dir: Path) -> str | None:
    """Why the data dir's `stack.json` must not be used, or None (also when there is none)."""
    path = data_dir / STACK_STATE_FILE
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return f"{path} is not a regular file; refusing to use it"
    if st.st_uid != os.geteuid():
        return f"{path} belongs to uid {st.st_uid}, not to you; refusing to use it"
    state = read_stack_state(data_dir)
    if not isinstance(state, dict):
        return f"{path} is unreadable; remove it (it is rewritten by `engramlog up`)"
    pid = state.get("pid")
    if not isinstance(pid, int) or not pid_alive(pid) or not lock_is_held(data_dir):
        return (f"{path} is stale: the `engramlog up` that wrote it (pid {pid}) is not running. Start the stack "
                f"with `engramlog up`, or remove the file")
    api_url = state.get("api_url")
    if api_url and not is_local_url(str(api_url)):
        return (f"{path} points at an API on another machine ({api_url}); refusing to send it requests and your "
                "API key. Remove the file, or run the CLI from a data dir you started")
    return None
