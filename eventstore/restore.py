"""The log reads a restore (services/import_log.py) makes of its target store: whether a tenant holds any event,
and which of an export's event ids the store already holds (event ids are unique across tenants)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import Connection, text

_HELD = text("SELECT event_id, tenant FROM events WHERE event_id = ANY(CAST(:ids AS uuid[]))")
_ANY = text("SELECT 1 FROM events WHERE tenant = :tenant LIMIT 1")


def tenant_has_events(conn: Connection, tenant: str) -> bool:
    return conn.execute(_ANY, {"tenant": tenant}).first() is not None


def held_event_ids(conn: Connection, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, str]:
    """Of `ids`, those the log holds, each with its tenant."""
    return {r.event_id: r.tenant for r in conn.execute(_HELD, {"ids": list(ids)})}
