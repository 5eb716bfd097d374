"""Operators' reads: GET /v1/projections (status and lag), GET /healthz."""

from __future__ import annotations

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
