"""The `recall_hits` read model: one row per result of each recall, for analysts (analytics.hits,
docs/analytics.md). A RecallServed's results are sealed content in the log (a section's handle quotes its
heading), so SQL cannot list them; this projector reads them opened and keeps their metadata only: the domain,
the memory's id for a memory, an opaque key for any other domain's handle (its sha256), rank, score, relevance,
layer; a drill into the result (ResultDrilled naming the recall) and the feedback on it (RecallFeedbackGiven) mark
the row. Every time comes from the events, so a rebuild gives the same rows.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, text

from domain.events import RecallFeedbackGiven, RecallServed, RecordedEvent, ResultDrilled
from projections.base import OneByOne, apply_in_order, types_of

_INSERT = text("""
INSERT INTO recall_hits (tenant, recall_id, rank, domain, memory_id, item_key, score, relevance, layer,
                         recorded_at, position)
SELECT :tenant, :recall_id, h.rank, h.domain, h.memory_id, h.item_key, h.score, h.relevance, h.layer, :at, :position
FROM unnest(CAST(:ranks AS integer[]), CAST(:domains AS text[]), CAST(:memory_ids AS uuid[]),
            CAST(:keys AS text[]), CAST(:scores AS double precision[]), CAST(:relevances AS double precision[]),
            CAST(:layers AS text[])) AS h(rank, domain, memory_id, item_key, score, relevance, layer)
ON CONFLICT (tenant, recall_id, rank) DO NOTHING
""")
_DRILLED = text("""
UPDATE recall_hits SET drilled_at = :at
WHERE tenant = :tenant AND recall_id = :recall_id AND item_key = :key AND drilled_at IS NULL
""")
_VERDICT = text("""
UPDATE recall_hits SET verdict = :verdict
WHERE tenant = :tenant AND recall_id = :recall_id AND memory_id = :memory_id
""")


def item_key(domain: str, memory_id: Any, handle: dict[str, Any] | None) -> str:
    """A result's identity without its text: a memory's id, else the sha256 of its handle's canonical JSON."""
    if memory_id is not None:
        return str(memory_id)
    canonical = json.dumps({"domain": domain, "handle": handle}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def _served(conn: Connection, event: RecordedEvent, p: RecallServed) -> None:
    if not p.results:
        return
    rs = p.results
    conn.execute(_INSERT, {
        "tenant": event.tenant, "recall_id": p.recall_id, "at": event.recorded_at, "position": event.position,
        "ranks": [r.rank for r in rs], "domains": [r.domain for r in rs],
        "memory_ids": [r.memory_id for r in rs], "keys": [item_key(r.domain, r.memory_id, r.handle) for r in rs],
        "scores": [r.score for r in rs], "relevances": [r.relevance for r in rs], "layers": [r.layer for r in rs]})


def _drilled(conn: Connection, event: RecordedEvent, p: ResultDrilled) -> None:
    if p.recall_id is None:
        return
    memory_id = p.handle.get("memory_id") if p.domain == "memories" else None
    conn.execute(_DRILLED, {"tenant": event.tenant, "recall_id": p.recall_id, "at": event.recorded_at,
                            "key": item_key(p.domain, memory_id, None if memory_id else p.handle)})


def _feedback(conn: Connection, event: RecordedEvent, p: RecallFeedbackGiven) -> None:
    for item in p.items:
        conn.execute(_VERDICT, {"tenant": event.tenant, "recall_id": p.recall_id, "memory_id": item.memory_id,
                                "verdict": item.verdict})


_ONE_BY_ONE: OneByOne = {RecallServed: _served, ResultDrilled: _drilled, RecallFeedbackGiven: _feedback}


class HitsProjector:
    name = "hits"
    tables = ("recall_hits",)
    handlers = _ONE_BY_ONE
    types = types_of(handlers)

    def apply(self, conn: Connection, events: Sequence[RecordedEvent]) -> None:
        apply_in_order(conn, events, self.handlers)
