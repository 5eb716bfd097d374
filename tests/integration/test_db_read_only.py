"""infra/db.read_only: recall's reads run in a read-only transaction opened with BEGIN READ ONLY (no SET round
trip), and the pooled connection is writable again for the next caller."""

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
