"""How many deep recalls run at once, and the sandbox workers they share, so that none can stall the others.

Admission: a deep recall runs only while its tenant has fewer than deep_tenant_concurrent running, in this process
and across every API process on the database (a slot: a PostgreSQL session advisory lock on (the tenant, slot i),
held over a connection of its own while it runs; the server frees it when that connection ends, so a crashed
process frees its slots), and the process fewer than deep_concurrent; beyond either it is refused at once with a
429 naming the limit. Admitted ones
run in deep recall's own threads, never in the threadpool the other routes share, and their searches take turns
(deep_search_concurrent at once), so a burst of deep recalls leaves the CPU to the other routes' recalls.

Sandbox workers: a deep recall of max_depth d reserves d workers before its loop starts, one per nesting level
(the root loop is level 0; a nested mini-loop opened by llm_query at level i runs at level i + 1). A loop takes its
level's reserved worker, or a spare one when its level's is in use by a sibling (parallel sub-calls), or else waits
for its level's: only for a sibling at the same level, which waits on nothing its waiter holds. So no loop ever
waits on capacity its parent holds, and every wait ends at the deep recall's hard deadline at the latest.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import hashlib
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from sqlalchemy import Engine, create_engine, text
from sqlalchemy.pool import NullPool

from deep_recall.deadline import HardTimeout, stopping, wake_on_stop
from domain.errors import TooManyRequests
from infra.settings import Settings

WAIT_SLICE_S = 0.25  # a wait re-checks the API's stop this often
T = TypeVar("T")


class Workers:
    """The process's sandbox workers, counted: `take` waits (until a deadline) for n free at once."""

    def __init__(self, total: int) -> None:
        self.total, self.in_use = total, 0
        self._cond = threading.Condition()
        wake_on_stop(self._wake)

    def _wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def take(self, n: int, deadline: float | None) -> bool:
        """Take n workers; False when they are not free by `deadline` (None: do not wait) or the API is stopping."""
        with self._cond:
            while self.total - self.in_use < n:
                left = 0.0 if deadline is None else deadline - time.monotonic()
                if left <= 0 or stopping():
                    return False
                self._cond.wait(min(left, WAIT_SLICE_S))
            self.in_use += n
            return True

    def give(self, n: int) -> None:
        with self._cond:
            self.in_use -= n
            self._cond.notify_all()


class Reservation:
    """One deep recall's workers: one per nesting level, and the spares its parallel sub-calls borrowed."""

    def __init__(self, workers: Workers, levels: int, deadline: float) -> None:
        self.workers, self.levels, self.deadline = workers, levels, deadline
        self._level_locks = [threading.Lock() for _ in range(levels)]

    @contextlib.contextmanager
    def slot(self, level: int) -> Iterator[None]:
        """A worker for one loop at `level` while it runs; HardTimeout when none is free by the deadline."""
        lock = self._level_locks[min(level, self.levels - 1)]
        if lock.acquire(blocking=False):
            try:
                yield
            finally:
                lock.release()
            return
        if self.workers.take(1, None):  # a spare, without waiting: a sibling holds this level's
            try:
                yield
            finally:
                self.workers.give(1)
            return
        while True:  # the level's own worker, once the sibling holding it is done
            left = self.deadline - time.monotonic()
            if left <= 0 or stopping():
                raise HardTimeout("no sandbox worker was free for this sub-call before the deep recall's hard "
                                  "timeout (parallel sub-calls at this depth share one): call FINAL now")
            if lock.acquire(timeout=min(left, WAIT_SLICE_S)):
                break
        try:
            yield
        finally:
            lock.release()


@contextlib.contextmanager
def searching(settings: Settings, deadline: float) -> Iterator[None]:
    """One of deep recall's searches while it runs (at most deep_search_concurrent at once); HardTimeout when none
    is free by `deadline`."""
    global _searches
    with _lock:
        if _searches is None:
            _searches = Workers(settings.deep.deep_search_concurrent)
        lanes = _searches
    if not lanes.take(1, deadline):
        raise HardTimeout("the deep recall's hard timeout passed while its search waited for its turn")
    try:
        yield
    finally:
        lanes.give(1)


_workers: Workers | None = None
_searches: Workers | None = None
_running: Counter[str] = Counter()
_threads: ThreadPoolExecutor | None = None
_lock = threading.Lock()


def workers(settings: Settings) -> Workers:
    global _workers
    with _lock:
        if _workers is None:
            _workers = Workers(settings.deep.deep_sandbox_workers)
        return _workers


@contextlib.contextmanager
def reserve(settings: Settings, levels: int, deadline: float) -> Iterator[Reservation]:
    """`levels` workers for one deep recall until it ends; HardTimeout when they are not free by `deadline`."""
    pool = workers(settings)
    if not pool.take(levels, deadline):
        raise HardTimeout(f"no {levels} sandbox worker(s) were free before the hard timeout ({pool.in_use} of "
                          f"{pool.total} in use: ENGRAMLOG_DEEP_SANDBOX_WORKERS)")
    try:
        yield Reservation(pool, levels, deadline)
    finally:
        pool.give(levels)


def _admit(settings: Settings, tenant: str) -> Callable[[], None]:
    """Count one running deep recall of `tenant` (answers its release), or refuse it beyond a limit (429)."""
    with _lock:
        if _running[tenant] >= settings.deep.deep_tenant_concurrent:
            raise TooManyRequests(f"{_running[tenant]} deep recalls of this tenant are running already, the most "
                                  f"at once (ENGRAMLOG_DEEP_TENANT_CONCURRENT={settings.deep.deep_tenant_concurrent}); "
                                  "retry when one has answered")
        if sum(_running.values()) >= settings.deep.deep_concurrent:
            raise TooManyRequests(f"{sum(_running.values())} deep recalls are running on this server already, the "
                                  f"most at once (ENGRAMLOG_DEEP_CONCURRENT={settings.deep.deep_concurrent}); retry")
        _running[tenant] += 1

    def release() -> None:
        with _lock:
            _running[tenant] -= 1
            if _running[tenant] <= 0:
                del _running[tenant]

    return release


_TRY_SLOT = text("SELECT pg_try_advisory_lock(:key)")
_slot_engines: dict[str, Engine] = {}


def _slot_key(tenant: str, slot: int) -> int:
    """A signed 64-bit advisory lock key of (tenant, slot), apart from the other advisory locks' by its prefix."""
    digest = hashlib.sha256(f"engramlog:deep-recall-slot:{tenant}:{slot}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _slots_engine(engine: Engine) -> Engine:
    """Connections of their own, never pooled: closing one ends its session, which frees its locks (a pooled
    connection would carry them on to its next user)."""
    url = engine.url.render_as_string(hide_password=False)
    with _lock:
        if url not in _slot_engines:
            _slot_engines[url] = create_engine(engine.url, poolclass=NullPool)
        return _slot_engines[url]


@contextlib.contextmanager
def tenant_slot(engine: Engine, settings: Settings, tenant: str) -> Iterator[None]:
    """One of the tenant's deep_tenant_concurrent slots across processes while the block runs (429 when every
    one is held). AUTOCOMMIT: the held connection is idle, not idle in a transaction."""
    conn = _slots_engine(engine).connect().execution_options(isolation_level="AUTOCOMMIT")
    try:
        held = next((slot for slot in range(settings.deep.deep_tenant_concurrent)
                     if conn.execute(_TRY_SLOT, {"key": _slot_key(tenant, slot)}).scalar_one()), None)
        if held is None:
            raise TooManyRequests(f"{settings.deep.deep_tenant_concurrent} deep recalls of this tenant are running "
                                  "already across the API's processes, the most at once (ENGRAMLOG_DEEP_TENANT_"
                                  f"CONCURRENT={settings.deep.deep_tenant_concurrent}); retry when one has answered")
        yield
    finally:
        conn.close()  # the session ends: its slot is free


def _executor(settings: Settings) -> ThreadPoolExecutor:
    global _threads
    with _lock:
        if _threads is None:  # admission keeps its queue empty: at most deep_concurrent run at once
            _threads = ThreadPoolExecutor(max_workers=settings.deep.deep_concurrent, thread_name_prefix="deep-recall")
        return _threads


async def run_admitted(settings: Settings, engine: Engine, tenant: str, call: Callable[[], T]) -> T:
    """`call()` run as one admitted deep recall of `tenant`, in deep recall's own threads: never in the threadpool
    the other routes share, so no number of deep recalls can hold theirs. It counts (and holds its tenant's slot
    on `engine`'s database) until `call` returns, even when the client went away meanwhile."""
    release = _admit(settings, tenant)
    context = contextvars.copy_context()  # the request's log context follows it

    def job() -> T:
        try:
            with tenant_slot(engine, settings, tenant):
                return context.run(call)
        finally:
            release()

    try:
        future = _executor(settings).submit(job)
    except BaseException:
        release()
        raise
    return await asyncio.wrap_future(future)


__all__ = ["Reservation", "Workers", "reserve", "run_admitted", "searching", "tenant_slot", "workers"]
