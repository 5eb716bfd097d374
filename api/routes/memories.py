"""POST /v1/memories, POST /v1/memories/batch, GET /v1/memories/{id}, POST /v1/memories/{id}/supersede,
GET /v1/memories/{id}/history."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Depends
from sqlalchemy import Engine, text

from api.context import Caller, caller, engine
from api.schemas import (
    GovernedMemoryOut,
    HistoryMemoryOut,
    HistoryOut,
    HistoryStepOut,
    MemoriesIn,
    MemoryIn,
    RememberedManyOut,
    RememberedOut,
    SupersededOut,
    SupersedeIn,
)
from domain.errors import NotFound
from services.neighbours import old_memory
from services.remember import MemoryInput, Remembered, remember

router = APIRouter(prefix="/v1/memories", tags=["memories"])


def _input(body: MemoryIn) -> MemoryInput:
    fields = body.model_dump()
    fields["signals"] = body.signals.model_dump() if body.signals else None
    return MemoryInput(**fields)


def _out(done: Remembered) -> RememberedOut:
    return RememberedOut(**done.__dict__)


@router.post("", response_model=RememberedOut, status_code=201)
def post_memory(body: MemoryIn, who: Annotated[Caller, Depends(caller)],
                db: Annotated[Engine, Depends(engine)]) -> RememberedOut:
    [done] = remember(db, who.tenant, [_input(body)], who.metadata())
    return _out(done)


@router.post("/batch", response_model=RememberedManyOut, status_code=201)
def post_memories(body: MemoriesIn, who: Annotated[Caller, Depends(caller)],
                  db: Annotated[Engine, Depends(engine)]) -> RememberedManyOut:
    done = remember(db, who.tenant, [_input(m) for m in body.memories], who.metadata())
    return RememberedManyOut(memories=[_out(d) for d in done])


_ONE = text("""
SELECT memory_id, content, kind, agent_id, project, session_id, tags, metadata, occurred_at, recorded_at,
       status, position, memory_type, salience, route, confidence, reinforced_count, supersedes, superseded_by,
       merged_into, status_changed_at
FROM memories WHERE tenant = :tenant AND memory_id = :id
""")


@router.get("/{memory_id}", response_model=GovernedMemoryOut)
def get_memory(memory_id: uuid.UUID, who: Annotated[Caller, Depends(caller)],
               db: Annotated[Engine, Depends(engine)]) -> GovernedMemoryOut:
    with db.connect() as conn:
        row = conn.execute(_ONE, {"tenant": who.tenant, "id": memory_id}).first()
    if row is None:
        raise NotFound(f"no memory {memory_id}")
    return GovernedMemoryOut(**row._mapping)


@router.post("/{memory_id}/supersede", response_model=SupersededOut, status_code=201)
def post_supersede(memory_id: uuid.UUID, body: SupersedeIn, who: Annotated[Caller, Depends(caller)],
                   db: Annotated[Engine, Depends(engine)]) -> SupersededOut:
    """Replace a memory with a new one; the old stays in history. 404 if unknown, 409 if already superseded."""
    old = old_memory(db, who.tenant, memory_id)
    given = body.model_dump(exclude_unset=True)

    def pick(name: str) -> object:
        return given[name] if name in given else old.get(name)

    [done] = remember(db, who.tenant, [MemoryInput(
        content=body.content, kind=str(pick("kind") or "observation"), agent_id=pick("agent_id"),  # type: ignore[arg-type]
        project=pick("project"), session_id=pick("session_id"), tags=list(pick("tags") or []),  # type: ignore[arg-type]
        metadata=body.metadata, occurred_at=body.occurred_at, idempotency_key=body.idempotency_key,
        signals=body.signals.model_dump() if body.signals else None, supersedes=memory_id, reason=body.reason,
    )], who.metadata())
    return SupersededOut(memory_id=done.memory_id, position=done.position, supersedes=memory_id)


_KNOWN = text("SELECT 1 FROM memories WHERE tenant = :tenant AND memory_id = :id")
# Both directions from the memory, each step one memory_history row; a chain is linear (a memory is
# superseded once and a write supersedes one memory), the depth bound only guards against a corrupt table.
_CHAIN = text("""
WITH RECURSIVE older AS (
    SELECT h.*, 1 AS depth FROM memory_history h WHERE h.tenant = :tenant AND h.superseded_by = :id
    UNION ALL
    SELECT h.*, o.depth + 1 FROM memory_history h JOIN older o ON h.tenant = :tenant AND h.superseded_by = o.memory_id
    WHERE o.depth < 1000
), newer AS (
    SELECT h.*, 1 AS depth FROM memory_history h WHERE h.tenant = :tenant AND h.memory_id = :id
    UNION ALL
    SELECT h.*, n.depth + 1 FROM memory_history h JOIN newer n ON h.tenant = :tenant AND h.memory_id = n.superseded_by
    WHERE n.depth < 1000
)
SELECT memory_id, superseded_by, reason, trigger, actor, at, position FROM older
UNION
SELECT memory_id, superseded_by, reason, trigger, actor, at, position FROM newer
ORDER BY position
""")
_MEMORIES = text("""
SELECT memory_id, content, status, memory_type, recorded_at, position FROM memories
WHERE tenant = :tenant AND memory_id = ANY(:ids)
""")


@router.get("/{memory_id}/history", response_model=HistoryOut)
def get_history(memory_id: uuid.UUID, who: Annotated[Caller, Depends(caller)],
                db: Annotated[Engine, Depends(engine)]) -> HistoryOut:
    """The whole supersede chain through this memory, oldest → newest: when, why and by whom each step."""
    params = {"tenant": who.tenant, "id": memory_id}
    with db.connect() as conn:
        if conn.execute(_KNOWN, params).first() is None:
            raise NotFound(f"no memory {memory_id}")
        steps = conn.execute(_CHAIN, params).all()
        by_old = {s.memory_id: s for s in steps}
        newer_ids = {s.superseded_by for s in steps}
        order = [next((i for i in by_old if i not in newer_ids), memory_id)]
        while order[-1] in by_old and len(order) <= len(steps):
            order.append(by_old[order[-1]].superseded_by)
        steps = [by_old[i] for i in order[:-1]]
        memories = {r.memory_id: r for r in conn.execute(_MEMORIES, {"tenant": who.tenant, "ids": order})}
    chain = [HistoryMemoryOut(**memories[i]._mapping) for i in order if i in memories]
    transitions = [HistoryStepOut(from_id=s.memory_id, to_id=s.superseded_by, at=s.at, reason=s.reason,
                                  trigger=s.trigger, actor=s.actor, position=s.position) for s in steps]
    return HistoryOut(memory_id=memory_id, current=order[-1], chain=chain, transitions=transitions)
