"""GET /console/events: the log paged gap-safely (the API's GET /v1/events and its cursor), filtered by type,
stream, time and actor; GET /console/events/{position}: one event's payload and metadata, with links."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from api.routes import events as event_routes
from console.pages.common import Db, Refused, Who, api
from console.render import page
from eventstore.read import event_at
from recall.privacy import policy_of, visible_events

router = APIRouter(prefix="/console", include_in_schema=False)
PAGE = 50
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _time(name: str, value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        raise Refused(422, f"{name}: not an ISO time ({value!r})") from None


def stream_link(stream_id: str) -> str | None:
    """The console page of what a stream is about (memory-<id>, recall-<id>, session-<id>), if it has one."""
    kind, _, rest = stream_id.partition("-")
    if kind == "memory" and _UUID.fullmatch(rest):
        return f"/console/memories/{rest}"
    if kind == "recall" and _UUID.fullmatch(rest):
        return f"/console/recalls/{rest}"
    return None


def links(data: Any) -> list[tuple[str, str]]:
    """Every memory and recall id an event's payload names, as (label, console URL)."""
    found: list[tuple[str, str]] = []

    def walk(key: str, value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(k, v)
        elif isinstance(value, list):
            for v in value:
                walk(key, v)
        elif isinstance(value, str) and _UUID.fullmatch(value):
            if "recall" in key:
                found.append((f"recall {value}", f"/console/recalls/{value}"))
            elif "memory" in key or key in ("supersedes", "superseded_by", "merged_into", "source_id", "target_id"):
                found.append((f"memory {value}", f"/console/memories/{value}"))

    walk("", data)
    return list(dict.fromkeys(found))


@router.get("/events", response_class=HTMLResponse)
def events(request: Request, who: Who, db: Db, type: str | None = None, stream: str | None = None,
           since: str | None = None, until: str | None = None, actor: str | None = None,
           cursor: str | None = Query(default=None, max_length=40)) -> HTMLResponse:
    types = [t.strip() for t in (type or "").split(",") if t.strip()] or None
    found = api(event_routes.get_events, who, db, stream_id=stream or None, type=types,
                since=_time("since", since), until=_time("until", until), actor=actor or None, cursor=cursor,
                limit=PAGE)
    query = {k: v for k, v in {"type": type, "stream": stream, "since": since, "until": until,
                                "actor": actor}.items() if v}
    return page(request, "events.html", who, "Events · Engramlog console", events=found.events,
                next_cursor=found.next_cursor, query=query, stream_link=stream_link)


@router.get("/events/{position}", response_class=HTMLResponse)
def event(request: Request, position: int, who: Who, db: Db) -> HTMLResponse:
    with db.connect() as conn:
        found = event_at(conn, position) if 0 <= position < 2**63 else None
        shown = ([] if found is None or found.tenant != who.tenant else
                 [found] if who.operator else visible_events(conn, who.tenant, policy_of(conn, who.tenant), [found]))
    if not shown:
        raise Refused(404, f"no event at position {position}")
    e = shown[0]
    return page(request, "event.html", who, f"Event {position} · Engramlog console", event=e,
                links=links(e.data), stream_link=stream_link(e.stream_id))
