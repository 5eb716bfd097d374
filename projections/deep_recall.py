"""Deep recall's read models: `deep_recall_store` (the latest value stored per tenant, scope and key: a replay
never puts an older value over a newer one) and `blind_spots` (one row per registered knowledge gap; whether it is
live is decided when read, against expires_at, so rows never depend on the clock of the projection)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from sqlalchemy import Connection, text

from domain.events import BlindSpotRegistered, DeepRecallStored, RecordedEvent
from projections.base import OneByOne, apply_in_order, types_of

_STORE = text("""
INSERT INTO deep_recall_store (tenant, scope_key, key, value, agent_id, session_id, project, recall_id, position,
                               updated_at)
VALUES (:tenant, :scope_key, :key, CAST(:value AS jsonb), :agent_id, :session_id, :project, :recall_id, :position,
        :updated_at)
ON CONFLICT (tenant, scope_key, key) DO UPDATE SET value = EXCLUDED.value, recall_id = EXCLUDED.recall_id,
                                                   position = EXCLUDED.position, updated_at = EXCLUDED.updated_at
WHERE deep_recall_store.position < EXCLUDED.position
""")
_GAP = text("""
INSERT INTO blind_spots (tenant, gap_id, scope_key, agent_id, session_id, project, question, kind, priority,
                         registered_at, expires_at, recall_id, reason, position)
VALUES (:tenant, :gap_id, :scope_key, :agent_id, :session_id, :project, :question, :kind, :priority,
        :registered_at, :expires_at, :recall_id, :reason, :position)
ON CONFLICT (tenant, gap_id) DO NOTHING
""")


def _stored(conn: Connection, event: RecordedEvent, p: DeepRecallStored) -> None:
    conn.execute(_STORE, {"tenant": event.tenant, "scope_key": p.scope_key, "key": p.key,
                          "value": json.dumps(event.data["value"]), "agent_id": p.agent_id,
                          "session_id": p.session_id, "project": p.project, "recall_id": p.recall_id,
                          "position": event.position, "updated_at": event.recorded_at})


def _gap(conn: Connection, event: RecordedEvent, p: BlindSpotRegistered) -> None:
    conn.execute(_GAP, {"tenant": event.tenant, "gap_id": p.gap_id, "scope_key": p.scope_key,
                        "agent_id": p.agent_id, "session_id": p.session_id, "project": p.project,
                        "question": p.question, "kind": p.kind, "priority": p.priority,
                        "registered_at": p.registered_at, "expires_at": p.expires_at, "recall_id": p.recall_id,
                        "reason": p.reason, "position": event.position})


_ONE_BY_ONE: OneByOne = {DeepRecallStored: _stored, BlindSpotRegistered: _gap}


class DeepRecallProjector:
    name = "deep_recall"
    tables = ("deep_recall_store", "blind_spots")
    handlers = _ONE_BY_ONE
    types = types_of(handlers)

    def apply(self, conn: Connection, events: Sequence[RecordedEvent]) -> None:
        apply_in_order(conn, events, self.handlers)
