"""Read-your-writes on every read route: `min_position` (a position some write answered) makes the read wait,
bounded by ENGRAMLOG_MIN_POSITION_WAIT_S, until the read models of the domains it reads have applied the caller's
tenant's events up to it (here, the one mechanism: each read model's checkpoint, projections/runner.py
has_reached; each domain names its read models in recall/domains/, recall waits for recall/consistency.py's
READ_MODELS). A route declares what it reads by the domain's class: `dependencies=[reads(SessionsDomain)]`
(`waits_for(name)` for a read model outside the domains); a body-carried min_position (the recall and deep
recall routes) calls `await_read_models` itself.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from typing import Annotated, Any

from fastapi import Depends, Query
from sqlalchemy import Engine
from starlette.concurrency import run_in_threadpool

from api.context import Caller, caller, engine
from api.schemas import MAX_POSITION, MinPosition
from domain.errors import NotCaughtUp
from infra.db import reading
from infra.settings import get_settings
from projections.registry import PROJECTORS
from projections.runner import has_reached
from recall.consistency import READ_MODELS, refuse_beyond_head
from recall.domains import registry
from recall.domains.base import RecallDomain

_POLL_S = 0.05


def pending(engine: Engine, position: int, names: tuple[str, ...] = READ_MODELS,
            tenant: str | None = None) -> list[str]:
    """The read models among `names` that have not applied `position` yet (with `tenant`: that tenant's events
    up to it)."""
    with reading(engine) as conn:
        return [name for name in names if not has_reached(conn, PROJECTORS[name], position, tenant)]


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


def read_models_of(domains: Iterable[str] = ()) -> tuple[str, ...]:
    """The projections that feed the given recall domains (none given: every domain), each once, in order."""
    asked = tuple(domains) or tuple(registry.DOMAINS)
    return tuple(dict.fromkeys(name for d in asked for name in registry.get_domain(d).read_models))


def _pending_after_head_check(db: Engine, tenant: str, min_position: int, names: tuple[str, ...]) -> list[str]:
    """min_position beyond the log's head: 422; else the read models that have not applied it yet."""
    refuse_beyond_head(db, min_position, "min_position", tenant)  # the tenant's own head, never the log's
    return pending(db, min_position, names, tenant)


async def await_read_models(db: Engine, tenant: str, min_position: int | None, names: tuple[str, ...]) -> None:
    """One threadpool hop when the read models have already applied the position (the usual case); the bounded
    wait on the event loop, holding no thread, only when they have not."""
    if min_position is None:
        return
    if await run_in_threadpool(_pending_after_head_check, db, tenant, min_position, names):
        settings = get_settings()
        await await_recallable(db, min_position, settings.api.min_position_wait_s, settings.api.max_position_waiters,
                               names, tenant)


def reads(*domains: type[RecallDomain]) -> Any:
    """The route dependency for a read of `domains`, named by their classes (none: every domain): its
    `min_position` query parameter, awaited before the route runs (a sync route then runs in the threadpool as
    before)."""
    return waits_for(*read_models_of(registry.domain_of(d).name for d in domains))


def waits_for(*names: str) -> Any:
    """The route dependency for a read of the read models `names` themselves (a read outside the recall domains:
    GET /v1/blind_spots reads deep recall's): its `min_position` query parameter, awaited as `reads` does."""

    async def wait(who: Annotated[Caller, Depends(caller)], db: Annotated[Engine, Depends(engine)],
                   min_position: Annotated[MinPosition, Query()] = None) -> None:
        await await_read_models(db, who.tenant, min_position, names)

    return Depends(wait)


__all__ = ["MAX_POSITION", "MinPosition", "await_position", "await_read_models", "await_recallable", "pending",
           "read_models_of", "reads", "wait_for_position", "waits_for"]
