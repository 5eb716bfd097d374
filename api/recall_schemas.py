"""Request and answer bodies of the recall fabric: POST /v1/recall/multi (the aggregator's buckets)."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel, Field

from api.schemas import AsOf, Body, MinPosition
from api.valid_time import ValidSince, ValidUntil
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
    # Valid time (every domain with one; knowledge and code have none and answer nothing under it) and recorded
    # time (the memories domain; the others answer nothing under it): recall/timeframe.py.
    since: ValidSince = None
    until: ValidUntil = None
    as_of: AsOf = None


class DomainResultOut(BaseModel):
    content: str
    score: float  # comparable within its bucket only
    handle: dict[str, Any]  # what names this result for the drill (a memory: its memory_id)
    relevance: float = 0.0  # the calibrated chance it answers the query: comparable across domains
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


class FusedResultOut(BaseModel):
    """One result of the fused list; its fields and explanation are in its bucket, at `rank`."""
    domain: str
    rank: int  # its rank in its domain's bucket, 1-based
    relevance: float
    score: float
    content: str
    handle: dict[str, Any]
    layer: HitLayer
    memory_id: uuid.UUID | None = None


class MultiRecallOut(BaseModel):
    recall_id: uuid.UUID
    latency_ms: float
    position: int
    buckets: list[BucketOut]
    # Every bucket's results in one list by relevance (the same scale in every domain), the top k.
    results: list[FusedResultOut] = Field(default_factory=list)
