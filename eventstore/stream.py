"""Reading one stream of the log, in stream order (what a write checks before it appends to that stream)."""

from __future__ import annotations

from sqlalchemy import Connection, text

from domain.events import RecordedEvent
from eventstore.read import COLUMNS, row_to_event

_STREAM = text(f"""
SELECT {COLUMNS} FROM events e WHERE e.tenant = :tenant AND e.stream_id = :stream ORDER BY e.stream_version
""")


def read_stream(conn: Connection, tenant: str, stream_id: str) -> list[RecordedEvent]:
    """Every event of one of the tenant's streams, oldest first."""
    return [row_to_event(r) for r in conn.execute(_STREAM, {"tenant": tenant, "stream": stream_id})]


__all__ = ["read_stream"]
