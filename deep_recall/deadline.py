"""The hard outer timeout, enforced while something is running, not only between steps: a host call (a live API,
a model completion) is waited for at most until the deadline, and a sandbox block's worker is killed at it.

A host call runs in a thread of its own and is abandoned at the deadline (it finishes in the background: a read
ends on its own, a search still appends its hit-log event, which names the deep recall as its causation). A
block has no host step to stop at while it computes, so the only way to end it on time is to end its worker
process: the pool replaces the worker, and the session's variables are lost with it.

The API's stop (SIGTERM, SIGINT: api/app.py) is every running deep recall's deadline at once: waits end, running
blocks' workers are killed, and each deep recall answers "timeout" and is audited, so a stop is never held up.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import signal
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

import structlog

log = structlog.get_logger(__name__)
T = TypeVar("T")
WAIT_SLICE_S = 0.25  # a wait re-checks the API's stop this often
_stop = threading.Event()
_on_stop: list[Callable[[], None]] = []
_watchdogs: weakref.WeakSet[WorkerWatchdog] = weakref.WeakSet()
_registry_lock = threading.Lock()


def stopping() -> bool:
    """True once the API is stopping: every deep recall's deadline has passed."""
    return _stop.is_set()


def wake_on_stop(callback: Callable[[], None]) -> None:
    """Call `callback` when the API stops (a waiter's condition to notify)."""
    with _registry_lock:
        _on_stop.append(callback)


def stop_all() -> None:
    """The API is stopping: end every deep recall now (waits end, running blocks' workers are killed)."""
    _stop.set()
    with _registry_lock:
        callbacks, dogs = list(_on_stop), list(_watchdogs)
    for callback in callbacks:
        callback()
    for dog in dogs:
        dog.fire_now()
    log.info("deep_recall.stopped_all", blocks=len(dogs))


def stop_on_signals() -> None:
    """Chain stop_all before the server's own SIGTERM/SIGINT handlers (uvicorn's, installed before the app starts),
    so that its graceful shutdown never waits for a deep recall to run out its deadline. Main thread only."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, signal.SIGINT):
        previous = signal.getsignal(sig)

        def handler(signum: int, frame: Any, previous: Any = previous) -> None:
            stop_all()
            if callable(previous):
                previous(signum, frame)
            elif previous == signal.SIG_DFL:
                signal.signal(signum, signal.SIG_DFL)
                signal.raise_signal(signum)

        signal.signal(sig, handler)


def left_s(deadline: float) -> float:
    """Seconds left before `deadline` (time.monotonic()); none once the API is stopping."""
    return 0.0 if _stop.is_set() else deadline - time.monotonic()


class HardTimeout(TimeoutError):
    """The deep recall's hard timeout passed while a call or a block was still running."""


def call_within(deadline: float, call: Callable[[], T], what: str) -> T:
    """`call()`'s answer, or HardTimeout when it is still running at `deadline` (time.monotonic())."""
    left = left_s(deadline)
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
    while not done.wait(min(WAIT_SLICE_S, max(0.0, left_s(deadline)))):
        if left_s(deadline) <= 0:
            log.info("deep_recall.call_abandoned", what=what, waited_s=round(left, 3))
            raise HardTimeout(f"{what} was still running at the deep recall's hard timeout and was abandoned")
    if "error" in box:
        raise box["error"]
    return box["value"]


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
            with _registry_lock:
                _watchdogs.add(self)
            self._timer.start()
            if _stop.is_set():  # the API began stopping meanwhile
                self.fire_now()

    def fire_now(self) -> None:
        self._timer.cancel()
        self._fire()

    def _fire(self) -> None:
        with self._lock:
            if not self._armed or self.pid is None:  # armed only with a pid
                return
            self._armed, self.fired = False, True
            with contextlib.suppress(ProcessLookupError):  # it died on its own meanwhile
                os.kill(self.pid, signal.SIGKILL)
        log.info("deep_recall.block_stopped_at_deadline", pid=self.pid)

    def disarm(self) -> None:
        with self._lock:
            self._armed = False
        self._timer.cancel()


__all__ = ["HardTimeout", "WorkerWatchdog", "call_within", "left_s", "stop_all", "stop_on_signals", "stopping",
           "wake_on_stop"]
