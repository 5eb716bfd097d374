"""HTTP request and response bodies."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from api.valid_time import ValidSince, ValidUntil
from domain.events import (
    MAX_IDEMPOTENCY_KEY_CHARS,
    MAX_KIND_CHARS,
    MAX_REASON_CHARS,
    MAX_STREAM_ID_CHARS,
    MAX_TAGS,
    MEMORIES,
    ScopeText,
    Tag,
    check_metadata,
    has_lone_surrogate,
)

MAX_POSITION = 2**63 - 1  # positions are bigint
# Read-your-writes (api/read_your_writes.py waits for it): one type for the recall bodies, the GETs' query
# parameter and the MCP tools' input, light to import (`engramlog mcp` starts without the API's read side).
MinPosition = Annotated[int | None, Field(
    ge=0, le=MAX_POSITION, description="a position a write answered: the read waits (bounded) until what it reads "
                                       "has applied it (503 if it has not in time, 422 beyond the log's head)")]


# Recorded time (recall/timeframe.py): a log position, or a timestamp (the tenant's last position recorded at or
# before it); the answer is what the store held then.
def _iso_text(value: Any) -> Any:
    """A timestamp given as text (or a datetime), never as a number: a number is a log position."""
    if isinstance(value, int | float):
        raise ValueError("a number is a log position (>= 0); a timestamp is ISO text with a timezone")
    return value


AsOf = Annotated[Annotated[int, Field(ge=0, le=MAX_POSITION)] | Annotated[AwareDatetime, BeforeValidator(_iso_text)]
                 | None, Field(
    description="recorded time: a log position or an ISO timestamp with a timezone; the answer is what the store "
                "held then (memories written later absent, a memory superseded later as it stood)")]
# Valid time: when it happened (a memory's occurred_at, a message's created_at), inclusive; a filter. A date alone
# is its whole UTC day (api/valid_time.py).


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _valid_unicode(cls, data: Any) -> Any:
        # JSON may escape a lone UTF-16 surrogate ("\ud800"): not text PostgreSQL, UTF-8 or a reply can carry.
        if has_lone_surrogate(data):
            raise ValueError("text must be valid Unicode: a lone surrogate (\\ud800-\\udfff) is not")
        return data


class SignalsIn(Body):
    """A producer's own salience signals, each in [0, 1]; `correction` marks a write that corrects another."""

    surprise: float | None = Field(default=None, ge=0, le=1)
    decision: float | None = Field(default=None, ge=0, le=1)
    causal: float | None = Field(default=None, ge=0, le=1)
    effort: float | None = Field(default=None, ge=0, le=1)
    correction: bool | None = None


class EventIn(Body):
    type: str = Field(max_length=100)
    data: dict[str, Any]
    stream_id: str | None = Field(default=None, min_length=1, max_length=MAX_STREAM_ID_CHARS)
    schema_version: int | None = Field(default=None, ge=1, le=1000)
    expected_version: int | None = Field(default=None, ge=0, le=MAX_POSITION)
    idempotency_key: str | None = Field(default=None, min_length=1, max_length=MAX_IDEMPOTENCY_KEY_CHARS)
    occurred_at: datetime | None = None


class EventsIn(Body):
    events: list[EventIn] = Field(min_length=1)
    idempotency_key: str | None = Field(default=None, min_length=1, max_length=MAX_IDEMPOTENCY_KEY_CHARS)


class PositionsOut(BaseModel):
    positions: list[int]


class MemoryIn(Body):
    content: str = Field(min_length=1)
    kind: str = Field(default="observation", min_length=1, max_length=MAX_KIND_CHARS)
    agent_id: ScopeText | None = None
    project: ScopeText | None = None
    session_id: ScopeText | None = None
    tags: list[Tag] = Field(default_factory=list, max_length=MAX_TAGS)
    metadata: dict[str, Any] = Field(default_factory=dict)
    occurred_at: datetime | None = None
    idempotency_key: str | None = Field(default=None, min_length=1, max_length=MAX_IDEMPOTENCY_KEY_CHARS)
    # Governance: bypass the salience gate; producer signals in [0, 1]; the memory this one supersedes.
    must_keep: bool = False
    signals: SignalsIn | None = None
    supersedes: uuid.UUID | None = None
    reason: str | None = Field(default=None, min_length=1, max_length=MAX_REASON_CHARS)

    _metadata = field_validator("metadata")(check_metadata)


class MemoriesIn(Body):
    memories: list[MemoryIn] = Field(min_length=1)


class RememberedOut(BaseModel):
    memory_id: uuid.UUID
    position: int
    # The governor's decision: active | staging | discard, and why (reinforced / supersedes another memory).
    disposition: str | None = None
    salience: float | None = None
    memory_type: str | None = None
    route: str | None = None
    reinforced: uuid.UUID | None = None
    supersedes: uuid.UUID | None = None


class RememberedManyOut(BaseModel):
    memories: list[RememberedOut]


class MemoryOut(BaseModel):
    memory_id: uuid.UUID
    content: str
    kind: str
    agent_id: str | None
    project: str | None
    session_id: str | None
    tags: list[str]
    metadata: dict[str, Any]
    occurred_at: datetime
    recorded_at: datetime
    status: str
    position: int


class RecallIn(Body):
    query: str
    k: int = 10
    agent_id: ScopeText | None = None
    project: ScopeText | None = None
    session_id: ScopeText | None = None
    kinds: list[Annotated[str, Field(max_length=MAX_KIND_CHARS)]] = Field(default_factory=list, max_length=64)
    min_position: MinPosition = None
    # Statuses beyond active and dormant: staging, superseded (history, score × 0.1), archived.
    include_staging: bool = False
    include_history: bool = False
    include_archived: bool = False
    # Answer the ids each funnel stage kept (details.trace), for the attribution study.
    trace: bool = False
    # The clock the query's time words ("last Tuesday", "in May") are read against; default: the recall's clock.
    reference_time: AwareDatetime | None = None
    # Valid time (a filter, not a boost: nothing outside [since, until] is answered) and recorded time.
    since: ValidSince = None
    until: ValidUntil = None
    as_of: AsOf = None


class RecallResultOut(BaseModel):
    memory_id: uuid.UUID
    content: str
    score: float
    kind: str
    metadata: dict[str, Any]
    occurred_at: datetime
    explanation: dict[str, Any]
    relevance: float = 0.0  # the calibrated chance it answers the query, the scale every recall domain shares


class RecallOut(BaseModel):
    recall_id: uuid.UUID
    results: list[RecallResultOut]
    latency_ms: float
    position: int
    details: dict[str, Any]
    # The funnel's explanation: clock, resolved query, per-stage timings, counts and knobs.
    explanation: dict[str, Any] = Field(default_factory=dict)
    # Set when the abstention gate returned nothing: {reason, channels}.
    abstained: dict[str, Any] | None = None


class RecalledOut(BaseModel):
    domain: str = MEMORIES  # the hit-log's name of the memories domain (domain/events/hitlog.py)
    memory_id: uuid.UUID | None = None  # a memory's result; any other domain's is named by its handle
    handle: dict[str, Any] | None = None
    rank: int  # within its domain's bucket
    score: float
    layer: str = "index"  # hot (a cache), index (a search), drill (an exact-slice fetch)
    legs: dict[str, float | None] | None = None
    relevance: float | None = None  # its calibrated relevance (absent from recalls served before it was recorded)
    drilled: bool = False  # an agent fetched it by its handle after this recall
    stages: dict[str, Any] = Field(default_factory=dict)


class RecallRecordOut(BaseModel):
    """GET /v1/recalls/{recall_id}: what a recall answered and why, from its hit-log event."""

    recall_id: uuid.UUID
    query: str
    k: int
    scope: dict[str, Any]
    domains: list[str] = Field(default_factory=lambda: [MEMORIES])
    results: list[RecalledOut]
    latency_ms: float | None
    position: int
    recorded_at: datetime
    abstained: dict[str, Any] | None
    explanation: dict[str, Any]


class EventOut(BaseModel):
    position: int
    event_id: uuid.UUID
    stream_id: str
    stream_version: int
    type: str
    schema_version: int
    data: dict[str, Any]
    metadata: dict[str, Any]
    occurred_at: datetime
    recorded_at: datetime


class EventsPage(BaseModel):
    events: list[EventOut]
    next_cursor: str | None  # opaque: pass it back as `cursor` (eventstore/query.py)


# ------------------------------------------------------------------------------ governance (issue 3 §1)


class SupersedeIn(Body):
    """POST /v1/memories/{id}/supersede: the new content and why; scope, kind and tags default to the old one's."""

    content: str = Field(min_length=1)
    reason: str = Field(min_length=1, max_length=MAX_REASON_CHARS)
    kind: str | None = Field(default=None, min_length=1, max_length=MAX_KIND_CHARS)
    agent_id: ScopeText | None = None
    project: ScopeText | None = None
    session_id: ScopeText | None = None
    tags: list[Tag] | None = Field(default=None, max_length=MAX_TAGS)
    metadata: dict[str, Any] = Field(default_factory=dict)
    occurred_at: datetime | None = None
    idempotency_key: str | None = Field(default=None, min_length=1, max_length=MAX_IDEMPOTENCY_KEY_CHARS)
    signals: SignalsIn | None = None

    _metadata = field_validator("metadata")(check_metadata)


class SupersededOut(BaseModel):
    memory_id: uuid.UUID
    position: int
    supersedes: uuid.UUID


class GovernedMemoryOut(MemoryOut):
    """One memory as the read model holds it, with its governance state."""

    memory_type: str | None = None
    salience: float | None = None
    route: str | None = None
    confidence: float
    reinforced_count: int
    supersedes: uuid.UUID | None = None
    superseded_by: uuid.UUID | None = None
    merged_into: uuid.UUID | None = None
    status_changed_at: datetime | None = None


class HistoryMemoryOut(BaseModel):
    memory_id: uuid.UUID
    content: str
    status: str
    memory_type: str | None
    recorded_at: datetime
    position: int


class HistoryStepOut(BaseModel):
    """One supersede: `from_id` was replaced by `to_id`, when, why (reason, trigger) and by whom (actor)."""

    from_id: uuid.UUID
    to_id: uuid.UUID
    at: datetime
    reason: str
    trigger: str
    actor: str | None
    position: int


class HistoryOut(BaseModel):
    memory_id: uuid.UUID
    current: uuid.UUID  # the newest memory of the chain: the value recall returns
    chain: list[HistoryMemoryOut]  # oldest → newest
    transitions: list[HistoryStepOut]  # oldest → newest


class FeedbackItemIn(Body):
    memory_id: uuid.UUID
    verdict: Literal["used", "not_useful"]


class FeedbackIn(Body):
    items: list[FeedbackItemIn] = Field(min_length=1, max_length=100)


class FeedbackOut(BaseModel):
    recall_id: uuid.UUID
    position: int
    items: int


class PrivacyPolicyIn(Body):
    """PUT /v1/policy/privacy: the whole policy (a list left out is empty); each list at most 256 entries of at
    most 512 characters (domain/events/privacy.py checks them: a bad one is a 422, nothing written)."""

    exclude_paths: list[str] = Field(default_factory=list)
    exclude_tags: list[str] = Field(default_factory=list)
    exclude_agents: list[str] = Field(default_factory=list)
    exclude_projects: list[str] = Field(default_factory=list)
    exclude_sessions: list[str] = Field(default_factory=list)


class PrivacyPolicyOut(BaseModel):
    exclude_paths: list[str]
    exclude_tags: list[str]
    exclude_agents: list[str]
    exclude_projects: list[str]
    exclude_sessions: list[str]
    position: int | None  # of the PrivacyPolicySet in force; None: never set (nothing excluded)
    updated_at: datetime | None
