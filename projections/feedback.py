"""Which items of a RecallFeedbackGiven count: shared by every projector that applies feedback (memories:
confidence; activity: used counts; edges: Hebbian strengthening), so all of them, and every rebuild, agree."""

from __future__ import annotations

import uuid

from sqlalchemy import Connection

from domain.events import FeedbackItem, RecallFeedbackGiven, RecordedEvent
from eventstore.stream import read_stream


def counted_feedback(conn: Connection, event: RecordedEvent, p: RecallFeedbackGiven) -> list[FeedbackItem]:
    """The items of a RecallFeedbackGiven that count: feedback counts once per (recall, memory), the first
    verdict wins. An item naming a memory judged by an earlier RecallFeedbackGiven on the recall's stream (a
    lower stream_version), or earlier in this event, is skipped. Decided from the log alone, whatever was
    applied before, so every projector that applies feedback (memories, activity, edges) and every rebuild
    decides the same; services/feedback.py refuses such repeats before they reach the log."""
    judged: set[uuid.UUID] = set()
    if event.stream_version > 1:
        # The feedback given on the recall before this event (its stream is ordered by stream_version).
        for r in read_stream(conn, event.tenant, event.stream_id, (RecallFeedbackGiven,), event.stream_version):
            judged.update(uuid.UUID(i["memory_id"]) for i in r.data.get("items", []))
    out = []
    for item in p.items:
        if item.memory_id not in judged:
            judged.add(item.memory_id)
            out.append(item)
    return out
