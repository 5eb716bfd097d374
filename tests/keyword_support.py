"""The keyword projector applied to one tenant's events alone, into scratch copies of its tables (the live ones hold
every tenant's rows and are projected by the other tests too), a rebuild's way: unqualified names, search_path."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import Connection, text

from eventstore.read import COLUMNS, row_to_event

T = TypeVar("T")


def keyword_events(engine: Any, tenant: str) -> list[Any]:
    """The tenant's events the keyword projector applies, in log order, opened."""
    from eventstore.codec import open_events
    from projections.keyword import KeywordProjector

    with engine.connect() as conn:
        rows = conn.execute(text(f"SELECT {COLUMNS} FROM events e WHERE tenant = :t AND type = ANY(:types) "
                                 "ORDER BY e.tx_id, e.position"), {"t": tenant, "types": list(KeywordProjector.types)})
        return open_events(conn, [row_to_event(r) for r in rows], keep_forgotten=True)


def projected_in_batches(engine: Any, events: list[Any], size: int, read: Callable[[Connection], T]) -> T:
    """What `read` finds in scratch copies of the keyword tables once `events` are applied `size` at a time, each
    batch in its own transaction."""
    from projections.keyword import KeywordProjector

    schema = f"kwtest_{uuid.uuid4().hex[:8]}"
    with engine.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        for table in KeywordProjector.tables:
            conn.execute(text(f'CREATE TABLE "{schema}".{table} (LIKE public.{table} INCLUDING ALL)'))
    try:
        for start in range(0, len(events), size):
            with engine.begin() as conn:
                conn.execute(text(f'SET LOCAL search_path TO "{schema}", public'))
                KeywordProjector().apply(conn, events[start:start + size])
        with engine.begin() as conn:
            conn.execute(text(f'SET LOCAL search_path TO "{schema}", public'))
            return read(conn)
    finally:
        with engine.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
