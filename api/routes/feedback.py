"""POST /v1/recalls/{recall_id}/feedback: which recalled memories the caller used, or found not useful."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Depends
from sqlalchemy import Engine

from api.context import Caller, caller, engine
from api.schemas import FeedbackIn, FeedbackOut
from services.feedback import give_feedback

router = APIRouter(prefix="/v1/recalls", tags=["recall"])


@router.post("/{recall_id}/feedback", response_model=FeedbackOut, status_code=201)
def post_feedback(recall_id: uuid.UUID, body: FeedbackIn, who: Annotated[Caller, Depends(caller)],
                  db: Annotated[Engine, Depends(engine)]) -> FeedbackOut:
    items = [{"memory_id": str(i.memory_id), "verdict": i.verdict} for i in body.items]
    position = give_feedback(db, who.tenant, recall_id, items, who.metadata())
    return FeedbackOut(recall_id=recall_id, position=position, items=len(items))
