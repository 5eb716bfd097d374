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

from eventstore.progress import has_reached as log_reached
from eventstore.progress import progress
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


def status(conn: Connection, projector: Projector, dead_letters_of: str | None = None) -> ProjectionStatus:
    """Position and lag; parked / failing events of one tenant (`dead_letters_of`) or of all (None)."""
    p = progress(conn, projector.name, projector.types)
    parked, failing = open_counts(conn, dead_letters_of).get(projector.name, (0, 0))
    return ProjectionStatus(
        name=projector.name, position=p.position, head=p.head, lag_events=p.lag_events, lag_seconds=p.lag_seconds,
        updated_at=p.updated_at.isoformat() if p.updated_at else None, parked=parked, failing=failing,
    )


def has_reached(conn: Connection, projector: Projector, position: int, tenant: str | None = None) -> bool:
    """True when the log holds `position` and every event of the projector's types at or below it (and in the
    rest of its transaction; with `tenant`, of that tenant) has been applied. A position the log has not reached
    yet is not reached, however caught up the projection is."""
    return log_reached(conn, projector.name, projector.types, position, tenant)
