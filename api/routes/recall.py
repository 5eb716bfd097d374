"""POST /v1/recall (the memories' funnel), POST /v1/recall/multi (every domain, in buckets) and
GET /v1/recalls/{recall_id} (what a recall answered and why)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends
from sqlalchemy import Engine
from starlette.concurrency import run_in_threadpool

from api.context import Caller, caller, engine
from api.recall_schemas import BucketOut, DomainResultOut, MultiRecallIn, MultiRecallOut
from api.schemas import RecallIn, RecallOut, RecallRecordOut, RecallResultOut
from domain.errors import NotFound
from domain.privacy import PrivacyPolicy
from infra.embedding import get_embedder
from infra.settings import get_settings
from recall.consistency import await_recallable, pending, refuse_beyond_head
from recall.multi import MultiRequest, check, recall_multi
from recall.privacy import policy_of, visible_recall_record
from recall.scope import Scope
from recall.service import RecallRequest, get_recall, recall, validate

router = APIRouter(prefix="/v1", tags=["recall"])
T = TypeVar("T")


def _policy(db: Engine, tenant: str) -> PrivacyPolicy:
    """The tenant's privacy policy, read once per request and handed to every domain."""
    with db.connect() as conn:
        return policy_of(conn, tenant)


def _pending_after_head_check(db: Engine, min_position: int) -> list[str]:
    """min_position beyond the log's head: 422; else the recall read models that have not applied it yet."""
    refuse_beyond_head(db, min_position, "min_position")
    return pending(db, min_position)


async def _await_min_position(db: Engine, min_position: int | None) -> None:
    """Read-your-writes before the search. One threadpool hop when the read models have already applied the
    position (the usual case); the bounded wait on the event loop only when they have not."""
    if min_position is None:
        return
    if await run_in_threadpool(_pending_after_head_check, db, min_position):
        settings = get_settings()
        await await_recallable(db, min_position, settings.min_position_wait_s, settings.max_position_waiters)


def _under_policy(search: Callable[..., T], db: Engine, tenant: str, *args: Any) -> T:
    """The tenant's policy read, then the search under it, in one threadpool hop."""
    return search(db, *args, _policy(db, tenant))


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
    await _await_min_position(db, body.min_position)
    answer = await run_in_threadpool(_under_policy, recall, db, who.tenant, get_embedder(settings.embedding_model),
                                     settings, request, who.metadata())
    return RecallOut(recall_id=answer.recall_id, latency_ms=answer.latency_ms, position=answer.position,
                     details=answer.details, explanation=answer.explanation, abstained=answer.abstained,
                     results=[RecallResultOut(**r.__dict__) for r in answer.results])


@router.post("/recall/multi", response_model=MultiRecallOut)
async def post_recall_multi(body: MultiRecallIn, who: Annotated[Caller, Depends(caller)],
                            db: Annotated[Engine, Depends(engine)]) -> MultiRecallOut:
    """One query over the domains asked (default: every domain with data in the scope), one bucket per domain."""
    settings = get_settings()
    request = MultiRequest(Scope(who.tenant, body.agent_id, body.project, body.session_id), body.query,
                           tuple(body.domains or ()), body.k, body.include_history)
    check(request)
    await _await_min_position(db, body.min_position)
    answer = await run_in_threadpool(_under_policy, recall_multi, db, who.tenant,
                                     get_embedder(settings.embedding_model), settings, request, who.metadata())
    return MultiRecallOut(recall_id=answer.recall_id, latency_ms=answer.latency_ms, position=answer.position,
                          buckets=[BucketOut(domain=b.domain, quota=b.quota, reason=b.reason, results=[
                              DomainResultOut(content=h.content, score=h.score, handle=h.handle, legs=h.legs,
                                              layer=h.layer, memory_id=h.memory_id, fields=h.fields,
                                              explanation=h.explanation) for h in b.results])
                              for b in answer.buckets])


@router.get("/recalls/{recall_id}", response_model=RecallRecordOut)
def get_recall_record(recall_id: uuid.UUID, who: Annotated[Caller, Depends(caller)],
                      db: Annotated[Engine, Depends(engine)]) -> RecallRecordOut:
    """The query, results and explanation of one of the caller's recalls (404 for another tenant's), under the
    privacy policy in force now (recall/privacy.py visible_recall_record: 404 as unknown when it was scoped to
    excluded items)."""
    record = get_recall(db, who.tenant, recall_id)
    with db.connect() as conn:
        shown = visible_recall_record(conn, who.tenant, policy_of(conn, who.tenant), record)
    if shown is None:
        raise NotFound(f"no recall {recall_id}")
    return RecallRecordOut(**shown)
