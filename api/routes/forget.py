"""POST /v1/forget: crypto-shred one subject of the caller's tenant (services/forget.py, docs/forget.md)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from sqlalchemy import Engine
from starlette.concurrency import run_in_threadpool

from api.context import Caller, caller, engine
from api.forget_schemas import ForgetIn, ForgetOut
from services.forget import Subject, forget

router = APIRouter(prefix="/v1", tags=["forget"])


@router.post("/forget", response_model=ForgetOut)
async def post_forget(body: ForgetIn, who: Annotated[Caller, Depends(caller)],
                      db: Annotated[Engine, Depends(engine)]) -> ForgetOut:
    """Forget a subject within the caller's tenant (an operator key or the tenant's own): its data keys destroyed,
    a SubjectForgotten appended, the read models it fed rebuilt without it; answered once done (a receipt), or,
    with dry_run, what it would erase. 404 when the tenant's log holds no such subject."""
    kind, value = body.subject()
    receipt = await run_in_threadpool(forget, db, who.tenant, Subject(kind, value),  # type: ignore[arg-type]
                                      who.metadata(), body.reason, body.dry_run)
    return ForgetOut.of(receipt.as_dict())
