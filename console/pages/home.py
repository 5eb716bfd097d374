"""GET /console: health, each projection's lag, the caller's recent events."""

from __future__ import annotations

import json

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from api.routes import events as event_routes
from api.routes import operations
from console.pages.common import Db, Who, api
from console.render import page
from eventstore.read import head_position

router = APIRouter(prefix="/console", include_in_schema=False)
RECENT = 15  # events shown on the home page
RECENT_WINDOW = 2000  # positions before the caller's head they are looked for in


@router.get("", response_class=HTMLResponse)
def home(request: Request, who: Who, db: Db) -> HTMLResponse:
    health = json.loads(bytes(operations.healthz(db).body))
    projections = api(operations.get_projections, who, db)
    with db.connect() as conn:
        head = head_position(conn, who.tenant)
    recent = api(event_routes.get_events, who, db, after=max(0, head - RECENT_WINDOW), limit=1000)
    return page(request, "home.html", who, "Engramlog console", health=health, head=head,
                projections=projections["projections"], ingest_parked=projections["ingest_dead_letters"],
                recent=list(reversed(recent.events[-RECENT:])))
