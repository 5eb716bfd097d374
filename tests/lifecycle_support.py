"""Helpers for the lifecycle tests: write the events the lifecycle reads straight into the log (memories
admitted with a known disposition, recalls served, feedback, reinforcements), so these tests depend on neither
the salience gate nor the recall funnel, and bring every read model up to the head in-process."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Engine, text

from domain.events import NewEvent, memory_stream, recall_stream, validate_payload
from eventstore.append import append

TEST_ACTOR = {"actor": "test", "source": "test"}


def _append(engine: Engine, tenant: str, events: list[NewEvent]) -> list[int]:
    with engine.begin() as conn:
        return append(conn, tenant, events, TEST_ACTOR)


def record(engine: Engine, tenant: str, contents: Sequence[str], disposition: str = "active",
           agent_id: str | None = None, project: str | None = None, kind: str = "fact") -> list[uuid.UUID]:
    """Record memories (must-keep) with their admission decision, as the write path would."""
    events, ids = [], []
    for content in contents:
        memory_id = uuid.uuid4()
        ids.append(memory_id)
        stream = memory_stream(memory_id)
        events.append(NewEvent("MemoryRecorded", stream, validate_payload("MemoryRecorded", {
            "memory_id": str(memory_id), "content": content, "kind": kind, "agent_id": agent_id,
            "project": project, "must_keep": True}), expected_version=0))
        events.append(NewEvent("MemoryAdmitted", stream, validate_payload("MemoryAdmitted", {
            "memory_id": str(memory_id), "disposition": disposition, "salience": 1.0, "kind": "model",
            "route": "project", "reason": "test: admitted as " + disposition, "inputs": {"must_keep": True}}),
            metadata={"actor": "system:governor", "source": "test"}))
    _append(engine, tenant, events)
    return ids


def served(engine: Engine, tenant: str, ids: Sequence[uuid.UUID], query: str = "q") -> uuid.UUID:
    """A RecallServed hit-log event returning `ids`."""
    recall_id = uuid.uuid4()
    data = validate_payload("RecallServed", {
        "recall_id": str(recall_id), "query": query, "k": max(1, len(ids)), "latency_ms": 1.0,
        "results": [{"memory_id": str(m), "rank": i + 1, "score": 0.5} for i, m in enumerate(ids)]})
    _append(engine, tenant, [NewEvent("RecallServed", recall_stream(recall_id), data)])
    return recall_id


def feedback(engine: Engine, tenant: str, recall_id: uuid.UUID, used: Sequence[uuid.UUID] = (),
             not_useful: Sequence[uuid.UUID] = ()) -> None:
    items = [{"memory_id": str(m), "verdict": "used"} for m in used]
    items += [{"memory_id": str(m), "verdict": "not_useful"} for m in not_useful]
    data = validate_payload("RecallFeedbackGiven", {"recall_id": str(recall_id), "items": items})
    _append(engine, tenant, [NewEvent("RecallFeedbackGiven", recall_stream(recall_id), data)])


def reinforced(engine: Engine, tenant: str, memory_id: uuid.UUID, content: str) -> None:
    data = validate_payload("MemoryReinforced", {
        "memory_id": str(memory_id), "observation_id": str(uuid.uuid4()), "similarity": 0.95,
        "merged_content": content, "confidence": 0.6})
    _append(engine, tenant, [NewEvent("MemoryReinforced", memory_stream(memory_id), data)])


def sync(engine: Engine) -> None:
    from projections.registry import PROJECTORS
    from workers.lifecycle import sync_projections

    sync_projections(engine, list(PROJECTORS))


def rows(engine: Engine, table: str, tenant: str, order: str) -> list[tuple[Any, ...]]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(f"SELECT * FROM {table} WHERE tenant = :t ORDER BY {order}"),
                                               {"t": tenant})]


def events_of(engine: Engine, tenant: str, types: Sequence[str]) -> list[Any]:
    with engine.connect() as conn:
        return conn.execute(text("""
            SELECT position, type, stream_id, data, metadata, occurred_at FROM events
            WHERE tenant = :t AND type = ANY(:types) ORDER BY position"""), {"t": tenant, "types": list(types)}).all()


def head(engine: Engine, tenant: str) -> int:
    """The tenant's last log position."""
    with engine.connect() as conn:
        return conn.execute(text("SELECT max(position) FROM events WHERE tenant = :t"), {"t": tenant}).scalar_one()


def types_after(engine: Engine, tenant: str, position: int) -> list[str]:
    """The types of the tenant's events after `position`, in log order."""
    with engine.connect() as conn:
        return list(conn.execute(text("SELECT type FROM events WHERE tenant = :t AND position > :p ORDER BY position"),
                                 {"t": tenant, "p": position}).scalars())


def statuses(engine: Engine, tenant: str) -> dict[uuid.UUID, str]:
    with engine.connect() as conn:
        return dict(conn.execute(text("SELECT memory_id, status FROM memories WHERE tenant = :t"), {"t": tenant}).all())


def verify_tenant(engine: Engine, name: str, tenant: str) -> dict[str, int]:
    """`projections verify` narrowed to one tenant: replay the whole log into scratch tables (as verify does,
    under the projection's lock, rolled back after) and count this tenant's rows that differ, per table. Other
    tenants' rows, which other tests own, do not count."""
    from eventstore.read import Checkpoint
    from projections.rebuild import _create_scratch, _replay
    from projections.registry import PROJECTORS
    from projections.runner import _LOCK, load_checkpoint, lock_key

    projector = PROJECTORS[name]
    schema = f"verify_{name}"
    differing: dict[str, int] = {}
    with engine.connect() as conn, conn.begin() as tx:
        conn.execute(_LOCK, {"key": lock_key(name)})
        live = load_checkpoint(conn, name)
        _create_scratch(conn, schema, projector)
        _replay(conn, schema, projector, Checkpoint(), 500, until=live)
        conn.execute(text("SET LOCAL search_path TO public"))
        for table in projector.tables:
            a = f"SELECT * FROM public.{table} WHERE tenant = :t"
            b = f'SELECT * FROM "{schema}".{table} WHERE tenant = :t'
            differing[table] = conn.execute(text(f"SELECT count(*) FROM (({a} EXCEPT ALL {b}) UNION ALL "
                                                 f"({b} EXCEPT ALL {a})) d"), {"t": tenant}).scalar_one()
        tx.rollback()
    return differing
