"""A projection's work in partitions: its events split by a hash of their tenant (`engramlog_partition(tenant, n)`,
migration 0022), each partition with its own checkpoint row, so N worker processes share one projection.

A tenant's events all fall in one partition and are applied there in (tx_id, position) order: per-tenant order is
the only order a read model relies on (every row carries its tenant). Whoever applies a partition's batch holds,
for that transaction, the projection's lock shared and the partition's lock exclusive (PostgreSQL advisory locks,
transaction-scoped): a claim per batch, so a worker that joins takes a free partition on its next turn and a dead
worker's claim ends with its connection (its transaction aborts, the checkpoint did not move, nothing was applied
twice). Whoever needs the whole projection still (rebuild, verify, dead-letter retries, a change of the partition
count) takes the projection's lock exclusive.

The rows say how many partitions are in force (`partitions`, the same on every row of a projection). A worker
configured with another count (settings.workers.projection_partitions) splits the projection anew only where every row
is at one checkpoint, which is exact: every event at or below it is applied for every tenant. Rows at different
checkpoints are first brought to the furthest of them (`align`), under the exclusive lock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, Engine, text

from eventstore.horizon import NOT_APPENDING
from eventstore.read import Checkpoint
from infra.db import reading

PROJECTION_LOCK = "engramlog.projection.{name}"


@dataclass(frozen=True)
class Partition:
    index: int
    count: int

    @property
    def whole(self) -> bool:
        return self.count == 1


WHOLE = Partition(0, 1)


def lock_key(name: str) -> str:
    """The projection's lock: shared per batch, exclusive for whatever needs all of it."""
    return PROJECTION_LOCK.format(name=name)


def partition_key(name: str, partition: Partition) -> str:
    return f"{lock_key(name)}#{partition.index}"


TRY_SHARED = text("SELECT pg_try_advisory_xact_lock_shared(hashtext(:key))")
SHARED = text("SELECT pg_advisory_xact_lock_shared(hashtext(:key))")
TRY_EXCLUSIVE = text("SELECT pg_try_advisory_xact_lock(hashtext(:key))")
EXCLUSIVE = text("SELECT pg_advisory_xact_lock(hashtext(:key))")
# A batch's or a round's first statement, one round trip: this transaction appends nothing (however long it runs,
# readers of the log need not wait for it), then, for each (projection, partition) in turn, the projection's lock
# shared and, only when that is had, the partition's exclusive (TRY_SHARED and TRY_EXCLUSIVE in one statement).
_TRY_CLAIM = text(f"""
SELECT {NOT_APPENDING} AS quiet,
       CASE WHEN pg_try_advisory_xact_lock_shared(hashtext(c.projection))
            THEN pg_try_advisory_xact_lock(hashtext(c.part)) ELSE false END AS claimed
FROM unnest(CAST(:projections AS text[]), CAST(:parts AS text[])) WITH ORDINALITY AS c(projection, part, ord)
ORDER BY c.ord
""")


def try_claim(conn: Connection, wanted: Sequence[tuple[str, Partition]]) -> list[bool]:
    """Declare the transaction not appending and try to claim each (projection name, partition): whether each was
    claimed, in order. One held by another runner is not waited for."""
    rows = conn.execute(_TRY_CLAIM, {"projections": [lock_key(name) for name, _ in wanted],
                                     "parts": [partition_key(name, partition) for name, partition in wanted]})
    return [bool(r.claimed) for r in rows]

_ROWS = text("""
SELECT partition, partitions, tx_id::text::bigint AS tx_id, position FROM projection_checkpoints
WHERE name = :name ORDER BY partition
""")
_CREATE = text("""
INSERT INTO projection_checkpoints (name, partition, partitions, tx_id, position, updated_at)
SELECT :name, p, :n, CAST(CAST(:tx AS text) AS xid8), :pos, clock_timestamp() FROM generate_series(0, :n - 1) AS p
""")
_DROP = text("DELETE FROM projection_checkpoints WHERE name = :name")
_SAVE = text("""
UPDATE projection_checkpoints SET tx_id = CAST(CAST(:tx AS text) AS xid8), position = :pos,
                                  updated_at = clock_timestamp()
WHERE name = :name AND partition = :index AND partitions = :count
""")
_LOAD = text("""
SELECT tx_id::text::bigint, position FROM projection_checkpoints
WHERE name = :name AND partition = :index AND partitions = :count
""")
_LOAD_TENANT = text("""
SELECT tx_id::text::bigint, position FROM projection_checkpoints
WHERE name = :name AND partition = engramlog_partition(:tenant, partitions)
""")
@dataclass(frozen=True)
class Row:
    partition: Partition
    checkpoint: Checkpoint


def rows(conn: Connection, name: str) -> list[Row]:
    return [Row(Partition(r.partition, r.partitions), Checkpoint(r.tx_id, r.position))
            for r in conn.execute(_ROWS, {"name": name})]


def layout(engine: Engine, name: str, wanted: int | None = None) -> list[Partition]:
    """The partitions in force for `name`: the rows' (created with `wanted`, default one, when there are none).
    With `wanted` (a worker's configured count), split anew into that many where the rows allow it now."""
    with reading(engine) as conn:
        found = rows(conn, name)
    if found and (wanted is None or found[0].partition.count == wanted):
        return [r.partition for r in found]
    with engine.begin() as conn:
        if found:  # another count: only with nothing running on it, and only where exact
            if not conn.execute(TRY_EXCLUSIVE, {"key": lock_key(name)}).scalar_one():
                return [r.partition for r in found]
        else:
            conn.execute(EXCLUSIVE, {"key": lock_key(name)})
        now = rows(conn, name)
        count = wanted or (now[0].partition.count if now else 1)
        if now and now[0].partition.count == count:
            return [r.partition for r in now]
        checkpoints = {r.checkpoint for r in now}
        if len(checkpoints) > 1:
            return [r.partition for r in now]  # `align` first (the projection's runner does, projections/runner.py)
        at = checkpoints.pop() if checkpoints else Checkpoint()
        conn.execute(_DROP, {"name": name})
        conn.execute(_CREATE, {"name": name, "n": count, "tx": at.tx_id, "pos": at.position})
    return [Partition(i, count) for i in range(count)]


def load(conn: Connection, name: str, partition: Partition) -> Checkpoint | None:
    row = conn.execute(_LOAD, {"name": name, "index": partition.index, "count": partition.count}).first()
    return Checkpoint(row[0], row[1]) if row else None


def load_for_tenant(conn: Connection, name: str, tenant: str) -> Checkpoint:
    row = conn.execute(_LOAD_TENANT, {"name": name, "tenant": tenant}).first()
    return Checkpoint(row[0], row[1]) if row else Checkpoint()


def save(conn: Connection, name: str, partition: Partition, checkpoint: Checkpoint) -> None:
    conn.execute(_SAVE, {"name": name, "index": partition.index, "count": partition.count,
                         "tx": checkpoint.tx_id, "pos": checkpoint.position})


def save_all(conn: Connection, name: str, checkpoint: Checkpoint) -> None:
    """Every partition of `name` at `checkpoint` (one partition when it has no rows yet). Under the exclusive lock."""
    count = next(iter(rows(conn, name)), Row(WHOLE, Checkpoint())).partition.count
    conn.execute(_DROP, {"name": name})
    conn.execute(_CREATE, {"name": name, "n": count, "tx": checkpoint.tx_id, "pos": checkpoint.position})


_LOAD_WHOLE = text("""
SELECT name, tx_id::text::bigint AS tx_id, position FROM projection_checkpoints
WHERE name = ANY(CAST(:names AS text[])) AND partition = 0 AND partitions = 1
""")
_SAVE_WHOLE = text("""
UPDATE projection_checkpoints c SET tx_id = CAST(CAST(b.tx AS text) AS xid8), position = b.pos,
                                    updated_at = clock_timestamp()
FROM unnest(CAST(:names AS text[]), CAST(:txs AS bigint[]), CAST(:positions AS bigint[])) AS b(name, tx, pos)
WHERE c.name = b.name AND c.partition = 0 AND c.partitions = 1
""")


def load_whole(conn: Connection, names: Sequence[str]) -> dict[str, Checkpoint]:
    """The checkpoints of those of `names` that are one whole partition (a projection being split has none here)."""
    return {r.name: Checkpoint(r.tx_id, r.position) for r in conn.execute(_LOAD_WHOLE, {"names": list(names)})}


def save_whole(conn: Connection, checkpoints: dict[str, Checkpoint]) -> None:
    """Each named projection's one whole partition at its checkpoint, in one statement."""
    if checkpoints:
        names = sorted(checkpoints)
        conn.execute(_SAVE_WHOLE, {"names": names, "txs": [checkpoints[n].tx_id for n in names],
                                   "positions": [checkpoints[n].position for n in names]})


def lowest(checkpoints: Sequence[Checkpoint]) -> Checkpoint:
    return min(checkpoints, default=Checkpoint())


__all__ = ["EXCLUSIVE", "SHARED", "TRY_EXCLUSIVE", "TRY_SHARED", "WHOLE", "Partition", "Row", "layout",
           "load", "load_for_tenant", "load_whole", "lock_key", "lowest", "partition_key", "rows", "save", "save_all",
           "save_whole", "try_claim"]
