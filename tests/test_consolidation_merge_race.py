"""Consolidation's merges against concurrent writes: a merge never writes a stale text back, never turns a
memory that is no longer recallable into a merged one, and is appended under the governor's scope locks with
expected versions on the kept memory's stream.
"""

from __future__ import annotations

import threading
import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import text

from domain.events import NewEvent, memory_stream
from eventstore.append import append
from projections.registry import get_projector
from projections.runner import catch_up


def recorded(memory_id: uuid.UUID, content: str, agent: str = "a") -> NewEvent:
    return NewEvent("MemoryRecorded", memory_stream(memory_id), {
        "memory_id": str(memory_id), "content": content, "kind": "observation", "agent_id": agent, "project": None,
        "session_id": None, "tags": [], "metadata": {}}, expected_version=0)


def admitted(memory_id: uuid.UUID) -> NewEvent:
    return NewEvent("MemoryAdmitted", memory_stream(memory_id), {
        "memory_id": str(memory_id), "disposition": "active", "salience": 1.0, "kind": "fact", "route": "knowledge",
        "reason": "test", "inputs": {}})


def system_append(engine: Any, tenant: str, events: list[NewEvent]) -> list[int]:
    with engine.begin() as conn:
        return append(conn, tenant, events, {"actor": "system:test"})


def project(engine: Any, *names: str) -> None:
    for name in names:
        catch_up(engine, get_projector(name), 500, max_seconds=120)


def statuses(engine: Any, tenant: str) -> dict[uuid.UUID, tuple[str, Any]]:
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT memory_id, status, merged_into FROM memories WHERE tenant = :t"),
                            {"t": tenant}).all()
    return {r.memory_id: (r.status, r.merged_into) for r in rows}


def test_a_merge_leaves_a_superseded_memory_superseded(engine, tenant):
    kept, gone, other = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    system_append(engine, tenant, [recorded(m, f"memory {m}") for m in (kept, gone, other)]
                  + [admitted(m) for m in (kept, gone, other)])
    system_append(engine, tenant, [NewEvent("MemorySuperseded", memory_stream(gone), {
        "memory_id": str(gone), "superseded_by": str(other), "reason": "corrected", "trigger": "explicit",
        "similarity": None})])
    clock = datetime.now(UTC).isoformat()
    system_append(engine, tenant, [NewEvent("MemoriesMerged", memory_stream(kept), {
        "memory_id": str(kept), "merged_ids": [str(gone), str(other)], "similarity": 0.99,
        "merged_content": f"memory {kept}", "clock": clock})])
    project(engine, "memories")
    now = statuses(engine, tenant)
    assert now[gone][0] == "superseded"  # not rewritten to merged by a merge planned on an older snapshot
    assert now[other] == ("merged", kept)
    assert now[kept][0] == "active"
