"""Operators: GET /v1/projections (status and lag), POST /v1/projections/{name}/rebuild, GET /healthz, the dead
letters of the projections and of ingest (GET, and POST .../retry | skip)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from engramlog_client.models.common import Response


class ProjectionStatus(Response):
    name: str
    position: int
    head: int | None = None
    lag_events: int
    lag_seconds: float | None = None
    updated_at: str | None = None
    parked: int = 0
    failing: int = 0


class Projections(Response):
    projections: list[ProjectionStatus]
    ingest_dead_letters: int = 0


class Health(Response):
    status: str  # ok | down
    down: dict[str, Any] = {}


class Rebuilt(Response):
    projection: str
    rebuilt_to_position: int


class DeadLetter(Response):
    """An event a projector could not apply and moved past (after 3 failed attempts)."""

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
    resolved_at: datetime | None = None
    resolved_by: str | None = None


class DeadLetters(Response):
    dead_letters: list[DeadLetter]


class DeadLetterResolved(Response):
    projection: str
    position: int
    outcome: str  # retried | skipped | failed (still parked, error updated)
    error: str | None = None


class IngestDeadLetter(Response):
    """A queued producer message ingest could not append, with why."""

    id: int
    tenant: str
    message: str  # the message as queued (JSON)
    reason: str
    error: str
    status: str  # parked | retried | skipped
    positions: list[int] | None = None
    created_at: datetime
    resolved_at: datetime | None = None
    resolved_by: str | None = None


class IngestDeadLetters(Response):
    dead_letters: list[IngestDeadLetter]


class IngestDeadLetterResolved(Response):
    id: int
    outcome: str  # retried | skipped | failed (still parked, reason updated)
    positions: list[int] | None = None
    reason: str | None = None
