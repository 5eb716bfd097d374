"""Dramatiq actors: project on wake-up, and ingest events enqueued by producers."""

from __future__ import annotations

from typing import Any

import dramatiq
import structlog

from infra.broker import broker  # noqa: F401 - binds the actors below to the configured broker
from infra.db import get_engine
from infra.settings import get_settings

log = structlog.get_logger(__name__)


def catch_up_all() -> int:
    from projections.registry import PROJECTORS
    from projections.runner import catch_up

    engine, batch = get_engine(), get_settings().projection_batch_size
    return sum(catch_up(engine, projector, batch) for projector in PROJECTORS.values())


@dramatiq.actor(queue_name="projections", max_retries=0, time_limit=10 * 60 * 1000)
def run_projections() -> None:
    """Wake-up: apply whatever the projections have not applied yet."""
    applied = catch_up_all()
    if applied:
        log.info("projections.caught_up", applied=applied)


def _retry_transient(retries: int, exc: Exception) -> bool:
    """Retry what may pass later (database or network down); bad input or a conflict never will."""
    from domain.errors import DomainError

    return retries < 20 and not isinstance(exc, DomainError)


@dramatiq.actor(queue_name="ingest", retry_when=_retry_transient, min_backoff=500, max_backoff=30_000)
def ingest_events(tenant: str, events: list[dict[str, Any]], metadata: dict[str, Any]) -> list[int]:
    """Append events a producer enqueued. Each carries an idempotency key, so redelivery never duplicates."""
    from services.append_events import EventInput, append_events

    structlog.contextvars.bind_contextvars(correlation_id=metadata.get("correlation_id"))
    try:
        positions = append_events(get_engine(), tenant, [EventInput(**e) for e in events], metadata)
        log.info("ingest.appended", tenant=tenant, events=len(events), last_position=positions[-1])
        return positions
    finally:
        structlog.contextvars.unbind_contextvars("correlation_id")
