"""A bound on how long a projector's apply may run in its thread (settings.projections.projection_event_timeout_s).

Past the bound, ApplyTimeExceeded is raised in the applying thread at its next Python instruction, as Dramatiq's
own actor time limit does (PyThreadState_SetAsyncExc). A statement the thread waits on in the database is
bounded by the connection's statement_timeout instead (infra/db.py): the exception lands once it returns.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from dramatiq.middleware.time_limit import TimeLimitExceeded as ActorTimeLimitExceeded


class ApplyTimeExceeded(Exception):
    def __init__(self, seconds: float = 0.0) -> None:  # raised as a class by the timer: no argument
        super().__init__(f"applying took longer than {seconds:g} s (ENGRAMLOG_PROJECTION_EVENT_TIMEOUT_S)")
        self.seconds = seconds


# Either bound: ours, or the Dramatiq actor's (a BaseException, which `except Exception` never sees).
OVER_TIME: tuple[type[BaseException], ...] = (ApplyTimeExceeded, ActorTimeLimitExceeded)


def in_chain(exc: BaseException, kinds: tuple[type[BaseException], ...]) -> BaseException | None:
    """The exception of `kinds` that `exc` is, or was raised while handling (a rollback failing after it), or None."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kinds):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def over_time(exc: BaseException) -> BaseException | None:
    """The time limit `exc` is, or was raised while handling (a savepoint's rollback failing after it), or None."""
    return in_chain(exc, OVER_TIME)


def _set_async(thread_id: int, exc: type[BaseException] | None) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(exc) if exc else None)


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Run the block for at most `seconds`; over it, the block ends with ApplyTimeExceeded (whatever else it was
    raising then). A block that ends in time never sees a late one: the pending exception is cleared."""
    thread_id, lock = threading.get_ident(), threading.Lock()
    state = {"done": False, "fired": False}

    def fire() -> None:
        with lock:
            if not state["done"]:
                state["fired"] = True
                _set_async(thread_id, ApplyTimeExceeded)

    def stop() -> bool:
        with lock:
            state["done"] = True
            timer.cancel()
            if state["fired"]:
                _set_async(thread_id, None)  # one set but not yet raised
        return state["fired"]

    timer = threading.Timer(seconds, fire)
    timer.daemon = True
    try:
        timer.start()  # inside: a short bound may fire before start() returns
        yield
    except BaseException as exc:
        if stop() and not isinstance(exc, ApplyTimeExceeded):
            raise ApplyTimeExceeded(seconds) from exc
        if isinstance(exc, ApplyTimeExceeded):
            raise ApplyTimeExceeded(seconds) from None  # the raised class carries no bound; this one does
        raise
    if stop():
        raise ApplyTimeExceeded(seconds)


__all__ = ["OVER_TIME", "ActorTimeLimitExceeded", "ApplyTimeExceeded", "in_chain", "over_time", "time_limit"]
