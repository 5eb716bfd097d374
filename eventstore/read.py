"""Gap-safe reading of the log, for projectors.

Positions are taken when a row is inserted but become visible when its transaction commits, so a reader
that follows positions alone can pass an event that commits later with a lower position. Instead we read
in (transaction id, position) order and only below the oldest transaction still running
(`pg_snapshot_xmin`): every transaction below that has committed or aborted, so nothing can appear behind
the checkpoint afterwards.

Every batch must cost the same however long the log is: the read walks the `events_tx_position` index from the
checkpoint and stops after `limit` rows. Its ORDER BY names the table's own columns (`e.tx_id`): a bare
`tx_id` would mean the output column `tx_id::text::bigint`, which no index is ordered by, and every batch would
then sort the whole log past the checkpoint. tests/test_eventstore_read_plan.py checks the plan, generic and
custom.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, text

from domain.events import RecordedEvent

COLUMNS = """position, event_id, tenant, stream_id, stream_version, type, schema_version, data, metadata,
             occurred_at, recorded_at, tx_id::text::bigint AS tx_id"""


@dataclass(frozen=True, order=True)
class Checkpoint:
    tx_id: int = 0
    position: int = 0


_READ = text(f"""
SELECT {COLUMNS} FROM events e
WHERE (e.tx_id, e.position) > (CAST(CAST(:tx AS text) AS xid8), :pos)
  AND e.tx_id < pg_snapshot_xmin(pg_current_snapshot())
  AND e.type = ANY(:types)
ORDER BY e.tx_id, e.position
LIMIT :limit
""")

_READ_UNTIL = text(f"""
SELECT {COLUMNS} FROM events e
WHERE (e.tx_id, e.position) > (CAST(CAST(:tx AS text) AS xid8), :pos)
  AND (e.tx_id, e.position) <= (CAST(CAST(:until_tx AS text) AS xid8), :until_pos)
  AND e.tx_id < pg_snapshot_xmin(pg_current_snapshot())
  AND e.type = ANY(:types)
ORDER BY e.tx_id, e.position
LIMIT :limit
""")


def row_to_event(row: object) -> RecordedEvent:
    m = row._mapping  # type: ignore[attr-defined]
    return RecordedEvent(**{k: m[k] for k in RecordedEvent.__dataclass_fields__})


def read_after(conn: Connection, after: Checkpoint, types: Sequence[str], limit: int,
               until: Checkpoint | None = None) -> list[RecordedEvent]:
    params = {"tx": after.tx_id, "pos": after.position, "types": list(types), "limit": limit}
    if until is None:
        rows = conn.execute(_READ, params)
    else:
        rows = conn.execute(_READ_UNTIL, {**params, "until_tx": until.tx_id, "until_pos": until.position})
    return [row_to_event(r) for r in rows]


def head_position(conn: Connection) -> int:
    return conn.execute(text("SELECT coalesce(max(position), 0) FROM events")).scalar_one()
