"""The hard outer timeout, enforced while something is running, not only between steps: a host call (a live API,
a model completion) is waited for at most until the deadline, and a sandbox block's worker is killed at it.

A host call runs in a thread of its own and is abandoned at the deadline (it finishes in the background: a read
ends on its own, a search still appends its hit-log event, which names the deep recall as its causation). A
block has no host step to stop at while it computes, so the only way to end it on time is to end its worker
process: the pool replaces the worker, and the session's variables are lost with it.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import structlog

log = structlog.get_logger(__name__)
T = TypeVar("T")


class HardTimeout(TimeoutError):
    """The deep recall's hard timeout passed while a call or a block was still running."""


def call_within(deadline: float, call: Callable[[], T], what: str) -> T:
    """`call()`'s answer, or HardTimeout when it is still running at `deadline` (time.monotonic())."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise HardTimeout(f"the deep recall's hard timeout has passed: no more {what}; call FINAL now")
    box: dict[str, Any] = {}
    done = threading.Event()
    context = contextvars.copy_context()  # the request's log context follows the call

    def target() -> None:
        try:
            box["value"] = context.run(call)
        except BaseException as exc:  # handed to the waiting thread as it is
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=target, name=f"deep-recall-{what}", daemon=True).start()
    if not done.wait(left):
        log.info("deep_recall.call_abandoned", what=what, waited_s=round(left, 3))
        raise HardTimeout(f"{what} was still running at the deep recall's hard timeout and was abandoned")
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


class WorkerWatchdog:
    """Kills a sandbox worker process if it is still running a block at the deadline. Disarmed (under the lock)
    as soon as the block returns, so a worker that finished in time is never touched."""

    def __init__(self, pid: int | None, deadline: float) -> None:
        self.pid, self.fired = pid, False
        self._lock = threading.Lock()
        self._armed = pid is not None
        self._timer = threading.Timer(max(0.0, deadline - time.monotonic()), self._fire)
        self._timer.daemon = True
        if self._armed:
            self._timer.start()

    def _fire(self) -> None:
        with self._lock:
            if not self._armed:
                return
            self._armed, self.fired = False, True
            with contextlib.suppress(ProcessLookupError):  # it died on its own meanwhile
                os.kill(self.pid, signal.SIGKILL)  # type: ignore[arg-type]
        log.info("deep_recall.block_stopped_at_deadline", pid=self.pid)

    def disarm(self) -> None:
        with self._lock:
            self._armed = False
        self._timer.cancel()


__all__ = ["HardTimeout", "WorkerWatchdog", "call_within"]
