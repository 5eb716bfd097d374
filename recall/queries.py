"""Plain read-model lookups for the API (the recall funnel is recall/service.py): one memory as the `memories`
read model holds it, and the supersede chain through a memory (`memory_history`). api/routes/ holds no SQL."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, text

from domain.errors import NotFound
from readmodels.memories import MEMORY_COLUMNS
from recall.timeframe import TimeFrame

_ONE = text("""
SELECT memory_id, content, kind, agent_id, project, session_id, tags, metadata, occurred_at, recorded_at,
       status, position, memory_type, salience, route, confidence, reinforced_count, supersedes, superseded_by,
       merged_into, status_changed_at
FROM memories WHERE tenant = :tenant AND memory_id = :id
""")
_KNOWN = text("SELECT 1 FROM memories WHERE tenant = :tenant AND memory_id = :id")
# Both directions from the memory, each step one memory_history row; a chain is linear (a memory is
# superseded once and a write supersedes one memory), the depth bound only guards against a corrupt table.
_CHAIN = text("""
WITH RECURSIVE older AS (
    SELECT h.*, 1 AS depth FROM memory_history h WHERE h.tenant = :tenant AND h.superseded_by = :id
    UNION ALL
    SELECT h.*, o.depth + 1 FROM memory_history h JOIN older o ON h.tenant = :tenant AND h.superseded_by = o.memory_id
    WHERE o.depth < 1000
), newer AS (
    SELECT h.*, 1 AS depth FROM memory_history h WHERE h.tenant = :tenant AND h.memory_id = :id
    UNION ALL
    SELECT h.*, n.depth + 1 FROM memory_history h JOIN newer n ON h.tenant = :tenant AND h.memory_id = n.superseded_by
    WHERE n.depth < 1000
)
SELECT memory_id, superseded_by, reason, trigger, actor, at, position FROM older
UNION
SELECT memory_id, superseded_by, reason, trigger, actor, at, position FROM newer
ORDER BY position
""")
_MEMORIES = text("""
SELECT memory_id, content, status, memory_type, recorded_at, position FROM memories
WHERE tenant = :tenant AND memory_id = ANY(:ids)
""")


def memory(conn: Connection, tenant: str, memory_id: uuid.UUID, as_of: int | None = None) -> dict[str, Any]:
    """The memory as the read model holds it, or with `as_of` (a log position) as it stood then (its version in
    memory_versions); NotFound when the tenant had none by that id (then)."""
    if as_of is None:
        row = conn.execute(_ONE, {"tenant": tenant, "id": memory_id}).first()
    else:
        frame = TimeFrame(as_of=as_of)
        row = conn.execute(text(f"SELECT {MEMORY_COLUMNS} FROM {frame.memories()} m"
                                " WHERE m.tenant = :tenant AND m.memory_id = :id"),
                           {"tenant": tenant, "id": memory_id, **frame.params()}).first()
    if row is None:
        raise NotFound(f"no memory {memory_id}" + ("" if as_of is None else f" as of position {as_of}"))
    return dict(row._mapping)


@dataclass(frozen=True)
class History:
    current: uuid.UUID  # the newest memory of the chain
    chain: list[dict[str, Any]]  # the memories, oldest → newest
    steps: list[dict[str, Any]]  # one memory_history row per supersede, in chain order


def history(conn: Connection, tenant: str, memory_id: uuid.UUID) -> History:
    """The whole supersede chain through this memory, oldest → newest; NotFound when the tenant has no such memory."""
    params = {"tenant": tenant, "id": memory_id}
    if conn.execute(_KNOWN, params).first() is None:
        raise NotFound(f"no memory {memory_id}")
    steps = conn.execute(_CHAIN, params).all()
    by_old = {s.memory_id: s for s in steps}
    newer_ids = {s.superseded_by for s in steps}
    order = [next((i for i in by_old if i not in newer_ids), memory_id)]
    while order[-1] in by_old and len(order) <= len(steps):
        order.append(by_old[order[-1]].superseded_by)
    memories = {r.memory_id: r for r in conn.execute(_MEMORIES, {"tenant": tenant, "ids": order})}
    return History(current=order[-1], chain=[dict(memories[i]._mapping) for i in order if i in memories],
                   steps=[dict(by_old[i]._mapping) for i in order[:-1]])
