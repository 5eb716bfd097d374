"""GET /v1/positions/{position}: read-your-writes for clients, whether what was written up to a position is
recallable yet (the read models recall waits for, recall/consistency.py), optionally waiting for it
(api/read_your_writes.py)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query
from pydantic import BaseModel
from sqlalchemy import Engine
from starlette.concurrency import run_in_threadpool

from api.context import Caller, caller, engine
from api.read_your_writes import await_position
from infra.settings import get_settings
from recall.consistency import READ_MODELS, refuse_beyond_head

router = APIRouter(prefix="/v1", tags=["recall"])
MAX_POSITION = 2**63 - 1


class PositionOut(BaseModel):
    position: int
    recallable: bool
    pending: list[str]
    read_models: list[str]


@router.get("/positions/{position}", response_model=PositionOut)
async def get_position(position: Annotated[int, Path(ge=0, le=MAX_POSITION)],
                       who: Annotated[Caller, Depends(caller)], db: Annotated[Engine, Depends(engine)],
                       wait: Annotated[float, Query(ge=0, le=60, description="seconds to wait for it")] = 0
                       ) -> PositionOut:
    """`recallable` once memories and keyword have applied `position` (a vector may still be on its way: such a
    memory is scored on its keyword leg alone). With `wait`, answers as soon as it is, or after `wait` s."""
    await run_in_threadpool(refuse_beyond_head, db, position, "position", who.tenant)
    still = await await_position(db, position, wait, get_settings().api.max_position_waiters)
    return PositionOut(position=position, recallable=not still, pending=still, read_models=list(READ_MODELS))
