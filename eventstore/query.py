"""Analyst queries over the log: filter by stream, type, position and time, paginated by position."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, text

from domain.events import RecordedEvent
from eventstore.read import COLUMNS, row_to_event


@dataclass(frozen=True)
class EventFilter:
    tenant: str
    stream_id: str | None = None
    types: tuple[str, ...] = ()
    after_position: int | None = None
    before_position: int | None = None
    since: datetime | None = None
    until: datetime | None = None


def query_events(conn: Connection, f: EventFilter, limit: int = 100) -> list[RecordedEvent]:
    """Events matching `f`, ascending by position; page on by passing the last position as after_position."""
    clauses = ["tenant = :tenant"]
    params: dict[str, object] = {"tenant": f.tenant, "limit": limit}
    if f.stream_id is not None:
        clauses.append("stream_id = :stream_id")
        params["stream_id"] = f.stream_id
    if f.types:
        clauses.append("type = ANY(:types)")
        params["types"] = list(f.types)
    if f.after_position is not None:
        clauses.append("position > :after")
        params["after"] = f.after_position
    if f.before_position is not None:
        clauses.append("position < :before")
        params["before"] = f.before_position
    if f.since is not None:
        clauses.append("recorded_at >= :since")
        params["since"] = f.since
    if f.until is not None:
        clauses.append("recorded_at < :until")
        params["until"] = f.until
    sql = f"SELECT {COLUMNS} FROM events WHERE {' AND '.join(clauses)} ORDER BY position LIMIT :limit"
    return [row_to_event(r) for r in conn.execute(text(sql), params)]
