"""Recall feedback: a client says which memories of one of its recalls it used, or found not useful."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Engine

from domain.errors import ConcurrencyConflict, FeedbackAlreadyGiven, InvalidPayload, NotFound
from domain.events import (
    SYSTEM_ACTOR,
    MemoriesMerged,
    MemoryStatusChanged,
    NewEvent,
    RecallFeedbackGiven,
    RecallServed,
    memory_stream,
    recall_stream,
    validate_payload,
)
from domain.memory_status import status_from_stream
from eventstore.append import append
from eventstore.stream import any_lists, read_stream
from infra.wake import appended

# The recall's stream: its RecallServed, then the feedback given on it, in stream order.
APPEND_ATTEMPTS = 5


def promotions(conn: Connection, tenant: str, cause: NewEvent, recall_id: uuid.UUID, used: Sequence[str],
               metadata: dict[str, Any]) -> list[NewEvent]:
    """Staging memories a client used after a recall returned them become active: one MemoryStatusChanged each,
    by the system actor, with the clock and the recall it followed (expected on the memory's stream head, so a
    concurrent status change makes the feedback check again)."""
    clock = datetime.now(UTC)
    events = []
    for memory_id in used:
        stream = read_stream(conn, tenant, memory_stream(uuid.UUID(memory_id)))
        if status_from_stream(stream, memory_id) != "staging":
            continue
        if any_lists(conn, tenant, MemoriesMerged, "merged_ids", memory_id):  # merged away: not promoted
            continue
        promoted = MemoryStatusChanged(
            memory_id=uuid.UUID(memory_id), from_status="staging", to_status="active",
            reason=f"promoted: used after recall {recall_id}", clock=clock,
            inputs={"recall_id": str(recall_id), "verdict": "used"})
        events.append(NewEvent.of(promoted, memory_stream(uuid.UUID(memory_id)),
                                  expected_version=stream[-1].stream_version,
                                  metadata={"actor": SYSTEM_ACTOR, "correlation_id": metadata.get("correlation_id"),
                                            "causation_id": str(cause.event_id), "source": metadata.get("source"),
                                            "requested_by": metadata.get("actor")}))
    return events


def give_feedback(engine: Engine, tenant: str, recall_id: uuid.UUID, items: Sequence[dict[str, Any]],
                  metadata: dict[str, Any]) -> int:
    """Validate against the recall's own stream, then append RecallFeedbackGiven on it. Answers a position.

    404 when the recall is not this tenant's; 422 when a memory was not among its results or is named twice.

    Feedback counts once per (recall, memory): the first verdict given for a memory of a recall is the one
    applied (confidence, used counts, Hebbian edges), and it is final.
    - Naming a memory already judged with the SAME verdict is a retry: that item is already counted, and is
      not appended again. When every item is such a retry nothing is written and the answer is the position
      of the feedback that counted them (so a client retrying after a lost response gets its answer).
    - Naming a memory already judged with ANOTHER verdict is refused with 409 (FeedbackAlreadyGiven), and
      nothing of the request is written: changing one's mind would re-apply confidence and edge changes that
      cannot be undone exactly. A new recall of the same query can be judged afresh.
    The check and the append are one step: the append expects the recall stream's version it checked, and a
    concurrent feedback makes it check again. The projectors apply the same rule from the log (earlier
    RecallFeedbackGiven events on the stream win), so a log holding a repeat still counts it once on rebuild.
    """
    data = validate_payload(RecallFeedbackGiven, {"recall_id": str(recall_id), "items": list(items)})
    named = [item["memory_id"] for item in data["items"]]
    twice = sorted({i for i in named if named.count(i) > 1})
    if twice:
        raise InvalidPayload(f"items name these memories more than once: {', '.join(twice)}")
    stream = recall_stream(recall_id)
    for attempt in range(APPEND_ATTEMPTS):
        with engine.connect() as conn:
            rows = read_stream(conn, tenant, stream)
        served = next((r.data for r in rows if r.type == RecallServed.type_name()), None)
        if served is None:
            raise NotFound(f"no recall {recall_id}")
        returned = {r["memory_id"] for r in served.get("results", []) if r.get("memory_id")}
        foreign = [i for i in named if i not in returned]
        if foreign:
            raise InvalidPayload(f"recall {recall_id} did not return these memories: {', '.join(foreign)}")
        judged: dict[str, tuple[str, int]] = {}  # memory id → (the verdict that counts, its event's position)
        for r in rows:
            if r.type == RecallFeedbackGiven.type_name():
                for item in r.data["items"]:
                    judged.setdefault(item["memory_id"], (item["verdict"], r.position))
        changed = [f"{i['memory_id']} (was {judged[i['memory_id']][0]})" for i in data["items"]
                   if i["memory_id"] in judged and judged[i["memory_id"]][0] != i["verdict"]]
        if changed:
            raise FeedbackAlreadyGiven(f"recall {recall_id}: feedback on these memories was already given, and it "
                                       f"counts once per recall and memory: {', '.join(changed)}")
        fresh = [i for i in data["items"] if i["memory_id"] not in judged]
        if not fresh:
            return max(judged[i][1] for i in named)
        event = NewEvent(RecallFeedbackGiven.type_name(), stream, {**data, "items": fresh},
                         expected_version=max(r.stream_version for r in rows))
        try:
            with engine.begin() as conn:
                promoted = promotions(conn, tenant, event, recall_id,
                                      [i["memory_id"] for i in fresh if i["verdict"] == "used"], metadata)
                positions = append(conn, tenant, [event, *promoted], metadata)
        except ConcurrencyConflict:
            if attempt == APPEND_ATTEMPTS - 1:
                raise
            continue  # another feedback on this recall landed first: check against it
        appended(len(positions))
        return positions[0]
    raise ConcurrencyConflict(f"recall {recall_id}: too many concurrent feedbacks; retry")  # not reached
