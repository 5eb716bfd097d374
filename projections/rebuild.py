"""Rebuild a projection from position 0 into fresh tables and swap them in atomically; or verify one.

The fresh tables live in a scratch schema with the same definitions as the live ones. The projector's SQL
names its tables unqualified, so setting `search_path` to the scratch schema first redirects it there
without any change to the projector.

One rebuild or verify of a projection at a time: each holds a session advisory lock (`engramlog.rebuild.<name>`)
on the one connection all its statements go through, from before the scratch schema is made until after it is
gone; a second is refused with ProjectionBusy (HTTP 409, a CLI error) instead of sharing the scratch tables.

Neither holds a transaction id for long: every batch of the replay is its own short transaction, so the other
projectors, which read below the oldest running transaction id, keep going. Only the end is held: the swap
(rebuild) takes the live projector's lock for the last events and the table swap; verify takes the live
projector's lock as a session lock, replays the last events up to the live checkpoint in short transactions,
then compares in a read-only transaction, so only that projection waits while the tables are compared.

The swap locks the live tables in the order readers take them (SWAP_LOCK_ORDER) with a lock timeout; a swap
that times out (or is picked as a deadlock victim) is rolled back and tried again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import structlog
from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import DBAPIError

from domain.errors import DomainError
from eventstore.progress import count_of
from eventstore.read import Checkpoint, read_after
from projections import term_blocks
from projections.base import Projector
from projections.runner import _LOCK, align, load_checkpoint, lock_key, save_checkpoint

log = structlog.get_logger(__name__)

Progress = Callable[[int, int], None]  # (applied so far, events to apply)
BULK_BATCHES_PER_TRANSACTION = 10
# Readers hold their tables' AccessShare locks in the order they first name them (the BM25 statement of
# recall/keyword.py: stats, terms, postings, docs; GET /v1/memories/{id}/history: memories, then
# memory_history; the vector leg's size, recall/vector.py _size_sql: the kept count, then the vectors). The swap's
# ACCESS EXCLUSIVE locks are taken in the same order, so a reader and the swap never wait for each other in a
# cycle; a table not listed comes after these, in the projector's own order.
SWAP_LOCK_ORDER = ("memories", "memory_history", "keyword_stats", "keyword_terms", "keyword_term_blocks",
                   "keyword_postings", "keyword_docs", "memory_vector_counts", "memory_vectors")
SWAP_LOCK_TIMEOUT_MS = 2000
SWAP_ATTEMPTS = 30
_RETRY_SQLSTATES = {"55P03", "40P01"}  # lock_not_available (lock_timeout), deadlock_detected

_TRY_EXCLUSIVE = text("SELECT pg_try_advisory_lock(hashtext(:key))")
_RELEASE_EXCLUSIVE = text("SELECT pg_advisory_unlock(hashtext(:key))")
_SESSION_LOCK = text("SELECT pg_advisory_lock(hashtext(:key))")
_SESSION_UNLOCK = text("SELECT pg_advisory_unlock(hashtext(:key))")


class ProjectionBusy(DomainError):
    """Another rebuild or verify of the same projection is running."""

    status_code = 409


def exclusive_key(name: str) -> str:
    return f"engramlog.rebuild.{name}"


@contextmanager
def _exclusive(engine: Engine, projector: Projector, what: str) -> Iterator[Connection]:
    """A connection holding the projection's rebuild lock (a session lock) until the block ends; every statement
    of the rebuild or verify runs on it, so the lock cannot be lost while they run."""
    key = exclusive_key(projector.name)
    with engine.connect() as conn:
        held = conn.execute(_TRY_EXCLUSIVE, {"key": key}).scalar_one()
        conn.commit()
        if not held:
            raise ProjectionBusy(f"a rebuild or verify of projection {projector.name!r} is already running; "
                                 f"{what} it again when that one has finished")
        try:
            yield conn
        finally:
            try:
                conn.rollback()
                conn.execute(_RELEASE_EXCLUSIVE, {"key": key})
                conn.commit()
            except DBAPIError:  # the connection is gone, and its session locks with it
                conn.invalidate()


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
    return count_of(conn, projector.types, until)


class _Ticker:
    """Progress reported after each commit, so a batch rolled back is never counted."""

    def __init__(self, progress: Progress | None, total: int) -> None:
        self.progress, self.total, self.done = progress, total, 0

    def add(self, n: int) -> None:
        self.done += n
        self.total = max(self.total, self.done)  # events appended during the run are applied too
        if self.progress and n:
            self.progress(self.done, self.total)


# Events the live projection moved past without applying them (projections/dead_letters.py): a replay leaves them
# out too, so the rebuilt tables are the live ones; an operator's retry or skip decides them, not a rebuild.
_NOT_APPLIED = text("""
SELECT position FROM public.projection_dead_letters
WHERE projection = :projection AND status IN ('parked', 'skipped') AND position = ANY(:positions)
""")


def _replay(conn: Connection, schema: str, projector: Projector, start: Checkpoint, batch_size: int,
            until: Checkpoint | None = None, max_batches: int | None = None) -> tuple[Checkpoint, int]:
    """Apply batches into the scratch tables in the caller's transaction; answers (checkpoint, events applied)."""
    checkpoint, applied, batches = start, 0, 0
    while max_batches is None or batches < max_batches:
        batches += 1
        _use(conn, schema)
        events = read_after(conn, checkpoint, projector.types, batch_size, until=until)
        if not events:
            break
        parked = set(conn.execute(_NOT_APPLIED, {"projection": projector.name,
                                                 "positions": [e.position for e in events]}).scalars())
        todo = [e for e in events if e.position not in parked] if parked else events
        if todo:
            projector.apply(conn, todo)
        checkpoint = Checkpoint(events[-1].tx_id, events[-1].position)
        applied += len(events)
    return checkpoint, applied


def _replay_in_short_transactions(conn: Connection, schema: str, projector: Projector, start: Checkpoint,
                                  batch_size: int, ticker: _Ticker, until: Checkpoint | None = None) -> Checkpoint:
    """The bulk of a replay: batches in short transactions, the postings' blocks packed once at the end
    (projections/term_blocks.py packed_later)."""
    checkpoint = start
    with term_blocks.packed_later(conn):
        while True:
            with conn.begin():
                checkpoint, applied = _replay(conn, schema, projector, checkpoint, batch_size, until=until,
                                              max_batches=BULK_BATCHES_PER_TRANSACTION)
            ticker.add(applied)
            if not applied:
                break
    with conn.begin():
        _use(conn, schema)
        term_blocks.repack(conn, projector.tables)
    return checkpoint


def _swap_order(projector: Projector) -> list[str]:
    listed = [t for t in SWAP_LOCK_ORDER if t in projector.tables]
    return listed + [t for t in projector.tables if t not in listed]


def _swap(conn: Connection, schema: str, projector: Projector, checkpoint: Checkpoint, batch_size: int,
          ticker: _Ticker) -> Checkpoint:
    """Under the live projector's lock: apply what arrived meanwhile, swap the tables in, save the checkpoint.
    A lock timeout or deadlock rolls the attempt back (scratch tables included) and tries again."""
    for attempt in range(1, SWAP_ATTEMPTS + 1):
        try:
            with conn.begin():
                conn.execute(_LOCK, {"key": lock_key(projector.name)})
                done, applied = _replay(conn, schema, projector, checkpoint, batch_size)
                conn.execute(text("SET LOCAL search_path TO public"))
                conn.execute(text(f"SET LOCAL lock_timeout = {SWAP_LOCK_TIMEOUT_MS}"))
                tables = ", ".join(f"public.{t}" for t in _swap_order(projector))
                conn.execute(text(f"LOCK TABLE {tables} IN ACCESS EXCLUSIVE MODE"))
                for table in projector.tables:
                    live_names = {r.shape: r.name for r in conn.execute(_INDEXES, {"table": f"public.{table}"})}
                    conn.execute(text(f"DROP TABLE public.{table}"))
                    conn.execute(text(f'ALTER TABLE "{schema}".{table} SET SCHEMA public'))
                    # LIKE ... INCLUDING ALL names the copied indexes itself: give them back the migrations' names.
                    for r in conn.execute(_INDEXES, {"table": f"public.{table}"}).all():
                        original = live_names.get(r.shape)
                        if original and original != r.name:
                            conn.execute(text(f'ALTER INDEX public."{r.name}" RENAME TO "{original}"'))
                conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
                save_checkpoint(conn, projector.name, done)
        except DBAPIError as exc:
            if getattr(exc.orig, "sqlstate", None) not in _RETRY_SQLSTATES or attempt == SWAP_ATTEMPTS:
                raise
            log.warning("projection.rebuild_swap_retry", projection=projector.name, attempt=attempt,
                        reason=type(exc.orig).__name__)
            time.sleep(min(0.05 * attempt, 1.0))
            continue
        ticker.add(applied)
        return done
    raise AssertionError("unreachable")


def rebuild(engine: Engine, projector: Projector, batch_size: int = 1000,
            progress: Progress | None = None) -> Checkpoint:
    """Replay the whole log into fresh tables and swap them in. Raises ProjectionBusy when another rebuild or
    verify of this projection is running."""
    schema = f"rebuild_{projector.name}"
    with _exclusive(engine, projector, "rebuild") as conn:
        with conn.begin():
            _create_scratch(conn, schema, projector)
            ticker = _Ticker(progress, _count(conn, projector, None))
        try:
            # Bulk phase: short transactions; the live projection keeps running meanwhile.
            checkpoint = _replay_in_short_transactions(conn, schema, projector, Checkpoint(), batch_size, ticker)
            checkpoint = _swap(conn, schema, projector, checkpoint, batch_size, ticker)
        except BaseException:
            with conn.begin():
                conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
            raise
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
    """Replay into scratch tables up to the live checkpoint and compare row for row. Changes nothing live.
    Raises ProjectionBusy when another rebuild or verify of this projection is running."""
    schema = f"verify_{projector.name}"
    live_key = lock_key(projector.name)
    with _exclusive(engine, projector, "verify") as conn:
        try:
            with conn.begin():
                _create_scratch(conn, schema, projector)
                first = load_checkpoint(conn, projector.name)
                ticker = _Ticker(progress, _count(conn, projector, first))
            # Up to where the live projection was when we started, while it keeps running.
            checkpoint = _replay_in_short_transactions(conn, schema, projector, Checkpoint(), batch_size, ticker,
                                                       until=first)
            # Pin the live tables at their checkpoint (the live projector waits; the others do not), catch up to it.
            conn.execute(_SESSION_LOCK, {"key": live_key})
            conn.commit()
            try:
                with conn.begin():
                    live = align(conn, projector)  # its partitions at one checkpoint (projections/partitions.py)
                    ticker.total = max(ticker.total, _count(conn, projector, live))
                _replay_in_short_transactions(conn, schema, projector, checkpoint, batch_size, ticker, until=live)
                with conn.begin():  # reads only: no transaction id is held while comparing
                    report = VerifyReport(projector.name, live.position,
                                          [_diff(conn, schema, t) for t in projector.tables])
            finally:
                conn.execute(_SESSION_UNLOCK, {"key": live_key})
                conn.commit()
        finally:
            with conn.begin():
                conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
    return report
