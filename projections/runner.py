"""Runs projectors: each batch and its checkpoint commit in one transaction, under an advisory lock.

Each event is applied in a savepoint when its batch fails (projections/dead_letters.py): the bad event is retried
on the next runs and, after MAX_EVENT_FAILURES, parked so the checkpoint moves past it; the other events of the
batch, other tenants' events and the other projectors go on.

A batch, and each event, is applied within settings.projection_event_timeout_s (projections/time_limit.py). A batch
over it is applied again one event per transaction, so the slow event is found alone; an event over it is one
failed attempt, counted (and parked, the checkpoint moved past it) in a transaction of its own, since the one it
ran in is given up.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import structlog
from sqlalchemy import Connection, Engine, text

from eventstore.horizon import declare_not_appending
from eventstore.progress import has_reached as log_reached
from eventstore.progress import progress
from eventstore.read import Checkpoint, read_after
from infra.settings import get_settings
from projections.base import Projector
from projections.dead_letters import OverTime, apply_guarded, open_counts, over_time_in, record_failure
from projections.time_limit import ActorTimeLimitExceeded

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


# Per projection, in this process: how many events are still applied one per transaction since a batch of them ran
# over its time limit (one at a time, the slow one is found without redoing the others).
_ONE_AT_A_TIME: dict[str, int] = {}


def run_batch(engine: Engine, projector: Projector, batch_size: int) -> int | None:
    """Apply the next batch. Answers the number applied (a parked event included), or None when another runner
    holds the lock."""
    alone = _ONE_AT_A_TIME.get(projector.name, 0) > 0
    try:
        n = _run_batch(engine, projector, 1 if alone else batch_size)
    except Exception as exc:
        if (over := over_time_in(exc)) is None:
            raise
        if len(over.events) > 1:
            log.warning("projection.batch_over_time", projection=projector.name, events=len(over.events),
                        first=over.events[0].position, last=over.events[-1].position)
            _ONE_AT_A_TIME[projector.name] = len(over.events)
            if isinstance(over.cause, ActorTimeLimitExceeded):
                raise over.cause from over  # the actor's own limit: it is over, as Dramatiq expects
            return run_batch(engine, projector, batch_size)
        n = _count_over_time(engine, projector, over)
        if isinstance(over.cause, ActorTimeLimitExceeded):
            raise over.cause from over  # the actor's own limit: it is over, as Dramatiq expects
    if alone and n:
        _ONE_AT_A_TIME[projector.name] -= n
    return n


def _count_over_time(engine: Engine, projector: Projector, over: OverTime) -> int:
    """One failed attempt of the event that ran over its time, counted under the projection's lock; parked, the
    checkpoint moves past it in the same transaction. Answers 1 when it was parked, else 0."""
    event = over.events[0]
    with engine.begin() as conn:
        conn.execute(_LOCK, {"key": lock_key(projector.name)})
        nxt = read_after(conn, load_checkpoint(conn, projector.name), projector.types, 1)
        if not nxt or nxt[0].position != event.position:
            return 0  # another runner moved on meanwhile
        if record_failure(conn, projector.name, event, over.cause) != "parked":
            return 0
        save_checkpoint(conn, projector.name, Checkpoint(event.tx_id, event.position))
    return 1


def _run_batch(engine: Engine, projector: Projector, batch_size: int) -> int | None:
    with engine.begin() as conn:
        declare_not_appending(conn)  # first: however long this batch runs, readers of the log need not wait for it
        if not conn.execute(_TRY_LOCK, {"key": lock_key(projector.name)}).scalar_one():
            return None
        conn.execute(_ENSURE, {"name": projector.name})
        checkpoint = load_checkpoint(conn, projector.name)
        settings = get_settings()
        events = read_after(conn, checkpoint, projector.types, batch_size, max_bytes=settings.projection_batch_bytes)
        if not events:
            return 0
        if (prepare := getattr(projector, "prepare", None)) is not None:
            prepare()  # what the projector needs loaded (a model), outside the events' time limit
        done = apply_guarded(conn, projector, events, settings.projection_event_timeout_s)
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
