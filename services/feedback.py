"""Recall feedback: a client says which memories of one of its recalls it used, or found not useful."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Engine, text

from domain.errors import InvalidPayload, NotFound
from domain.events import NewEvent, recall_stream, validate_payload
from eventstore.append import append
from infra.metrics import EVENTS_APPENDED
from workers.wake import wake_projections

_SERVED = text("""
SELECT data FROM events WHERE tenant = :tenant AND stream_id = :stream AND type = 'RecallServed'
ORDER BY stream_version LIMIT 1
""")


def give_feedback(engine: Engine, tenant: str, recall_id: uuid.UUID, items: Sequence[dict[str, Any]],
                  metadata: dict[str, Any]) -> int:
    """Validate against the recall's own RecallServed event, then append RecallFeedbackGiven on its stream.

    404 when the recall is not this tenant's; 422 when a memory was not among its results or is named twice.
    Answers the event's position. The memories projector turns it into confidence (domain/reinforce.py).
    """
    data = validate_payload("RecallFeedbackGiven", {"recall_id": str(recall_id), "items": list(items)})
    stream = recall_stream(recall_id)
    with engine.connect() as conn:
        served = conn.execute(_SERVED, {"tenant": tenant, "stream": stream}).scalar_one_or_none()
    if served is None:
        raise NotFound(f"no recall {recall_id}")
    returned = {r["memory_id"] for r in served.get("results", [])}
    named = [item["memory_id"] for item in data["items"]]
    twice = sorted({i for i in named if named.count(i) > 1})
    if twice:
        raise InvalidPayload(f"items name these memories more than once: {', '.join(twice)}")
    foreign = [i for i in named if i not in returned]
    if foreign:
        raise InvalidPayload(f"recall {recall_id} did not return these memories: {', '.join(foreign)}")
    with engine.begin() as conn:
        [position] = append(conn, tenant, [NewEvent("RecallFeedbackGiven", stream, data)], metadata)
    EVENTS_APPENDED.inc()
    wake_projections()
    return position
