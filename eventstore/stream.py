"""Reading one stream of the log (or a few), in stream order: what a write checks before it appends to a stream,
and what a projector looks up on a stream (a recording, the recall a feedback is about, earlier feedback).
A stream that may grow long is read in pages (stream_pages), so memory is bounded by a page, not the stream.
An event whose content was forgotten (eventstore/codec.py) is left out of every answer here, as if never written."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Row, TextClause, text

from domain.events import EventSchema, RecordedEvent
from eventstore.codec import open_events
from eventstore.read import COLUMNS, MAX_BIGINT, Checkpoint, row_to_event

_STREAM = text(f"""
SELECT {COLUMNS} FROM events e WHERE e.tenant = :tenant AND e.stream_id = :stream
  AND (CAST(:types AS text[]) IS NULL OR e.type = ANY(CAST(:types AS text[])))
  AND (CAST(:before AS bigint) IS NULL OR e.stream_version < CAST(:before AS bigint))
ORDER BY e.stream_version
""")
# Through the (tenant, stream_id, stream_version) key.
_AT_VERSION = text(f"""
SELECT {COLUMNS} FROM events e WHERE e.tenant = :tenant AND e.stream_id = :stream AND e.stream_version = :version
""")
_FIRST_OF_TYPE = text(f"""
SELECT {COLUMNS} FROM events e WHERE e.tenant = :tenant AND e.stream_id = :stream AND e.type = :type
ORDER BY e.stream_version LIMIT 1
""")
# Backwards along the (tenant, stream_id, stream_version) key: one index probe however long the stream.
_LAST = text(f"""
SELECT {COLUMNS} FROM events e WHERE e.tenant = :tenant AND e.stream_id = :stream
ORDER BY e.stream_version DESC LIMIT 1
""")
_LAST_AT = text(f"""
SELECT {COLUMNS} FROM events e WHERE e.tenant = :tenant AND e.stream_id = :stream AND e.position <= :position
ORDER BY e.stream_version DESC LIMIT 1
""")
_LISTING = text("""
SELECT EXISTS (SELECT 1 FROM events WHERE tenant = :tenant AND type = :type AND data->:field ? :value)
""")
# Per stream: its head version, and whether every event of `types` on it is at or before the checkpoint.
_HEADS = text("""
SELECT e.stream_id, max(e.stream_version) AS version,
       bool_and(NOT (e.type = ANY(:types))
                OR (e.tx_id, e.position) <= (CAST(CAST(:tx AS text) AS xid8), :pos)) AS applied
FROM events e WHERE e.tenant = :tenant AND e.stream_id = ANY(:streams) GROUP BY e.stream_id
""")


def _opened(conn: Connection, rows: Iterable[Row[Any]]) -> list[RecordedEvent]:
    return open_events(conn, [row_to_event(r) for r in rows], keep_forgotten=False)


def _one(conn: Connection, row: Row[Any] | None) -> RecordedEvent | None:
    found = _opened(conn, [] if row is None else [row])
    return found[0] if found else None


def _names(types: Sequence[type[EventSchema]] | None) -> list[str] | None:
    return None if types is None else [t.type_name() for t in types]


def read_stream(conn: Connection, tenant: str, stream_id: str, types: Sequence[type[EventSchema]] | None = None,
                before_version: int | None = None) -> list[RecordedEvent]:
    """The events of one of the tenant's streams, oldest first: all, or those of `types`, or those before
    `before_version`."""
    return _opened(conn, conn.execute(_STREAM, {"tenant": tenant, "stream": stream_id, "types": _names(types),
                                                "before": before_version}))


def _page_statement(newest_first: bool) -> TextClause:
    """One page along the (tenant, stream_id, stream_version) key from :from (exclusive), at most :limit events
    and each taken only while the page's stored bytes before it (pg_column_size, as eventstore/read.py) are under
    :max_bytes (so the first always comes).
    The type filter applies after the key range, so a page may hold fewer than :limit events of `types`."""
    beyond, order = ("<", "DESC") if newest_first else (">", "")
    return text(f"""
SELECT {COLUMNS} FROM (
    SELECT e.*, sum(pg_column_size(e.data) + pg_column_size(e.metadata)) OVER w
                - pg_column_size(e.data) - pg_column_size(e.metadata) AS bytes_before
    FROM (SELECT * FROM events k WHERE k.tenant = :tenant AND k.stream_id = :stream
            AND k.stream_version {beyond} :from ORDER BY k.stream_version {order} LIMIT :limit) e
    WINDOW w AS (ORDER BY e.stream_version {order})
) e
WHERE e.bytes_before < :max_bytes
ORDER BY e.stream_version {order}
""")


_PAGE = {False: _page_statement(False), True: _page_statement(True)}
PAGE_EVENTS = 500  # a page's events at most
PAGE_BYTES = 8 * 1024 * 1024  # and its stored bytes (the last event taken may pass it; one large event still comes)


def stream_pages(conn: Connection, tenant: str, stream_id: str, types: Sequence[type[EventSchema]] | None = None,
                 *, newest_first: bool = False, limit: int = PAGE_EVENTS,
                 max_bytes: int = PAGE_BYTES) -> Iterator[list[RecordedEvent]]:
    """One of the tenant's streams page by page in stream version order (oldest first, or `newest_first`): each
    page at most `limit` events, and ends at the first event that the page's earlier ones' stored bytes reach
    `max_bytes` before. Of `types` only, when given (a page the filter leaves empty is skipped). Stop
    iterating to read no further."""
    names = None if types is None else set(_names(types) or ())
    at = MAX_BIGINT if newest_first else 0
    while True:
        rows = conn.execute(_PAGE[newest_first], {"tenant": tenant, "stream": stream_id, "from": at, "limit": limit,
                                                   "max_bytes": max_bytes}).all()
        if not rows:
            return
        page = [row_to_event(r) for r in rows]
        at = page[-1].stream_version
        kept = open_events(conn, page if names is None else [e for e in page if e.type in names],
                           keep_forgotten=False)
        if kept:
            yield kept


_STREAMS = text(f"""
SELECT {COLUMNS} FROM events e WHERE e.tenant = :tenant AND e.stream_id = ANY(:streams)
  AND (CAST(:types AS text[]) IS NULL OR e.type = ANY(:types))
ORDER BY e.stream_id, e.stream_version
""")


def read_streams(conn: Connection, tenant: str, streams: Sequence[str],
                 types: Sequence[type[EventSchema]] | None = None) -> list[RecordedEvent]:
    """The events of several of the tenant's streams (or those of `types`), each stream's oldest first."""
    if not streams:
        return []
    return _opened(conn, conn.execute(_STREAMS, {"tenant": tenant, "streams": list(streams),
                                                 "types": _names(types)}))


def stream_event(conn: Connection, tenant: str, stream_id: str, version: int) -> RecordedEvent | None:
    """The event at `version` of a stream (1: the stream's first), or None."""
    row = conn.execute(_AT_VERSION, {"tenant": tenant, "stream": stream_id, "version": version}).first()
    return _one(conn, row)


def first_of_type(conn: Connection, tenant: str, stream_id: str, schema: type[EventSchema]) -> RecordedEvent | None:
    """The first event of type `schema` on a stream (a recall's RecallServed), or None."""
    row = conn.execute(_FIRST_OF_TYPE, {"tenant": tenant, "stream": stream_id, "type": schema.type_name()}).first()
    return _one(conn, row)


def last_event(conn: Connection, tenant: str, stream_id: str, at: int | None = None) -> RecordedEvent | None:
    """The newest event of a stream (a tenant's privacy policy in force), or, given `at`, its newest at or before
    that log position (a document as of a position); None when there is none."""
    if at is None:
        row = conn.execute(_LAST, {"tenant": tenant, "stream": stream_id}).first()
    else:
        row = conn.execute(_LAST_AT, {"tenant": tenant, "stream": stream_id, "position": at}).first()
    return _one(conn, row)


def any_lists(conn: Connection, tenant: str, schema: type[EventSchema], field: str, value: str) -> bool:
    """Whether any of the tenant's events of type `schema` lists `value` in its array field `field` (a memory named
    by a MemoriesMerged's merged_ids, which is on the kept memory's stream, not on the merged one's)."""
    return bool(conn.execute(_LISTING, {"tenant": tenant, "type": schema.type_name(), "field": field,
                                        "value": value}).scalar_one())


@dataclass(frozen=True)
class StreamHead:
    version: int
    applied: bool  # every event of the asked types on the stream is at or before the checkpoint


def stream_heads(conn: Connection, tenant: str, streams: Sequence[str], types: Sequence[str],
                 checkpoint: Checkpoint) -> dict[str, StreamHead]:
    """Head version of each of the streams that exist, and whether a projection at `checkpoint` that applies
    `types` has applied every such event on it."""
    rows = conn.execute(_HEADS, {"tenant": tenant, "streams": list(streams), "types": list(types),
                                 "tx": checkpoint.tx_id, "pos": checkpoint.position})
    return {r.stream_id: StreamHead(r.version, r.applied) for r in rows}


__all__ = ["StreamHead", "any_lists", "first_of_type", "last_event", "read_stream", "read_streams", "stream_event",
           "stream_heads", "stream_pages"]
