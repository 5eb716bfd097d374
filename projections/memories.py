"""The `memories` read model: the current state of each memory."""

from __future__ import annotations

import json
from collections.abc import Sequence

from sqlalchemy import Connection, text

from domain.events import MemoryRecorded, RecordedEvent
from domain.text import content_hash

_INSERT = text("""
INSERT INTO memories (tenant, memory_id, content, content_hash, kind, agent_id, project, session_id, tags,
                      metadata, occurred_at, recorded_at, status, position)
VALUES (:tenant, :memory_id, :content, :content_hash, :kind, :agent_id, :project, :session_id, :tags,
        CAST(:metadata AS jsonb), :occurred_at, :recorded_at, 'active', :position)
""")


class MemoriesProjector:
    name = "memories"
    tables = ("memories",)
    types = ("MemoryRecorded",)

    def apply(self, conn: Connection, events: Sequence[RecordedEvent]) -> None:
        rows = []
        for event in events:
            m = event.payload()
            assert isinstance(m, MemoryRecorded)
            rows.append({
                "tenant": event.tenant, "memory_id": m.memory_id, "content": m.content,
                "content_hash": content_hash(m.content), "kind": m.kind, "agent_id": m.agent_id,
                "project": m.project, "session_id": m.session_id, "tags": list(m.tags),
                "metadata": json.dumps(m.metadata), "occurred_at": event.occurred_at,
                "recorded_at": event.recorded_at, "position": event.position,
            })
        if rows:
            conn.execute(_INSERT, rows)
