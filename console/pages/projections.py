"""GET /console/projections: position, lag, the append rate (a chart), parked events and ingest messages with
retry / skip (the API's own dead-letter routes), rebuild with its progress."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from api.routes import dead_letters, operations
from console import rebuilds
from console.auth import operator
from console.charts import line_chart
from console.pages.common import Db, Posted, Refused, Who, api, back
from console.render import page, svg
from eventstore.rates import appended_per_minute
from infra.settings import get_settings
from projections.registry import PROJECTORS

router = APIRouter(prefix="/console", include_in_schema=False)
URL = "/console/projections"


@router.get("/projections", response_class=HTMLResponse)
def projections(request: Request, who: Who, db: Db) -> HTMLResponse:
    operator(who)  # an operator page: every tenant's progress (a tenant key sees its own lag on the home page)
    found = api(operations.get_projections, who, db)
    with db.connect() as conn:
        rate = appended_per_minute(conn, None)
    parked = api(dead_letters.get_projection_dead_letters, who, db)["dead_letters"]
    ingest = api(dead_letters.get_ingest_dead_letters, who, db)["dead_letters"]
    running = any(r.running for r in rebuilds.RUNS.values())
    return page(request, "projections.html", who, "Projections · Engramlog console",
                projections=found["projections"], ingest_parked=found["ingest_dead_letters"], parked=parked,
                ingest=ingest, rebuilds=rebuilds.RUNS, refresh=running,
                chart=svg(line_chart([(t, float(n)) for t, n in rate], "events appended per minute, last 30 min")))


@router.post("/projections/{name}/dead-letters/{position}/{action}", dependencies=[Posted])
def resolve_parked(name: str, position: int, action: Literal["retry", "skip"], who: Who,
                   db: Db) -> RedirectResponse:
    try:
        done = api(dead_letters.post_projection_dead_letter, name, position, action, who, db)
    except Refused as exc:
        return back(URL, error=exc.detail)
    if done["outcome"] == "failed":
        return back(URL, error=f"{name} @ {position}: still failing: {done['error']}")
    return back(URL, done=f"{name} @ {position}: {done['outcome']}")


@router.post("/ingest/dead-letters/{dead_letter_id}/{action}", dependencies=[Posted])
def resolve_ingest(dead_letter_id: int, action: Literal["retry", "skip"], who: Who, db: Db) -> RedirectResponse:
    try:
        done = api(dead_letters.post_ingest_dead_letter, dead_letter_id, action, who, db)
    except Refused as exc:
        return back(URL, error=exc.detail)
    return back(URL, done=f"ingest message {dead_letter_id}: {done['outcome']}")


@router.post("/projections/{name}/rebuild", dependencies=[Posted])
def start_rebuild(name: str, who: Who, db: Db) -> RedirectResponse:
    operator(who)  # as POST /v1/projections/{name}/rebuild: operators only
    if name not in PROJECTORS:
        return back(URL, error=f"unknown projection {name!r}")
    rebuilds.start(db, PROJECTORS[name], get_settings().projections.projection_batch_size)
    return back(URL, done=f"rebuild of {name} started")
