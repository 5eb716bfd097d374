"""Record memories: the write API's convenience over MemoryRecorded events."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Engine

from services.append_events import EventInput, append_events


@dataclass(frozen=True)
class MemoryInput:
    content: str
    kind: str = "observation"
    agent_id: str | None = None
    project: str | None = None
    session_id: str | None = None
    tags: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    occurred_at: datetime | None = None
    idempotency_key: str | None = None
    memory_id: uuid.UUID | None = None


@dataclass(frozen=True)
class Remembered:
    memory_id: uuid.UUID
    position: int


def remember(engine: Engine, tenant: str, memories: Sequence[MemoryInput],
             metadata: dict[str, Any]) -> list[Remembered]:
    items, ids = [], []
    for m in memories:
        # A retried write with the same idempotency key must name the same memory: derive the id from the key.
        memory_id = m.memory_id or (uuid.uuid5(uuid.NAMESPACE_URL, f"engramlog:{tenant}:{m.idempotency_key}")
                                    if m.idempotency_key else uuid.uuid4())
        ids.append(memory_id)
        items.append(EventInput(
            type="MemoryRecorded", occurred_at=m.occurred_at, idempotency_key=m.idempotency_key,
            data={"memory_id": str(memory_id), "content": m.content, "kind": m.kind, "agent_id": m.agent_id,
                  "project": m.project, "session_id": m.session_id, "tags": m.tags, "metadata": m.metadata}))
    positions = append_events(engine, tenant, items, metadata)
    return [Remembered(i, p) for i, p in zip(ids, positions, strict=True)]
