"""The log's events as appended, for tests: content fields are sealed in the stored payload (eventstore/codec.py),
so a test that looks for what was written reads it through the eventstore, never by `data->>'content'`."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, text

from domain.events import RecordedEvent
from eventstore.read import event_at


def opened_events(conn: Connection, where: str, params: dict[str, Any] | None = None) -> list[RecordedEvent]:
    """The events matching `where` (plain SQL over events' unsealed columns), opened, in log order."""
    positions = conn.execute(text(f"SELECT position FROM events WHERE {where} ORDER BY position"),
                             params or {}).scalars().all()
    return [e for p in positions if (e := event_at(conn, p)) is not None]
