"""Each endpoint as a Call: method, path, body, how to read the answer, and what it wrote. The sync and async
clients send the same Calls (sync.py, aio.py), so both speak the API identically."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel

from engramlog_client.models.events import EventIn, EventsIn, EventsPage, Positions
from engramlog_client.models.knowledge import (
    BatchDocumentIn,
    Document,
    DocumentIn,
    DocumentsIn,
    DocumentsList,
    DocumentsWritten,
    DocumentWritten,
    Drilled,
)
from engramlog_client.models.memories import (
    History,
    Memory,
    MemoryIn,
    Remembered,
    RememberedMany,
    Superseded,
    SupersedeIn,
)
from engramlog_client.models.operations import Health, Projections
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
from engramlog_client.models.sessions import DeepRecalled, DeepRecallIn, MessagesAppended, MessagesIn, ResumeContext

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
    reads_own_writes: bool = False  # a recall: send the client's last written position as min_position
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


def _params(**values: Any) -> dict[str, Any]:
    out = {}
    for k, v in values.items():
        if v is None:
            continue
        out[k] = v.isoformat() if isinstance(v, datetime) else str(v) if isinstance(v, uuid.UUID) else v
    return out


def _id(value: uuid.UUID | str) -> str:
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


def memory(memory_id: uuid.UUID | str) -> Call[Memory]:
    return Call("GET", f"/v1/memories/{_id(memory_id)}", model(Memory))


def supersede(memory_id: uuid.UUID | str, body: SupersedeIn) -> Call[Superseded]:
    if body.idempotency_key is None:
        body = body.model_copy(update={"idempotency_key": new_key()})
    return Call("POST", f"/v1/memories/{_id(memory_id)}/supersede", model(Superseded), json=body.body(),
                wrote=lambda out: [out.position])


def history(memory_id: uuid.UUID | str) -> Call[History]:
    return Call("GET", f"/v1/memories/{_id(memory_id)}/history", model(History))


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
    return Call("GET", "/v1/events", model(EventsPage), params=_params(
        stream_id=stream_id, type=types, after=after, before=before, since=since, until=until, cursor=cursor,
        limit=limit))


# ------------------------------------------------------------------------------------------------ recall


def recall(body: RecallIn) -> Call[Recalled]:
    return Call("POST", "/v1/recall", model(Recalled), json=body.body(), reads_own_writes=True)


def recall_multi(body: MultiRecallIn) -> Call[MultiRecalled]:
    return Call("POST", "/v1/recall/multi", model(MultiRecalled), json=body.body(), reads_own_writes=True)


def recall_record(recall_id: uuid.UUID | str) -> Call[RecallRecord]:
    return Call("GET", f"/v1/recalls/{_id(recall_id)}", model(RecallRecord))


def feedback(recall_id: uuid.UUID | str, used: Sequence[uuid.UUID | str],
             not_useful: Sequence[uuid.UUID | str]) -> Call[FeedbackGiven]:
    # Safe to retry as it is: a memory judged again with the same verdict is the same feedback (not re-counted).
    items = [{"memory_id": i, "verdict": "used"} for i in used]
    items += [{"memory_id": i, "verdict": "not_useful"} for i in not_useful]
    body = FeedbackIn.model_validate({"items": items})
    return Call("POST", f"/v1/recalls/{_id(recall_id)}/feedback", model(FeedbackGiven), json=body.body(),
                wrote=lambda out: [out.position])


def position(at: int, wait: float = 0) -> Call[PositionState]:
    return Call("GET", f"/v1/positions/{int(at)}", model(PositionState), params=_params(wait=wait or None))


# ------------------------------------------------------------------------------------------------ knowledge
# Puts are idempotent as they are: the same content as the current version appends nothing (changed: false).


def _doc_path(path: str) -> str:
    return quote(path, safe="/")


def put_document(path: str, body: DocumentIn) -> Call[DocumentWritten]:
    return Call("PUT", f"/v1/knowledge/{_doc_path(path)}", model(DocumentWritten), json=body.body(),
                wrote=lambda out: [out.position])


def get_document(path: str, project: str | None, version: int | None) -> Call[Document]:
    return Call("GET", f"/v1/knowledge/{_doc_path(path)}", model(Document),
                params=_params(project=project, version=version))


def delete_document(path: str, project: str | None) -> Call[DocumentWritten]:
    return Call("DELETE", f"/v1/knowledge/{_doc_path(path)}", model(DocumentWritten),
                params=_params(project=project), wrote=lambda out: [out.position])


def put_documents(documents: Sequence[BatchDocumentIn | Mapping[str, Any]]) -> Call[DocumentsWritten]:
    body = DocumentsIn(documents=[d if isinstance(d, BatchDocumentIn) else BatchDocumentIn.model_validate(d)
                                  for d in documents])
    return Call("POST", "/v1/knowledge/batch", model(DocumentsWritten), json=body.body(),
                wrote=lambda out: [d.position for d in out.documents])


def list_documents(project: str | None, prefix: str | None, after: str | None,
                   limit: int | None) -> Call[DocumentsList]:
    return Call("GET", "/v1/knowledge", model(DocumentsList),
                params=_params(project=project, prefix=prefix, after=after, limit=limit))


def get_section(path: str, heading_path: str, project: str | None, content_hash: str | None, version: int | None,
                recall_id: uuid.UUID | str | None) -> Call[Drilled]:
    return Call("GET", "/v1/knowledge-sections", model(Drilled), params=_params(
        path=path, heading_path=heading_path, project=project, content_hash=content_hash, version=version,
        recall_id=recall_id))


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


# ------------------------------------------------------------------------------------------------ sessions, deep recall


def _session(session_id: str) -> str:
    return f"/v1/sessions/{_id(session_id)}"


def append_messages(session_id: str, body: MessagesIn) -> Call[MessagesAppended]:
    # Each message gets its id here (not on the server), so a message sent twice is recognisably the same one.
    messages = [m if m.get("message_id") else {**m, "message_id": str(uuid.uuid4())} for m in body.messages]
    body = body.model_copy(update={"messages": messages})
    return Call("POST", f"{_session(session_id)}/messages", model(MessagesAppended), json=body.body(),
                wrote=lambda out: [out.position], idempotent=False)


def resume_context(session_id: str, budget_tokens: int | None) -> Call[ResumeContext]:
    return Call("GET", f"{_session(session_id)}/resume", model(ResumeContext),
                params=_params(budget_tokens=budget_tokens))


def deep_recall(body: DeepRecallIn) -> Call[DeepRecalled]:
    return Call("POST", "/v1/deep_recall", model(DeepRecalled), json=body.body())
