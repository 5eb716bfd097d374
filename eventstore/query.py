"""Analyst queries over the log: filter by stream, type, position and time, paged gap-safely.

Pages follow the log order the projectors read in (eventstore/read.py): by (transaction id, position), and only
events below the oldest transaction still running that may append (eventstore/horizon.py). Paging on by position
alone would skip an event whose transaction took a lower position but committed after the page was read; in
this order such an event comes after the cursor. The cursor is opaque to callers ("<tx_id>-<position>",
`page_cursor`); `after_position` / `before_position` stay plain filters on the position. An event is therefore
listed once its transaction and every older one that may append have ended (a running write delays it by as long
as that write runs).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import Connection, text

from domain.errors import InvalidPayload
from domain.events import RecordedEvent
from eventstore.codec import KeyRing, open_events
from eventstore.horizon import HORIZON
from eventstore.read import COLUMNS, Checkpoint, row_to_event

MAX_BIGINT = 2**63 - 1
_CURSOR = re.compile(r"(\d{1,19})-(\d{1,19})")


@dataclass(frozen=True)
class EventFilter:
    tenant: str
    stream_id: str | None = None
    types: tuple[str, ...] = ()
    after_position: int | None = None
    before_position: int | None = None
    since: datetime | None = None
    until: datetime | None = None
    after_cursor: Checkpoint | None = None  # page on after this event (log order): see page_cursor
    actor: str | None = None  # metadata.actor: who appended it (an API key's id, system:governor, ...)


def page_cursor(event: RecordedEvent) -> str:
    """The cursor that pages on after `event`."""
    return f"{event.tx_id}-{event.position}"


def parse_cursor(value: str) -> Checkpoint:
    """A cursor given back by `page_cursor`; anything else is a 422 with the reason."""
    match = _CURSOR.fullmatch(value)
    if not match or max(int(match.group(1)), int(match.group(2))) > MAX_BIGINT:
        raise InvalidPayload("cursor must be a next_cursor this API answered (\"<tx_id>-<position>\")")
    return Checkpoint(int(match.group(1)), int(match.group(2)))


_SAFE_HEAD = text(f"""
SELECT e.tx_id::text::bigint, e.position FROM events e
WHERE e.tx_id < {HORIZON}
ORDER BY e.tx_id DESC, e.position DESC LIMIT 1
""")


def safe_head(conn: Connection) -> Checkpoint:
    """The last event in log order below the horizon: following the log from here misses nothing after it."""
    row = conn.execute(_SAFE_HEAD).first()
    return Checkpoint(row[0], row[1]) if row else Checkpoint()


def _where(f: EventFilter) -> tuple[str, dict[str, object]]:
    """The filter's WHERE clause (over `events e`) and its parameters."""
    clauses = ["e.tenant = :tenant", f"e.tx_id < {HORIZON}"]
    params: dict[str, object] = {"tenant": f.tenant}
    if f.after_cursor is not None:
        clauses.append("(e.tx_id, e.position) > (CAST(CAST(:cursor_tx AS text) AS xid8), :cursor_pos)")
        params.update(cursor_tx=f.after_cursor.tx_id, cursor_pos=f.after_cursor.position)
    if f.stream_id is not None:
        clauses.append("e.stream_id = :stream_id")
        params["stream_id"] = f.stream_id
    if f.types:
        clauses.append("e.type = ANY(:types)")
        params["types"] = list(f.types)
    if f.after_position is not None:
        clauses.append("e.position > :after")
        params["after"] = f.after_position
    if f.before_position is not None:
        clauses.append("e.position < :before")
        params["before"] = f.before_position
    if f.actor is not None:
        clauses.append("e.metadata->>'actor' = :actor")
        params["actor"] = f.actor
    if f.since is not None:
        clauses.append("e.recorded_at >= :since")
        params["since"] = f.since
    if f.until is not None:
        clauses.append("e.recorded_at < :until")
        params["until"] = f.until
    return " AND ".join(clauses), params


_COUNT = "SELECT count(*) FROM events e WHERE {where}"


def count_events(conn: Connection, f: EventFilter) -> int:
    """How many events match `f` now (below the horizon): an export's progress total."""
    where, params = _where(f)
    return int(conn.execute(text(_COUNT.format(where=where)), params).scalar_one())


def query_events(conn: Connection, f: EventFilter, limit: int = 100) -> list[RecordedEvent]:
    """Events matching `f` in log order; page on with `after_cursor` = the last event's (tx_id, position)."""
    return query_page(conn, f, limit)[0]


def query_page(conn: Connection, f: EventFilter, limit: int = 100,
               max_bytes: int | None = None) -> tuple[list[RecordedEvent], bool]:
    """Like query_events, bounded in bytes too: the first `limit` matching events, cut where their stored data
    passes `max_bytes` (pg_column_size; the first event always comes). Answers (events, whether more may follow:
    the page was full or cut), so a page cut by bytes still names its next cursor."""
    where, params = _where(f)
    params["limit"] = limit
    # e.tx_id, not tx_id: the bare name would be the output column tx_id::text::bigint (see eventstore/read.py).
    params["max_bytes"] = MAX_BIGINT if max_bytes is None else max_bytes
    sql = (f"SELECT {COLUMNS}, e.matched FROM ("
           "SELECT e.*, count(*) OVER () AS matched, sum(pg_column_size(e.data) + pg_column_size(e.metadata)) OVER w"
           " - pg_column_size(e.data) - pg_column_size(e.metadata) AS bytes_before FROM ("
           f"SELECT * FROM events e WHERE {where} ORDER BY e.tx_id, e.position LIMIT :limit"
           ") e WINDOW w AS (ORDER BY e.tx_id, e.position)"
           ") e WHERE e.bytes_before < :max_bytes ORDER BY e.tx_id, e.position")
    rows = conn.execute(text(sql), params).all()
    matched = rows[0].matched if rows else 0
    # Opened (eventstore/codec.py): a forgotten event is listed as its ContentForgotten, so cursors page on.
    events = open_events(conn, [row_to_event(r) for r in rows], keep_forgotten=True)
    return events, matched == limit or len(rows) < matched


_RECALL_STREAMS = text("""
SELECT e.stream_id, e.type, e.data FROM events e
WHERE e.tenant = :tenant AND e.type = ANY(:types) AND e.stream_id LIKE 'recall-%'
  AND (e.type <> :served OR CAST(:since AS timestamptz) IS NULL OR e.recorded_at >= CAST(:since AS timestamptz))
ORDER BY e.stream_id, e.stream_version
""")


def recall_stream_events(conn: Connection, tenant: str, types: list[str], served: str,
                         since: datetime | None = None) -> Iterable[Any]:
    """The tenant's recall streams' events of `types` (stream_id, type, data), one stream after another in stream
    order, streamed from the server (constant memory); with `since`, only recalls (`served`) recorded since."""
    rows = conn.execution_options(stream_results=True, yield_per=2000).execute(
        _RECALL_STREAMS, {"tenant": tenant, "types": types, "served": served, "since": since})
    # The keys are looked up on a connection of their own: this one is busy streaming the rows.
    return _opened_rows(conn.engine, tenant, rows)


class StreamRow(NamedTuple):
    stream_id: str
    type: str
    data: dict[str, Any]


def _opened_rows(engine: Any, tenant: str, rows: Iterable[Any]) -> Iterator[StreamRow]:
    """The rows with sealed data opened; a forgotten event left out."""
    with engine.connect() as keys_conn:
        ring = KeyRing(keys_conn)
        for r in rows:
            data = ring.open(tenant, r.stream_id, r.type, r.data)
            if data is not None:
                yield StreamRow(r.stream_id, r.type, data)
