"""Events a projector could not apply: counted per attempt, parked after MAX_EVENT_FAILURES so the projector moves
past them (projections/runner.py), then retried or skipped explicitly by an operator.

A parked event is one the read model does not reflect: `projections status` and `GET /v1/projections` show how
many; `engramlog projections dead-letters` lists them; `retry` applies one (under the projection's lock, after
what the projector has applied since: an operator's explicit choice) and `skip` closes it unapplied.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import structlog
from sqlalchemy import Connection, Engine, text

from domain.events import RecordedEvent
from eventstore.read import event_at
from infra.db_errors import is_statement_limit, is_unavailable
from infra.metrics import PROJECTION_EVENT_FAILURES, PROJECTION_EVENTS_PARKED
from projections.base import Projector
from projections.partitions import EXCLUSIVE, lock_key
from projections.time_limit import in_chain, over_time, time_limit

log = structlog.get_logger(__name__)

MAX_EVENT_FAILURES = 3  # failed attempts of one event before the projector parks it and moves on
MAX_ERROR_CHARS = 2000
OPEN = ("failing", "parked")

_FAILED = text("""
INSERT INTO projection_dead_letters (projection, position, tenant, tx_id, event_id, event_type, error, attempts,
                                     status)
VALUES (:projection, :position, :tenant, CAST(CAST(:tx AS text) AS xid8), :event_id, :type, :error, 1,
        CASE WHEN 1 >= :max THEN 'parked' ELSE 'failing' END)
ON CONFLICT (projection, position) DO UPDATE SET
    error = EXCLUDED.error, attempts = projection_dead_letters.attempts + 1, last_failed_at = clock_timestamp(),
    status = CASE WHEN projection_dead_letters.attempts + 1 >= :max THEN 'parked' ELSE 'failing' END
RETURNING attempts, status
""")
_LIST = text("""
SELECT projection, position, tenant, event_id, event_type, error, attempts, status, first_failed_at,
       last_failed_at, resolved_at, resolved_by
FROM projection_dead_letters
WHERE (CAST(:projection AS text) IS NULL OR projection = :projection)
  AND (CAST(:tenant AS text) IS NULL OR tenant = :tenant)
  AND status = ANY(:statuses)
ORDER BY position, projection
LIMIT :limit
""")
_COUNTS = text("""
SELECT projection, count(*) FILTER (WHERE status = 'parked') AS parked,
       count(*) FILTER (WHERE status = 'failing') AS failing
FROM projection_dead_letters
WHERE status IN ('failing', 'parked') AND (CAST(:tenant AS text) IS NULL OR tenant = :tenant)
GROUP BY projection
""")
_RESOLVE = text("""
UPDATE projection_dead_letters SET status = :status, resolved_at = clock_timestamp(), resolved_by = :by
WHERE projection = :projection AND position = :position AND status = 'parked'
""")
_RETRY_FAILED = text("""
UPDATE projection_dead_letters SET error = :error, attempts = attempts + 1, last_failed_at = clock_timestamp()
WHERE projection = :projection AND position = :position
""")


@dataclass(frozen=True)
class DeadLetter:
    projection: str
    position: int
    tenant: str
    event_id: object
    event_type: str
    error: str
    attempts: int
    status: str
    first_failed_at: datetime
    last_failed_at: datetime
    resolved_at: datetime | None
    resolved_by: str | None


def describe(exc: BaseException) -> str:
    """The error as stored: its class and first line, bounded (a driver error's message carries the SQL)."""
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {first}"[:MAX_ERROR_CHARS].replace("\x00", "")


def record_failure(conn: Connection, projection: str, event: RecordedEvent, exc: BaseException) -> str:
    """Count one failed attempt of `event`; answers its status now: 'failing' (to be tried again) or 'parked'."""
    row = conn.execute(_FAILED, {"projection": projection, "position": event.position, "tenant": event.tenant,
                                 "tx": event.tx_id, "event_id": event.event_id, "type": event.type,
                                 "error": describe(exc), "max": MAX_EVENT_FAILURES}).one()
    PROJECTION_EVENT_FAILURES.labels(projection).inc()
    if row.status == "parked":
        PROJECTION_EVENTS_PARKED.labels(projection).inc()
        log.error("projection.event_parked", projection=projection, position=event.position, tenant=event.tenant,
                  type=event.type, attempts=row.attempts, error=describe(exc))
    else:
        log.warning("projection.event_failed", projection=projection, position=event.position,
                    tenant=event.tenant, type=event.type, attempts=row.attempts, error=describe(exc))
    return str(row.status)


class OverTime(Exception):
    """Applying `events` ran over its time limit. The transaction it ran in is given up (the thread may have been
    stopped anywhere, inside the driver too); the runner counts the attempt in a transaction of its own."""

    def __init__(self, events: Sequence[RecordedEvent], cause: BaseException) -> None:
        super().__init__(describe(cause))
        self.events, self.cause = list(events), cause


def over_time_in(exc: BaseException) -> OverTime | None:
    """The OverTime `exc` is, or was raised while handling (the given-up transaction's rollback failing)."""
    found = in_chain(exc, (OverTime,))
    return found if isinstance(found, OverTime) else None


def _not_the_events(exc: BaseException) -> bool:
    """An unavailable database is no event's fault; a statement over its statement_timeout or the server's
    memory is counted (infra/db_errors.py): retried forever, a deterministic one would hold the projector."""
    return is_unavailable(exc) and not is_statement_limit(exc)


def _apply(conn: Connection, projector: Projector, events: Sequence[RecordedEvent], limit: float | None) -> None:
    try:
        with conn.begin_nested():
            if limit is None:
                projector.apply(conn, events)
            else:
                with time_limit(limit):
                    projector.apply(conn, events)
    except BaseException as exc:
        if (over := over_time(exc)) is not None:
            raise OverTime(events, over) from exc
        raise


# Events that failed before and are now applied (the failure was not the event's): no longer dead letters.
_RECOVERED = text("""
DELETE FROM projection_dead_letters d
USING unnest(CAST(:projections AS text[]), CAST(:positions AS bigint[])) AS b(projection, position)
WHERE d.status = 'failing' AND d.projection = b.projection AND d.position = b.position
""")


def recovered(conn: Connection, applied: Mapping[str, Sequence[RecordedEvent]]) -> None:
    """Each projection's events it has now applied are no longer failing dead letters (one statement for all)."""
    pairs = [(name, e.position) for name, events in applied.items() for e in events]
    if pairs:
        conn.execute(_RECOVERED, {"projections": [n for n, _ in pairs], "positions": [p for _, p in pairs]})


def apply_guarded(conn: Connection, projector: Projector, events: Sequence[RecordedEvent],
                  limit: float | None = None) -> list[RecordedEvent]:
    """Apply `events` in the caller's transaction, each bad one isolated in a savepoint. Answers the events the
    checkpoint may move past: every one applied or parked, up to (not including) the first one that failed but
    is not parked yet. An unavailable database is not an event's fault: that error is raised, nothing counted.
    `limit`: seconds the batch, then each event, may take; over it OverTime is raised (runner.py counts it)."""
    try:
        _apply(conn, projector, events, limit)
        recovered(conn, {projector.name: events})
        return list(events)
    except Exception as exc:
        if isinstance(exc, OverTime) or _not_the_events(exc):
            raise
    done: list[RecordedEvent] = []
    for event in events:  # one at a time: find the bad one(s); projectors give the same result however cut
        try:
            _apply(conn, projector, [event], limit)
        except Exception as exc:
            if isinstance(exc, OverTime) or _not_the_events(exc):
                raise
            if record_failure(conn, projector.name, event, exc) != "parked":
                break
        done.append(event)
    recovered(conn, {projector.name: done})
    return done


def dead_letters(conn: Connection, projection: str | None = None, tenant: str | None = None,
                 statuses: Sequence[str] = OPEN, limit: int = 1000) -> list[DeadLetter]:
    rows = conn.execute(_LIST, {"projection": projection, "tenant": tenant, "statuses": list(statuses),
                                "limit": limit})
    return [DeadLetter(**r._mapping) for r in rows]


def open_counts(conn: Connection, tenant: str | None = None) -> dict[str, tuple[int, int]]:
    """(parked, failing) per projection; of one tenant's events when `tenant` is given."""
    return {r.projection: (r.parked, r.failing) for r in conn.execute(_COUNTS, {"tenant": tenant})}


@dataclass(frozen=True)
class Resolution:
    projection: str
    position: int
    outcome: str  # retried | skipped | failed (still parked, error updated) | not_parked
    error: str | None = None


def retry(engine: Engine, projector: Projector, position: int, by: str) -> Resolution:
    """Apply one parked event now, under the projection's lock. Applied: 'retried'. Failed again: still parked,
    with the new error."""
    with engine.begin() as conn:
        conn.execute(EXCLUSIVE, {"key": lock_key(projector.name)})
        if not _is_parked(conn, projector.name, position):
            return Resolution(projector.name, position, "not_parked")
        event = event_at(conn, position)
        if event is None:  # the log never loses an event; kept for a hand-edited table
            return Resolution(projector.name, position, "not_parked")
        try:
            with conn.begin_nested():
                projector.apply(conn, [event])
        except Exception as exc:
            if _not_the_events(exc):
                raise
            conn.execute(_RETRY_FAILED, {"projection": projector.name, "position": position,
                                         "error": describe(exc)})
            return Resolution(projector.name, position, "failed", describe(exc))
        conn.execute(_RESOLVE, {"projection": projector.name, "position": position, "status": "retried", "by": by})
    log.info("projection.dead_letter_retried", projection=projector.name, position=position, by=by)
    return Resolution(projector.name, position, "retried")


def skip(engine: Engine, projector: Projector, position: int, by: str) -> Resolution:
    """Close a parked event without applying it (the read model stays without it, by an operator's decision)."""
    with engine.begin() as conn:
        done = conn.execute(_RESOLVE, {"projection": projector.name, "position": position, "status": "skipped",
                                       "by": by}).rowcount
    if done:
        log.info("projection.dead_letter_skipped", projection=projector.name, position=position, by=by)
    return Resolution(projector.name, position, "skipped" if done else "not_parked")


_PARKED = text("""
SELECT 1 FROM projection_dead_letters WHERE projection = :projection AND position = :position AND status = 'parked'
""")


def _is_parked(conn: Connection, projection: str, position: int) -> bool:
    return conn.execute(_PARKED, {"projection": projection, "position": position}).first() is not None
