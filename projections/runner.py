"""Runs projectors: each batch and its checkpoint commit in one transaction, under an advisory lock.

Each event is applied in a savepoint when its batch fails (projections/dead_letters.py): the bad event is retried
on the next runs and, after MAX_EVENT_FAILURES, parked so the checkpoint moves past it; the other events of the
batch, other tenants' events and the other projectors go on.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import structlog
from sqlalchemy import Connection, Engine, text

from eventstore.read import Checkpoint, read_after
from projections.base import Projector
from projections.dead_letters import apply_guarded, open_counts

log = structlog.get_logger(__name__)


def lock_key(name: str) -> str:
    return f"engramlog.projection.{name}"


_TRY_LOCK = text("SELECT pg_try_advisory_xact_lock(hashtext(:key))")
_LOCK = text("SELECT pg_advisory_xact_lock(hashtext(:key))")
_ENSURE = text("INSERT INTO projection_checkpoints (name) VALUES (:name) ON CONFLICT DO NOTHING")
_LOAD = text("SELECT tx_id::text::bigint, position FROM projection_checkpoints WHERE name = :name")
_SAVE = text("""
INSERT INTO projection_checkpoints (name, tx_id, position, updated_at)
VALUES (:name, CAST(CAST(:tx AS text) AS xid8), :pos, clock_timestamp())
ON CONFLICT (name) DO UPDATE SET tx_id = EXCLUDED.tx_id, position = EXCLUDED.position,
                                 updated_at = EXCLUDED.updated_at
""")


def load_checkpoint(conn: Connection, name: str) -> Checkpoint:
    row = conn.execute(_LOAD, {"name": name}).first()
    return Checkpoint(row[0], row[1]) if row else Checkpoint()


def save_checkpoint(conn: Connection, name: str, checkpoint: Checkpoint) -> None:
    conn.execute(_SAVE, {"name": name, "tx": checkpoint.tx_id, "pos": checkpoint.position})


def run_batch(engine: Engine, projector: Projector, batch_size: int) -> int | None:
    """Apply the next batch. Answers the number applied, or None when another runner holds the lock."""
    with engine.begin() as conn:
        if not conn.execute(_TRY_LOCK, {"key": lock_key(projector.name)}).scalar_one():
            return None
        conn.execute(_ENSURE, {"name": projector.name})
        checkpoint = load_checkpoint(conn, projector.name)
        events = read_after(conn, checkpoint, projector.types, batch_size)
        if not events:
            return 0
        done = apply_guarded(conn, projector, events)
        if not done:  # its first event failed and is not parked yet: tried again on the next run
            return 0
        last = done[-1]
        save_checkpoint(conn, projector.name, Checkpoint(last.tx_id, last.position))
    log.debug("projection.batch", projection=projector.name, events=len(done), position=last.position)
    return len(done)


def catch_up(engine: Engine, projector: Projector, batch_size: int, max_seconds: float = 60.0) -> int:
    """Apply batches until the projection is caught up, another runner has it, or time is up."""
    applied = 0
    deadline = time.monotonic() + max_seconds
    while time.monotonic() < deadline:
        n = run_batch(engine, projector, batch_size)
        if not n:
            break
        applied += n
    return applied


@dataclass(frozen=True)
class ProjectionStatus:
    name: str
    position: int
    head: int
    lag_events: int
    lag_seconds: float
    updated_at: str | None
    parked: int = 0  # events it could not apply and moved past (projection_dead_letters), until retried/skipped
    failing: int = 0  # events failing now, retried on the next runs until parked


_STATUS = text("""
SELECT coalesce(c.position, 0) AS position,
       (SELECT coalesce(max(position), 0) FROM events) AS head,
       c.updated_at,
       (SELECT count(*) FROM events e WHERE e.type = ANY(:types)
          AND (e.tx_id, e.position) > (coalesce(c.tx_id, '0'::xid8), coalesce(c.position, 0))) AS lag_events,
       (SELECT extract(epoch FROM clock_timestamp() - min(e.recorded_at)) FROM events e
         WHERE e.type = ANY(:types)
           AND (e.tx_id, e.position) > (coalesce(c.tx_id, '0'::xid8), coalesce(c.position, 0))) AS lag_seconds
FROM (SELECT 1) AS one
LEFT JOIN projection_checkpoints c ON c.name = :name
""")


def status(conn: Connection, projector: Projector, dead_letters_of: str | None = None) -> ProjectionStatus:
    """Position and lag; parked / failing events of one tenant (`dead_letters_of`) or of all (None)."""
    row = conn.execute(_STATUS, {"name": projector.name, "types": list(projector.types)}).one()
    parked, failing = open_counts(conn, dead_letters_of).get(projector.name, (0, 0))
    return ProjectionStatus(
        name=projector.name, position=row.position, head=row.head, lag_events=row.lag_events,
        lag_seconds=float(row.lag_seconds or 0.0),
        updated_at=row.updated_at.isoformat() if row.updated_at else None, parked=parked, failing=failing,
    )


# A position stands for its whole transaction: a write's governance decisions are appended after it in the
# same transaction, and reading the write back must see them applied too.
_CAUGHT_UP = text("""
WITH target AS (
  SELECT greatest(CAST(:position AS bigint),
                  (SELECT max(t.position) FROM events p JOIN events t ON t.tx_id = p.tx_id
                   WHERE p.position = :position)) AS position)
SELECT EXISTS (SELECT 1 FROM events WHERE position >= :position)
   AND NOT EXISTS (
  SELECT 1 FROM target, events e LEFT JOIN projection_checkpoints c ON c.name = :name
  WHERE e.position <= target.position AND e.type = ANY(:types)
    AND (e.tx_id, e.position) > (coalesce(c.tx_id, '0'::xid8), coalesce(c.position, 0)))
""")


def has_reached(conn: Connection, projector: Projector, position: int) -> bool:
    """True when the log holds `position` and every event of the projector's types at or below it (and in the
    rest of its transaction) has been applied. A position the log has not reached yet is not reached, however
    caught up the projection is."""
    return bool(conn.execute(_CAUGHT_UP, {"name": projector.name, "position": position,
                                          "types": list(projector.types)}).scalar_one())
