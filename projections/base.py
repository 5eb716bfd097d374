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
