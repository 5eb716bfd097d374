"""POST /v1/recall."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from sqlalchemy import Engine

from api.context import Caller, caller, engine
from api.schemas import RecallIn, RecallOut, RecallResultOut
from infra.embedding import get_embedder
from infra.settings import get_settings
from recall.scope import Scope
from recall.service import RecallRequest, recall

router = APIRouter(prefix="/v1", tags=["recall"])


@router.post("/recall", response_model=RecallOut)
def post_recall(body: RecallIn, who: Annotated[Caller, Depends(caller)],
                db: Annotated[Engine, Depends(engine)]) -> RecallOut:
    settings = get_settings()
    scope = Scope(who.tenant, body.agent_id, body.project, body.session_id, tuple(body.kinds))
    answer = recall(db, get_embedder(settings.embedding_model), settings,
                    RecallRequest(scope, body.query, body.k, body.min_position), who.metadata())
    return RecallOut(recall_id=answer.recall_id, latency_ms=answer.latency_ms, position=answer.position,
                     details=answer.details,
                     results=[RecallResultOut(**r.__dict__) for r in answer.results])
