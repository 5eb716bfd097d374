"""Each endpoint as a Call: method, path, body, how to read the answer, what it wrote, and whether it may be sent
again. The sync and async clients send the same Calls (sync.py, aio.py), so both speak the API identically. A
write's idempotency key is chosen here, when its Call is made: before its first attempt, the same for every retry.
Memories, supersede and events here; the recall domains' own endpoints (knowledge, transcripts, code, sessions)
and deep recall in _calls_domains.py."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, Literal, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel

from engramlog_client.models.events import EventIn, EventsIn, EventsPage, Positions
from engramlog_client.models.memories import (
    History,
    Memory,
    MemoryIn,
    Remembered,
    RememberedMany,
    Superseded,
    SupersedeIn,
)
from engramlog_client.models.operations import (
    DeadLetterResolved,
    DeadLetters,
    Health,
    IngestDeadLetterResolved,
    IngestDeadLetters,
    Projections,
    Rebuilt,
)
from engramlog_client.models.policy import PrivacyPolicy, PrivacyPolicyIn
from engramlog_client.models.recall import (
    FeedbackGiven,
    FeedbackIn,
    MultiRecalled,
    MultiRecallIn,
    PositionState,
    Recalled,
    RecallIn,
    RecallRecord,
)

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


@dataclass
class Call(Generic[T]):
    method: str
    path: str
    parse: Callable[[httpx.Response], T]
    json: dict[str, Any] | None = None
    params: dict[str, Any] | None = None
    content: str | bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    wrote: Callable[[T], Iterable[int | None]] | None = None  # the log positions this call's answer says it wrote
    reads_own_writes: bool = False  # a read: send the client's last written position as min_position
    retried: bool = True
    # False: the server has no idempotency for this write, so it is retried only when it cannot have landed (the
    # connection was never made, or a 503: refused before anything was written).
    idempotent: bool = True
    ok_statuses: frozenset[int] = frozenset()  # non-2xx statuses answered as data (/healthz's 503)


def model(kind: type[M]) -> Callable[[httpx.Response], M]:
    return lambda response: kind.model_validate(response.json())


def new_key() -> str:
    """An idempotency key for one write, chosen before its first attempt: every retry sends the same."""
    return f"sdk-{uuid.uuid4().hex}"


def query_params(**values: Any) -> dict[str, Any]:
    out = {}
    for k, v in values.items():
        if v is None:
            continue
        out[k] = v.isoformat() if isinstance(v, datetime) else str(v) if isinstance(v, uuid.UUID) else v
    return out


def segment(value: uuid.UUID | str) -> str:
    return quote(str(value), safe="")


def _keyed(memory: MemoryIn) -> MemoryIn:
    if memory.idempotency_key is not None:
        return memory
    return memory.model_copy(update={"idempotency_key": new_key()})


# ------------------------------------------------------------------------------------------------ memories


def remember(memory: MemoryIn) -> Call[Remembered]:
    return Call("POST", "/v1/memories", model(Remembered), json=_keyed(memory).body(),
                wrote=lambda out: [out.position])


def remember_many(memories: Sequence[MemoryIn | Mapping[str, Any]]) -> Call[RememberedMany]:
    items = [_keyed(m if isinstance(m, MemoryIn) else MemoryIn.model_validate(m)) for m in memories]
    return Call("POST", "/v1/memories/batch", model(RememberedMany), json={"memories": [m.body() for m in items]},
                wrote=lambda out: [m.position for m in out.memories])


def memory(memory_id: uuid.UUID | str, as_of: int | datetime | None = None) -> Call[Memory]:
    return Call("GET", f"/v1/memories/{segment(memory_id)}", model(Memory), params=query_params(as_of=as_of),
                reads_own_writes=True)


def supersede(memory_id: uuid.UUID | str, body: SupersedeIn) -> Call[Superseded]:
    if body.idempotency_key is None:
        body = body.model_copy(update={"idempotency_key": new_key()})
    return Call("POST", f"/v1/memories/{segment(memory_id)}/supersede", model(Superseded), json=body.body(),
                wrote=lambda out: [out.position])


def history(memory_id: uuid.UUID | str, min_position: int | None = None) -> Call[History]:
    return Call("GET", f"/v1/memories/{segment(memory_id)}/history", model(History),
                params=query_params(min_position=min_position), reads_own_writes=True)


# ------------------------------------------------------------------------------------------------ the log


def append(events: Sequence[EventIn | Mapping[str, Any]], idempotency_key: str | None) -> Call[Positions]:
    # The batch's key keys every event that has none of its own (the server appends `<key>:<index>`).
    body = EventsIn(events=[e if isinstance(e, EventIn) else EventIn.model_validate(e) for e in events],
                    idempotency_key=idempotency_key or new_key())
    return Call("POST", "/v1/events", model(Positions), json=body.body(), wrote=lambda out: out.positions)


def events(stream_id: str | None = None, type: Sequence[str] | str | None = None, after: int | None = None,
           before: int | None = None, since: datetime | None = None, until: datetime | None = None,
           cursor: str | None = None, limit: int | None = None) -> Call[EventsPage]:
    types = [type] if isinstance(type, str) else list(type) if type else None
    return Call("GET", "/v1/events", model(EventsPage), params=query_params(
        stream_id=stream_id, type=types, after=after, before=before, since=since, until=until, cursor=cursor,
        limit=limit))


# ------------------------------------------------------------------------------------------------ recall


def recall(body: RecallIn) -> Call[Recalled]:
    return Call("POST", "/v1/recall", model(Recalled), json=body.body(), reads_own_writes=True)


def recall_multi(body: MultiRecallIn) -> Call[MultiRecalled]:
    return Call("POST", "/v1/recall/multi", model(MultiRecalled), json=body.body(), reads_own_writes=True)


def recall_record(recall_id: uuid.UUID | str) -> Call[RecallRecord]:
    return Call("GET", f"/v1/recalls/{segment(recall_id)}", model(RecallRecord), reads_own_writes=True)


def feedback(recall_id: uuid.UUID | str, used: Sequence[uuid.UUID | str],
             not_useful: Sequence[uuid.UUID | str]) -> Call[FeedbackGiven]:
    # Safe to retry as it is: a memory judged again with the same verdict is the same feedback (not re-counted).
    items = [{"memory_id": i, "verdict": "used"} for i in used]
    items += [{"memory_id": i, "verdict": "not_useful"} for i in not_useful]
    body = FeedbackIn.model_validate({"items": items})
    return Call("POST", f"/v1/recalls/{segment(recall_id)}/feedback", model(FeedbackGiven), json=body.body(),
                wrote=lambda out: [out.position])


def position(at: int, wait: float = 0) -> Call[PositionState]:
    return Call("GET", f"/v1/positions/{int(at)}", model(PositionState), params=query_params(wait=wait or None))


# ------------------------------------------------------------------------------------------------ policy, operations


def set_privacy_policy(body: PrivacyPolicyIn) -> Call[PrivacyPolicy]:
    return Call("PUT", "/v1/policy/privacy", model(PrivacyPolicy), json=body.body(),
                wrote=lambda out: [out.position])


def privacy_policy() -> Call[PrivacyPolicy]:
    return Call("GET", "/v1/policy/privacy", model(PrivacyPolicy))


def projections() -> Call[Projections]:
    return Call("GET", "/v1/projections", model(Projections))


def health() -> Call[Health]:
    return Call("GET", "/healthz", model(Health), retried=False, ok_statuses=frozenset({503}))


def text_of(response: httpx.Response) -> str:
    return response.text


def rebuild(name: str) -> Call[Rebuilt]:
    # Long, and sent again only when it cannot have started: a lost answer is not a reason to rebuild twice.
    return Call("POST", f"/v1/projections/{segment(name)}/rebuild", model(Rebuilt), idempotent=False)


def metrics() -> Call[str]:
    return Call("GET", "/metrics", text_of)


# ------------------------------------------------------------------------------------------------ dead letters
# Resolving one is not repeatable (a second retry or skip of it is a 404): sent again only when it cannot have landed.

Action = Literal["retry", "skip"]


def _action(action: str) -> str:
    if action not in ("retry", "skip"):
        raise ValueError(f"action is 'retry' or 'skip', not {action!r}")
    return action


def dead_letters(projection: str | None, resolved: bool) -> Call[DeadLetters]:
    return Call("GET", "/v1/projections/dead-letters", model(DeadLetters),
                params=query_params(projection=projection, resolved=resolved or None))


def resolve_dead_letter(projection: str, position: int, action: Action) -> Call[DeadLetterResolved]:
    return Call("POST", f"/v1/projections/{segment(projection)}/dead-letters/{int(position)}/{_action(action)}",
                model(DeadLetterResolved), idempotent=False)


def ingest_dead_letters(resolved: bool) -> Call[IngestDeadLetters]:
    return Call("GET", "/v1/ingest/dead-letters", model(IngestDeadLetters),
                params=query_params(resolved=resolved or None))


def resolve_ingest_dead_letter(dead_letter_id: int, action: Action) -> Call[IngestDeadLetterResolved]:
    return Call("POST", f"/v1/ingest/dead-letters/{int(dead_letter_id)}/{_action(action)}",
                model(IngestDeadLetterResolved), wrote=lambda out: out.positions or [], idempotent=False)
