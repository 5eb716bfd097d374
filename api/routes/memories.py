"""POST /v1/memories, POST /v1/memories/batch, GET /v1/memories/{id}, POST /v1/memories/{id}/supersede,
GET /v1/memories/{id}/history."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from sqlalchemy import Engine

from api.context import Caller, caller, engine
from api.read_your_writes import reads, wait_for_position
from api.schemas import (
    AsOf,
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
from eventstore.append import existing_positions
from eventstore.read import event_at
from infra.settings import get_settings
from projections.memories import MemoriesProjector
from recall import queries
from recall.domains.memories import MemoryDomain
from recall.privacy import hidden_memories, memory_hidden, policy_of, visible_history, visible_memory
from recall.timeframe import resolve_as_of
from services.neighbours import old_memory
from services.remember import MemoryInput, Remembered, remember

router = APIRouter(prefix="/v1/memories", tags=["memories"])


def _input(body: MemoryIn) -> MemoryInput:
    fields = body.model_dump()
    fields["signals"] = body.signals.model_dump() if body.signals else None
    return MemoryInput(**fields)


def _out(done: Remembered) -> RememberedOut:
    return RememberedOut(**done.__dict__)


def _supersedes_visible(db: Engine, tenant: str, inputs: list[MemoryInput]) -> list[MemoryInput]:
    """A write superseding a memory the privacy policy excludes is a 404 as for an unknown one (the old memory is
    neither superseded nor told to exist), as POST /v1/memories/{id}/supersede answers."""
    olds = [m.supersedes for m in inputs if m.supersedes is not None]
    if olds:
        with db.connect() as conn:
            hidden = hidden_memories(conn, tenant, policy_of(conn, tenant), olds)
        for old in olds:
            if str(old).lower() in hidden:
                raise NotFound(f"no memory {old}: nothing to supersede")
    return inputs


@router.post("", response_model=RememberedOut, status_code=201)
def post_memory(body: MemoryIn, who: Annotated[Caller, Depends(caller)],
                db: Annotated[Engine, Depends(engine)]) -> RememberedOut:
    [done] = remember(db, who.tenant, _supersedes_visible(db, who.tenant, [_input(body)]), who.metadata())
    return _out(done)


@router.post("/batch", response_model=RememberedManyOut, status_code=201)
def post_memories(body: MemoriesIn, who: Annotated[Caller, Depends(caller)],
                  db: Annotated[Engine, Depends(engine)]) -> RememberedManyOut:
    done = remember(db, who.tenant, _supersedes_visible(db, who.tenant, [_input(m) for m in body.memories]),
                    who.metadata())
    return RememberedManyOut(memories=[_out(d) for d in done])


@router.get("/{memory_id}", response_model=GovernedMemoryOut, dependencies=[reads(MemoryDomain)])
def get_memory(memory_id: uuid.UUID, who: Annotated[Caller, Depends(caller)],
               db: Annotated[Engine, Depends(engine)], as_of: Annotated[AsOf, Query()] = None) -> GovernedMemoryOut:
    """The memory now, or `as_of` a log position or timestamp (recorded time): as it stood then, 404 if it was
    not recorded yet (recall/timeframe.py)."""
    position = resolve_as_of(db, who.tenant, as_of)
    if position is not None:  # the versions must have been projected up to it
        wait_for_position(db, position, get_settings().api.min_position_wait_s, (MemoriesProjector.name,),
                          who.tenant)
    with db.connect() as conn:
        found = visible_memory(conn, who.tenant, policy_of(conn, who.tenant),
                               queries.memory(conn, who.tenant, memory_id, position))
        if found is None:
            raise NotFound(f"no memory {memory_id}")  # the privacy gate: as if unknown, existence not revealed
        return GovernedMemoryOut(**found)


def _supersede_retried(db: Engine, tenant: str, memory_id: uuid.UUID, key: str | None) -> SupersededOut | None:
    """A retry of a supersede already appended (its idempotency key is in the log): the original answer, not the
    409 that the memory, superseded by that very write, would now give."""
    if key is None:
        return None
    with db.connect() as conn:
        found = existing_positions(conn, tenant, [key])
        event = event_at(conn, found[key]) if key in found else None
    if event is None or event.data.get("supersedes") != str(memory_id):
        return None
    return SupersededOut(memory_id=event.data["memory_id"], position=event.position, supersedes=memory_id)


@router.post("/{memory_id}/supersede", response_model=SupersededOut, status_code=201)
def post_supersede(memory_id: uuid.UUID, body: SupersedeIn, who: Annotated[Caller, Depends(caller)],
                   db: Annotated[Engine, Depends(engine)]) -> SupersededOut:
    """Replace a memory with a new one; the old stays in history. 404 if unknown, 409 if already superseded."""
    with db.connect() as conn:
        if memory_hidden(conn, who.tenant, policy_of(conn, who.tenant), memory_id):
            raise NotFound(f"no memory {memory_id}")  # before old_memory: its 409 would reveal the memory exists
    retried = _supersede_retried(db, who.tenant, memory_id, body.idempotency_key)
    if retried is not None:
        return retried
    old = old_memory(db, who.tenant, memory_id)
    given = body.model_dump(exclude_unset=True)

    def pick(name: str) -> Any:  # the body's value, else the old memory's (its JSON form)
        return given[name] if name in given else old.get(name)

    [done] = remember(db, who.tenant, [MemoryInput(
        content=body.content, kind=str(pick("kind") or "observation"), agent_id=pick("agent_id"),
        project=pick("project"), session_id=pick("session_id"), tags=list(pick("tags") or []),
        metadata=body.metadata, occurred_at=body.occurred_at, idempotency_key=body.idempotency_key,
        signals=body.signals.model_dump() if body.signals else None, supersedes=memory_id, reason=body.reason,
    )], who.metadata())
    return SupersededOut(memory_id=done.memory_id, position=done.position, supersedes=memory_id)


@router.get("/{memory_id}/history", response_model=HistoryOut, dependencies=[reads(MemoryDomain)])
def get_history(memory_id: uuid.UUID, who: Annotated[Caller, Depends(caller)],
                db: Annotated[Engine, Depends(engine)]) -> HistoryOut:
    """The whole supersede chain through this memory, oldest → newest: when, why and by whom each step."""
    with db.connect() as conn:
        policy = policy_of(conn, who.tenant)
        if memory_hidden(conn, who.tenant, policy, memory_id):
            raise NotFound(f"no memory {memory_id}")
        found = visible_history(conn, who.tenant, policy, queries.history(conn, who.tenant, memory_id))
    transitions = [HistoryStepOut(from_id=s["memory_id"], to_id=s["superseded_by"], at=s["at"], reason=s["reason"],
                                  trigger=s["trigger"], actor=s["actor"], position=s["position"]) for s in found.steps]
    return HistoryOut(memory_id=memory_id, current=found.current, chain=[HistoryMemoryOut(**m) for m in found.chain],
                      transitions=transitions)
