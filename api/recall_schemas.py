"""Request and answer bodies of the recall fabric: POST /v1/recall/multi (the aggregator's buckets)."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel, Field

from api.schemas import Body, MinPosition
from domain.events import ScopeText
from domain.events.hitlog import HitLayer

MAX_DOMAINS = 16


class MultiRecallIn(Body):
    query: str
    # The domains to ask, in activation order (their buckets come in this order); omitted: every domain with data
    # in the scope, in the registry's order.
    domains: list[str] | None = Field(default=None, max_length=MAX_DOMAINS)
    # The results all buckets share (each of the N answering domains gets k // N); omitted: the configured ceiling.
    k: int | None = None
    agent_id: ScopeText | None = None
    project: ScopeText | None = None
    session_id: ScopeText | None = None
    include_history: bool = False
    min_position: MinPosition = None


class DomainResultOut(BaseModel):
    content: str
    score: float  # comparable within its bucket only
    handle: dict[str, Any]  # what names this result for the drill (a memory: its memory_id)
    legs: dict[str, float | None]
    layer: HitLayer
    memory_id: uuid.UUID | None = None
    fields: dict[str, Any] = Field(default_factory=dict)
    explanation: dict[str, Any] = Field(default_factory=dict)


class BucketOut(BaseModel):
    domain: str
    quota: int
    results: list[DomainResultOut]
    reason: str | None = None  # why the bucket is empty or short: no data, nothing relevant, abstained: ...


class MultiRecallOut(BaseModel):
    recall_id: uuid.UUID
    latency_ms: float
    position: int
    buckets: list[BucketOut]
