"""infra/db.read_only: recall's reads run in a read-only transaction opened with one BEGIN (no SET round trip) that
sees one snapshot, and the pooled connection is writable and READ COMMITTED again for the next caller."""

from __future__ import annotations

import pytest
from sqlalchemy import event, text
from sqlalchemy.exc import InternalError


def test_a_read_only_connection_refuses_writes_and_leaves_the_pool_writable(engine) -> None:
    from infra.db import read_only

    statements: list[str] = []

    def capture(conn, cursor, statement, params, context, many) -> None:
        statements.append(statement)

    event.listen(engine, "before_cursor_execute", capture)
    try:
        with read_only(engine) as conn:
            assert conn.execute(text("SHOW transaction_read_only")).scalar_one() == "on"
        assert statements == ["SHOW transaction_read_only"]  # no SET TRANSACTION statement
        with pytest.raises(InternalError, match="read-only transaction"), read_only(engine) as conn:
            conn.execute(text("CREATE TEMP TABLE read_only_probe (x int)"))
    finally:
        event.remove(engine, "before_cursor_execute", capture)
    with engine.connect() as conn:
        assert conn.execute(text("SHOW transaction_read_only")).scalar_one() == "off"
        assert conn.execute(text("SHOW transaction_isolation")).scalar_one() == "read committed"


def test_a_read_only_transaction_sees_one_snapshot(engine) -> None:
    """What commits between two of its statements is seen by neither: a recall's stages read one state."""
    from infra.db import read_only, transaction

    with transaction(engine) as conn:
        conn.execute(text("CREATE TABLE IF NOT EXISTS snapshot_probe (x int)"))
        conn.execute(text("TRUNCATE snapshot_probe"))
    try:
        with read_only(engine) as conn:
            assert conn.execute(text("SELECT count(*) FROM snapshot_probe")).scalar_one() == 0
            with transaction(engine) as other:
                other.execute(text("INSERT INTO snapshot_probe VALUES (1)"))
            assert conn.execute(text("SELECT count(*) FROM snapshot_probe")).scalar_one() == 0
        with read_only(engine) as conn:
            assert conn.execute(text("SELECT count(*) FROM snapshot_probe")).scalar_one() == 1
    finally:
        with transaction(engine) as conn:
            conn.execute(text("DROP TABLE snapshot_probe"))
