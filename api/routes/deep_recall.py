"""POST /v1/deep_recall (a model's search code over the live APIs, in a sandbox; deep_recall/service.py) and
GET /v1/blind_spots (the questions deep recall could not answer, live for the scope)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel
from sqlalchemy import Engine

from api.context import Caller, caller, engine
from api.deep_recall_schemas import DeepRecallIn
from api.read_your_writes import await_read_models, read_models_of, waits_for
from deep_recall import blind_spots
from deep_recall.capacity import run_admitted
from deep_recall.service import DeepRequest, deep_recall
from domain.privacy import scope_excluded
from infra.embedding import get_embedder
from infra.settings import get_settings
from projections.deep_recall import DeepRecallProjector
from recall.event_privacy import Gate
from recall.privacy import policy_in_force, policy_of

router = APIRouter(prefix="/v1", tags=["deep recall"])


class DeepRecallOut(BaseModel):
    recall_id: uuid.UUID
    answer: str | None
    shortcut: bool
    cached: bool
    iterations: int
    sub_calls: int
    cost_usd: float
    tokens: dict[str, int]
    stopped: str  # final | budget | timeout | error
    reason: str | None
    results: list[dict[str, Any]]  # the quick recall's, when they are the answer (the shortcut; no model configured)
    latency_ms: float
    position: int


class BlindSpotOut(BaseModel):
    gap_id: uuid.UUID
    question: str
    kind: str
    priority: float
    registered_at: datetime
    expires_at: datetime
    recall_id: uuid.UUID
    reason: str


class BlindSpotsOut(BaseModel):
    blind_spots: list[BlindSpotOut]


def _run(db: Engine, who: Caller, request: DeepRequest) -> dict[str, Any]:
    settings = get_settings()
    with db.connect() as conn:
        found = policy_in_force(conn, who.tenant)
    return deep_recall(db, get_embedder(settings.embedding.embedding_model), settings, request, who.tenant,
                       who.metadata(), found.policy, found.position)


@router.post("/deep_recall", response_model=DeepRecallOut)
async def post_deep_recall(body: DeepRecallIn, who: Annotated[Caller, Depends(caller)],
                           db: Annotated[Engine, Depends(engine)]) -> DeepRecallOut:
    request = DeepRequest(body.question, body.agent_id, body.project, body.session_id, body.max_depth,
                          body.budgets.model_dump(), body.min_position)
    # Read-your-writes before the quick recall (a fan-out over every domain) and the model's searches; waiting
    # holds no sandbox worker or deep-recall slot.
    await await_read_models(db, who.tenant, body.min_position, read_models_of())
    # Its own threads and a per-tenant limit (429 beyond it): deep recalls never hold the shared threadpool.
    return DeepRecallOut(**await run_admitted(get_settings(), db, who.tenant, lambda: _run(db, who, request)))


@router.get("/blind_spots", response_model=BlindSpotsOut, dependencies=[waits_for(DeepRecallProjector.name)])
def get_blind_spots(who: Annotated[Caller, Depends(caller)], db: Annotated[Engine, Depends(engine)],
                    agent_id: Annotated[str | None, Query(max_length=128)] = None,
                    project: Annotated[str | None, Query(max_length=128)] = None,
                    session_id: Annotated[str | None, Query(max_length=128)] = None) -> BlindSpotsOut:
    """The scope's live blind spots under the privacy policy in force: none for an excluded scope (as for one with
    none), none of a deep recall whose audit the policy hides now."""
    rows = blind_spots.of_scope(db, who.tenant, agent_id, session_id, project)
    with db.connect() as conn:
        policy = policy_of(conn, who.tenant)
        if not policy.empty:
            gate = Gate(conn, who.tenant, policy, set())
            scope = {"agent_id": agent_id, "project": project, "session_id": session_id}
            rows = [] if scope_excluded(policy, scope) else [
                r for r in rows if not gate.recall_hidden(r["recall_id"], deep=True)]
    return BlindSpotsOut(blind_spots=[BlindSpotOut(**r) for r in rows])
