"""Record memories: the write API's convenience over MemoryRecorded events."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Engine

from domain.events import MemoryRecorded
from services.append_events import EventInput, append_governed


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
    # Governance: bypass the salience gate; the producer's signals in [0, 1]; the memory this one corrects.
    must_keep: bool = False
    signals: dict[str, Any] | None = None
    supersedes: uuid.UUID | None = None
    reason: str | None = None


@dataclass(frozen=True)
class Remembered:
    memory_id: uuid.UUID
    position: int
    disposition: str | None = None  # active | staging | discard (the governor's decision)
    salience: float | None = None
    memory_type: str | None = None
    route: str | None = None
    reinforced: uuid.UUID | None = None  # the memory this write reinforced instead of being added
    supersedes: uuid.UUID | None = None


def remember(engine: Engine, tenant: str, memories: Sequence[MemoryInput],
             metadata: dict[str, Any]) -> list[Remembered]:
    items, ids = [], []
    for m in memories:
        # A retried write with the same idempotency key must name the same memory: derive the id from the key.
        memory_id = m.memory_id or (uuid.uuid5(uuid.NAMESPACE_URL, f"engramlog:{tenant}:{m.idempotency_key}")
                                    if m.idempotency_key else uuid.uuid4())
        ids.append(memory_id)
        items.append(EventInput(
            type=MemoryRecorded.type_name(), occurred_at=m.occurred_at, idempotency_key=m.idempotency_key,
            data={"memory_id": str(memory_id), "content": m.content, "kind": m.kind, "agent_id": m.agent_id,
                  "project": m.project, "session_id": m.session_id, "tags": m.tags, "metadata": m.metadata,
                  "must_keep": m.must_keep, "signals": m.signals,
                  "supersedes": str(m.supersedes) if m.supersedes else None, "reason": m.reason}))
    done = append_governed(engine, tenant, items, metadata)
    out = []
    for memory_id, position in zip(ids, done.positions, strict=True):
        d = done.decisions.get(memory_id)
        out.append(Remembered(memory_id, position) if d is None else Remembered(
            memory_id, position, d.disposition, d.salience, d.memory_type, d.route, d.reinforced, d.supersedes))
    return out
