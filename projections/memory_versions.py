"""memory_versions (migration 0025), kept by the memories projector: a memory's states with the log positions
they held between, so a read as of a position (recall/timeframe.py) answers the memory as it then stood.

After an event changed memories' rows, `snapshot` closes each changed memory's open version at the event's
position and opens one from it holding the row as it now is. A memory whose row the event left as it was (a
repeated admission, a status change from another status, feedback that counted nothing) gets no version. Applied
per event in log order, so a rebuild gives the same rows whatever the batches (verify compares them).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from typing import Any

from sqlalchemy import Connection, text

from domain.events import (
    EventSchema,
    MemoriesMerged,
    MemoryReinforced,
    MemoryStatusChanged,
    MemorySuperseded,
    RecallFeedbackGiven,
    RecordedEvent,
)
from readmodels.memories import MEMORY_COLUMNS

_COLUMNS = MEMORY_COLUMNS.replace("memory_id, ", "", 1)
_CHANGED = " OR ".join(f"v.{c} IS DISTINCT FROM m.{c}" for c in _COLUMNS.split(", "))
_SNAPSHOT = text(f"""
WITH touched AS (
    SELECT DISTINCT ON (t.memory_id) t.memory_id, t.position
    FROM unnest(CAST(:ids AS uuid[]), CAST(:positions AS bigint[])) AS t(memory_id, position)
    ORDER BY t.memory_id, t.position
), changed AS (
    SELECT t.position AS valid_from, m.tenant, m.{MEMORY_COLUMNS.replace(", ", ", m.")}
    FROM touched t
    JOIN memories m ON m.tenant = :tenant AND m.memory_id = t.memory_id
    LEFT JOIN memory_versions v ON v.tenant = m.tenant AND v.memory_id = m.memory_id AND v.valid_to IS NULL
    WHERE v.memory_id IS NULL OR {_CHANGED}
), closed AS (
    UPDATE memory_versions v SET valid_to = c.valid_from FROM changed c
    WHERE v.tenant = c.tenant AND v.memory_id = c.memory_id AND v.valid_to IS NULL
)
INSERT INTO memory_versions (tenant, memory_id, valid_from, {_COLUMNS})
SELECT tenant, memory_id, valid_from, {_COLUMNS} FROM changed
""")


def snapshot(conn: Connection, tenant: str, touched: Iterable[tuple[uuid.UUID, int]]) -> None:
    """A version from `position` for each (memory, position) whose memories row differs from its open version."""
    pairs = list(touched)
    if pairs:
        conn.execute(_SNAPSHOT, {"tenant": tenant, "ids": [i for i, _ in pairs], "positions": [p for _, p in pairs]})


# The memories each one-by-one event may change (the in-run events snapshot in the run's flush).
TOUCHED: dict[type[EventSchema], Callable[[Any], list[uuid.UUID]]] = {
    MemoryReinforced: lambda p: [p.memory_id],
    MemorySuperseded: lambda p: [p.memory_id, p.superseded_by],
    MemoryStatusChanged: lambda p: [p.memory_id],
    MemoriesMerged: lambda p: [p.memory_id, *p.merged_ids],
    RecallFeedbackGiven: lambda p: [i.memory_id for i in p.items],
}


def versioned(handler: Callable[[Connection, RecordedEvent, Any], None],
              touched: Callable[[Any], list[uuid.UUID]]) -> Callable[[Connection, RecordedEvent, Any], None]:
    """`handler`, then a snapshot of the memories it may have changed, at the event's position."""
    def apply(conn: Connection, event: RecordedEvent, p: Any) -> None:
        handler(conn, event, p)
        snapshot(conn, event.tenant, ((i, event.position) for i in touched(p)))
    return apply
