"""POST /v1/events (append a typed batch), GET /v1/events (query the log, cursor-paginated) and
GET /v1/events/export (an operator's export of the tenant's log as JSON lines, streamed page by page)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Query
from fastapi.responses import StreamingResponse
from psycopg.abc import Buffer
from psycopg.types.datetime import TimestamptzLoader
from sqlalchemy import Connection, Engine

from api.context import Caller, caller, engine
from api.schemas import MAX_POSITION, EventOut, EventsIn, EventsPage, PositionsOut
from domain.errors import InvalidPayload
from domain.events import MAX_STREAM_ID_CHARS
from eventstore.query import EventFilter, page_cursor, parse_cursor, query_page
from eventstore.read import Checkpoint
from infra.settings import get_settings
from recall.privacy import policy_of, visible_events
from services.append_events import EventInput, append_events

router = APIRouter(prefix="/v1/events", tags=["events"])
Position = Annotated[int | None, Query(ge=0, le=MAX_POSITION)]


class _BoundedTimestamptzLoader(TimestamptzLoader):
    """A stored time Python cannot hold (year 0 or 10000 in UTC, written before the write path bounded
    occurred_at) reads as the earliest / latest datetime instead of failing the whole page."""

    def load(self, data: Buffer) -> datetime:
        try:
            return super().load(data)
        except Exception as exc:  # psycopg.DataError ("timestamp too large"), or a ValueError
            raw = bytes(data)
            if raw.endswith(b"BC") or raw.startswith(b"-"):
                return datetime.min.replace(tzinfo=UTC)
            if raw[:1].isdigit() or raw == b"infinity":
                return datetime.max.replace(tzinfo=UTC)
            raise exc


def _readable(conn: Connection) -> Connection:
    driver = conn.connection.driver_connection
    assert driver is not None  # a checked-out connection holds its psycopg connection
    driver.adapters.register_loader("timestamptz", _BoundedTimestamptzLoader)
    return conn


def _utc(name: str, value: datetime | None) -> datetime | None:
    if value is None:
        return None
    try:
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    except (OverflowError, ValueError):
        raise InvalidPayload(f"{name} {value.isoformat()} is out of range in UTC") from None


def _text(name: str, value: str | None, limit: int) -> str | None:
    if value is not None and ("\x00" in value or len(value) > limit):
        raise InvalidPayload(f"{name} must be at most {limit} characters, without NUL (\\u0000)")
    return value


@router.post("", response_model=PositionsOut, status_code=201)
def post_events(body: EventsIn, who: Annotated[Caller, Depends(caller)],
                db: Annotated[Engine, Depends(engine)]) -> PositionsOut:
    items = [EventInput(**e.model_dump()) for e in body.events]
    return PositionsOut(positions=append_events(db, who.tenant, items, who.metadata(), body.idempotency_key))


@router.get("", response_model=EventsPage)
def get_events(who: Annotated[Caller, Depends(caller)], db: Annotated[Engine, Depends(engine)],
               stream_id: str | None = None,
               type: Annotated[list[str] | None, Query()] = None,
               after: Position = None, before: Position = None, since: datetime | None = None,
               until: datetime | None = None, actor: str | None = None,
               cursor: Annotated[str | None, Query(max_length=40)] = None,  # the previous page's next_cursor
               limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> EventsPage:
    if len(type or ()) > 100:
        raise InvalidPayload("at most 100 types")
    types = tuple(_text("type", t, 100) or "" for t in type or ())
    f = EventFilter(who.tenant, _text("stream_id", stream_id, MAX_STREAM_ID_CHARS), types, after, before,
                    _utc("since", since), _utc("until", until),
                    after_cursor=parse_cursor(cursor) if cursor is not None else None,
                    actor=_text("actor", actor, 200))
    with db.connect() as conn:
        # A page is bounded in bytes too (settings.limits.events_page_bytes): cut short, it still names its next cursor.
        events, more = query_page(_readable(conn), f, limit, get_settings().limits.events_page_bytes)
        # The cursor follows the page as read, so paging goes on past the events the privacy gate drops (a page
        # may hold fewer than `limit`, even none, and still have a next one). An operator sees every event.
        cursor = page_cursor(events[-1]) if more and events else None
        if not who.operator:
            events = visible_events(conn, who.tenant, policy_of(conn, who.tenant), events)
    out = [EventOut(**{k: getattr(e, k) for k in EventOut.model_fields}) for e in events]
    return EventsPage(events=out, next_cursor=cursor)


EXPORT_PAGE = 1000


@router.get("/export", response_class=StreamingResponse,
            responses={200: {"content": {"application/x-ndjson": {}}, "description": "one event a line"}})
def export_events(who: Annotated[Caller, Depends(caller)], db: Annotated[Engine, Depends(engine)],
                  type: Annotated[list[str] | None, Query()] = None, since: datetime | None = None,
                  until: datetime | None = None) -> StreamingResponse:
    """The tenant's events in log order as JSON lines (as `engramlog events export`), for operator keys; paged
    gap-safely, one page in memory at a time."""
    if not who.operator:
        raise HTTPException(403, "exporting the log needs an operator key (ENGRAMLOG_OPERATOR_KEYS)")
    if len(type or ()) > 100:
        raise InvalidPayload("at most 100 types")
    first = EventFilter(who.tenant, None, tuple(_text("type", t, 100) or "" for t in type or ()), None, None,
                        _utc("since", since), _utc("until", until))

    def lines() -> Iterator[bytes]:
        f = first
        while True:
            with db.connect() as conn:
                events, more = query_page(_readable(conn), f, EXPORT_PAGE, get_settings().limits.events_page_bytes)
            for e in events:
                out = EventOut(**{k: getattr(e, k) for k in EventOut.model_fields})
                yield out.model_dump_json().encode() + b"\n"
            if not more or not events:
                return
            f = replace(f, after_cursor=Checkpoint(events[-1].tx_id, events[-1].position))

    return StreamingResponse(lines(), media_type="application/x-ndjson")
