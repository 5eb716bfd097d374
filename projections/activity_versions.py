"""memory_activity_versions (migration 0026), kept by the activity projector: each memory's activity row (the ACT-R
and feedback inputs) with the log positions it held between, so a recall as of a position (recall/timeframe.py)
scores activation and feedback as they then stood.

The projector collects a batch's events into one upsert per memory (projections/activity.py); the versions are
still per event: each event's change to a memory is kept as its own step, and `write` replays the steps on the rows
as they stood before the batch, with the upsert's own rules (`step`), giving the row after each event. Each state
that differs from the one before is a version from the event's position; the memory's open version is closed
there. A merge's fold (applied on its own) is snapshot from the table after it (`snapshot`). Per event in the
log's read order (tx_id, position), so a rebuild gives the same rows whatever the batches (verify compares them).
Two recalls that touch one memory and commit out of position order make a version whose valid_to is below its
valid_from: rare, and the same in every rebuild.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, text

STATE = ("access_count", "last_access_at", "used_count", "not_useful_count", "status_ref_count",
         "last_reactivated_at")
_COLUMNS = ", ".join(STATE)
_ROWS = text(f"""
SELECT memory_id, {_COLUMNS} FROM memory_activity WHERE tenant = :tenant AND memory_id = ANY(:ids)
""")
_CLOSE = text("""
UPDATE memory_activity_versions v SET valid_to = t.position
FROM unnest(CAST(:ids AS uuid[]), CAST(:positions AS bigint[])) AS t(memory_id, position)
WHERE v.tenant = :tenant AND v.memory_id = t.memory_id AND v.valid_to IS NULL
""")
_INSERT = text(f"""
INSERT INTO memory_activity_versions (tenant, memory_id, valid_from, valid_to, {_COLUMNS})
SELECT :tenant, * FROM unnest(CAST(:ids AS uuid[]), CAST(:froms AS bigint[]), CAST(:tos AS bigint[]),
                             CAST(:access AS integer[]), CAST(:last_access AS timestamptz[]),
                             CAST(:used AS integer[]), CAST(:not_useful AS integer[]),
                             CAST(:status_ref AS integer[]), CAST(:reactivated AS timestamptz[]))
""")
_CHANGED = " OR ".join(f"v.{c} IS DISTINCT FROM a.{c}" for c in STATE)
_SNAPSHOT = text(f"""
WITH changed AS (
    SELECT a.* FROM memory_activity a
    LEFT JOIN memory_activity_versions v ON v.tenant = a.tenant AND v.memory_id = a.memory_id AND v.valid_to IS NULL
    WHERE a.tenant = :tenant AND a.memory_id = :id AND (v.memory_id IS NULL OR {_CHANGED})
), closed AS (
    UPDATE memory_activity_versions v SET valid_to = :position FROM changed c
    WHERE v.tenant = c.tenant AND v.memory_id = c.memory_id AND v.valid_to IS NULL
)
INSERT INTO memory_activity_versions (tenant, memory_id, valid_from, {_COLUMNS})
SELECT tenant, memory_id, :position, {_COLUMNS} FROM changed
""")

State = tuple[int, datetime | None, int, int, int | None, datetime | None]


def _later(a: datetime | None, b: datetime | None) -> datetime | None:
    return b if a is None else a if b is None else max(a, b)


def step(state: State | None, d: dict[str, Any]) -> State:
    """The row after one event's change `d` (the run's row shape), as projections/activity.py's upsert writes it."""
    if state is None:
        return (d["access"], d["last_access_at"], d["used"], d["not_useful"], d["status_ref_count"],
                d["reactivated_at"])
    access, last, used, not_useful, ref, reactivated = state
    return (access + d["access"], _later(last, d["last_access_at"]), used + d["used"], not_useful + d["not_useful"],
            d["status_ref_count"] if d["has_status_ref"] else ref, _later(reactivated, d["reactivated_at"]))


def write(conn: Connection, steps: Sequence[tuple[str, uuid.UUID, int, dict[str, Any]]]) -> None:
    """Version each (tenant, memory, position, change) in order, before the batch's upsert writes the rows."""
    by_tenant: dict[str, list[tuple[uuid.UUID, int, dict[str, Any]]]] = {}
    for tenant, memory_id, position, d in steps:
        by_tenant.setdefault(tenant, []).append((memory_id, position, d))
    for tenant in sorted(by_tenant):
        tenant_steps = by_tenant[tenant]
        ids = sorted({m for m, _, _ in tenant_steps}, key=str)
        state: dict[uuid.UUID, State | None] = {m: None for m in ids}
        for r in conn.execute(_ROWS, {"tenant": tenant, "ids": ids}):
            state[r.memory_id] = tuple(getattr(r, c) for c in STATE)
        versions: dict[uuid.UUID, list[tuple[int, State]]] = {}
        # In the order the events were applied, the log's read order (tx_id, position) that live batches and a
        # rebuild share: sorting a batch by position alone put a late-committing position first in a rebuild's one
        # batch but second across two live batches, and the versions differed (verify, CI).
        for memory_id, position, d in tenant_steps:
            before = state[memory_id]
            after = step(before, d)
            state[memory_id] = after
            if after != before:
                versions.setdefault(memory_id, []).append((position, after))
        _store(conn, tenant, versions)


def _store(conn: Connection, tenant: str, versions: dict[uuid.UUID, list[tuple[int, State]]]) -> None:
    if not versions:
        return
    ids = sorted(versions, key=str)
    conn.execute(_CLOSE, {"tenant": tenant, "ids": ids, "positions": [versions[m][0][0] for m in ids]})
    rows = [(m, frm, nxt[0] if nxt else None, *s)
            for m in ids for (frm, s), nxt in zip(versions[m], [*versions[m][1:], None], strict=True)]
    cols = list(zip(*rows, strict=True))
    conn.execute(_INSERT, {"tenant": tenant, "ids": list(cols[0]), "froms": list(cols[1]), "tos": list(cols[2]),
                           "access": list(cols[3]), "last_access": list(cols[4]), "used": list(cols[5]),
                           "not_useful": list(cols[6]), "status_ref": list(cols[7]),
                           "reactivated": list(cols[8])})


def snapshot(conn: Connection, tenant: str, memory_id: uuid.UUID, position: int) -> None:
    """A version from `position` of the memory's activity row, when it differs from its open version."""
    conn.execute(_SNAPSHOT, {"tenant": tenant, "id": memory_id, "position": position})
