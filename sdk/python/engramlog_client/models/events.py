"""The log: POST /v1/events (append a typed batch) and GET /v1/events (one page)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from engramlog_client.models.common import Request, Response


class EventIn(Request):
    type: str
    data: dict[str, Any]
    stream_id: str | None = None
    schema_version: int | None = None
    expected_version: int | None = None
    idempotency_key: str | None = None
    occurred_at: datetime | None = None


class EventsIn(Request):
    events: list[EventIn]
    idempotency_key: str | None = None


class Positions(Response):
    positions: list[int]


class Event(Response):
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


class EventsPage(Response):
    events: list[Event]
    next_cursor: str | None = None  # pass it back as `cursor` for the next page
