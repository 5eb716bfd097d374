"""The log's events as appended, for tests: content fields are sealed in the stored payload (eventstore/codec.py),
so a test that looks for what was written reads it through the eventstore, never by `data->>'content'`."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from typing import Any

from sqlalchemy import Connection, Engine, text

from domain.events import RecordedEvent
from eventstore.read import event_at


@contextlib.contextmanager
def empty_store(engine: Engine, prefix: str = "import") -> Iterator[Engine]:
    """A second database on `engine`'s server, empty and migrated to head, as a store to restore a log into
    (`engramlog import log`); dropped when the block ends."""
    from infra.db import engine_for
    from migrations.runner import upgrade_to_head

    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = engine.url.set(database=name).render_as_string(hide_password=False)
    try:
        upgrade_to_head(url)
        target = engine_for(url)
        try:
            yield target
        finally:
            target.dispose()
    finally:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))


def opened_events(conn: Connection, where: str, params: dict[str, Any] | None = None) -> list[RecordedEvent]:
    """The events matching `where` (plain SQL over events' unsealed columns), opened, in log order."""
    positions = conn.execute(text(f"SELECT position FROM events WHERE {where} ORDER BY position"),
                             params or {}).scalars().all()
    return [e for p in positions if (e := event_at(conn, p)) is not None]
