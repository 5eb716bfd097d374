"""What the `blind_spots` read model says: the knowledge gaps deep recall registered (BlindSpotRegistered) that are
live at a given time, for one deep-recall scope (GET /v1/blind_spots) or across a tenant, or one agent of it (the
consolidation cycle's report). Read-only; highest priority first, then newest."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Engine, text

from domain.events import deep_scope_key

MAX_LISTED = 500

_OF_SCOPE = text("""
SELECT gap_id, question, kind, priority, registered_at, expires_at, recall_id, reason FROM blind_spots
WHERE tenant = :t AND scope_key = :k AND expires_at > now()
ORDER BY priority DESC, registered_at DESC, gap_id LIMIT :limit
""")
# Live at :at: registered by then and not yet expired (a consolidation run with a pinned clock sees that moment).
_LIVE_AT = """
FROM blind_spots WHERE tenant = :t AND (CAST(:agent AS text) IS NULL OR agent_id = :agent)
  AND registered_at <= :at AND expires_at > :at
"""
_COUNT_AT = text("SELECT count(*) " + _LIVE_AT)
_TOP_AT = text("SELECT gap_id, question, priority, agent_id, project, session_id, registered_at, expires_at, "
               "recall_id " + _LIVE_AT + " ORDER BY priority DESC, registered_at DESC, gap_id LIMIT :limit")


def of_scope(engine: Engine, tenant: str, agent_id: str | None, session_id: str | None,
             project: str | None) -> list[dict[str, Any]]:
    """The live blind spots of one deep-recall scope (agent, session, project) of the tenant."""
    with engine.connect() as conn:
        rows = conn.execute(_OF_SCOPE, {"t": tenant, "k": deep_scope_key(agent_id, session_id, project),
                                        "limit": MAX_LISTED}).all()
    return [dict(r._mapping) for r in rows]


def live_summary(conn: Connection, tenant: str, agent_id: str | None, at: datetime, top: int) -> dict[str, Any]:
    """The tenant's (or one agent's) blind spots live at `at`: how many, and the `top` ones by priority, as JSON."""
    params = {"t": tenant, "agent": agent_id, "at": at}
    count = conn.execute(_COUNT_AT, params).scalar_one()
    rows = conn.execute(_TOP_AT, {**params, "limit": top}).all() if count else []
    return {"live": count, "top": [
        {"gap_id": str(r.gap_id), "question": r.question, "priority": r.priority, "agent_id": r.agent_id,
         "project": r.project, "session_id": r.session_id, "registered_at": r.registered_at.isoformat(),
         "expires_at": r.expires_at.isoformat(), "recall_id": str(r.recall_id)} for r in rows]}


__all__ = ["live_summary", "of_scope"]
