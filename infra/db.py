"""The one database access layer: a SQLAlchemy engine over psycopg 3, used with plain SQL."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

from psycopg import ClientCursor
from psycopg.rows import namedtuple_row
from psycopg.types.numeric import FloatDumper
from sqlalchemy import Connection, Dialect, Engine, create_engine, text

from infra.settings import get_settings


def normalise_url(url: str) -> str:
    """Accept postgres:// and postgresql:// URLs and pin the psycopg 3 driver."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url


@lru_cache(maxsize=4)
def engine_for(url: str, pool_size: int = 10, statement_timeout_s: float | None = None) -> Engine:
    """A pooled engine. Every connection it opens bounds each statement by `statement_timeout_s` (the setting
    when None; 0: no bound), so one runaway statement cannot hold a connection, its locks and its caller."""
    if not url:
        raise RuntimeError("no database: set DATABASE_URL or start the stack with `engramlog up`")
    timeout = get_settings().stack.statement_timeout_s if statement_timeout_s is None else statement_timeout_s
    options = f"-c statement_timeout={max(0, round(timeout * 1000))}"
    return create_engine(normalise_url(url), pool_size=pool_size, max_overflow=20, pool_pre_ping=True,
                         future=True, connect_args={"options": options})


def get_engine() -> Engine:
    return engine_for(get_settings().stack.database_url)


def ping(engine: Engine) -> None:
    """Raise when the database cannot answer (the health check)."""
    with engine.connect() as conn:
        conn.execute(text("SELECT 1"))


@lru_cache(maxsize=256)
def _driver_sql(statement: str, dialect: Dialect) -> str:
    return str(text(statement).compile(dialect=dialect))


def unprepared(conn: Connection, statement: str, params: dict[str, Any]) -> list[Any]:
    """The rows of `statement` with its values bound in the text (psycopg's client-side binding, quoted by libpq), so
    PostgreSQL always plans it for them: for a statement whose best plan depends on its values (the keyword leg's:
    its terms' postings, a status as rare as `staging`). Any other statement is prepared by psycopg on its fifth run,
    and PostgreSQL may then keep one generic plan for all values: for the keyword leg's staging pass at 100k memories
    such a plan ran 16-21 ms against 1-2 ms. Rows are read by attribute, as SQLAlchemy's are."""
    driver = conn.connection.driver_connection
    with ClientCursor(driver, row_factory=namedtuple_row) as cursor:  # type: ignore[arg-type]
        cursor.adapters.register_dumper(float, _Float8Literal)
        return cursor.execute(_driver_sql(statement, conn.dialect), params, prepare=False).fetchall()


def binary_rows(conn: Connection, statement: str, params: dict[str, Any]) -> list[Any]:
    """The rows of `statement` in PostgreSQL's binary format, read by attribute: a bytea comes as its bytes, where
    the text format sends it as hex, twice the size, to decode (packed postings at 1M memories, 3 MB a question:
    read in 5.0 ms against 12.3, docs/recall.md)."""
    driver = conn.connection.driver_connection
    with driver.cursor(binary=True, row_factory=namedtuple_row) as cursor:  # type: ignore[union-attr]
        return cursor.execute(_driver_sql(statement, conn.dialect), params).fetchall()


class _Float8Literal(FloatDumper):
    """A float bound in the text as the float8 a parameter is: a bare 1.2 is a numeric to PostgreSQL, and the
    arithmetic around it would be numeric too (slower, other roundings)."""

    def quote(self, obj: Any) -> bytes:
        quoted = bytes(super().quote(obj))
        return quoted if quoted.endswith(b"::float8") else b"'" + quoted.strip() + b"'::float8"


@contextmanager
def transaction(engine: Engine | None = None) -> Iterator[Connection]:
    with (engine or get_engine()).begin() as conn:
        yield conn


@contextmanager
def reading(engine: Engine) -> Iterator[Connection]:
    """A connection in autocommit, for reads that need no common snapshot (each statement sees what is committed
    when it runs). No transaction is opened, so none is rolled back: psycopg forgets every statement it has
    prepared on a ROLLBACK, and a plain `engine.connect()` that only read ends in one when it is returned."""
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        yield conn


@contextmanager
def read_only(engine: Engine) -> Iterator[Connection]:
    """A connection in a read-only transaction that sees one snapshot, for reads that must agree with each other
    and write nothing, such as a recall: its legs, rows and edges as of one moment, whatever a projector commits
    meanwhile (READ COMMITTED would give each statement its own). psycopg opens it with BEGIN ISOLATION LEVEL
    REPEATABLE READ READ ONLY: no extra round trip, and a read-only transaction never fails to serialize."""
    with engine.connect().execution_options(postgresql_readonly=True, isolation_level="REPEATABLE READ") as conn, \
            conn.begin():
        yield conn


__all__ = ["Connection", "Engine", "binary_rows", "engine_for", "get_engine", "normalise_url", "ping", "read_only",
           "reading", "text", "transaction", "unprepared"]
