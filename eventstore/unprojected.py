"""The governor's window on the log: the newest memories of a scope recorded and admitted but not yet applied by
the memories and vectors projections (services/neighbours.py compares them with a write), and the floor below
which every event is applied.

It reads the projections' checkpoints and asks the two read models only whether a memory is there yet: the log
is ahead of them, and this is how far.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, text

from domain.events import MemoryAdmitted, MemoryRecorded, MemoryStatusChanged, MemorySuperseded
from eventstore.codec import KeyRing

# Memories of one scope recorded and admitted but not yet in both read models the nearest search uses, with
# their status from their own stream (a status change or a supersede the projector has not applied yet counts).
_UNPROJECTED = text("""
WITH recent AS MATERIALIZED (
    SELECT position, stream_id, data FROM events
    WHERE tenant = :tenant AND type = :recorded AND position > :floor
    ORDER BY position DESC LIMIT :limit
), pending AS MATERIALIZED (
    SELECT r.position, r.stream_id, CAST(r.data->>'memory_id' AS uuid) AS memory_id, r.data
    FROM recent r
    WHERE r.data->>'agent_id' IS NOT DISTINCT FROM CAST(:agent_id AS text)
      AND r.data->>'project' IS NOT DISTINCT FROM CAST(:project AS text)
      AND NOT (EXISTS (SELECT 1 FROM memories m WHERE m.tenant = :tenant
                         AND m.memory_id = CAST(r.data->>'memory_id' AS uuid) AND m.status <> 'pending')
               AND EXISTS (SELECT 1 FROM memory_vectors v WHERE v.tenant = :tenant AND v.model = :model
                             AND v.memory_id = CAST(r.data->>'memory_id' AS uuid)))
)
-- The memory's own stream, read once through its (tenant, stream_id, version) key: a type predicate here would
-- let the planner walk every event of that type in the tenant instead.
SELECT p.memory_id, p.stream_id, p.data,
       coalesce(s.changed, CASE s.disposition WHEN 'discard' THEN 'discarded' ELSE s.disposition END) AS status
FROM pending p
CROSS JOIN LATERAL (
    SELECT (array_agg(x.data->>'to_status' ORDER BY x.stream_version DESC)
                FILTER (WHERE x.type = :status_changed))[1] AS changed,
           (array_agg(x.data->>'disposition') FILTER (WHERE x.type = :admitted))[1] AS disposition,
           bool_or(x.type = :superseded) AS superseded
    FROM events x WHERE x.tenant = :tenant AND x.stream_id = p.stream_id
) s
WHERE coalesce(s.changed, CASE s.disposition WHEN 'discard' THEN 'discarded' ELSE s.disposition END)
      = ANY(:recallable) AND NOT s.superseded
ORDER BY p.position DESC
""")
# Whether the tenant has more recorded events above the floor than the window the governor looks through.
_BEYOND_WINDOW = text("""
SELECT count(*) > :limit FROM (SELECT 1 FROM events WHERE tenant = :tenant AND type = :recorded
                                 AND position > :floor LIMIT :limit + 1) w
""")
# Below every event the slower of the two projections has not applied. Projectors advance in (tx_id, position)
# order, so an event whose transaction committed late can sit below the checkpoint's position unapplied: the
# floor is the lowest position among the first events after each checkpoint in that order (a late commit is
# among them: its transaction id is older than any applied after it), and never above the checkpoint itself.
_FLOOR = text("""
SELECT greatest(0, coalesce(min(least(c.position, (
    SELECT min(ahead.position) FROM (
        SELECT e.position FROM events e WHERE (e.tx_id, e.position) > (c.tx_id, c.position)
        ORDER BY e.tx_id, e.position LIMIT :look_ahead) ahead))), 0) - 1)
FROM projection_checkpoints c WHERE c.name IN ('memories', 'vectors')
""")
FLOOR_LOOK_AHEAD = 10_000

_TYPES = {"recorded": MemoryRecorded.type_name(), "admitted": MemoryAdmitted.type_name(),
          "status_changed": MemoryStatusChanged.type_name(), "superseded": MemorySuperseded.type_name()}


@dataclass(frozen=True)
class Pending:
    memory_id: object
    content: str
    status: str


def floor(conn: Connection) -> int:
    """A position below every event the slower of the memories and vectors projections has not applied."""
    return conn.execute(_FLOOR, {"look_ahead": FLOOR_LOOK_AHEAD}).scalar_one()


def unprojected_memories(conn: Connection, tenant: str, agent_id: str | None, project: str | None, model: str,
                         above: int, limit: int, statuses: tuple[str, ...]) -> list[Pending]:
    """The scope's memories among the tenant's newest `limit` recordings above `above` that the two read models
    do not both hold yet, with their status (one of `statuses`) as their own stream says, newest first."""
    rows = conn.execute(_UNPROJECTED, {"tenant": tenant, "floor": above, "limit": limit, "agent_id": agent_id,
                                       "project": project, "model": model, "recallable": list(statuses),
                                       **_TYPES}).all()
    ring = KeyRing(conn)  # the content is sealed (eventstore/codec.py); a forgotten memory is no neighbour
    ring.load(r.data for r in rows)
    opened = [(r, ring.open(tenant, r.stream_id, _TYPES["recorded"], r.data)) for r in rows]
    return [Pending(r.memory_id, data["content"], r.status) for r, data in opened if data is not None]


def beyond_window(conn: Connection, tenant: str, above: int, limit: int) -> bool:
    """Whether the tenant has more recordings above `above` than the window of `limit` looks through."""
    return bool(conn.execute(_BEYOND_WINDOW, {"tenant": tenant, "floor": above, "limit": limit, **_TYPES}).scalar_one())


__all__ = ["FLOOR_LOOK_AHEAD", "Pending", "beyond_window", "floor", "unprojected_memories"]
