"""The privacy gate inside the funnel: after every stage that can bring a memory in (the legs, the graph walk),
drop each memory the tenant's privacy policy excludes, tags included, before anything is reranked or answered."""

from __future__ import annotations

from sqlalchemy import Connection, text

from domain.privacy import PrivacyPolicy
from recall.funnel.types import Item

_ATTRIBUTES = text("""
SELECT memory_id, agent_id, project, session_id, tags FROM memories WHERE tenant = :tenant AND memory_id = ANY(:ids)
""")


def drop_excluded(conn: Connection, tenant: str, ranked: list[Item], policy: PrivacyPolicy) -> tuple[list[Item], int]:
    """`ranked` without the memories `policy` excludes (and without any the read model does not know), and how
    many were dropped."""
    if policy.empty or not ranked:
        return ranked, 0
    rows = {r.memory_id: r for r in conn.execute(_ATTRIBUTES, {"tenant": tenant, "ids": [i.memory_id for i in ranked]})}
    kept = [i for i in ranked if i.memory_id in rows and not policy.excludes(
        tags=rows[i.memory_id].tags or (), agent_id=rows[i.memory_id].agent_id, project=rows[i.memory_id].project,
        session_id=rows[i.memory_id].session_id)]
    return kept, len(ranked) - len(kept)
