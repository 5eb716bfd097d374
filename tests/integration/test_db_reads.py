"""infra/db.py's two read helpers: `reading` (autocommit, so psycopg keeps what it prepared) and `unprepared`
(values bound in the text, so PostgreSQL plans the statement for them)."""

from __future__ import annotations

import os

from sqlalchemy import text

from infra.db import engine_for, reading, unprepared

PREPARED = text("SELECT count(*) FROM pg_prepared_statements")
PROBE = text("SELECT count(*) FROM events WHERE tenant = :tenant")


def test_reads_in_autocommit_keep_their_prepared_statements() -> None:
    """psycopg prepares a statement on its fifth run and forgets all it prepared on a ROLLBACK: a plain
    engine.connect() that only read ends in one when returned, so the recall's reads were never prepared."""
    engine = engine_for(os.environ["DATABASE_URL"], pool_size=1)
    for _ in range(7):
        with reading(engine) as conn:  # one pooled connection, checked out and returned each time
            conn.execute(PROBE, {"tenant": "t"}).scalar_one()
    with reading(engine) as conn:
        assert conn.execute(PREPARED).scalar_one() >= 1
        assert conn.execute(text("SELECT pg_current_xact_id_if_assigned() IS NULL")).scalar_one()


def test_a_plain_connect_forgets_them() -> None:
    """What `reading` is for: the same reads in a plain connection leave nothing prepared."""
    engine = engine_for(os.environ["DATABASE_URL"], pool_size=1)
    with reading(engine) as conn:
        conn.execute(text("DEALLOCATE ALL"))
        conn.connection.driver_connection._prepared.clear()  # type: ignore[union-attr]
    for _ in range(7):
        with engine.connect() as conn:
            conn.execute(PROBE, {"tenant": "t"}).scalar_one()
    with engine.connect() as conn:
        assert conn.execute(PREPARED).scalar_one() == 0


def test_unprepared_binds_values_in_the_text_and_is_never_prepared(engine) -> None:
    statement = ("SELECT :word AS word, :n + 1 AS next, 'x' = ANY(:letters) AS has_x, '50%' AS literal,"
                 " CAST(:n AS text)::text AS cast, pg_typeof(:k)::text AS k_type, :k AS k, :low AS low")
    with reading(engine) as conn:
        conn.execute(text("DEALLOCATE ALL"))
        for _ in range(7):
            rows = unprepared(conn, statement, {"word": "o'brien; DROP TABLE events --", "n": 41,
                                                "letters": ["a", "x"], "k": 1.2, "low": -1e-300})
        assert [(r.word, r.next, r.has_x, r.literal, r.cast, r.k_type, r.k, r.low) for r in rows] == [
            ("o'brien; DROP TABLE events --", 42, True, "50%", "41", "double precision", 1.2, -1e-300)]
        assert conn.execute(PREPARED).scalar_one() == 0
