"""Runs projectors: each batch and its checkpoint commit in one transaction, under advisory locks.

A projection's work is split in partitions by tenant (projections/partitions.py): each batch is one partition's,
under the projection's lock (shared) and the partition's (exclusive), so N worker processes share a projection and
a worker that dies mid-batch loses only its uncommitted batch (its locks end with its connection).

Each event is applied in a savepoint when its batch fails (projections/dead_letters.py): the bad event is retried
on the next runs and, after MAX_EVENT_FAILURES, parked so the checkpoint moves past it; the other events of the
batch, other tenants' events and the other projectors go on.

A batch, and each event, is applied within settings.projections.projection_event_timeout_s (projections/time_limit.py).
A batch over it is applied again one event per transaction, so the slow event is found alone; an event over it is one
failed attempt, counted (and parked, the checkpoint moved past it) in a transaction of its own, since the one it
ran in is given up.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

import structlog
from sqlalchemy import Connection, Engine

from domain.events import RecordedEvent
from eventstore.horizon import declare_not_appending, horizon_and_head
from eventstore.progress import has_reached as log_reached
from eventstore.progress import progress
from eventstore.read import Checkpoint, read_after
from infra.settings import get_settings
from projections import partitions as parts
from projections.base import Projector, prepare
from projections.dead_letters import OverTime, apply_guarded, open_counts, over_time_in, record_failure
from projections.partitions import EXCLUSIVE, SHARED, TRY_EXCLUSIVE, Partition, lock_key
from projections.time_limit import ActorTimeLimitExceeded

log = structlog.get_logger(__name__)
# Which partition a catch-up tries first: a generator of its own, so the module's shared one (which a caller may have
# seeded, as hypothesis does around a strategy's draw) is never advanced by a worker or an API thread.
_start = random.Random()

_LOCK = EXCLUSIVE  # the whole projection (rebuild, verify, dead-letter retries hold it)


def load_checkpoint(conn: Connection, name: str, tenant: str | None = None) -> Checkpoint:
    """The checkpoint of `tenant`'s partition; without one, the lowest of the projection's partitions (every event
    at or below it is applied; `align` makes them one)."""
    if tenant is not None:
        return parts.load_for_tenant(conn, name, tenant)
    return parts.lowest([r.checkpoint for r in parts.rows(conn, name)])


def save_checkpoint(conn: Connection, name: str, checkpoint: Checkpoint) -> None:
    """Every partition of `name` at `checkpoint`, under the projection's exclusive lock (a rebuild's swap)."""
    parts.save_all(conn, name, checkpoint)


# Per (projection, partition), in this process: how many events are still applied one per transaction since a
# batch of them ran over its time limit (one at a time, the slow one is found without redoing the others).
_ONE_AT_A_TIME: dict[tuple[str, int], int] = {}


def applying_one_at_a_time(name: str) -> bool:
    """Whether some partition of `name` applies one event per transaction still, after a batch over its time limit."""
    return any(n > 0 for (projection, _), n in _ONE_AT_A_TIME.items() if projection == name)


def run_batch(engine: Engine, projector: Projector, batch_size: int, partition: Partition | None = None,
              below: int | None = None) -> int | None:
    """Apply the next batch of `partition` (None: one batch of each partition in force). Answers the number
    applied (a parked event included), or None when other runners hold it. `below`: a horizon the caller read
    (eventstore/read.py read_after), for a partition that is the whole projection."""
    if partition is None:
        done = [run_batch(engine, projector, batch_size, p, below) for p in parts.layout(engine, projector.name)]
        return None if all(n is None for n in done) else sum(n or 0 for n in done)
    unit = (projector.name, partition.index)
    alone = _ONE_AT_A_TIME.get(unit, 0) > 0
    try:
        n = _run_batch(engine, projector, 1 if alone else batch_size, partition, below)
    except Exception as exc:
        if (over := over_time_in(exc)) is None:
            raise
        if len(over.events) > 1:
            log.warning("projection.batch_over_time", projection=projector.name, partition=partition.index,
                        events=len(over.events), first=over.events[0].position, last=over.events[-1].position)
            _ONE_AT_A_TIME[unit] = len(over.events)
            if isinstance(over.cause, ActorTimeLimitExceeded):
                raise over.cause from over  # the actor's own limit: it is over, as Dramatiq expects
            return run_batch(engine, projector, batch_size, partition, below)
        n = _count_over_time(engine, projector, over, partition)
        if isinstance(over.cause, ActorTimeLimitExceeded):
            raise over.cause from over  # the actor's own limit: it is over, as Dramatiq expects
    if alone and n:
        _ONE_AT_A_TIME[unit] -= n
    return n


def _claim(conn: Connection, name: str, partition: Partition) -> None:
    """The projection's lock shared and the partition's exclusive, for this transaction, waiting for both (a batch
    tries them instead, in its first statement: partitions.py try_claim)."""
    conn.execute(SHARED, {"key": lock_key(name)})
    conn.execute(EXCLUSIVE, {"key": parts.partition_key(name, partition)})


def _next(conn: Connection, projector: Projector, partition: Partition, checkpoint: Checkpoint, limit: int,
          until: Checkpoint | None = None, max_bytes: int | None = None,
          below: int | None = None) -> tuple[list[RecordedEvent], Checkpoint | None]:
    """The partition's next events; with none, how far the partition is then known to be done (or None). `below`: the
    caller's horizon, for a whole projection (a partition reads its own, with the head under it)."""
    if partition.whole:
        return read_after(conn, checkpoint, projector.types, limit, until=until, max_bytes=max_bytes,
                          below=below), None
    horizon, head = horizon_and_head(conn)
    events = read_after(conn, checkpoint, projector.types, limit, until=until, max_bytes=max_bytes,
                        partition=(partition.index, partition.count, horizon))
    done = Checkpoint(horizon - 1, max(head, checkpoint.position))
    if events or done.tx_id <= checkpoint.tx_id:
        return events, None
    return events, done if until is None else min(done, max(until, checkpoint))


def _count_over_time(engine: Engine, projector: Projector, over: OverTime, partition: Partition) -> int:
    """One failed attempt of the event that ran over its time, counted under the partition's lock; parked, the
    checkpoint moves past it in the same transaction. Answers 1 when it was parked, else 0."""
    event = over.events[0]
    with engine.begin() as conn:
        declare_not_appending(conn)
        _claim(conn, projector.name, partition)
        checkpoint = parts.load(conn, projector.name, partition)
        if checkpoint is None:
            return 0  # the projection was partitioned anew meanwhile
        nxt, _ = _next(conn, projector, partition, checkpoint, 1)
        if not nxt or nxt[0].position != event.position:
            return 0  # another runner moved on meanwhile
        if record_failure(conn, projector.name, event, over.cause) != "parked":
            return 0
        parts.save(conn, projector.name, partition, Checkpoint(event.tx_id, event.position))
    return 1


def apply_next(conn: Connection, projector: Projector, partition: Partition, batch_size: int,
               until: Checkpoint | None = None, below: int | None = None) -> int:
    """Apply the partition's next batch in the caller's transaction (which holds its lock) and move its checkpoint.
    Answers the number applied (a parked event included)."""
    checkpoint = parts.load(conn, projector.name, partition)
    if checkpoint is None:
        return 0  # the projection was partitioned anew meanwhile: the caller's layout is gone
    settings = get_settings()
    events, done_to = _next(conn, projector, partition, checkpoint, batch_size, until,
                            max_bytes=settings.projections.projection_batch_bytes, below=below)
    if not events:
        if done_to is not None and done_to > checkpoint:  # nothing of its own below the horizon: done up to it
            parts.save(conn, projector.name, partition, done_to)
        return 0
    prepare(projector)
    done = apply_guarded(conn, projector, events, settings.projections.projection_event_timeout_s)
    if not done:  # its first event failed and is not parked yet: tried again on the next run
        return 0
    last = done[-1]
    parts.save(conn, projector.name, partition, Checkpoint(last.tx_id, last.position))
    log.debug("projection.batch", projection=projector.name, partition=partition.index, events=len(done),
              position=last.position)
    return len(done)


def _run_batch(engine: Engine, projector: Projector, batch_size: int, partition: Partition,
               below: int | None = None) -> int | None:
    with engine.begin() as conn:
        if not parts.try_claim(conn, [(projector.name, partition)])[0]:
            return None
        return apply_next(conn, projector, partition, batch_size, below=below)


class PartitionHeldBack(RuntimeError):
    """A partition cannot reach the others' checkpoint: its next event fails and is not parked yet."""


def align(conn: Connection, projector: Projector, batch_size: int = 500) -> Checkpoint:
    """Bring every partition of the projection to the furthest one's checkpoint and answer it. The caller's
    transaction holds the projection's exclusive lock (no batch runs meanwhile)."""
    found = parts.rows(conn, projector.name)
    if not found:
        return Checkpoint()
    target = max(r.checkpoint for r in found)
    for row in found:
        while apply_next(conn, projector, row.partition, batch_size, until=target):
            pass
        reached = parts.load(conn, projector.name, row.partition) or Checkpoint()
        if reached < target:
            raise PartitionHeldBack(f"projection {projector.name} partition {row.partition.index} is held at "
                                    f"position {reached.position} by a failing event")
    return target


def partitions_for(engine: Engine, projector: Projector, wanted: int) -> list[Partition]:
    """The partitions in force, split anew into `wanted` when no batch runs (their rows brought to one checkpoint
    first). A worker's call: the count it is configured with."""
    found = parts.layout(engine, projector.name, wanted)
    if found[0].count == wanted:
        return found
    with engine.begin() as conn:
        declare_not_appending(conn)
        if conn.execute(TRY_EXCLUSIVE, {"key": lock_key(projector.name)}).scalar_one():
            align(conn, projector)
    return parts.layout(engine, projector.name, wanted)


def catch_up(engine: Engine, projector: Projector, batch_size: int, max_seconds: float = 60.0,
             partitions: int | None = None, max_batches: int | None = None,
             layout: list[Partition] | None = None, below: int | None = None) -> int:
    """Apply batches until every partition is caught up or held by another runner, or time is up; `partitions`:
    the count a worker is configured with (split anew to it, `partitions_for`); `max_batches`: at most this many
    per partition (the caller then asks whether more are due); `layout`: the partitions in force, when the caller
    has just read them (a partition split anew since applies nothing: its checkpoint row is gone). The partitions
    are tried from a random one on, so runners that start together take different ones. `below`: a horizon the
    caller read (eventstore/read.py read_after), shared by the batches of a whole projection."""
    applied = 0
    deadline = time.monotonic() + max_seconds
    if layout is None:
        layout = (parts.layout(engine, projector.name) if partitions is None
                  else partitions_for(engine, projector, partitions))
    first = _start.randrange(len(layout))
    for partition in layout[first:] + layout[:first]:
        batches = 0
        while time.monotonic() < deadline and (max_batches is None or batches < max_batches):
            n = run_batch(engine, projector, batch_size, partition, below)
            if not n:
                break
            applied, batches = applied + n, batches + 1
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
