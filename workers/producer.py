"""The producer API: enqueue events for the ingest actor instead of calling HTTP.

    from workers.producer import enqueue_events
    enqueue_events("default", [{"type": "MemoryRecorded", "data": {...}, "idempotency_key": "doc-1#0"}])

Every event gets an idempotency key (one is generated when missing) before it is sent, so a message
that Redis redelivers after a worker crash is appended once. What the write path would refuse for the
message as a whole (a system event type, a system actor, a malformed tenant) is refused here, before it
is queued; the ingest actor checks the same again (workers/actors.py).
"""

from __future__ import annotations

import uuid
from typing import Any

from domain.errors import InvalidPayload
from domain.events import has_lone_surrogate, is_operator_event, is_system_event, validate_payload
from domain.events.producers import producer_refusal

MAX_TENANT_CHARS = 128
_EVENT_FIELDS = frozenset({"type", "data", "stream_id", "schema_version", "expected_version", "idempotency_key",
                           "occurred_at"})


def check_message(tenant: object, events: object, metadata: object) -> None:
    """Refuse what no retry of the message could append: raises InvalidPayload with the reason."""
    if not isinstance(tenant, str) or not tenant or len(tenant) > MAX_TENANT_CHARS or "\x00" in tenant \
            or has_lone_surrogate(tenant):
        raise InvalidPayload(f"tenant must be a non-empty string of at most {MAX_TENANT_CHARS} characters")
    if not isinstance(metadata, dict):
        raise InvalidPayload("metadata must be a JSON object")
    if str(metadata.get("actor") or "").startswith("system:"):
        raise InvalidPayload("the ingest queue appends producers' events: the actor must not be a system actor")
    if not isinstance(events, list) or not events:
        raise InvalidPayload("events must be a non-empty list")
    for event in events:
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            raise InvalidPayload("each event must be a JSON object with a string 'type'")
        unknown = sorted(set(event) - _EVENT_FIELDS)
        if unknown:
            raise InvalidPayload(f"{event['type']}: unknown event fields {unknown}; known: {sorted(_EVENT_FIELDS)}")
        if is_system_event(event["type"]):
            raise InvalidPayload(f"{event['type']}: appended by the system, not by producers")
        if is_operator_event(event["type"]):
            raise InvalidPayload(f"{event['type']}: set by an operator through its own route, not appended as an "
                                 "event")
        refusal = producer_refusal(event["type"])
        if refusal:
            raise InvalidPayload(refusal)


def enqueue_events(tenant: str, events: list[dict[str, Any]], *, correlation_id: str | None = None,
                   actor: str = "producer") -> str:
    """Validate, key and enqueue. Answers the correlation id the ingest will carry."""
    from workers.actors import ingest_events

    correlation_id = correlation_id or str(uuid.uuid4())
    metadata = {"actor": actor, "correlation_id": correlation_id, "source": "dramatiq"}
    check_message(tenant, events, metadata)
    prepared = []
    for event in events:
        validate_payload(event["type"], event.get("data"), event.get("schema_version"))  # fail here, not later
        prepared.append({**event, "idempotency_key": event.get("idempotency_key") or str(uuid.uuid4())})
    ingest_events.send(tenant, prepared, metadata)
    return correlation_id
