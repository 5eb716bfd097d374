"""Every memory status decision of a tenant in log order: what the console's status-over-time chart replays.

Only the decisions' plain fields are read (ids and statuses are never sealed, eventstore/codec.py), streamed from
the server so a long log costs a page of rows at a time, not the whole history.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import NamedTuple

from sqlalchemy import Connection, text

from domain.events import MemoriesMerged, MemoryAdmitted, MemoryStatusChanged, MemorySuperseded

STATUS_EVENTS = (MemoryAdmitted, MemoryStatusChanged, MemorySuperseded, MemoriesMerged)

# Through events_tenant_type (tenant, type, position), one range a type, merged by position.
_DECISIONS = text("""
SELECT e.recorded_at, e.type, e.data->>'memory_id' AS memory_id, e.data->>'disposition' AS disposition,
       e.data->>'to_status' AS to_status, e.data->'merged_ids' AS merged_ids
FROM events e WHERE e.tenant = :tenant AND e.type = ANY(:types)
ORDER BY e.position
""")


class StatusDecision(NamedTuple):
    at: datetime
    type: str
    memory_id: str
    disposition: str | None  # MemoryAdmitted's
    to_status: str | None  # MemoryStatusChanged's
    merged_ids: list[str]  # MemoriesMerged's


def status_decisions(conn: Connection, tenant: str) -> Iterator[StatusDecision]:
    rows = conn.execution_options(stream_results=True, yield_per=5000).execute(
        _DECISIONS, {"tenant": tenant, "types": [t.type_name() for t in STATUS_EVENTS]})
    for r in rows:
        yield StatusDecision(r.recorded_at, r.type, r.memory_id, r.disposition, r.to_status,
                             [str(m) for m in r.merged_ids or ()])


__all__ = ["STATUS_EVENTS", "StatusDecision", "status_decisions"]
