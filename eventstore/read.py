"""Gap-safe reading of the log, for projectors.

Positions are taken when a row is inserted but become visible when its transaction commits, so a reader
that follows positions alone can pass an event that commits later with a lower position. Instead we read
in (transaction id, position) order and only below the oldest transaction still running that may append
(eventstore/horizon.py): every transaction below that has committed or aborted, so nothing can appear behind
the checkpoint afterwards.

Every batch must cost the same however long the log is, and whatever share of it the projector's types are:
for each of its types the read takes an ordered range of the `events_type_tx_position` index (type, tx_id,
position) from the checkpoint, at most `limit` entries; the ranges are merged in (tx_id, position) order
(a Merge Append that stops after `limit` keys) and only those rows are fetched. A projector with nothing to
apply costs one index probe per type. ORDER BY clauses name the table's own columns: a bare `tx_id` in a
query that outputs `tx_id::text::bigint AS tx_id` would mean that output column, which no index is ordered
by (every batch then sorted the whole log past the checkpoint). tests/test_eventstore_read_plan.py checks the
plan, generic (as psycopg's prepared statements may get it) and custom.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from sqlalchemy import Connection, Row, TextClause, text

from domain.events import RecordedEvent
from eventstore.codec import open_events
from eventstore.horizon import HORIZON

COLUMNS = """position, event_id, tenant, stream_id, stream_version, type, schema_version, data, metadata,
             occurred_at, recorded_at, tx_id::text::bigint AS tx_id"""


@dataclass(frozen=True, order=True)
class Checkpoint:
    tx_id: int = 0
    position: int = 0


MAX_BIGINT = 2**63 - 1
_GAP_SAFE = "(tx_id, position) > (CAST(CAST(:tx AS text) AS xid8), :pos) AND tx_id < (SELECT h.b FROM horizon h)"
_UNTIL = " AND (tx_id, position) <= (CAST(CAST(:until_tx AS text) AS xid8), :until_pos)"
# One partition of a projection's work (projections/partitions.py): its tenants' events only, below a horizon the
# caller read first (so that finding none of them tells it how far the partition is done).
_PARTITION = " AND engramlog_partition(tenant, :partitions) = :partition"
_HORIZON_NOW = f"SELECT {HORIZON} AS b"
_HORIZON_GIVEN = "SELECT CAST(CAST(:below AS text) AS xid8) AS b"


@lru_cache(maxsize=256)
def _read_statement(n_types: int, until: bool, partitioned: bool = False, below: bool = False,
                    per_type: bool = False) -> TextClause:
    """One ordered, bounded index range per type (:type_0 ...), merged; then the rows of the first `limit` keys.
    Below the horizon the caller gives (:below) when `partitioned` or `below`, else the horizon now. `per_type`:
    each type's range starts after its own checkpoint (:tx_0, :pos_0 ...), not one for all (:tx, :pos)."""
    bound = _GAP_SAFE + (_UNTIL if until else "") + (_PARTITION if partitioned else "")
    ranges = " UNION ALL ".join(
        f"(SELECT tx_id, position FROM events WHERE type = :type_{i} AND "
        f"{bound.replace(':tx', f':tx_{i}').replace(':pos', f':pos_{i}') if per_type else bound}"
        f" ORDER BY tx_id, position LIMIT :limit)"
        for i in range(n_types))
    # A batch is bounded in bytes too (:max_bytes of stored event data, pg_column_size: no value is read to be
    # measured): the events past it wait for the next batch; the first is always taken, however large.
    return text(f"""
WITH horizon AS MATERIALIZED ({_HORIZON_GIVEN if partitioned or below else _HORIZON_NOW})
SELECT {COLUMNS}, e.keys FROM (
    SELECT e.*, sum(pg_column_size(e.data) + pg_column_size(e.metadata)) OVER w
                - pg_column_size(e.data) - pg_column_size(e.metadata) AS bytes_before,
           count(*) OVER () AS keys
    FROM events e
    WHERE e.position IN (SELECT k.position FROM ({ranges}) AS k ORDER BY k.tx_id, k.position LIMIT :limit)
    WINDOW w AS (ORDER BY e.tx_id, e.position)
) e
WHERE e.bytes_before < :max_bytes
ORDER BY e.tx_id, e.position
""")


def row_to_event(row: Row[Any]) -> RecordedEvent:
    m = row._mapping
    return RecordedEvent(**{k: m[k] for k in RecordedEvent.__dataclass_fields__})


def read_after(conn: Connection, after: Checkpoint, types: Sequence[str], limit: int,
               until: Checkpoint | None = None, max_bytes: int | None = None,
               partition: tuple[int, int, int] | None = None, below: int | None = None) -> list[RecordedEvent]:
    """The next `limit` events of `types` after `after` (and at or before `until`), in (tx_id, position) order;
    with `max_bytes`, only as many as fit in it (at least one). `partition` = (index, count, horizon): only the
    events of the tenants in that partition, below that horizon (a transaction id the caller read). `below`: a
    horizon the caller read earlier (eventstore/horizon.py), so several reads share one look at pg_locks; an
    earlier horizon is never later than the one now, so reading below it is as gap-safe (what it holds back is
    read once the transactions that held it back end, whose commits wake the reader again)."""
    distinct = sorted(set(types))
    if not distinct:
        return []
    params: dict[str, object] = {"tx": after.tx_id, "pos": after.position, "limit": limit,
                                 "max_bytes": MAX_BIGINT if max_bytes is None else max_bytes,
                                 **{f"type_{i}": t for i, t in enumerate(distinct)}}
    if until is not None:
        params.update(until_tx=until.tx_id, until_pos=until.position)
    if below is not None:
        params.update(below=below)
    if partition is not None:
        params.update(partition=partition[0], partitions=partition[1], below=partition[2])
    rows = conn.execute(_read_statement(len(distinct), until is not None, partition is not None, below is not None),
                        params)
    return open_events(conn, [row_to_event(r) for r in rows], keep_forgotten=True)


def read_types_after(conn: Connection, after: Mapping[str, Checkpoint], limit: int, max_bytes: int,
                     below: int) -> tuple[list[RecordedEvent], bool]:
    """The next `limit` events (at most `max_bytes` of them, at least one) of the types in `after`, each type's after
    its own checkpoint, below the horizon `below`, in (tx_id, position) order: what several readers of those types
    each read after their own checkpoint, read once (projections/round.py). Also whether more may follow: the
    read stopped at `limit` or `max_bytes`, not at the horizon."""
    distinct = sorted(after)
    if not distinct:
        return [], False
    params: dict[str, object] = {"limit": limit, "max_bytes": max_bytes, "below": below}
    for i, t in enumerate(distinct):
        params.update({f"type_{i}": t, f"tx_{i}": after[t].tx_id, f"pos_{i}": after[t].position})
    rows = conn.execute(_read_statement(len(distinct), False, below=True, per_type=True), params).all()
    more = bool(rows) and (rows[0].keys >= limit or len(rows) < rows[0].keys)
    return open_events(conn, [row_to_event(r) for r in rows], keep_forgotten=True), more


_AT = text(f"SELECT {COLUMNS} FROM events e WHERE e.position = :position")


def event_at(conn: Connection, position: int) -> RecordedEvent | None:
    """The event at `position` (of any tenant: for operators and the projection machinery), or None; a forgotten
    one as its ContentForgotten."""
    row = conn.execute(_AT, {"position": position}).first()
    return None if row is None else open_events(conn, [row_to_event(row)], keep_forgotten=True)[0]


def head_position(conn: Connection, tenant: str | None = None) -> int:
    """The log's last position, or with `tenant` that tenant's own (events_tenant_position serves it)."""
    if tenant is None:
        return conn.execute(text("SELECT coalesce(max(position), 0) FROM events")).scalar_one()
    return conn.execute(text("SELECT coalesce(max(position), 0) FROM events WHERE tenant = :tenant"),
                        {"tenant": tenant}).scalar_one()
