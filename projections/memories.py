"""The `memories` read model: the current state of each memory, and `memory_history` (each supersede).

Only applies decisions; decides nothing. Events are applied in log order (consecutive MemoryRecorded and
MemoryAdmitted events in bulk: an admission only touches its own memory, recorded before it), so the result
does not depend on where batches are cut, and a rebuild reproduces it exactly:

| event               | effect                                                                            |
| ------------------- | --------------------------------------------------------------------------------- |
| MemoryRecorded      | a row, status 'pending', confidence 0.5                                           |
| MemoryAdmitted      | a pending memory gets its status (active, staging, discarded), salience, route,  |
|                     | memory_type (the classified type); status_changed_at = the event's recorded time |
| MemoryReinforced    | reinforced_count + 1, confidence and content as the event says                    |
| MemorySuperseded    | old: status 'superseded', superseded_by; new: supersedes; a memory_history row    |
|                     | (reason, trigger, actor from the event's metadata, at = its recorded time)        |
| MemoryStatusChanged | a memory still in from_status moves to to_status; status_changed_at = its clock   |
| MemoriesMerged      | merged ones: status 'merged', merged_into; the kept one: content = merged_content, |
|                     | confidence = domain/reinforce.merged_confidence of the group's (evidence pooled)  |
| RecallFeedbackGiven | confidence per domain/reinforce.feedback_confidence (used ↑, not_useful ↓), once |
|                     | per (recall, memory): see projections/feedback.py                                      |
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import Connection, text

from domain.events import (
    EventSchema,
    MemoriesMerged,
    MemoryAdmitted,
    MemoryRecorded,
    MemoryReinforced,
    MemoryStatusChanged,
    MemorySuperseded,
    RecallFeedbackGiven,
    RecordedEvent,
)
from domain.memory_status import DISPOSITION_STATUS, RECALLABLE
from domain.reinforce import INITIAL_CONFIDENCE, feedback_confidence, merged_confidence
from domain.text import content_hash
from projections.base import OneByOne, apply_in_order, types_of
from projections.feedback import counted_feedback
from projections.memory_versions import TOUCHED, snapshot, versioned

_INSERT = text("""
INSERT INTO memories (tenant, memory_id, content, content_hash, kind, agent_id, project, session_id, tags,
                      metadata, occurred_at, recorded_at, status, position, confidence)
VALUES (:tenant, :memory_id, :content, :content_hash, :kind, :agent_id, :project, :session_id, :tags,
        CAST(:metadata AS jsonb), :occurred_at, :recorded_at, 'pending', :position, :confidence)
ON CONFLICT (tenant, memory_id) DO NOTHING
""")
_ADMIT = text("""
UPDATE memories m SET status = b.status, salience = b.salience, route = b.route, memory_type = b.memory_type,
                      status_changed_at = b.at
FROM unnest(CAST(:tenants AS text[]), CAST(:ids AS uuid[]), CAST(:statuses AS text[]), CAST(:saliences AS real[]),
            CAST(:routes AS text[]), CAST(:types AS text[]), CAST(:ats AS timestamptz[]))
     AS b(tenant, memory_id, status, salience, route, memory_type, at)
WHERE m.tenant = b.tenant AND m.memory_id = b.memory_id AND m.status = 'pending'
""")
_REINFORCE = text("""
UPDATE memories SET reinforced_count = reinforced_count + 1, confidence = :confidence, content = :content,
                    content_hash = :content_hash
WHERE tenant = :tenant AND memory_id = :memory_id
""")
_SUPERSEDE_OLD = text("""
UPDATE memories SET status = 'superseded', superseded_by = :new, status_changed_at = :at
WHERE tenant = :tenant AND memory_id = :old
""")
_SUPERSEDE_NEW = text("UPDATE memories SET supersedes = :old WHERE tenant = :tenant AND memory_id = :new")
_HISTORY = text("""
INSERT INTO memory_history (tenant, memory_id, superseded_by, reason, trigger, actor, at, position)
VALUES (:tenant, :old, :new, :reason, :trigger, :actor, :at, :position)
ON CONFLICT DO NOTHING
""")
_STATUS = text("""
UPDATE memories SET status = :to_status, status_changed_at = :clock
WHERE tenant = :tenant AND memory_id = :memory_id AND status = :from_status
""")
_MERGED = text("""
UPDATE memories SET status = 'merged', merged_into = :kept, status_changed_at = :clock
WHERE tenant = :tenant AND memory_id = ANY(:merged) AND memory_id <> :kept
  AND status = ANY(:recallable)  -- only what consolidation merges: never a superseded or archived one
""")
_KEPT = text("""
UPDATE memories SET content = :content, content_hash = :content_hash WHERE tenant = :tenant AND memory_id = :kept
""")
_CONFIDENCES = text("""
SELECT memory_id, confidence FROM memories WHERE tenant = :tenant AND memory_id = ANY(:ids)
""")
_SET_CONFIDENCE = text("""
UPDATE memories m SET confidence = b.confidence
FROM unnest(CAST(:ids AS uuid[]), CAST(:confidences AS real[])) AS b(memory_id, confidence)
WHERE m.tenant = :tenant AND m.memory_id = b.memory_id
""")


class _Run:
    """Consecutive MemoryRecorded / MemoryAdmitted events, written in bulk: an admission only touches its own
    memory, recorded before it, so a run applied at once gives what applying it event by event gives."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.admitted: dict[tuple[str, Any], dict[str, Any]] = {}

    def record(self, conn: Connection, event: RecordedEvent, p: MemoryRecorded) -> None:
        self.rows.append({
            "tenant": event.tenant, "memory_id": p.memory_id, "content": p.content,
            "content_hash": content_hash(p.content), "kind": p.kind, "agent_id": p.agent_id,
            "project": p.project, "session_id": p.session_id, "tags": list(p.tags),
            "metadata": json.dumps(p.metadata), "occurred_at": event.occurred_at,
            "recorded_at": event.recorded_at, "position": event.position, "confidence": INITIAL_CONFIDENCE,
        })

    def admit(self, conn: Connection, event: RecordedEvent, p: MemoryAdmitted) -> None:
        # A memory is admitted once: the first admission wins, as it would applied one at a time.
        self.admitted.setdefault((event.tenant, p.memory_id), {
            "tenant": event.tenant, "id": p.memory_id, "status": DISPOSITION_STATUS[p.disposition],
            "salience": p.salience, "route": p.route, "type": p.kind, "at": event.recorded_at,
            "position": event.position})

    def flush(self, conn: Connection) -> None:
        # memory_versions as if applied one by one: a recorded memory's pending version from its record, then its
        # admitted one from its admission (projections/memory_versions.py).
        if self.rows:
            conn.execute(_INSERT, self.rows)
            _snapshots(conn, [(r["tenant"], r["memory_id"], r["position"]) for r in self.rows])
        if self.admitted:
            a = list(self.admitted.values())
            conn.execute(_ADMIT, {"tenants": [x["tenant"] for x in a], "ids": [x["id"] for x in a],
                                  "statuses": [x["status"] for x in a], "saliences": [x["salience"] for x in a],
                                  "routes": [x["route"] for x in a], "types": [x["type"] for x in a],
                                  "ats": [x["at"] for x in a]})
            _snapshots(conn, [(x["tenant"], x["id"], x["position"]) for x in a])
        self.rows, self.admitted = [], {}


def _snapshots(conn: Connection, touched: list[tuple[str, Any, int]]) -> None:
    """Per tenant, each memory's first (memory, position) only: a memory's row is written once in a run."""
    by_tenant: dict[str, dict[Any, int]] = {}
    for tenant, memory_id, position in touched:
        by_tenant.setdefault(tenant, {}).setdefault(memory_id, position)
    for tenant, firsts in by_tenant.items():
        snapshot(conn, tenant, firsts.items())


def _reinforced(conn: Connection, event: RecordedEvent, p: MemoryReinforced) -> None:
    conn.execute(_REINFORCE, {"tenant": event.tenant, "memory_id": p.memory_id, "confidence": p.confidence,
                              "content": p.merged_content, "content_hash": content_hash(p.merged_content)})


def _superseded(conn: Connection, event: RecordedEvent, p: MemorySuperseded) -> None:
    ids = {"tenant": event.tenant, "old": p.memory_id, "new": p.superseded_by}
    conn.execute(_SUPERSEDE_OLD, {**ids, "at": event.recorded_at})
    conn.execute(_SUPERSEDE_NEW, ids)
    conn.execute(_HISTORY, {**ids, "reason": p.reason, "trigger": p.trigger,
                            "actor": (event.metadata or {}).get("actor"), "at": event.recorded_at,
                            "position": event.position})


def _status_changed(conn: Connection, event: RecordedEvent, p: MemoryStatusChanged) -> None:
    conn.execute(_STATUS, {"tenant": event.tenant, "memory_id": p.memory_id, "from_status": p.from_status,
                           "to_status": p.to_status, "clock": p.clock})


def _merged(conn: Connection, event: RecordedEvent, p: MemoriesMerged) -> None:
    tenant = event.tenant
    group = [p.memory_id, *(m for m in dict.fromkeys(p.merged_ids) if m != p.memory_id)]
    confidences = {r.memory_id: float(r.confidence)
                   for r in conn.execute(_CONFIDENCES, {"tenant": tenant, "ids": group})}
    conn.execute(_MERGED, {"tenant": tenant, "kept": p.memory_id, "merged": list(p.merged_ids), "clock": p.clock,
                           "recallable": list(RECALLABLE)})
    conn.execute(_KEPT, {"tenant": tenant, "kept": p.memory_id, "content": p.merged_content,
                         "content_hash": content_hash(p.merged_content)})
    if p.memory_id in confidences:
        # In group order (kept first): the same floats summed in the same order on every replay.
        pooled = merged_confidence([confidences[m] for m in group if m in confidences])
        conn.execute(_SET_CONFIDENCE, {"tenant": tenant, "ids": [p.memory_id], "confidences": [pooled]})


def _feedback(conn: Connection, event: RecordedEvent, p: RecallFeedbackGiven) -> None:
    counted = counted_feedback(conn, event, p)
    ids = [item.memory_id for item in counted]
    if not ids:
        return
    current = {r.memory_id: float(r.confidence)
               for r in conn.execute(_CONFIDENCES, {"tenant": event.tenant, "ids": ids})}
    for item in counted:
        if item.memory_id in current:
            current[item.memory_id] = feedback_confidence(current[item.memory_id], item.verdict)
    if current:
        conn.execute(_SET_CONFIDENCE, {"tenant": event.tenant, "ids": list(current),
                                       "confidences": list(current.values())})


# Event class → how it is applied: into the current bulk run, or on its own (after the run is written).
_IN_RUN: dict[type[EventSchema], Callable[[_Run, Connection, RecordedEvent, Any], None]] = {
    MemoryRecorded: _Run.record, MemoryAdmitted: _Run.admit}
# Each one-by-one event then versions the memories it may have changed (projections/memory_versions.py).
_ONE_BY_ONE: OneByOne = {cls: versioned(handler, TOUCHED[cls]) for cls, handler in (
    (MemoryReinforced, _reinforced), (MemorySuperseded, _superseded), (MemoryStatusChanged, _status_changed),
    (MemoriesMerged, _merged), (RecallFeedbackGiven, _feedback))}


class MemoriesProjector:
    name = "memories"
    tables = ("memories", "memory_history", "memory_versions")
    handlers = {**_IN_RUN, **_ONE_BY_ONE}
    types = types_of(handlers)

    def apply(self, conn: Connection, events: Sequence[RecordedEvent]) -> None:
        apply_in_order(conn, events, _ONE_BY_ONE, _IN_RUN, _Run())
