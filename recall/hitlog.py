"""The hit-log on the read side: `append_hit`, the one place its events are appended (a recall's RecallServed, for one
domain or a whole fan-out; a drill's ResultDrilled; a deep recall's DeepRecallServed), each the one write of the
read it records; and what a recall's stream says afterwards (its drills and feedback), for GET /v1/recalls/{id}."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import Engine

from domain.errors import NotFound
from domain.events import (
    DeepRecallServed,
    NewEvent,
    RecallServed,
    ResultDrilled,
    drill_stream,
    recall_stream,
    validate_payload,
)
from eventstore.append import append
from eventstore.stream import read_stream
from infra.db import reading
from infra.wake import appended


def append_hit(engine: Engine, tenant: str, event: NewEvent, metadata: dict[str, Any],
               background: bool = False) -> int:
    """Append one hit-log event in a transaction of its own; answer its position. An append like any other:
    counted, the projectors woken (`background`: off the answer's path, infra/wake.py)."""
    with engine.begin() as conn:
        [position] = append(conn, tenant, [event], metadata)
    appended(1, background=background)
    return position


def append_served(engine: Engine, tenant: str, recall_id: uuid.UUID, payload: dict[str, Any],
                  metadata: dict[str, Any]) -> int:
    """Append one recall's RecallServed (validated here) as its stream's first event; answer its position."""
    served = validate_payload(RecallServed, {"recall_id": str(recall_id), **payload})
    return append_hit(engine, tenant, NewEvent(RecallServed.type_name(), recall_stream(recall_id), served,
                                               expected_version=0), metadata, background=True)


def append_drilled(engine: Engine, tenant: str, domain: str, handle: dict[str, Any], recall_id: uuid.UUID | None,
                   metadata: dict[str, Any]) -> tuple[uuid.UUID, int]:
    """Append a drill's ResultDrilled (on its recall's stream when it names one, else its own); answer the drill's
    id and the event's position."""
    drill_id = uuid.uuid4()
    event = ResultDrilled(drill_id=drill_id, domain=domain, handle=handle, recall_id=recall_id)
    stream = recall_stream(recall_id) if recall_id is not None else drill_stream(drill_id)
    return drill_id, append_hit(engine, tenant, NewEvent.of(event, stream), metadata)


def append_deep_served(engine: Engine, tenant: str, recall_id: uuid.UUID, data: dict[str, Any],
                       metadata: dict[str, Any]) -> int:
    """Append a deep recall's DeepRecallServed (`data` validated by the caller) as its stream's first event."""
    return append_hit(engine, tenant, NewEvent(DeepRecallServed.type_name(), recall_stream(recall_id), data,
                                               expected_version=0), metadata)


def _handle_key(domain: str, memory_id: Any, handle: dict[str, Any] | None) -> tuple[str, str]:
    if memory_id:
        return domain, str(memory_id)
    return domain, repr(sorted((handle or {}).items()))


def served_record(engine: Engine, tenant: str, recall_id: uuid.UUID) -> dict[str, Any]:
    """A recall's RecallServed payload and position, each result marked `drilled` when a ResultDrilled on the
    recall's stream names it (the tenant's own recall only: another's is unknown)."""
    with reading(engine) as conn:
        rows = read_stream(conn, tenant, recall_stream(recall_id))
    served = next((r for r in rows if r.is_a(RecallServed)), None)
    if served is None:
        deep = next((r for r in rows if r.is_a(DeepRecallServed)), None)
        if deep is None:
            raise NotFound(f"no recall {recall_id}")
        return _deep_record(deep)
    drilled = {_handle_key(r.data["domain"], r.data["handle"].get("memory_id"), r.data["handle"])
               for r in rows if r.is_a(ResultDrilled)}
    results = [{**r, "drilled": _handle_key(r.get("domain", "memories"), r.get("memory_id"), r.get("handle"))
                in drilled} for r in served.data.get("results", [])]
    return {"data": {**served.data, "results": results}, "position": served.position,
            "recorded_at": served.recorded_at}


def _deep_record(deep: Any) -> dict[str, Any]:
    """A deep recall in a recall's record shape: its question as the query, the quick recall's results as the
    results when they were the answer (the shortcut fired, or no model ran: the loop's audit has `models`), the
    whole DeepRecallServed (iterations, code, live calls, sub-calls, costs, answer) as explanation.deep_recall."""
    d = deep.data
    answered = d.get("shortcut_results", []) if d.get("shortcut") or not d.get("models") else []
    results = [{"rank": rank, "score": r.get("score", 0.0), "domain": r.get("domain", "memories"),
                "memory_id": r.get("memory_id"), "handle": r.get("handle"), "drilled": False}
               for rank, r in enumerate(answered, 1)]
    return {"data": {"recall_id": d["recall_id"], "query": d["question"], "k": len(results),
                     "scope": d.get("scope", {}), "results": results, "latency_ms": d.get("latency_ms"),
                     "domains": sorted({r["domain"] for r in results}),
                     "explanation": {"deep_recall": {k: v for k, v in d.items() if k != "shortcut_results"}}},
            "position": deep.position, "recorded_at": deep.recorded_at}


__all__ = ["append_deep_served", "append_drilled", "append_hit", "append_served", "served_record"]
