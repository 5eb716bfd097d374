"""Dramatiq actors: project on wake-up, and ingest events enqueued by producers.

Ingest never drops a message. A message that cannot be appended as it is (bad input, a conflict no retry
resolves) is dead-lettered at once with its reason (workers/ingest_dead_letters.py); a lost race is retried
MAX_CONFLICT_RETRIES times, an unexpected error MAX_ERROR_RETRIES times, and then dead-lettered; while the
database is unavailable the message is retried without a limit (it stays queued in Redis).
"""

from __future__ import annotations

import time
from typing import Any

import dramatiq
import structlog
from sqlalchemy import Engine

from domain.errors import ConcurrencyConflict, DomainError
from eventstore.horizon import horizon_and_head
from eventstore.progress import Standing, standings
from infra.broker import broker  # noqa: F401 - binds the actors below to the configured broker
from infra.db import get_engine, reading
from infra.db_errors import is_unavailable
from infra.settings import get_settings
from infra.wake import PROJECTIONS_QUEUE, RUN_PROJECTIONS_ACTOR, wake_taken
from projections.base import Projector
from projections.partitions import Partition
from workers.ingest_dead_letters import append_message, park

log = structlog.get_logger(__name__)

MAX_CONFLICT_RETRIES = 20
MAX_ERROR_RETRIES = 5


def catch_up_all(max_seconds: float = 60.0) -> int:
    """Catch every projector up, each on its own: one that fails stops only itself (logged), never the others.
    Each in the partitions this worker is configured with (settings.workers.projection_partitions), shared with the
    other workers batch by batch (projections/partitions.py).

    In rounds, one batch per partition each, with one statement before every round telling which projectors have
    events of their types after a checkpoint (eventstore/progress.py standings): a wake-up follows every append,
    and most appends concern a few of the projectors (a recall's hit-log event, six of fifteen), so the others are
    passed over (unless their partitions are to be split anew), and a projector that applied its events is not
    run again only to find nothing. A projector whose batch applied nothing (its first event failing, or another
    runner holding it) waits for the next wake-up, as it did.

    The due projectors that are one whole partition each (one worker) go in one transaction a round, the log read
    once for all of them (projections/round.py); the others, and all of a round that failed, batch by batch."""
    from projections.registry import PROJECTORS
    from projections.round import run_round
    from projections.runner import applying_one_at_a_time, catch_up

    settings = get_settings()
    engine = get_engine()
    batch, wanted = settings.projections.projection_batch_size, settings.workers.projection_partitions
    deadline = time.monotonic() + max_seconds
    applied = 0
    due = list(PROJECTORS.values())
    while due:
        standing, horizon = _standings(engine, due)
        runnable = [p for p in due if not _passed_over(standing.get(p.name), wanted)]
        together = [p for p in runnable if horizon is not None and _one_whole(standing.get(p.name), wanted)
                    and not applying_one_at_a_time(p.name)]
        progressed: list[Projector] = []
        if together and horizon is not None:
            try:
                done = run_round(engine, together, batch, horizon)
            except Exception as exc:  # nothing of the round kept: its projectors go batch by batch below
                log.warning("projection.round_failed", projections=[p.name for p in together], error=str(exc)[:500],
                            unavailable=is_unavailable(exc))
            else:
                applied += sum(done.applied.values())
                # asked again, as a batch that applied events is: a wake-up taken by a catch-up that a concurrent
                # one held off, or events its horizon held back, are read in the next round, under a later horizon
                progressed += [p for p in together if done.applied.get(p.name)]
                # the ones past the round's read go batch by batch now, from their own checkpoints
                runnable = [p for p in runnable if p not in together or p.name in done.unread]
        for projector in runnable:
            found = standing.get(projector.name)
            # the rows in force, read with the standings: the layout is not read again
            in_force = found is not None and found.partitions == {wanted} and found.stored
            layout = [Partition(i, wanted) for i in range(wanted)] if in_force else None
            try:
                n = catch_up(engine, projector, batch, deadline - time.monotonic(), wanted, max_batches=1,
                             layout=layout, below=horizon)
            except Exception as exc:
                log.warning("projection.catch_up_failed", projection=projector.name, error=str(exc)[:500],
                            unavailable=is_unavailable(exc))
                continue
            applied += n
            if n:
                progressed.append(projector)
        if time.monotonic() >= deadline:
            break
        due = progressed
    return applied


def _passed_over(found: Standing | None, wanted: int) -> bool:
    """Nothing to do: no event of its types after its checkpoint, and no partitions to split anew."""
    return found is not None and found.partitions == {wanted} and not found.ahead


def _one_whole(found: Standing | None, wanted: int) -> bool:
    """Laid out as one whole partition, as this worker wants it: its batch can go in a round (projections/round.py)."""
    return wanted == 1 and found is not None and found.stored and found.partitions == {1}


def _standings(engine: Engine, projectors: list[Projector]) -> tuple[dict[str, Standing], int | None]:
    """Where each of `projectors` stands, and the log's horizon read just before, which the round's reads share
    (one look at pg_locks a round, not one a batch: eventstore/read.py read_after); none known when a statement
    fails (each projector is then tried, and fails or not on its own, reading its own horizon)."""
    try:
        with reading(engine) as conn:  # autocommit: no ROLLBACK to make psycopg forget what it prepared
            horizon, _ = horizon_and_head(conn)
            return standings(conn, {p.name: p.types for p in projectors}), horizon
    except Exception as exc:
        log.warning("projection.standings_failed", error=str(exc)[:500], unavailable=is_unavailable(exc))
        return {}, None


@dramatiq.actor(queue_name=PROJECTIONS_QUEUE, actor_name=RUN_PROJECTIONS_ACTOR, max_retries=0,
                time_limit=10 * 60 * 1000)
def run_projections() -> None:
    """Wake-up (sent by infra/wake.py after an append, unless one is pending): apply whatever the projections have
    not applied yet."""
    wake_taken()  # first, before the log is read: an append committed after this sends a wake-up of its own
    applied = catch_up_all()
    if applied:
        log.info("projections.caught_up", applied=applied)


def _retry_ingest(retries: int, exc: BaseException) -> bool:
    """Which failures of an ingest message are tried again (the rest go to ingest_dead_letters, via
    `park_exhausted_ingest`). Refusals never reach here: the actor dead-letters them itself."""
    if is_unavailable(exc):
        return True  # nothing can be written meanwhile, the dead-letter table included: keep it queued
    if isinstance(exc, ConcurrencyConflict) and exc.retryable:
        return retries < MAX_CONFLICT_RETRIES
    return retries < MAX_ERROR_RETRIES


def _retry_parking(retries: int, exc: BaseException) -> bool:
    return is_unavailable(exc) or retries < MAX_ERROR_RETRIES  # past that, Dramatiq's own dead-letter queue keeps it


@dramatiq.actor(queue_name="ingest", retry_when=_retry_parking, min_backoff=500, max_backoff=60_000)
def park_exhausted_ingest(message: dict[str, Any], retry_info: dict[str, Any]) -> None:
    """An ingest message whose retries are exhausted: dead-lettered with the last error (retried itself while the
    database is down)."""
    args = list(message.get("args") or [None, None, None])
    tenant, events, metadata = (args + [None, None, None])[:3]
    trace = str((message.get("options") or {}).get("traceback") or "").strip().splitlines()
    reason = f"retries exhausted ({retry_info.get('retries')}): {trace[-1] if trace else 'unknown error'}"
    park(get_engine(), tenant, events, metadata, reason, "RetriesExhausted")


@dramatiq.actor(queue_name="ingest", retry_when=_retry_ingest, min_backoff=500, max_backoff=60_000,
                on_retry_exhausted=park_exhausted_ingest.actor_name)
def ingest_events(tenant: str, events: list[dict[str, Any]], metadata: dict[str, Any]) -> list[int]:
    """Append events a producer enqueued. Each carries an idempotency key, so redelivery never duplicates."""
    structlog.contextvars.bind_contextvars(correlation_id=(metadata or {}).get("correlation_id")
                                           if isinstance(metadata, dict) else None)
    try:
        try:
            positions = append_message(get_engine(), tenant, events, metadata)
        except DomainError as exc:
            if isinstance(exc, ConcurrencyConflict) and exc.retryable:
                raise  # a lost race: decided again against the new state
            park(get_engine(), tenant, events, metadata, str(exc), type(exc).__name__)
            return []
        log.info("ingest.appended", tenant=tenant, events=len(events), last_position=positions[-1])
        return positions
    finally:
        structlog.contextvars.unbind_contextvars("correlation_id")
