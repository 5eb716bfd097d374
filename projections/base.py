"""What a projector is: a name, the read-model tables it owns, the event types it applies."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from sqlalchemy import Connection

from domain.events import RecordedEvent


class Projector(Protocol):
    name: str
    # Tables this projector owns; rebuild and verify work on exactly these.
    tables: tuple[str, ...]
    types: tuple[str, ...]

    def apply(self, conn: Connection, events: Sequence[RecordedEvent]) -> None:
        """Apply a batch in the caller's transaction. Unqualified table names: rebuilds redirect them."""
        ...


def repeated_recording(event: RecordedEvent) -> bool:
    """A MemoryRecorded that is not its stream's first event: a memory is recorded once (the write path refuses
    another), so one written before that rule is ignored by every projector, live and rebuilt alike."""
    return event.type == "MemoryRecorded" and event.stream_version != 1
