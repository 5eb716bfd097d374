"""Operators' dead-letter routes: events projectors parked, queued messages ingest could not append; retry or skip.

GET  /v1/projections/dead-letters                          failing and parked events (`resolved=true`: all)
POST /v1/projections/{name}/dead-letters/{position}/retry  apply a parked event now
POST /v1/projections/{name}/dead-letters/{position}/skip   close it unapplied
GET  /v1/ingest/dead-letters                               parked ingest messages (`resolved=true`: all)
POST /v1/ingest/dead-letters/{id}/retry | /skip            append the message now / close it unappended
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException
from sqlalchemy import Engine

from api.context import Caller, caller, engine
from api.operations_schemas import DeadLettersOut, IngestDeadLettersOut, IngestResolutionOut, ResolutionOut
from api.schemas import MAX_POSITION
from domain.errors import NotFound
from projections import dead_letters as projection_dead_letters
from projections.registry import PROJECTORS
from workers import ingest_dead_letters

router = APIRouter(tags=["operations"])
Action = Literal["retry", "skip"]


def _operator(who: Caller) -> None:
    if not who.operator:
        raise HTTPException(403, "dead letters are for operator keys (ENGRAMLOG_OPERATOR_KEYS)")


@router.get("/v1/projections/dead-letters", response_model=DeadLettersOut)
def get_projection_dead_letters(who: Annotated[Caller, Depends(caller)], db: Annotated[Engine, Depends(engine)],
                                projection: str | None = None, resolved: bool = False) -> dict[str, Any]:
    _operator(who)
    if projection is not None and projection not in PROJECTORS:  # also keeps NUL and the like out of the SQL
        raise NotFound(f"unknown projection {projection!r}; known: {', '.join(PROJECTORS)}")
    statuses = ("failing", "parked", "retried", "skipped") if resolved else projection_dead_letters.OPEN
    with db.connect() as conn:
        rows = projection_dead_letters.dead_letters(conn, projection, statuses=statuses)
    return {"dead_letters": [asdict(r) for r in rows]}


@router.post("/v1/projections/{name}/dead-letters/{position}/{action}", response_model=ResolutionOut)
def post_projection_dead_letter(name: str, position: int, action: Action,
                                who: Annotated[Caller, Depends(caller)],
                                db: Annotated[Engine, Depends(engine)]) -> dict[str, Any]:
    _operator(who)
    if name not in PROJECTORS:
        raise NotFound(f"unknown projection {name!r}; known: {', '.join(PROJECTORS)}")
    if not 0 <= position <= MAX_POSITION:
        raise NotFound(f"no position {position}")
    resolve = projection_dead_letters.retry if action == "retry" else projection_dead_letters.skip
    done = resolve(db, PROJECTORS[name], position, who.actor)
    if done.outcome == "not_parked":
        raise NotFound(f"no parked event at position {position} for projection {name!r}")
    return asdict(done)


@router.get("/v1/ingest/dead-letters", response_model=IngestDeadLettersOut)
def get_ingest_dead_letters(who: Annotated[Caller, Depends(caller)], db: Annotated[Engine, Depends(engine)],
                            resolved: bool = False) -> dict[str, Any]:
    _operator(who)
    statuses = ("parked", "retried", "skipped") if resolved else ("parked",)
    with db.connect() as conn:
        rows = ingest_dead_letters.dead_letters(conn, statuses=statuses)
    return {"dead_letters": [asdict(r) for r in rows]}


@router.post("/v1/ingest/dead-letters/{dead_letter_id}/{action}", response_model=IngestResolutionOut)
def post_ingest_dead_letter(dead_letter_id: int, action: Action, who: Annotated[Caller, Depends(caller)],
                            db: Annotated[Engine, Depends(engine)]) -> dict[str, Any]:
    _operator(who)
    if not 0 <= dead_letter_id <= MAX_POSITION:
        raise NotFound(f"no parked ingest message {dead_letter_id}")
    resolve = ingest_dead_letters.retry if action == "retry" else ingest_dead_letters.skip
    done = resolve(db, dead_letter_id, who.actor)
    if done.outcome == "not_parked":
        raise NotFound(f"no parked ingest message {dead_letter_id}")
    return asdict(done)
