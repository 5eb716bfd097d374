"""What `engramlog up` starts dies with it, even when `up` itself is SIGKILLed: each child asks the kernel, between
fork and exec, for a signal when its parent exits (prctl PR_SET_PDEATHSIG), after any change of user (which
clears it); a child whose parent is already gone by then signals itself. The Dramatiq master's worker processes
ask the same of the master (workers/main.py, when ENV is set), the API's sandbox workers exit with the API on
their own, and PostgreSQL's backends with the postmaster. Linux only; elsewhere a no-op (up's own stop remains).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
from collections.abc import Callable

ENV = "ENGRAMLOG_DIE_WITH_PARENT"  # set in the environment of up's children
PR_SET_PDEATHSIG = 1
# Resolved in the parent, before any fork: a child between fork and exec loads nothing.
_prctl = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None


def die_with_parent(sig: int, parent: int) -> None:
    """Have `sig` delivered to this process when its parent `parent` (a pid) exits."""
    if _prctl is None:
        return
    _prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    if os.getppid() != parent:  # it exited before we asked
        os.kill(os.getpid(), sig)


def preexec(sig: int, before: Callable[[], None] | None = None) -> Callable[[], None]:
    """A preexec_fn: `before()` (a change of user, a new session), then `sig` when the calling process exits."""
    parent = os.getpid()

    def run() -> None:
        if before is not None:
            before()
        die_with_parent(sig, parent)

    return run


def follow_caller() -> None:
    """For a program that starts servers itself (a bench, `make fuzz`): SIGTERM when its caller exits (make, a
    shell), and SIGTERM (make forwards it to its children) unwinds the main thread (SystemExit), so its `finally`
    blocks stop what it started; what they miss still dies with it (its children's own parent-death signals).
    Main thread only; a no-op elsewhere."""
    if threading.current_thread() is not threading.main_thread():
        return

    def unwind(signum: int, _frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends it at once
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, unwind)
    die_with_parent(signal.SIGTERM, os.getppid())


__all__ = ["ENV", "die_with_parent", "follow_caller", "preexec"]
