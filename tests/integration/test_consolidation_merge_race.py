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
from tests.log_support import opened_events


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


KEPT_TEXT = "Alice moved to Lisbon in May 2024 and she loves the city"
DUPLICATE_TEXT = "Alice moved to Lisbon in May 2024, and she loves the city"


def reinforced(memory_id: uuid.UUID, content: str, confidence: float) -> NewEvent:
    return NewEvent("MemoryReinforced", memory_stream(memory_id), {
        "memory_id": str(memory_id), "observation_id": str(uuid.uuid4()), "similarity": 0.97,
        "merged_content": content, "confidence": confidence})


def two_duplicates(engine: Any, tenant: str) -> tuple[uuid.UUID, uuid.UUID]:
    """Two near-duplicate active memories of one scope, projected (the first recorded is the one a merge keeps)."""
    kept, dup = uuid.uuid4(), uuid.uuid4()
    system_append(engine, tenant, [recorded(kept, KEPT_TEXT), admitted(kept)])
    system_append(engine, tenant, [recorded(dup, DUPLICATE_TEXT), admitted(dup)])
    return kept, dup


def merges_of(engine: Any, tenant: str) -> list[dict[str, Any]]:
    with engine.connect() as conn:
        return [e.data for e in opened_events(conn, "tenant = :t AND type = 'MemoriesMerged'", {"t": tenant})]


def content_of(engine: Any, tenant: str, memory_id: uuid.UUID) -> str:
    with engine.connect() as conn:
        return conn.execute(text("SELECT content FROM memories WHERE tenant = :t AND memory_id = :m"),
                            {"t": tenant, "m": memory_id}).scalar_one()


def test_a_memory_reinforced_after_the_snapshot_keeps_its_new_text(engine, tenant, monkeypatch):
    import workers.consolidation as consolidation

    kept, dup = two_duplicates(engine, tenant)
    grown = KEPT_TEXT + ". She works at the bakery by the river"
    original_prune = consolidation.prune
    injected: list[bool] = []

    def prune_then_reinforce(nodes, threshold):
        merges = original_prune(nodes, threshold)
        if merges and not injected:  # the plan is made; now a write reinforces the kept memory
            injected.append(True)
            system_append(engine, tenant, [reinforced(kept, grown, 0.6)])
        return merges

    monkeypatch.setattr(consolidation, "prune", prune_then_reinforce)
    consolidation.consolidate(engine, tenant=tenant, agent_id="a")
    project(engine, "memories")
    assert injected
    assert content_of(engine, tenant, kept) == grown  # not the snapshot's text written back by the merge
    assert all(m["merged_content"] == grown for m in merges_of(engine, tenant) if m["memory_id"] == str(kept))


def _advisory_waiters(engine: Any) -> int:
    with engine.connect() as conn:
        return conn.execute(text("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"),
                            ).scalar_one()


def test_a_write_after_the_merge_is_decided_on_the_merged_memory(engine, tenant, monkeypatch):
    """The governor decides from the read models: until the memories projection has applied a merge, a write in
    that scope would reinforce the kept memory from its unpooled confidence (or reinforce the merged one). The
    merge holds the scope's lock until it is projected, so the write waits and then sees the merged state."""
    import workers.consolidation as consolidation
    from domain.reinforce import merged_confidence
    from projections.runner import lock_key
    from services.remember import MemoryInput, remember

    kept, dup = two_duplicates(engine, tenant)
    system_append(engine, tenant, [reinforced(kept, KEPT_TEXT, 0.6), reinforced(dup, DUPLICATE_TEXT, 0.6)])
    pooled = merged_confidence([0.6, 0.6])
    holder = engine.connect()
    key = {"key": lock_key("memories")}
    original_prune = consolidation.prune

    def prune_then_pause_memories(nodes, threshold):
        merges = original_prune(nodes, threshold)
        if merges and not holder.info.get("locked"):  # keep the memories projection from applying the merge
            holder.execute(text("SELECT pg_advisory_lock(hashtext(:key))"), key)
            holder.commit()
            holder.info["locked"] = True
        return merges

    monkeypatch.setattr(consolidation, "prune", prune_then_pause_memories)
    errors: list[BaseException] = []

    def run(target: Any) -> threading.Thread:
        def guarded() -> None:
            try:
                target()
            except BaseException as exc:
                errors.append(exc)
        thread = threading.Thread(target=guarded, daemon=True)
        thread.start()
        return thread

    try:
        cycle = run(lambda: consolidation.consolidate(engine, tenant=tenant, agent_id="a"))
        _wait(lambda: merges_of(engine, tenant) or errors)
        assert not errors, errors
        waiting_before = _advisory_waiters(engine)
        write = run(lambda: remember(engine, tenant, [MemoryInput(content=KEPT_TEXT, agent_id="a")],
                                     {"actor": "test"}))
        _wait(lambda: _advisory_waiters(engine) > waiting_before or errors)  # the write waits for the scope
    finally:
        if holder.info.get("locked"):
            holder.execute(text("SELECT pg_advisory_unlock(hashtext(:key))"), key)
            holder.commit()
        holder.close()
    cycle.join(120)
    write.join(120)
    assert not errors, errors
    with engine.connect() as conn:
        [decision] = [e.data for e in opened_events(conn, "tenant = :t AND type = 'MemoryAdmitted'", {"t": tenant})
                      if str(e.data.get("reason", "")).startswith("reinforced ")]
    assert decision["inputs"]["reinforced"] == str(kept)  # not the memory just merged into it
    assert abs(decision["inputs"]["target_confidence"] - pooled) < 1e-6  # from the pooled confidence


def _wait(predicate: Any, timeout: float = 120.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not reached")
