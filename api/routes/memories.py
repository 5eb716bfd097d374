"""POST /v1/memories, POST /v1/memories/batch, GET /v1/memories/{id}."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Depends
from sqlalchemy import Engine, text

from api.context import Caller, caller, engine
from api.schemas import MemoriesIn, MemoryIn, MemoryOut, RememberedManyOut, RememberedOut
from domain.errors import NotFound
from services.remember import MemoryInput, remember

router = APIRouter(prefix="/v1/memories", tags=["memories"])


@router.post("", response_model=RememberedOut, status_code=201)
def post_memory(body: MemoryIn, who: Annotated[Caller, Depends(caller)],
                db: Annotated[Engine, Depends(engine)]) -> RememberedOut:
    [done] = remember(db, who.tenant, [MemoryInput(**body.model_dump())], who.metadata())
    return RememberedOut(memory_id=done.memory_id, position=done.position)


@router.post("/batch", response_model=RememberedManyOut, status_code=201)
def post_memories(body: MemoriesIn, who: Annotated[Caller, Depends(caller)],
                  db: Annotated[Engine, Depends(engine)]) -> RememberedManyOut:
    done = remember(db, who.tenant, [MemoryInput(**m.model_dump()) for m in body.memories], who.metadata())
    return RememberedManyOut(memories=[RememberedOut(memory_id=d.memory_id, position=d.position) for d in done])


_ONE = text("""
SELECT memory_id, content, kind, agent_id, project, session_id, tags, metadata, occurred_at, recorded_at,
       status, position
FROM memories WHERE tenant = :tenant AND memory_id = :id
""")


@router.get("/{memory_id}", response_model=MemoryOut)
def get_memory(memory_id: uuid.UUID, who: Annotated[Caller, Depends(caller)],
               db: Annotated[Engine, Depends(engine)]) -> MemoryOut:
    with db.connect() as conn:
        row = conn.execute(_ONE, {"tenant": who.tenant, "id": memory_id}).first()
    if row is None:
        raise NotFound(f"no memory {memory_id}")
    return MemoryOut(**row._mapping)
