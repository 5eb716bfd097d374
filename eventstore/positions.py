"""Recorded time to log position. A read `as_of` a timestamp answers what the store held at the tenant's last
position recorded at or before it (events_tenant_recorded serves the lookup); a position stands for the state after
its whole transaction (no reader ever saw a transaction half applied: a write's MemoryRecorded and the governor's
MemoryAdmitted commit together), so it is settled to its transaction's last position of the tenant
(events_tx_position serves that)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, text

_AT = text("""
SELECT position FROM events WHERE tenant = :tenant AND recorded_at <= :at
ORDER BY recorded_at DESC, position DESC LIMIT 1
""")


_SETTLED = text("""
SELECT max(o.position) FROM events e JOIN events o ON o.tx_id = e.tx_id AND o.tenant = e.tenant
WHERE e.position = :position AND e.tenant = :tenant
""")


def settled(conn: Connection, tenant: str, position: int) -> int:
    """`position` moved to the last of the tenant's events its transaction appended (itself when it is not one of
    the tenant's events)."""
    return conn.execute(_SETTLED, {"tenant": tenant, "position": position}).scalar_one_or_none() or position


def position_at(conn: Connection, tenant: str, at: datetime) -> int:
    """The tenant's last position recorded at or before `at`, settled; 0 when it had recorded nothing by then."""
    found = conn.execute(_AT, {"tenant": tenant, "at": at}).scalar_one_or_none()
    return 0 if found is None else settled(conn, tenant, found)


_RECORDED_AT = text("""
SELECT recorded_at FROM events WHERE tenant = :tenant AND position <= :position ORDER BY position DESC LIMIT 1
""")


def recorded_at(conn: Connection, tenant: str, position: int) -> datetime | None:
    """The recorded time of `position` for `tenant`: that of its last event at or before it (events_tenant_position);
    None when it had recorded nothing by then."""
    found: datetime | None = conn.execute(_RECORDED_AT, {"tenant": tenant, "position": position}).scalar_one_or_none()
    return found
