"""A projection's progress as one tenant may see it: its own events only.

The global head, checkpoint position, lag and last-update time are everyone's traffic; a tenant key is told how
far its own events are applied. Operators (and the keyless single-tenant API) see the global status.
"""

from __future__ import annotations

from dataclasses import replace

from sqlalchemy import Connection, text

from projections.base import Projector
from projections.runner import ProjectionStatus

_TENANT_PROGRESS = text("""
WITH c AS (
  SELECT coalesce(p.tx_id, '0'::xid8) AS tx_id, coalesce(p.position, 0) AS position
  FROM (SELECT 1) AS one LEFT JOIN projection_checkpoints p ON p.name = :name)
SELECT (SELECT coalesce(max(position), 0) FROM events WHERE tenant = :tenant) AS head,
       (SELECT coalesce(max(e.position), 0) FROM events e
         WHERE e.tenant = :tenant AND (e.tx_id, e.position) <= (c.tx_id, c.position)) AS position,
       (SELECT count(*) FROM events e
         WHERE e.tenant = :tenant AND e.type = ANY(:types)
           AND (e.tx_id, e.position) > (c.tx_id, c.position)) AS lag_events,
       (SELECT extract(epoch FROM clock_timestamp() - min(e.recorded_at)) FROM events e
         WHERE e.tenant = :tenant AND e.type = ANY(:types)
           AND (e.tx_id, e.position) > (c.tx_id, c.position)) AS lag_seconds
FROM c
""")


def for_tenant(conn: Connection, projector: Projector, status: ProjectionStatus, tenant: str) -> ProjectionStatus:
    """`status` with head, position and lag computed over the tenant's events; no global update time."""
    row = conn.execute(_TENANT_PROGRESS, {"name": projector.name, "tenant": tenant,
                                          "types": list(projector.types)}).one()
    return replace(status, head=row.head, position=row.position, lag_events=row.lag_events,
                   lag_seconds=float(row.lag_seconds or 0.0), updated_at=None)
