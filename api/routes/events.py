"""POST /v1/events (append a typed batch) and GET /v1/events (query the log, cursor-paginated)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Query
from sqlalchemy import Engine

from api.context import Caller, caller, engine
from api.schemas import EventOut, EventsIn, EventsPage, PositionsOut
from eventstore.query import EventFilter, page_cursor, parse_cursor, query_events
from services.append_events import EventInput, append_events

router = APIRouter(prefix="/v1/events", tags=["events"])


@router.post("", response_model=PositionsOut, status_code=201)
def post_events(body: EventsIn, who: Annotated[Caller, Depends(caller)],
                db: Annotated[Engine, Depends(engine)]) -> PositionsOut:
    items = [EventInput(**e.model_dump()) for e in body.events]
    return PositionsOut(positions=append_events(db, who.tenant, items, who.metadata(), body.idempotency_key))


@router.get("", response_model=EventsPage)
def get_events(who: Annotated[Caller, Depends(caller)], db: Annotated[Engine, Depends(engine)],
               stream_id: str | None = None, type: Annotated[list[str] | None, Query()] = None,
               after: int | None = None, before: int | None = None, since: datetime | None = None,
               until: datetime | None = None,
               cursor: Annotated[str | None, Query(max_length=40)] = None,  # the previous page's next_cursor
               limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> EventsPage:
    f = EventFilter(who.tenant, stream_id, tuple(type or ()), after, before, since, until,
                    after_cursor=parse_cursor(cursor) if cursor is not None else None)
    with db.connect() as conn:
        events = query_events(conn, f, limit)
    out = [EventOut(**{k: getattr(e, k) for k in EventOut.model_fields}) for e in events]
    return EventsPage(events=out, next_cursor=page_cursor(events[-1]) if len(events) == limit else None)
