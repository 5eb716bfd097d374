"""Append producer events: validate every one, govern the memories, append the batch atomically, wake the projectors.

Every MemoryRecorded is decided by the governor (services/governance.py) inside the one transaction, under its
per-scope locks, and its decision events are appended in that same transaction right after it. Decisions are
the system's: a producer cannot append them itself (a SystemEvent, domain/events/base.py, is refused unless the
metadata's actor is a system actor). A producer appends MemoryRecorded only: every other producer type has its
own route, which checks what the projectors and the read routes rely on beyond the payload (a transcript's chunks
against its log, a session's message ids, a document's version), so a forged one is refused here with that route.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Engine

from domain.errors import ConcurrencyConflict, ContentTooLarge, InvalidPayload
from domain.events import (
    MAX_IDEMPOTENCY_KEY_CHARS,
    MAX_STREAM_ID_CHARS,
    MemoryRecorded,
    NewEvent,
    has_lone_surrogate,
    is_operator_event,
    is_system_event,
    memory_stream,
    occurred_in_range,
    validate_payload,
)
from domain.events.producers import producer_refusal
from domain.text import has_nul
from eventstore.append import append, existing_positions
from infra.settings import get_settings
from infra.wake import appended
from services.governance import Decision, decisions_from_log, prepare, with_decisions


@dataclass(frozen=True)
class EventInput:
    type: str
    data: dict[str, Any]
    stream_id: str | None = None
    schema_version: int | None = None
    expected_version: int | None = None
    idempotency_key: str | None = None
    occurred_at: datetime | str | None = None  # a string (queued producer messages): ISO 8601


def _occurred_at(value: datetime | str | None) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise InvalidPayload(f"occurred_at {value!r} is not an ISO 8601 date-time") from None
    return occurred_in_range(value)


def _check_keys(item: EventInput, batch_key: str | None) -> None:
    for name, value, limit in (("stream_id", item.stream_id, MAX_STREAM_ID_CHARS),
                               ("idempotency_key", item.idempotency_key, MAX_IDEMPOTENCY_KEY_CHARS),
                               ("the batch's idempotency_key", batch_key, MAX_IDEMPOTENCY_KEY_CHARS)):
        if value is not None and (not isinstance(value, str) or len(value) > limit):
            raise InvalidPayload(f"{item.type}: {name} must be a string of at most {limit} characters")


def to_new_event(item: EventInput, batch_key: str | None, index: int) -> NewEvent:
    if is_operator_event(item.type):  # an OperatorEvent has its own route, which checks the operator key
        raise InvalidPayload(f"{item.type}: set by an operator through its own route, not appended as an event")
    refusal = producer_refusal(item.type)  # a producer type with its own route (domain/events/producers.py)
    if refusal:
        raise InvalidPayload(refusal)
    _check_keys(item, batch_key)
    if has_lone_surrogate([item.data, item.stream_id, item.idempotency_key, batch_key]):
        raise InvalidPayload(f"{item.type}: text must be valid Unicode (a lone surrogate \\ud800-\\udfff is not)")
    data = validate_payload(item.type, item.data, item.schema_version)
    if has_nul([data, item.stream_id, item.idempotency_key, batch_key]):
        raise InvalidPayload(f"{item.type}: text must not contain NUL (\\u0000) characters")
    limit = get_settings().limits.max_content_chars
    content = data.get("content")
    if isinstance(content, str) and len(content) > limit:
        raise ContentTooLarge(f"content is {len(content)} characters; the limit is {limit}")
    stream_id, expected = item.stream_id, item.expected_version
    if item.type == MemoryRecorded.type_name():
        # A memory is recorded once, on its own stream.
        own = memory_stream(uuid.UUID(data["memory_id"]))
        if stream_id not in (None, own):
            raise InvalidPayload(f"MemoryRecorded belongs on stream {own!r}, not {stream_id!r}")
        if expected not in (None, 0):
            raise InvalidPayload(f"MemoryRecorded starts its memory's stream, at version 0 (expected_version 0 or "
                                 f"absent), not {expected}: a memory is recorded once")
        stream_id, expected = own, 0
    if not stream_id:
        raise InvalidPayload(f"{item.type}: stream_id is required")
    key = item.idempotency_key or (f"{batch_key}:{index}" if batch_key else None)
    return NewEvent(type=item.type, stream_id=stream_id, data=data, occurred_at=_occurred_at(item.occurred_at),
                    expected_version=expected, idempotency_key=key)


def _recorded_once(events: Sequence[NewEvent]) -> None:
    seen: set[str] = set()
    for e in events:
        if e.is_a(MemoryRecorded):
            if e.stream_id in seen:
                raise InvalidPayload(f"MemoryRecorded twice for {e.stream_id!r} in one batch; a memory is "
                                     "recorded once")
            seen.add(e.stream_id)


@dataclass(frozen=True)
class Appended:
    positions: list[int]  # of the input events, in input order
    decisions: dict[uuid.UUID, Decision]  # by memory id, for every MemoryRecorded of the batch


def _is_system(metadata: dict[str, Any]) -> bool:
    return str(metadata.get("actor") or "").startswith("system:")


def _retried_on(conn: Connection, tenant: str, events: Sequence[NewEvent]) -> list[int] | None:
    """A retry of a batch appended before (every event keyed and already there): the original positions."""
    keys = [e.idempotency_key for e in events if e.idempotency_key]
    if len(keys) < len(events):
        return None
    existing = existing_positions(conn, tenant, keys)
    return [existing[k] for k in keys] if len(existing) == len(set(keys)) else None


def _retried(engine: Engine, tenant: str, events: Sequence[NewEvent]) -> list[int] | None:
    with engine.connect() as conn:
        return _retried_on(conn, tenant, events)


def append_governed(engine: Engine, tenant: str, items: Sequence[EventInput], metadata: dict[str, Any],
                    idempotency_key: str | None = None) -> Appended:
    """Validate all, govern the memories, then append all in one transaction."""
    if not items:
        raise InvalidPayload("a batch needs at least one event")
    settings = get_settings()
    if len(items) > settings.limits.max_batch:
        raise InvalidPayload(f"a batch holds at most {settings.limits.max_batch} events, got {len(items)}")
    if not _is_system(metadata):
        # Decisions (the governor's, the scheduler's, with their inputs), the hit-log (a forged one would inflate
        # activation) and feedback (validated against its recall by its endpoint) are never a producer's: refused
        # by type before any payload is read, so the reason never invites filling in a system event's fields.
        refused = sorted({item.type for item in items if is_system_event(item.type)})
        if refused:
            raise InvalidPayload(f"{', '.join(refused)}: appended by the system, not by producers")
    events = [to_new_event(item, idempotency_key, i) for i, item in enumerate(items)]
    _recorded_once(events)
    recorded = [e for e in events if e.is_a(MemoryRecorded)]
    memory_ids = [uuid.UUID(e.data["memory_id"]) for e in recorded]

    retried = _retried(engine, tenant, events)
    if retried is not None:
        return Appended(retried, decisions_from_log(engine, tenant, memory_ids))
    prepared = prepare(engine, tenant, recorded, metadata, settings)
    try:
        with engine.begin() as conn:
            # Decided in the write's own transaction: the governor's per-scope locks last until the commit.
            # A concurrent retry of this very batch (same keys) that got the locks first has committed by the
            # time this one gets them: it is answered from that result here, before anything is decided again.
            prepared.lock(conn)
            retried = _retried_on(conn, tenant, events)
            if retried is None:
                decisions = prepared.decide(conn)
                batch = with_decisions(events, decisions)
                positions = append(conn, tenant, batch, metadata)
    except ConcurrencyConflict:
        retried = _retried(engine, tenant, events)  # a concurrent retry of this very batch won the race
        if retried is None:
            raise
        return Appended(retried, decisions_from_log(engine, tenant, memory_ids))
    if retried is not None:  # read once the locks are released (no second connection held under them)
        return Appended(retried, decisions_from_log(engine, tenant, memory_ids))
    appended(len(batch))
    by_event = dict(zip((e.event_id for e in batch), positions, strict=True))
    return Appended([by_event[e.event_id] for e in events],
                    {d.memory_id: d for d in decisions.values()})


def append_events(engine: Engine, tenant: str, items: Sequence[EventInput], metadata: dict[str, Any],
                  idempotency_key: str | None = None) -> list[int]:
    """Validate all, govern the memories, then append all in one transaction. Answers positions in input order."""
    return append_governed(engine, tenant, items, metadata, idempotency_key).positions
