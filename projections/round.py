"""One round of a worker's catch-up in one transaction: the due projectors' next batches, the log read once for all.

A wake-up follows every append, and most appends are one event that several projectors read (a recall's hit-log
event: eight of them). Applied projector by projector (projections/runner.py), each batch paid its own transaction,
claim, checkpoint read and write, and its own read and decryption of the same event: at bench/recall_multi.py's
default sizes about 75 statements and 57 ms of CPU (the worker's and PostgreSQL's) per recall, more than the recall.

A round, for projectors that are one whole partition each (one worker, the default):
- claims each projector in one statement (its projection's lock shared, its partition's exclusive, as a batch
  does: one held by another runner is left out) and loads their checkpoints in one, once the locks are held;
- reads the events of all their types once (eventstore/read.py read_types_after: each type after the lowest
  checkpoint of the projectors that read it, below the horizon the caller read), opened once;
- applies each projector's share, in log order, within the batch time limit (projections/time_limit.py);
- moves every checkpoint in one statement, in the round's transaction: each event applied once, as per batch.

No savepoint per projector: a round is the optimistic path. Any failure (a bad event, a batch over its time limit,
which gives its transaction up) abandons the whole round, nothing of it kept, and the caller runs those
projectors batch by batch instead (runner.catch_up), where a bad event is isolated in a savepoint, counted and in
time parked (projections/dead_letters.py), and a slow one is found alone.

A share is a prefix of what the projector's own read would give: its types after its checkpoint, up to where the
shared read stopped (batch_size events, projection_batch_bytes). The caller asks again, under a later horizon, the
projectors that applied events (as it does a batch that applied); each round whose read stopped short of the
horizon applies at least its first event (it follows the checkpoint of a projector of its type), so asking again
always moves on. A projector far ahead of another that reads one of its types finds nothing in such a read
(`Round.unread`): the caller runs it batch by batch at once, so that one lagging projector (a bulk load's vectors)
does not hold the others to its pace.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import structlog
from sqlalchemy import Engine

from domain.events import RecordedEvent
from eventstore.codec import FORGOTTEN
from eventstore.read import Checkpoint, read_types_after
from infra.settings import get_settings
from projections import partitions as parts
from projections.base import Projector, prepare
from projections.dead_letters import recovered
from projections.time_limit import time_limit

log = structlog.get_logger(__name__)

def _stored_type(event: RecordedEvent) -> str:
    """The type the log stores: a forgotten event (its key gone) is read as a ContentForgotten, which no handler
    applies but which the projectors of its own type are still given, so their checkpoints move past it."""
    return str(event.data.get("original_type", event.type)) if event.type == FORGOTTEN else event.type


@dataclass(frozen=True)
class Round:
    applied: dict[str, int]  # per claimed projector: events applied
    unread: tuple[str, ...] = ()  # claimed, with nothing in a read that stopped short: their events lie past it


def run_round(engine: Engine, projectors: Sequence[Projector], batch_size: int, horizon: int) -> Round:
    """The next batch of each of `projectors` (each one whole partition), in one transaction (the module's
    docstring). A projector another runner holds, or that is no longer one whole partition, is not in `applied`."""
    settings = get_settings().projections
    by_name = {p.name: p for p in projectors}
    with engine.begin() as conn:
        names = list(by_name)
        claims = parts.try_claim(conn, [(n, parts.WHOLE) for n in names])
        claimed = [n for n, ok in zip(names, claims, strict=True) if ok]
        checkpoints = parts.load_whole(conn, claimed)
        if not checkpoints:
            return Round({})
        after: dict[str, Checkpoint] = {}
        for name, checkpoint in checkpoints.items():
            for t in by_name[name].types:
                after[t] = min(after.get(t, checkpoint), checkpoint)
        events, more = read_types_after(conn, after, batch_size, settings.projection_batch_bytes, horizon)
        applied: dict[str, int] = {}
        shares: dict[str, Sequence[RecordedEvent]] = {}
        for name, checkpoint in checkpoints.items():
            projector = by_name[name]
            types = set(projector.types)
            share = [e for e in events if _stored_type(e) in types and Checkpoint(e.tx_id, e.position) > checkpoint]
            applied[name] = 0
            if not share:
                continue
            prepare(projector)
            with time_limit(settings.projection_event_timeout_s):
                projector.apply(conn, share)
            shares[name], applied[name] = share, len(share)
        recovered(conn, shares)
        moved = {name: Checkpoint(share[-1].tx_id, share[-1].position) for name, share in shares.items()}
        parts.save_whole(conn, moved)
    unread = tuple(n for n in checkpoints if more and n not in shares)
    log.debug("projection.round", applied={n: c for n, c in applied.items() if c}, events=len(events), more=more,
              unread=unread)
    return Round(applied, unread)


__all__ = ["Round", "run_round"]
