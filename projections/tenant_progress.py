"""A projection's progress as one tenant may see it: its own events only.

The global head, checkpoint position, lag and last-update time are everyone's traffic; a tenant key is told how
far its own events are applied. Operators (and the keyless single-tenant API) see the global status.
"""

from __future__ import annotations

from dataclasses import replace

from sqlalchemy import Connection

from eventstore.progress import progress
from projections.base import Projector
from projections.runner import ProjectionStatus


def for_tenant(conn: Connection, projector: Projector, status: ProjectionStatus, tenant: str) -> ProjectionStatus:
    """`status` with head, position and lag computed over the tenant's events; no global update time."""
    p = progress(conn, projector.name, projector.types, tenant)
    return replace(status, head=p.head, position=p.position, lag_events=p.lag_events, lag_seconds=p.lag_seconds,
                   updated_at=None)
