"""Recall: POST /v1/recall, POST /v1/recall/multi, GET /v1/recalls/{id}, feedback, positions."""

from __future__ import annotations

import re
import uuid
from datetime import date, datetime
from typing import Annotated, Any, Literal, TypedDict

from pydantic import BeforeValidator

from engramlog_client.models.common import Request, Response


def _date_alone(value: Any) -> Any:
    """'2025-05-01' as a date (the server reads it as that whole UTC day), never as a naive midnight datetime."""
    if isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        return date.fromisoformat(value)
    return value


# since / until: an aware datetime, or a date alone (its whole UTC day: until 2025-05-31 includes May 31).
ValidTime = Annotated[datetime | date | None, BeforeValidator(_date_alone)]

class RecallFilters(TypedDict, total=False):
    """The optional fields of `recall` (keyword arguments)."""

    agent_id: str | None
    project: str | None
    session_id: str | None
    kinds: list[str]
    min_position: int | None
    include_staging: bool
    include_history: bool
    include_archived: bool
    trace: bool
    reference_time: datetime | None
    since: ValidTime
    until: ValidTime
    as_of: int | datetime | None


class RecallIn(Request):
    query: str
    k: int | None = None
    agent_id: str | None = None
    project: str | None = None
    session_id: str | None = None
    kinds: list[str] | None = None
    min_position: int | None = None
    include_staging: bool | None = None
    include_history: bool | None = None
    include_archived: bool | None = None
    trace: bool | None = None
    # The clock the query's time words ("last Tuesday", "in May") are read against (aware); default: the server's.
    reference_time: datetime | None = None
    # Valid time, a filter (occurred_at within [since, until], inclusive, aware) and recorded time (as_of: a log
    # position or an aware timestamp: what the store held then). docs/recall.md.
    since: ValidTime = None
    until: ValidTime = None
    as_of: int | datetime | None = None


class RecallResult(Response):
    memory_id: uuid.UUID
    content: str
    score: float
    kind: str
    metadata: dict[str, Any] = {}
    occurred_at: datetime
    explanation: dict[str, Any] = {}
    relevance: float = 0.0  # the calibrated chance it answers the query, the scale every domain shares


class Recalled(Response):
    """POST /v1/recall's answer: ranked memories, and why (explanation; abstained when nothing passed the gate)."""

    recall_id: uuid.UUID
    results: list[RecallResult]
    latency_ms: float
    position: int
    details: dict[str, Any] = {}
    explanation: dict[str, Any] = {}
    abstained: dict[str, Any] | None = None


class MultiFilters(TypedDict, total=False):
    agent_id: str | None
    project: str | None
    session_id: str | None
    include_history: bool
    min_position: int | None
    since: ValidTime
    until: ValidTime
    as_of: int | datetime | None


class MultiRecallIn(Request):
    query: str
    domains: list[str] | None = None
    k: int | None = None
    agent_id: str | None = None
    project: str | None = None
    session_id: str | None = None
    include_history: bool | None = None
    min_position: int | None = None
    since: ValidTime = None  # valid time (knowledge and code have none: they answer nothing under it)
    until: ValidTime = None
    as_of: int | datetime | None = None  # recorded time (memories, knowledge, sessions, transcripts; see docs)


class DomainResult(Response):
    content: str
    score: float  # comparable within its bucket only
    relevance: float = 0.0  # the calibrated chance it answers the query: comparable across domains
    handle: dict[str, Any]  # names the result for the drill (a knowledge section: path, heading_path, content_hash)
    legs: dict[str, float | None] = {}
    layer: str
    memory_id: uuid.UUID | None = None
    fields: dict[str, Any] = {}
    explanation: dict[str, Any] = {}


class Bucket(Response):
    domain: str
    quota: int
    results: list[DomainResult]
    reason: str | None = None  # why the bucket is empty or short


class FusedResult(Response):
    """One result of the fused list; its fields and explanation are in its domain's bucket, at `rank`."""

    domain: str
    rank: int
    relevance: float
    score: float
    content: str
    handle: dict[str, Any]
    layer: str
    memory_id: uuid.UUID | None = None


class MultiRecalled(Response):
    recall_id: uuid.UUID
    latency_ms: float
    position: int
    buckets: list[Bucket]
    results: list[FusedResult] = []  # every bucket's results by relevance (one scale across domains), top k


class RecalledItem(Response):
    domain: str = "memories"
    memory_id: uuid.UUID | None = None
    handle: dict[str, Any] | None = None
    rank: int
    score: float
    layer: str = "index"
    legs: dict[str, float | None] | None = None
    relevance: float | None = None  # absent from recalls served before relevance was recorded
    drilled: bool = False
    stages: dict[str, Any] = {}


class RecallRecord(Response):
    """GET /v1/recalls/{recall_id}: what a recall answered and why, from its hit-log event."""

    recall_id: uuid.UUID
    query: str
    k: int
    scope: dict[str, Any]
    domains: list[str] = ["memories"]
    results: list[RecalledItem]
    latency_ms: float | None = None
    position: int
    recorded_at: datetime
    abstained: dict[str, Any] | None = None
    explanation: dict[str, Any] = {}


class FeedbackItem(Request):
    memory_id: uuid.UUID
    verdict: Literal["used", "not_useful"]


class FeedbackIn(Request):
    items: list[FeedbackItem]


class FeedbackGiven(Response):
    recall_id: uuid.UUID
    position: int
    items: int


class PositionState(Response):
    """GET /v1/positions/{position}: `recallable` once the read models recall waits for have applied it."""

    position: int
    recallable: bool
    pending: list[str] = []
    read_models: list[str] = []
