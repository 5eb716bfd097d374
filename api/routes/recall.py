"""POST /v1/recall (the funnel) and GET /v1/recalls/{recall_id} (what a recall answered and why)."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Depends
from sqlalchemy import Engine
from starlette.concurrency import run_in_threadpool

from api.context import Caller, caller, engine
from api.schemas import RecallIn, RecallOut, RecallRecordOut, RecallResultOut
from infra.embedding import get_embedder
from infra.settings import get_settings
from recall.consistency import await_recallable, refuse_beyond_head
from recall.scope import Scope
from recall.service import RecallRequest, get_recall, recall, validate

router = APIRouter(prefix="/v1", tags=["recall"])


@router.post("/recall", response_model=RecallOut)
async def post_recall(body: RecallIn, who: Annotated[Caller, Depends(caller)],
                      db: Annotated[Engine, Depends(engine)]) -> RecallOut:
    """Async so that a read-your-writes wait sleeps on the event loop; the funnel runs in the threadpool."""
    settings = get_settings()
    scope = Scope(who.tenant, body.agent_id, body.project, body.session_id, tuple(body.kinds))
    request = RecallRequest(scope, body.query, body.k, None, include_staging=body.include_staging,
                            include_history=body.include_history, include_archived=body.include_archived,
                            trace=body.trace)
    validate(request)
    if body.min_position is not None:
        await run_in_threadpool(refuse_beyond_head, db, body.min_position, "min_position")
        await await_recallable(db, body.min_position, settings.min_position_wait_s, settings.max_position_waiters)
    answer = await run_in_threadpool(recall, db, get_embedder(settings.embedding_model), settings, request,
                                     who.metadata())
    return RecallOut(recall_id=answer.recall_id, latency_ms=answer.latency_ms, position=answer.position,
                     details=answer.details, explanation=answer.explanation, abstained=answer.abstained,
                     results=[RecallResultOut(**r.__dict__) for r in answer.results])


@router.get("/recalls/{recall_id}", response_model=RecallRecordOut)
def get_recall_record(recall_id: uuid.UUID, who: Annotated[Caller, Depends(caller)],
                      db: Annotated[Engine, Depends(engine)]) -> RecallRecordOut:
    """The query, results and explanation of one of the caller's recalls (404 for another tenant's)."""
    return RecallRecordOut(**get_recall(db, who.tenant, recall_id))
