"""How far a reader of the log has come: a projection's head, lag and "has it reached this position", measured
against its checkpoint (projection_checkpoints, a reader's place in the log in (tx_id, position) order: one row
per partition of its work, each the place of its tenants' events)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

from sqlalchemy import Connection, TextClause, text

from eventstore.read import Checkpoint

# A reader's checkpoint rows: one per partition of its work (projections/partitions.py: an event is its tenant's
# partition's, engramlog_partition(tenant, partitions)); a reader that never ran has one at 0.
_ROWS = """
  SELECT p.partition, p.partitions, p.tx_id, p.position, p.updated_at FROM projection_checkpoints p WHERE p.name = :name
  UNION ALL
  SELECT 0, 1, '0'::xid8, 0, NULL WHERE NOT EXISTS (SELECT 1 FROM projection_checkpoints p WHERE p.name = :name)"""
# The row of :tenant's partition.
_TENANT_ROW = f"SELECT * FROM ({_ROWS}) r WHERE r.partition = engramlog_partition(:tenant, r.partitions)"
# Events of one type (t.type) after their partition's checkpoint (each partition's range from its own checkpoint),
# read from events_type_tx_position's range for that type past the checkpoint: the cost is the lag's, not the log's.
# A look for the first of them walks that range in order (_FIRST), whatever the planner guesses of a type's share
# of the log: with a bare LIMIT 1 it read the whole log past ~60k events (1 s a standings call, 15-40 ms a
# has_reached; a tenant's lag 30-50 ms by its own events).
_AHEAD_OF_TYPE = """FROM events e WHERE e.type = t.type AND (e.tx_id, e.position) > (c.tx_id, c.position)
                    AND engramlog_partition(e.tenant, c.partitions) = c.partition"""
_FIRST = "ORDER BY e.tx_id, e.position LIMIT 1"
# The lag (its events and the oldest one's time) of the checkpoint rows c, type by type.
_LAG = """lag AS (SELECT coalesce(sum(a.n), 0) AS events, min(a.oldest) AS oldest
               FROM c, unnest(CAST(:types AS text[])) t(type),
                    LATERAL (SELECT count(*) AS n, min(e.recorded_at) AS oldest {ahead}) a)"""
_PROGRESS = text(f"""
WITH c AS MATERIALIZED ({_ROWS}), {_LAG.format(ahead=_AHEAD_OF_TYPE)}
SELECT (SELECT min(position) FROM c) AS position,
       (SELECT coalesce(max(position), 0) FROM events) AS head,
       (SELECT max(updated_at) FROM c) AS updated_at,
       lag.events AS lag_events, extract(epoch FROM clock_timestamp() - lag.oldest) AS lag_seconds
FROM lag
""")
_TENANT_PROGRESS = text(f"""
WITH c AS MATERIALIZED ({_TENANT_ROW}), {_LAG.format(ahead=_AHEAD_OF_TYPE + " AND e.tenant = :tenant")}
SELECT (SELECT coalesce(max(position), 0) FROM events WHERE tenant = :tenant) AS head,
       (SELECT coalesce(max(e.position), 0) FROM events e
         WHERE e.tenant = :tenant AND (e.tx_id, e.position) <= (c.tx_id, c.position)) AS position,
       c.updated_at, lag.events AS lag_events, extract(epoch FROM clock_timestamp() - lag.oldest) AS lag_seconds
FROM c, lag
""")
# A position stands for its whole transaction: a write's governance decisions are appended after it in the
# same transaction, and reading the write back must see them applied too. One probe per type ({probes}), each with
# its type in the text (_typed).
_CAUGHT_UP = """
WITH target AS (
  SELECT greatest(CAST(:position AS bigint),
                  (SELECT max(t.position) FROM events p JOIN events t ON t.tx_id = p.tx_id
                   WHERE p.position = :position)) AS position),
     c AS MATERIALIZED ({rows})
SELECT EXISTS (SELECT 1 FROM events WHERE position >= :position)
   AND NOT EXISTS (SELECT 1 FROM target, c WHERE {probes})
"""


def _ahead(type_name: str, also: str = "") -> str:
    """Whether the log holds an event of `type_name` after checkpoint row c (and `also`, SQL on e), as an EXISTS:
    its type is written in the text (_typed), so the probe is planned for that type's share of the log."""
    lateral = f"(SELECT 1 {_AHEAD_OF_TYPE}{also} {_FIRST})"
    return f"EXISTS (SELECT 1 FROM {_typed(type_name)} t CROSS JOIN LATERAL {lateral} a)"


@lru_cache(maxsize=256)
def _caught_up(types: tuple[str, ...], for_tenant: bool) -> TextClause:
    """has_reached's statement for a reader of `types`; a tenant's waits for its own events only: another tenant's
    backlog is not what it reads."""
    also = " AND e.position <= target.position" + (" AND e.tenant = :tenant" if for_tenant else "")
    probes = " OR ".join(_ahead(t, also) for t in types) or "false"
    return text(_CAUGHT_UP.format(rows=_TENANT_ROW if for_tenant else _ROWS, probes=probes))


def _typed(type_name: str) -> str:
    """A one-row relation t(type) holding an event type's name as a literal, so a probe joined to it is planned for
    that type's share of the log (the registry's names, never a caller's): planned for a type it could not see,
    PostgreSQL took a reader of rare types far behind its checkpoint for one about to meet its next event and walked
    events_tx_position through every later event (55-73 ms a standings call in a soak of hit-log events)."""
    return f"(SELECT {_literal(type_name)} AS type)"


def _literal(name: str) -> str:
    """A name as an SQL string literal (standard_conforming_strings: only a quote is doubled), a colon escaped, which
    SQLAlchemy's text() would otherwise read as a parameter's."""
    return "'" + name.replace("'", "''").replace(":", "\\:") + "'"


@dataclass(frozen=True)
class Standing:
    """Where one reader stands, in a glance: whether the log holds events of its types after a checkpoint of its,
    and the partition counts its checkpoint rows hold (one count, unless a repartitioning is under way)."""
    ahead: bool
    partitions: frozenset[int]
    stored: bool  # it has checkpoint rows (else it never ran: one partition, at the log's start)


def standings(conn: Connection, readers: Mapping[str, Sequence[str]]) -> dict[str, Standing]:
    """Each reader's Standing (by name, from the types it reads), in one statement: an index probe per checkpoint
    row and type (each type's own range of events_type_tx_position), whatever the log's length. Events of a
    transaction still running are not seen, as no reader reads them yet; their commit wakes the readers again
    (infra/wake.py)."""
    statement = _standings(tuple((name, tuple(types)) for name, types in readers.items()))
    return {r.name: Standing(bool(r.ahead), frozenset(r.partitions), bool(r.stored)) for r in conn.execute(statement)}


@lru_cache(maxsize=64)
def _standings(readers: tuple[tuple[str, tuple[str, ...]], ...]) -> TextClause:
    """standings' statement for these readers, their names and types written in the text (the registry's): with no
    parameter, PostgreSQL plans it once on a connection (psycopg prepares it on its fifth run) and keeps that plan,
    which is the plan for these very values. With the names as parameters it planned it anew on every call, to
    choose among custom plans: 2.7 of its 3.1 ms a call, before every round of the worker."""
    rows = _ROWS.replace(":name", "w.name")
    # Each type's first event after the checkpoint (_AHEAD_OF_TYPE), the type written in the text (_typed).
    probes = " ".join(f"WHEN {_literal(name)} THEN " + " OR ".join(_ahead(t) for t in types)
                      for name, types in readers if types)
    values = ", ".join(f"({_literal(name)})" for name, _ in readers)
    return text(f"""
    SELECT w.name, bool_or(CASE w.name {probes} ELSE false END) AS ahead,
           array_agg(DISTINCT c.partitions) AS partitions,
           EXISTS (SELECT 1 FROM projection_checkpoints p WHERE p.name = w.name) AS stored
    FROM (VALUES {values}) w(name) CROSS JOIN LATERAL ({rows}) c
    GROUP BY w.name""")


@dataclass(frozen=True)
class Progress:
    position: int  # the checkpoint's position (for a tenant: its last event at or before the checkpoint)
    head: int  # the log's last position (for a tenant: its own last)
    lag_events: int  # events of the reader's types after its checkpoint
    lag_seconds: float  # age of the oldest of them
    updated_at: datetime | None  # when the checkpoint last moved


def progress(conn: Connection, name: str, types: Sequence[str], tenant: str | None = None) -> Progress:
    """The reader `name` (of `types`) against the whole log, or against one tenant's events only."""
    if tenant is None:
        row = conn.execute(_PROGRESS, {"name": name, "types": list(types)}).one()
    else:
        row = conn.execute(_TENANT_PROGRESS, {"name": name, "types": list(types), "tenant": tenant}).one()
    return Progress(row.position, row.head, row.lag_events, float(row.lag_seconds or 0.0), row.updated_at)


def has_reached(conn: Connection, name: str, types: Sequence[str], position: int, tenant: str | None = None) -> bool:
    """True when the log holds `position` and the reader has applied every event of its types at or below it (and
    in the rest of its transaction); with `tenant`, every such event of that tenant."""
    statement = _caught_up(tuple(types), tenant is not None)
    params: dict[str, object] = {"name": name, "position": position}
    return bool(conn.execute(statement, params if tenant is None else {**params, "tenant": tenant}).scalar_one())


def count_of(conn: Connection, types: Sequence[str], until: Checkpoint | None = None) -> int:
    """How many events of `types` the log holds (at or before `until`)."""
    sql = "SELECT count(*) FROM events WHERE type = ANY(:types)"
    params: dict[str, object] = {"types": list(types)}
    if until is not None:
        sql += " AND (tx_id, position) <= (CAST(CAST(:tx AS text) AS xid8), :pos)"
        params.update(tx=until.tx_id, pos=until.position)
    return conn.execute(text(sql), params).scalar_one()
