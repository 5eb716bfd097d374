"""Rebuild a projection from position 0 into fresh tables and swap them in atomically; or verify one.

The fresh tables live in a scratch schema with the same definitions as the live ones. The projector's SQL
names its tables unqualified, so setting `search_path` to the scratch schema first redirects it there
without any change to the projector.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import structlog
from sqlalchemy import Connection, Engine, text

from eventstore.read import Checkpoint, read_after
from projections.base import Projector
from projections.runner import _LOCK, load_checkpoint, lock_key, save_checkpoint

log = structlog.get_logger(__name__)

Progress = Callable[[int, int], None]  # (applied so far, events to apply)


def _create_scratch(conn: Connection, schema: str, projector: Projector) -> None:
    conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
    conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    for table in projector.tables:
        conn.execute(text(f'CREATE TABLE "{schema}".{table} (LIKE public.{table} INCLUDING ALL)'))


# Each index of a table by its definition without its own name and table (the "shape"), to match copies.
_INDEXES = text(r"""
SELECT c.relname AS name,
       regexp_replace(pg_get_indexdef(i.indexrelid), '^CREATE (UNIQUE )?INDEX \S+ ON \S+', '\1') AS shape
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE i.indrelid = CAST(:table AS regclass)
""")


def _use(conn: Connection, schema: str) -> None:
    conn.execute(text(f'SET LOCAL search_path TO "{schema}", public'))


def _count(conn: Connection, projector: Projector, until: Checkpoint | None) -> int:
    sql = "SELECT count(*) FROM events WHERE type = ANY(:types)"
    params: dict[str, object] = {"types": list(projector.types)}
    if until is not None:
        sql += " AND (tx_id, position) <= (CAST(CAST(:tx AS text) AS xid8), :pos)"
        params.update(tx=until.tx_id, pos=until.position)
    return conn.execute(text(sql), params).scalar_one()


def _replay(conn: Connection, schema: str, projector: Projector, start: Checkpoint, batch_size: int,
            until: Checkpoint | None = None, on_batch: Callable[[int], None] | None = None,
            max_batches: int | None = None) -> Checkpoint:
    checkpoint = start
    batches = 0
    while max_batches is None or batches < max_batches:
        batches += 1
        _use(conn, schema)
        events = read_after(conn, checkpoint, projector.types, batch_size, until=until)
        if not events:
            return checkpoint
        projector.apply(conn, events)
        checkpoint = Checkpoint(events[-1].tx_id, events[-1].position)
        if on_batch:
            on_batch(len(events))
    return checkpoint


def rebuild(engine: Engine, projector: Projector, batch_size: int = 1000,
            progress: Progress | None = None) -> Checkpoint:
    schema = f"rebuild_{projector.name}"
    with engine.begin() as conn:
        _create_scratch(conn, schema, projector)
        total = _count(conn, projector, None)
    done = 0

    def tick(n: int) -> None:
        nonlocal done
        done += n
        if progress:
            progress(done, total)

    # Bulk phase: one transaction per batch, live projection keeps running meanwhile.
    checkpoint = Checkpoint()
    while True:
        with engine.begin() as conn:
            before = checkpoint
            checkpoint = _replay(conn, schema, projector, checkpoint, batch_size, on_batch=tick, max_batches=10)
        if checkpoint == before:
            break
    # Swap phase: hold the live projector's lock, apply what arrived meanwhile, swap tables and checkpoint.
    with engine.begin() as conn:
        conn.execute(_LOCK, {"key": lock_key(projector.name)})
        checkpoint = _replay(conn, schema, projector, checkpoint, batch_size, on_batch=tick)
        conn.execute(text("SET LOCAL search_path TO public"))
        for table in projector.tables:
            conn.execute(text(f"LOCK TABLE public.{table} IN ACCESS EXCLUSIVE MODE"))
            live_names = {r.shape: r.name for r in conn.execute(_INDEXES, {"table": f"public.{table}"})}
            conn.execute(text(f"DROP TABLE public.{table}"))
            conn.execute(text(f'ALTER TABLE "{schema}".{table} SET SCHEMA public'))
            # LIKE ... INCLUDING ALL names the copied indexes itself: give them back the migrations' names.
            for r in conn.execute(_INDEXES, {"table": f"public.{table}"}).all():
                original = live_names.get(r.shape)
                if original and original != r.name:
                    conn.execute(text(f'ALTER INDEX public."{r.name}" RENAME TO "{original}"'))
        conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        save_checkpoint(conn, projector.name, checkpoint)
    log.info("projection.rebuilt", projection=projector.name, position=checkpoint.position)
    return checkpoint


@dataclass
class TableDiff:
    table: str
    live_rows: int
    rebuilt_rows: int
    only_live: int
    only_rebuilt: int
    samples: list[str] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return self.only_live == 0 and self.only_rebuilt == 0


@dataclass
class VerifyReport:
    projection: str
    position: int
    tables: list[TableDiff]

    @property
    def identical(self) -> bool:
        return all(t.identical for t in self.tables)


def _diff(conn: Connection, schema: str, table: str) -> TableDiff:
    live = conn.execute(text(f"SELECT count(*) FROM public.{table}")).scalar_one()
    rebuilt = conn.execute(text(f'SELECT count(*) FROM "{schema}".{table}')).scalar_one()
    only_live_sql = f'SELECT * FROM public.{table} EXCEPT ALL SELECT * FROM "{schema}".{table}'
    only_rebuilt_sql = f'SELECT * FROM "{schema}".{table} EXCEPT ALL SELECT * FROM public.{table}'
    only_live = conn.execute(text(f"SELECT count(*) FROM ({only_live_sql}) d")).scalar_one()
    only_rebuilt = conn.execute(text(f"SELECT count(*) FROM ({only_rebuilt_sql}) d")).scalar_one()
    samples = [f"live only: {tuple(r)}"[:300] for r in conn.execute(text(only_live_sql + " LIMIT 3"))]
    samples += [f"rebuilt only: {tuple(r)}"[:300] for r in conn.execute(text(only_rebuilt_sql + " LIMIT 3"))]
    return TableDiff(table, live, rebuilt, only_live, only_rebuilt, samples)


def verify(engine: Engine, projector: Projector, batch_size: int = 1000,
           progress: Progress | None = None) -> VerifyReport:
    """Replay into scratch tables up to the live checkpoint and compare row for row. Changes nothing."""
    schema = f"verify_{projector.name}"
    with engine.connect() as conn, conn.begin() as tx:
        # Holding the projection's lock pins the live tables at their checkpoint while we compare.
        conn.execute(_LOCK, {"key": lock_key(projector.name)})
        live = load_checkpoint(conn, projector.name)
        _create_scratch(conn, schema, projector)
        total = _count(conn, projector, live)
        done = 0

        def tick(n: int) -> None:
            nonlocal done
            done += n
            if progress:
                progress(done, total)

        _replay(conn, schema, projector, Checkpoint(), batch_size, until=live, on_batch=tick)
        conn.execute(text("SET LOCAL search_path TO public"))
        report = VerifyReport(projector.name, live.position, [_diff(conn, schema, t) for t in projector.tables])
        tx.rollback()  # the scratch schema disappears with the transaction
    return report
