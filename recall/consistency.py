"""Read-your-writes: whether the read models a read depends on have applied a position (the one mechanism every
read route's `min_position` goes through: api/read_your_writes.py names each route's read models).

Recall waits for `memories` (status, scope) and `keyword` (BM25 postings) only. A memory whose vector is not
projected yet is scored on its keyword leg renormalised to weight 1 (domain/ranking.py) and its result says so,
so the first recall after a large import never waits on the embedder.
"""

from __future__ import annotations

import asyncio
import time

from sqlalchemy import Engine
from starlette.concurrency import run_in_threadpool

from domain.errors import InvalidPayload, NotCaughtUp
from eventstore.read import head_position
from projections.registry import PROJECTORS
from projections.runner import has_reached

READ_MODELS = ("memories", "keyword")
_POLL_S = 0.05


def pending(engine: Engine, position: int, names: tuple[str, ...] = READ_MODELS,
            tenant: str | None = None) -> list[str]:
    """The read models among `names` that have not applied `position` yet (with `tenant`: that tenant's events
    up to it)."""
    with engine.connect() as conn:
        return [name for name in names if not has_reached(conn, PROJECTORS[name], position, tenant)]


def refuse_beyond_head(engine: Engine, position: int, name: str = "position", tenant: str | None = None) -> None:
    """A position the log has not reached was never answered by a write: InvalidPayload (422) now, no wait. With
    `tenant` (every tenant key's read), the log is that tenant's: its head decides and is the one named, so a key
    never learns how far other tenants have written."""
    with engine.connect() as conn:
        head = head_position(conn, tenant)
    if position > head:
        raise InvalidPayload(f"{name} {position} is beyond the log's head ({head}): nothing was written there yet")


def _not_caught_up(names: list[str], position: int, timeout_s: float) -> NotCaughtUp:
    return NotCaughtUp(f"projections {', '.join(names)} have not reached position {position} after {timeout_s:g}s; "
                       "retry shortly")


def wait_for_position(engine: Engine, position: int, timeout_s: float, names: tuple[str, ...] = READ_MODELS,
                      tenant: str | None = None) -> None:
    """Block until the read models `names` (the recall ones by default) have applied `position` (with `tenant`:
    that tenant's events up to it); NotCaughtUp (503) after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while names := tuple(pending(engine, position, names, tenant)):
        if time.monotonic() >= deadline:
            raise _not_caught_up(list(names), position, timeout_s)
        time.sleep(_POLL_S)


_waiting = 0  # requests of this process now waiting for a position (one event loop: no lock needed)


async def await_position(engine: Engine, position: int, timeout_s: float, max_waiters: int,
                         names: tuple[str, ...] = READ_MODELS, tenant: str | None = None) -> list[str]:
    """Like wait_for_position, but sleeps on the event loop, holding no thread (a thousand waiters do not starve
    the threadpool that sync routes, /healthz among them, run on); answers what is still pending (empty once
    recallable) instead of raising. More than `max_waiters` at once: NotCaughtUp (503) at once."""
    global _waiting
    if _waiting >= max_waiters:
        raise NotCaughtUp(f"{_waiting} requests are already waiting for read-your-writes; retry shortly")
    _waiting += 1
    try:
        deadline = time.monotonic() + timeout_s
        while names := tuple(await run_in_threadpool(pending, engine, position, names, tenant)):
            if time.monotonic() >= deadline:
                return list(names)
            await asyncio.sleep(_POLL_S)
        return []
    finally:
        _waiting -= 1


async def await_recallable(engine: Engine, position: int, timeout_s: float, max_waiters: int,
                           names: tuple[str, ...] = READ_MODELS, tenant: str | None = None) -> None:
    """await_position for a read's min_position: NotCaughtUp (503) when the wait runs out."""
    still = await await_position(engine, position, timeout_s, max_waiters, names, tenant)
    if still:
        raise _not_caught_up(still, position, timeout_s)


__all__ = ["READ_MODELS", "await_position", "await_recallable", "pending", "refuse_beyond_head", "wait_for_position"]
