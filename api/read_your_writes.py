"""Read-your-writes on every read route: `min_position` (a position some write answered) makes the read wait,
bounded by ENGRAMLOG_MIN_POSITION_WAIT_S, until the read models of the domains it reads have applied the caller's
tenant's events up to it (recall/consistency.py, the one mechanism; each domain names its read models in
recall/domains/). A route declares what it reads: `dependencies=[reads("sessions")]` (`waits_for(name)` for a
read model outside the domains); a body-carried min_position (the recall and deep recall routes) calls
`await_read_models` itself.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any

from fastapi import Depends, Query
from sqlalchemy import Engine
from starlette.concurrency import run_in_threadpool

from api.context import Caller, caller, engine
from api.schemas import MAX_POSITION, MinPosition
from infra.settings import get_settings
from recall.consistency import await_recallable, pending, refuse_beyond_head
from recall.domains import registry


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
        await await_recallable(db, min_position, settings.min_position_wait_s, settings.max_position_waiters,
                               names, tenant)


def reads(*domains: str) -> Any:
    """The route dependency for a read of `domains`: its `min_position` query parameter, awaited before the
    route runs (a sync route then runs in the threadpool as before)."""
    return waits_for(*read_models_of(domains))


def waits_for(*names: str) -> Any:
    """The route dependency for a read of the read models `names` themselves (a read outside the recall domains:
    GET /v1/blind_spots reads deep recall's): its `min_position` query parameter, awaited as `reads` does."""

    async def wait(who: Annotated[Caller, Depends(caller)], db: Annotated[Engine, Depends(engine)],
                   min_position: Annotated[MinPosition, Query()] = None) -> None:
        await await_read_models(db, who.tenant, min_position, names)

    return Depends(wait)


__all__ = ["MAX_POSITION", "MinPosition", "await_read_models", "read_models_of", "reads", "waits_for"]
