"""The producer API: enqueue events for the ingest actor instead of calling HTTP.

    from workers.producer import enqueue_events
    enqueue_events("default", [{"type": "MemoryRecorded", "data": {...}, "idempotency_key": "doc-1#0"}])

Every event gets an idempotency key (one is generated when missing) before it is sent, so a message
that Redis redelivers after a worker crash is appended once. What the write path would refuse for the
message as a whole (a system event type, a system actor, a malformed tenant) is refused here, before it
is queued (domain/events/producers.py `check_message`); the ingest actor checks the same again.
"""

from __future__ import annotations

import uuid
from typing import Any

from domain.events import validate_payload
from domain.events.producers import check_message
from workers.actors import ingest_events


def enqueue_events(tenant: str, events: list[dict[str, Any]], *, correlation_id: str | None = None,
                   actor: str = "producer") -> str:
    """Validate, key and enqueue. Answers the correlation id the ingest will carry."""
    correlation_id = correlation_id or str(uuid.uuid4())
    metadata = {"actor": actor, "correlation_id": correlation_id, "source": "dramatiq"}
    check_message(tenant, events, metadata)
    prepared = []
    for event in events:
        validate_payload(event["type"], event.get("data"), event.get("schema_version"))  # fail here, not later
        prepared.append({**event, "idempotency_key": event.get("idempotency_key") or str(uuid.uuid4())})
    ingest_events.send(tenant, prepared, metadata)
    return correlation_id
