"""The `memory_edges` read model: associations between memories (the recall funnel reads them: recall/edges.py).

- hebbian: RecallFeedbackGiven — every pair that passes the validation gate (both marked 'used' in the one
  feedback event, both served by that recall's RecallServed) is strengthened, log-space and capped
  (domain/hebbian.py). The weight first decays from its `updated_at` to the event's recorded time.
- causal: MemorySuperseded — an edge from the new memory to the one it supersedes (new → old), weight 1.
- any kind: EdgeAdjusted (consolidation) sets the weight at its clock; a weight of 0 or less removes the edge.

Stored weights are the weights at `updated_at`; recall/edges.py `neighbours` applies the read-time decay with the
caller's clock. Undirected kinds are stored once, lowest id first; `neighbours` answers both directions.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import Connection, text

from domain.events import (
    EdgeAdjusted,
    MemorySuperseded,
    RecallFeedbackGiven,
    RecallServed,
    RecordedEvent,
    recall_stream,
)
from domain.hebbian import CAUSAL_WEIGHT, canonical, decayed, strengthen, validated_pairs
from eventstore.stream import first_of_type
from projections.base import OneByOne, apply_in_order, types_of
from projections.feedback import counted_feedback

_GET = text("""
SELECT weight, updated_at FROM memory_edges
WHERE tenant = :tenant AND source_id = :source AND target_id = :target AND kind = :kind
""")
_SET = text("""
INSERT INTO memory_edges (tenant, source_id, target_id, kind, weight, updated_at)
VALUES (:tenant, :source, :target, :kind, :weight, :updated_at)
ON CONFLICT (tenant, source_id, target_id, kind) DO UPDATE SET weight = EXCLUDED.weight,
                                                              updated_at = EXCLUDED.updated_at
""")
_DELETE = text("""
DELETE FROM memory_edges WHERE tenant = :tenant AND source_id = :source AND target_id = :target AND kind = :kind
""")


def _hebbian(conn: Connection, event: RecordedEvent, p: RecallFeedbackGiven) -> None:
    # Feedback counts once per (recall, memory): a repeat on the recall strengthens nothing again.
    used = [i.memory_id for i in counted_feedback(conn, event, p) if i.verdict == "used"]
    if len(used) < 2:
        return
    # The recall the feedback is about, from the log itself (always committed before its feedback).
    served = first_of_type(conn, event.tenant, recall_stream(p.recall_id), RecallServed)
    if served is None or not served.data:
        return
    served_ids = [uuid.UUID(r["memory_id"]) for r in served.data.get("results", []) if r.get("memory_id")]
    for source, target in validated_pairs(used, served_ids):
        params = {"tenant": event.tenant, "source": source, "target": target, "kind": "hebbian"}
        row = conn.execute(_GET, params).first()
        at = event.recorded_at
        weight = 0.0
        if row is not None:
            at = max(at, row.updated_at)
            weight = decayed(row.weight, row.updated_at, at, "hebbian")
        conn.execute(_SET, {**params, "weight": strengthen(weight), "updated_at": at})


def _causal(conn: Connection, event: RecordedEvent, p: MemorySuperseded) -> None:
    conn.execute(_SET, {"tenant": event.tenant, "source": p.superseded_by, "target": p.memory_id,
                        "kind": "causal", "weight": CAUSAL_WEIGHT, "updated_at": event.recorded_at})


def _adjusted(conn: Connection, event: RecordedEvent, p: EdgeAdjusted) -> None:
    source, target = canonical(p.source_id, p.target_id, p.edge_kind)
    params = {"tenant": event.tenant, "source": source, "target": target, "kind": p.edge_kind}
    if p.weight <= 0:
        conn.execute(_DELETE, params)
    else:
        conn.execute(_SET, {**params, "weight": p.weight, "updated_at": p.clock})


class EdgesProjector:
    name = "edges"
    tables = ("memory_edges",)
    # Event class → how it is applied (each on its own, in log order).
    handlers: OneByOne = {RecallFeedbackGiven: _hebbian, MemorySuperseded: _causal, EdgeAdjusted: _adjusted}
    types = types_of(handlers)

    def apply(self, conn: Connection, events: Sequence[RecordedEvent]) -> None:
        apply_in_order(conn, events, self.handlers)
