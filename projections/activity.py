"""The `memory_activity` read model: the inputs of ACT-R activation and of the Darwinian decay sweep.

- access_count / last_access_at: every memory a recall returned is one access at that RecallServed event's
  recorded time (the hit-log); every MemoryReinforced is one access of its target at its recorded time.
- used_count / not_useful_count: the verdicts of RecallFeedbackGiven, once per (recall, memory): the first
  verdict counts (projections/feedback.py).
- MemoriesMerged folds the merged memories' statistics into the kept one, so its ACT-R activation reflects
  every use of the concept: access_count, used_count and not_useful_count summed, last_access_at the latest.
  A merge is not a reference: status_ref_count (when set) grows by the same folded accesses, so the decay
  sweep does not read them as the kept memory being referenced again. The merged memories' own rows stay as
  they were (history; they are no longer recalled). Events about a merged memory after its merge stay on its
  own row. The policy for the rest of the merge (content, confidence) is in domain/reinforce.py.
- status_ref_count / last_reactivated_at: from MemoryStatusChanged, the access count its decision saw
  (inputs.ref_count) and, for a reactivation, its clock; the sweep uses them to tell "referenced again
  after the transition" (workers/lifecycle.py).

Everything comes from the events' own fields and recorded times, never the clock: a rebuild is identical.
memory_activity_versions (migration 0026) keeps each row's states per event with the positions they held between,
for recall as of a position (projections/activity_versions.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, text

from domain.events import (
    EventSchema,
    MemoriesMerged,
    MemoryReinforced,
    MemoryStatusChanged,
    RecallFeedbackGiven,
    RecallServed,
    RecordedEvent,
)
from projections import activity_versions
from projections.base import OneByOne, apply_in_order, types_of
from projections.feedback import counted_feedback

REACTIVATED_FROM = ("dormant", "archived")

_UPSERT = text("""
INSERT INTO memory_activity (tenant, memory_id, access_count, last_access_at, used_count, not_useful_count,
                             status_ref_count, last_reactivated_at)
VALUES (:tenant, :memory_id, :access, :last_access_at, :used, :not_useful, :status_ref_count, :reactivated_at)
ON CONFLICT (tenant, memory_id) DO UPDATE SET
    access_count        = memory_activity.access_count + EXCLUDED.access_count,
    last_access_at      = GREATEST(memory_activity.last_access_at, EXCLUDED.last_access_at),
    used_count          = memory_activity.used_count + EXCLUDED.used_count,
    not_useful_count    = memory_activity.not_useful_count + EXCLUDED.not_useful_count,
    status_ref_count    = CASE WHEN :has_status_ref THEN EXCLUDED.status_ref_count
                               ELSE memory_activity.status_ref_count END,
    last_reactivated_at = GREATEST(memory_activity.last_reactivated_at, EXCLUDED.last_reactivated_at)
""")

# The merged memories' rows, as they stand when the merge is applied, folded into the kept memory's row.
_FOLD = text("""
INSERT INTO memory_activity (tenant, memory_id, access_count, last_access_at, used_count, not_useful_count)
SELECT :tenant, :kept, sum(access_count), max(last_access_at), sum(used_count), sum(not_useful_count)
FROM memory_activity WHERE tenant = :tenant AND memory_id = ANY(:merged) AND memory_id <> :kept
HAVING count(*) > 0
ON CONFLICT (tenant, memory_id) DO UPDATE SET
    access_count     = memory_activity.access_count + EXCLUDED.access_count,
    last_access_at   = GREATEST(memory_activity.last_access_at, EXCLUDED.last_access_at),
    used_count       = memory_activity.used_count + EXCLUDED.used_count,
    not_useful_count = memory_activity.not_useful_count + EXCLUDED.not_useful_count,
    status_ref_count = memory_activity.status_ref_count + EXCLUDED.access_count
""")


def _later(a: datetime | None, b: datetime | None) -> datetime | None:
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)


class _Run:
    """The batch's accesses, verdicts and status inputs, one row per memory, upserted in one go; and each event's
    own change per memory (`steps`), which memory_activity_versions keeps (projections/activity_versions.py)."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, uuid.UUID], dict[str, Any]] = {}
        self.steps: dict[tuple[str, uuid.UUID, int], dict[str, Any]] = {}

    @staticmethod
    def _empty(tenant: str, memory_id: uuid.UUID) -> dict[str, Any]:
        return {"tenant": tenant, "memory_id": memory_id, "access": 0, "last_access_at": None, "used": 0,
                "not_useful": 0, "status_ref_count": None, "has_status_ref": False, "reactivated_at": None}

    def row(self, tenant: str, memory_id: uuid.UUID, position: int) -> list[dict[str, Any]]:
        """The memory's batch row and this event's step: a change is applied to both."""
        return [self.rows.setdefault((tenant, memory_id), self._empty(tenant, memory_id)),
                self.steps.setdefault((tenant, memory_id, position), self._empty(tenant, memory_id))]

    def access(self, tenant: str, memory_id: uuid.UUID, position: int, at: datetime) -> None:
        for a in self.row(tenant, memory_id, position):
            a["access"] += 1
            a["last_access_at"] = _later(a["last_access_at"], at)

    def served(self, conn: Connection, event: RecordedEvent, p: RecallServed) -> None:
        for r in sorted({r.memory_id for r in p.results if r.memory_id is not None}, key=str):  # other domains: theirs
            self.access(event.tenant, r, event.position, event.recorded_at)

    def reinforced(self, conn: Connection, event: RecordedEvent, p: MemoryReinforced) -> None:
        self.access(event.tenant, p.memory_id, event.position, event.recorded_at)

    def feedback(self, conn: Connection, event: RecordedEvent, p: RecallFeedbackGiven) -> None:
        for item in counted_feedback(conn, event, p):
            for a in self.row(event.tenant, item.memory_id, event.position):
                a["used" if item.verdict == "used" else "not_useful"] += 1

    def status_changed(self, conn: Connection, event: RecordedEvent, p: MemoryStatusChanged) -> None:
        ref_count = p.inputs.get("ref_count")
        for a in self.row(event.tenant, p.memory_id, event.position):
            if isinstance(ref_count, int):
                a["status_ref_count"], a["has_status_ref"] = ref_count, True
            if p.to_status == "active" and p.from_status in REACTIVATED_FROM:
                a["reactivated_at"] = _later(a["reactivated_at"], p.clock)

    def flush(self, conn: Connection) -> None:
        # The versions first (they replay the steps on the rows as they stand before the upsert), then one upsert
        # per memory; the batch's rows in a stable order.
        activity_versions.write(conn, [(t, m, pos, d) for (t, m, pos), d in self.steps.items()])
        for key in sorted(self.rows, key=lambda k: (k[0], str(k[1]))):
            conn.execute(_UPSERT, self.rows[key])
        self.rows, self.steps = {}, {}


def _merged(conn: Connection, event: RecordedEvent, p: MemoriesMerged) -> None:
    # The fold reads the table: what the batch accumulated before it is written first (apply_in_order), so the
    # result does not depend on where batches are cut.
    conn.execute(_FOLD, {"tenant": event.tenant, "kept": p.memory_id, "merged": list(p.merged_ids)})
    activity_versions.snapshot(conn, event.tenant, p.memory_id, event.position)


# Event class → how it is applied: into the batch's rows, or on its own (after those rows are written).
_IN_RUN: dict[type[EventSchema], Callable[[_Run, Connection, RecordedEvent, Any], None]] = {
    RecallServed: _Run.served, MemoryReinforced: _Run.reinforced, RecallFeedbackGiven: _Run.feedback,
    MemoryStatusChanged: _Run.status_changed}
_ONE_BY_ONE: OneByOne = {MemoriesMerged: _merged}


class ActivityProjector:
    name = "activity"
    tables = ("memory_activity", "memory_activity_versions")
    handlers = {**_IN_RUN, **_ONE_BY_ONE}
    types = types_of(handlers)

    def apply(self, conn: Connection, events: Sequence[RecordedEvent]) -> None:
        apply_in_order(conn, events, _ONE_BY_ONE, _IN_RUN, _Run())


@dataclass(frozen=True)
class Activity:
    """What activation needs for one memory. `last_access_at` None: never accessed (age counts from recorded)."""

    memory_id: uuid.UUID
    access_count: int
    last_access_at: datetime | None
    recorded_at: datetime
    used_count: int
    not_useful_count: int


_ACTIVITY = text("""
SELECT m.memory_id, coalesce(a.access_count, 0) AS access_count, a.last_access_at, m.recorded_at,
       coalesce(a.used_count, 0) AS used_count, coalesce(a.not_useful_count, 0) AS not_useful_count
FROM memories m
LEFT JOIN memory_activity a ON a.tenant = m.tenant AND a.memory_id = m.memory_id
WHERE m.tenant = :tenant AND m.memory_id = ANY(:ids)
""")


def activity_for(conn: Connection, tenant: str, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, Activity]:
    """Activation inputs of `ids` (those with a row in `memories`), for the recall funnel's composite score:
    `normalised_activation(a.access_count, age_hours(now, a.last_access_at, a.recorded_at),
    settings.lifecycle.actr_decay)`.
    """
    if not ids:
        return {}
    return {r.memory_id: Activity(r.memory_id, r.access_count, r.last_access_at, r.recorded_at, r.used_count,
                                  r.not_useful_count)
            for r in conn.execute(_ACTIVITY, {"tenant": tenant, "ids": list(ids)})}
