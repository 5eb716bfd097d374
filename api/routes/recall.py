"""POST /v1/recall (the memories' funnel), POST /v1/recall/multi (every domain, in buckets) and
GET /v1/recalls/{recall_id} (what a recall answered and why)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends
from sqlalchemy import Engine
from starlette.concurrency import run_in_threadpool

from api.context import Caller, caller, engine
from api.read_your_writes import await_read_models, read_models_of, reads
from api.recall_schemas import BucketOut, DomainResultOut, FusedResultOut, MultiRecallIn, MultiRecallOut
from api.schemas import RecallIn, RecallOut, RecallRecordOut, RecallResultOut
from domain.errors import NotFound
from domain.privacy import PrivacyPolicy
from infra.db import reading
from infra.embedding import get_embedder
from infra.settings import get_settings
from recall.consistency import READ_MODELS
from recall.multi import MultiRequest, check, recall_multi
from recall.privacy import policy_of, visible_recall_record
from recall.scope import Scope
from recall.service import RecallRequest, get_recall, recall, validate
from recall.timeframe import TimeFrame, resolve_as_of

router = APIRouter(prefix="/v1", tags=["recall"])
T = TypeVar("T")


def _policy(db: Engine, tenant: str) -> PrivacyPolicy:
    """The tenant's privacy policy, read once per request and handed to every domain."""
    with reading(db) as conn:
        return policy_of(conn, tenant)


def _under_policy(search: Callable[..., T], db: Engine, tenant: str, *args: Any) -> T:
    """The tenant's policy read, then the search under it, in one threadpool hop."""
    return search(db, *args, _policy(db, tenant))


async def _as_of(db: Engine, tenant: str, frame: TimeFrame, as_of: int | datetime | None) -> TimeFrame:
    """The frame with as_of as a log position (a timestamp resolved; beyond the tenant's head: 422)."""
    if as_of is None:
        return frame
    return replace(frame, as_of=await run_in_threadpool(resolve_as_of, db, tenant, as_of))


def _wait_for(min_position: int | None, frame: TimeFrame) -> int | None:
    """A read as of a position needs the read models to have applied it: the later of it and min_position."""
    positions = [p for p in (min_position, frame.as_of) if p is not None]
    return max(positions) if positions else None


@router.post("/recall", response_model=RecallOut)
async def post_recall(body: RecallIn, who: Annotated[Caller, Depends(caller)],
                      db: Annotated[Engine, Depends(engine)]) -> RecallOut:
    """Async so that a read-your-writes wait sleeps on the event loop; the funnel runs in the threadpool."""
    settings = get_settings()
    scope = Scope(who.tenant, body.agent_id, body.project, body.session_id, tuple(body.kinds))
    request = RecallRequest(scope, body.query, body.k, include_staging=body.include_staging,
                            include_history=body.include_history, include_archived=body.include_archived,
                            trace=body.trace, reference_time=body.reference_time,
                            frame=TimeFrame(body.since, body.until))
    validate(request)
    request = replace(request, frame=await _as_of(db, who.tenant, request.frame, body.as_of))
    await await_read_models(db, who.tenant, _wait_for(body.min_position, request.frame), READ_MODELS)
    answer = await run_in_threadpool(_under_policy, recall, db, who.tenant,
                                     get_embedder(settings.embedding.embedding_model), settings, request,
                                     who.metadata())
    return RecallOut(recall_id=answer.recall_id, latency_ms=answer.latency_ms, position=answer.position,
                     details=answer.details, explanation=answer.explanation, abstained=answer.abstained,
                     results=[RecallResultOut(**r.__dict__) for r in answer.results])


@router.post("/recall/multi", response_model=MultiRecallOut)
async def post_recall_multi(body: MultiRecallIn, who: Annotated[Caller, Depends(caller)],
                            db: Annotated[Engine, Depends(engine)]) -> MultiRecallOut:
    """One query over the domains asked (default: every domain with data in the scope), one bucket per domain."""
    settings = get_settings()
    request = MultiRequest(Scope(who.tenant, body.agent_id, body.project, body.session_id), body.query,
                           tuple(body.domains or ()), body.k, body.include_history,
                           frame=TimeFrame(body.since, body.until))
    check(request)
    request = replace(request, frame=await _as_of(db, who.tenant, request.frame, body.as_of))
    # read-your-writes for every domain asked (the default fan-out: every domain, known only after the search)
    await await_read_models(db, who.tenant, _wait_for(body.min_position, request.frame),
                            read_models_of(request.domains))
    answer = await run_in_threadpool(_under_policy, recall_multi, db, who.tenant,
                                     get_embedder(settings.embedding.embedding_model), settings, request,
                                     who.metadata())
    return MultiRecallOut(recall_id=answer.recall_id, latency_ms=answer.latency_ms, position=answer.position,
                          buckets=[BucketOut(domain=b.domain, quota=b.quota, reason=b.reason, results=[
                              DomainResultOut(content=h.content, score=h.score, handle=h.handle, legs=h.legs,
                                              layer=h.layer, memory_id=h.memory_id, fields=h.fields,
                                              explanation=h.explanation, relevance=h.relevance)
                              for h in b.results])
                              for b in answer.buckets],
                          results=[FusedResultOut(domain=f.domain, rank=f.rank, relevance=f.hit.relevance,
                                                  score=f.hit.score, content=f.hit.content, handle=f.hit.handle,
                                                  layer=f.hit.layer, memory_id=f.hit.memory_id)
                                   for f in answer.results])


# The record is the recall's own hit-log events, read from the log (its RecallServed or DeepRecallServed, then
# its drills), appended before the recall answered; what it reads from read models is each result's domain under
# a privacy policy (visible_recall_record's fetch): min_position waits for every domain's.
@router.get("/recalls/{recall_id}", response_model=RecallRecordOut, dependencies=[reads()])
def get_recall_record(recall_id: uuid.UUID, who: Annotated[Caller, Depends(caller)],
                      db: Annotated[Engine, Depends(engine)]) -> RecallRecordOut:
    """The query, results and explanation of one of the caller's recalls (404 for another tenant's), under the
    privacy policy in force now (recall/privacy.py visible_recall_record: 404 as unknown when it was scoped to
    excluded items)."""
    record = get_recall(db, who.tenant, recall_id)
    with reading(db) as conn:
        shown = visible_recall_record(conn, who.tenant, policy_of(conn, who.tenant), record)
    if shown is None:
        raise NotFound(f"no recall {recall_id}")
    return RecallRecordOut(**shown)
