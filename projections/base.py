"""What a projector is: a name, the read-model tables it owns, the event types it applies.

Each projector declares `handlers`, a mapping from event class to the function that applies it, and derives
`types` (what it reads from the log) from it with `types_of`: the mapping is the one place a projector names
the events it applies, so "find usages" of an event class shows every projector that applies it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from sqlalchemy import Connection

from domain.events import EventSchema, MemoryRecorded, RecordedEvent
from projections import term_blocks


class Projector(Protocol):
    # Read-only members (properties here): a class attribute, or one of a narrower tuple type, satisfies them.
    @property
    def name(self) -> str: ...

    @property
    def tables(self) -> tuple[str, ...]:
        """Tables this projector owns; rebuild and verify work on exactly these."""
        ...

    @property
    def types(self) -> tuple[str, ...]: ...

    def apply(self, conn: Connection, events: Sequence[RecordedEvent]) -> None:
        """Apply a batch in the caller's transaction. Unqualified table names: rebuilds redirect them."""
        ...


class Run(Protocol):
    """Rows collected from consecutive events of a projector's bulk classes, written in one go."""

    def flush(self, conn: Connection) -> None: ...


R = TypeVar("R", bound=Run)
OneByOne = Mapping[type[EventSchema], Callable[[Connection, RecordedEvent, Any], None]]


def apply_in_order(conn: Connection, events: Sequence[RecordedEvent], one_by_one: OneByOne,
                   in_run: Mapping[type[EventSchema], Callable[[R, Connection, RecordedEvent, Any], None]]
                   | None = None, run: R | None = None) -> None:
    """Apply `events` in log order, so the result does not depend on where batches are cut: an event of an
    `in_run` class is collected into `run`; any other is applied by its `one_by_one` handler after the run
    collected so far is written (run.flush). A repeated MemoryRecorded is skipped (repeated_recording)."""
    with term_blocks.batched(conn):  # the postings' blocks of the whole batch written once, at its end
        for event in events:
            if repeated_recording(event):
                continue
            p = event.payload()
            collect = in_run.get(type(p)) if in_run else None
            if collect is not None:
                assert run is not None, "in_run handlers collect into a run"
                collect(run, conn, event, p)
                continue
            handler = one_by_one.get(type(p))
            if handler is not None:
                if run is not None:
                    run.flush(conn)
                handler(conn, event, p)
        if run is not None:
            run.flush(conn)


def prepare(projector: Projector) -> None:
    """Load what the projector needs (a model) before a batch, outside the events' time limit: a cold start is no
    event's fault. Projectors without a `prepare` need nothing."""
    if (load := getattr(projector, "prepare", None)) is not None:
        load()


def types_of(*handlers: Mapping[type[EventSchema], object] | Iterable[type[EventSchema]]) -> tuple[str, ...]:
    """The stored type names of the event classes a projector's handlers apply, in declaration order."""
    return tuple(dict.fromkeys(cls.type_name() for mapping in handlers for cls in mapping))


def repeated_recording(event: RecordedEvent) -> bool:
    """A MemoryRecorded that is not its stream's first event: a memory is recorded once (the write path refuses
    another), so one written before that rule is ignored by every projector, live and rebuilt alike."""
    return event.is_a(MemoryRecorded) and event.stream_version != 1
