"""HTTP request and response bodies."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EventIn(Body):
    type: str
    data: dict[str, Any]
    stream_id: str | None = None
    schema_version: int | None = Field(default=None, ge=1)
    expected_version: int | None = Field(default=None, ge=0)
    idempotency_key: str | None = Field(default=None, min_length=1, max_length=200)
    occurred_at: datetime | None = None


class EventsIn(Body):
    events: list[EventIn] = Field(min_length=1)
    idempotency_key: str | None = Field(default=None, min_length=1, max_length=200)


class PositionsOut(BaseModel):
    positions: list[int]


class MemoryIn(Body):
    content: str = Field(min_length=1)
    kind: str = "observation"
    agent_id: str | None = None
    project: str | None = None
    session_id: str | None = None
    tags: list[str] = Field(default_factory=list, max_length=64)
    metadata: dict[str, Any] = Field(default_factory=dict)
    occurred_at: datetime | None = None
    idempotency_key: str | None = Field(default=None, min_length=1, max_length=200)


class MemoriesIn(Body):
    memories: list[MemoryIn] = Field(min_length=1)


class RememberedOut(BaseModel):
    memory_id: uuid.UUID
    position: int


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
    agent_id: str | None = None
    project: str | None = None
    session_id: str | None = None
    kinds: list[str] = Field(default_factory=list)
    min_position: int | None = Field(default=None, ge=0)


class RecallResultOut(BaseModel):
    memory_id: uuid.UUID
    content: str
    score: float
    kind: str
    metadata: dict[str, Any]
    occurred_at: datetime
    explanation: dict[str, Any]


class RecallOut(BaseModel):
    recall_id: uuid.UUID
    results: list[RecallResultOut]
    latency_ms: float
    position: int
    details: dict[str, Any]


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
    next_cursor: int | None
