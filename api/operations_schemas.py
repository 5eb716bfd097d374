"""Operators' response bodies: projection status and rebuild, projection and ingest dead letters. Each mirrors the
dataclass its route answers (projections/runner.py ProjectionStatus, projections/dead_letters.py, workers/
ingest_dead_letters.py) field for field."""

from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel


class ProjectionStatusOut(BaseModel):
    name: str
    position: int  # the checkpoint: the last position applied
    head: int  # the log's newest position of the projection's types (the caller's own, for a tenant key)
    lag_events: int
    lag_seconds: float  # age of the oldest unapplied event
    updated_at: str | None  # ISO time of the checkpoint's last move
    parked: int  # events it could not apply and moved past, until retried or skipped
    failing: int  # events failing now, retried on the next runs until parked


class ProjectionsOut(BaseModel):
    projections: list[ProjectionStatusOut]
    ingest_dead_letters: int  # queued producer messages parked, not appended


class RebuiltOut(BaseModel):
    projection: str
    rebuilt_to_position: int


class DeadLetterOut(BaseModel):
    projection: str
    position: int
    tenant: str
    event_id: uuid.UUID
    event_type: str
    error: str
    attempts: int
    status: str  # failing | parked | retried | skipped
    first_failed_at: datetime
    last_failed_at: datetime
    resolved_at: datetime | None
    resolved_by: str | None


class DeadLettersOut(BaseModel):
    dead_letters: list[DeadLetterOut]


class ResolutionOut(BaseModel):
    projection: str
    position: int
    outcome: str  # retried | skipped | failed (still parked, error updated)
    error: str | None


class IngestDeadLetterOut(BaseModel):
    id: int
    tenant: str
    message: str  # the queued message as received (JSON)
    reason: str
    error: str
    status: str  # parked | retried | skipped
    positions: list[int] | None  # where a retry appended it
    created_at: datetime
    resolved_at: datetime | None
    resolved_by: str | None


class IngestDeadLettersOut(BaseModel):
    dead_letters: list[IngestDeadLetterOut]


class IngestResolutionOut(BaseModel):
    id: int
    outcome: str  # retried | skipped | failed (still parked, reason updated)
    positions: list[int] | None
    reason: str | None


__all__ = ["DeadLetterOut", "DeadLettersOut", "IngestDeadLetterOut", "IngestDeadLettersOut", "IngestResolutionOut",
           "ProjectionStatusOut", "ProjectionsOut", "RebuiltOut", "ResolutionOut"]
