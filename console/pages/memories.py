"""GET /console/memories/{id}: the memory, its history chain, every event on its stream (the governor's and the
scheduler's decisions with their inputs), its activation curve, graph neighbours, the recalls that returned it;
supersede and feedback from the page through the API's routes."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from api.read_your_writes import await_read_models
from api.routes import events as event_routes
from api.routes import feedback as feedback_routes
from api.routes import memories as memory_routes
from api.schemas import FeedbackIn, SupersedeIn
from console.charts import line_chart
from console.curves import activation_curve
from console.pages.common import Db, Posted, Refused, Who, api, back, build, form
from console.render import page, svg
from domain.events.memory import memory_stream
from eventstore.read import head_position
from infra.settings import get_settings
from recall.consistency import READ_MODELS
from recall.edges import neighbours
from recall.privacy import hidden_memories, policy_of

router = APIRouter(prefix="/console", include_in_schema=False)
RECALL_WINDOW = 50_000  # positions before the tenant's head searched for recalls that returned the memory
RECALL_PAGES = 5


def _recalls_of(who: Any, db: Any, memory_id: uuid.UUID) -> tuple[list[dict[str, Any]], bool]:
    """The recent recalls whose results name the memory (hit-log events, through GET /v1/events), newest first;
    and whether the search stopped at its bound."""
    with db.connect() as conn:
        head = head_position(conn, who.tenant)
    found: list[dict[str, Any]] = []
    cursor = None
    for _ in range(RECALL_PAGES):
        got = api(event_routes.get_events, who, db, type=["RecallServed"], after=max(0, head - RECALL_WINDOW),
                  cursor=cursor, limit=1000)
        for e in got.events:
            for r in e.data.get("results") or []:
                if r.get("memory_id") == str(memory_id):
                    found.append({"recall_id": e.data["recall_id"], "query": e.data.get("query"), "rank": r["rank"],
                                  "score": r["score"], "at": e.recorded_at, "position": e.position})
        cursor = got.next_cursor
        if cursor is None:
            return found[::-1], head > RECALL_WINDOW
    return found[::-1], True


@router.get("/memories/{memory_id}", response_class=HTMLResponse)
def memory(request: Request, memory_id: uuid.UUID, who: Who, db: Db) -> HTMLResponse:
    found = api(memory_routes.get_memory, memory_id, who, db)
    history = api(memory_routes.get_history, memory_id, who, db)
    stream = api(event_routes.get_events, who, db, stream_id=memory_stream(memory_id), limit=1000).events
    recalls, bounded = _recalls_of(who, db, memory_id)
    now = datetime.now(UTC)
    accesses = [r["at"] for r in recalls] + [e.recorded_at for e in stream if e.type == "MemoryReinforced"]
    curve = activation_curve(found.recorded_at, accesses, now, get_settings().lifecycle.actr_decay)
    with db.connect() as conn:
        edges = neighbours(conn, who.tenant, [memory_id], now)
        hidden = hidden_memories(conn, who.tenant, policy_of(conn, who.tenant),
                                 [n.neighbour_id for n in edges])
    shown = [n for n in edges if str(n.neighbour_id) not in hidden][:30]
    return page(request, "memory.html", who, f"Memory {str(memory_id)[:8]} · Engramlog console", memory=found,
                history=history, stream=stream, recalls=recalls, recalls_bounded=bounded, neighbours=shown,
                chart=svg(line_chart(curve, "activation (ACT-R, normalised) over time", y_max=1.0)))


@router.post("/memories/{memory_id}/supersede", dependencies=[Posted])
async def supersede(request: Request, memory_id: uuid.UUID, who: Who, db: Db) -> RedirectResponse:
    fields = await form(request)
    url = f"/console/memories/{memory_id}"
    try:
        body = build(SupersedeIn, content=fields.get("content", ""), reason=fields.get("reason", ""))
        done = api(memory_routes.post_supersede, memory_id, body, who, db)
    except Refused as exc:
        return back(url, error=exc.detail)
    # read-your-writes: the page redirected to shows the new memory, so its read models have it first
    await await_read_models(db, who.tenant, done.position, READ_MODELS)
    return back(f"/console/memories/{done.memory_id}", done=f"superseded {memory_id} at position {done.position}")


@router.post("/recalls/{recall_id}/feedback", dependencies=[Posted])
async def give_feedback(request: Request, recall_id: uuid.UUID, who: Who, db: Db) -> RedirectResponse:
    fields = await form(request)
    url = fields.get("back") or f"/console/recalls/{recall_id}"
    if not url.startswith("/console/"):
        url = f"/console/recalls/{recall_id}"
    try:
        body = build(FeedbackIn, items=[{"memory_id": fields.get("memory_id", ""),
                                         "verdict": fields.get("verdict", "")}])
        done = api(feedback_routes.post_feedback, recall_id, body, who, db)
    except Refused as exc:
        return back(url, error=exc.detail)
    return back(url, done=f"feedback recorded at position {done.position}")
