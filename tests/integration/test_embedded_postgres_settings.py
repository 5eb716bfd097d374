"""The embedded PostgreSQL's own settings (stack/postgres.py), read back from the server this test session runs."""

from __future__ import annotations

import os

import pytest
from sqlalchemy import text


def test_autovacuum_looks_every_ten_seconds(engine) -> None:
    """A bulk load's read models are vacuumed and analyzed within seconds, not a minute: until then the postings'
    index-only scans fetch every heap row and the planner has no statistics (recall/multi right after a load:
    served p50 139-161 ms at a 60 s naptime, 59 ms at 10 s; docs/recall.md)."""
    if "host=/" not in os.environ.get("DATABASE_URL", ""):
        pytest.skip("DATABASE_URL is not the embedded server")
    with engine.connect() as conn:
        assert conn.execute(text("SHOW autovacuum_naptime")).scalar_one() == "10s"
        assert conn.execute(text("SHOW autovacuum")).scalar_one() == "on"
