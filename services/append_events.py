"""Append producer events: validate every one, append the batch atomically, then wake the projectors."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Engine

from domain.errors import ContentTooLarge, InvalidPayload
from domain.events import NewEvent, memory_stream, validate_payload
from eventstore.append import append
from infra.metrics import EVENTS_APPENDED
from infra.settings import get_settings
from workers.wake import wake_projections


@dataclass(frozen=True)
class EventInput:
    type: str
    data: dict[str, Any]
    stream_id: str | None = None
    schema_version: int | None = None
    expected_version: int | None = None
    idempotency_key: str | None = None
    occurred_at: datetime | None = None


def has_nul(value: object) -> bool:
    """True when a string anywhere in `value` (keys included) holds NUL, which PostgreSQL text and jsonb refuse."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(has_nul(k) or has_nul(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(has_nul(v) for v in value)
    return False


def to_new_event(item: EventInput, batch_key: str | None, index: int) -> NewEvent:
    data = validate_payload(item.type, item.data, item.schema_version)
    if has_nul([data, item.stream_id, item.idempotency_key, batch_key]):
        raise InvalidPayload(f"{item.type}: text must not contain NUL (\\u0000) characters")
    limit = get_settings().max_content_chars
    content = data.get("content")
    if isinstance(content, str) and len(content) > limit:
        raise ContentTooLarge(f"content is {len(content)} characters; the limit is {limit}")
    stream_id, expected = item.stream_id, item.expected_version
    if item.type == "MemoryRecorded":
        # A memory is recorded once, on its own stream.
        own = memory_stream(uuid.UUID(data["memory_id"]))
        if stream_id not in (None, own):
            raise InvalidPayload(f"MemoryRecorded belongs on stream {own!r}, not {stream_id!r}")
        stream_id, expected = own, 0 if expected is None else expected
    if not stream_id:
        raise InvalidPayload(f"{item.type}: stream_id is required")
    key = item.idempotency_key or (f"{batch_key}:{index}" if batch_key else None)
    return NewEvent(type=item.type, stream_id=stream_id, data=data, occurred_at=item.occurred_at,
                    expected_version=expected, idempotency_key=key)


def append_events(engine: Engine, tenant: str, items: Sequence[EventInput], metadata: dict[str, Any],
                  idempotency_key: str | None = None) -> list[int]:
    """Validate all, then append all in one transaction. Answers positions in input order."""
    if not items:
        raise InvalidPayload("a batch needs at least one event")
    limit = get_settings().max_batch
    if len(items) > limit:
        raise InvalidPayload(f"a batch holds at most {limit} events, got {len(items)}")
    events = [to_new_event(item, idempotency_key, i) for i, item in enumerate(items)]
    with engine.begin() as conn:
        positions = append(conn, tenant, events, metadata)
    EVENTS_APPENDED.inc(len(events))
    wake_projections()
    return positions
