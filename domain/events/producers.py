"""What a producer appends through the generic append paths (POST /v1/events, the ingest queue): MemoryRecorded
only. Every other producer type has its own route, which checks what the projectors and the read routes rely on
beyond the payload (a transcript's chunks against its log, a session's message ids and order, a document's or a
file's version), so one forged through the generic paths is refused with the route that appends it.

`check_message` is the ingest queue's message rule: the producer checks it before it enqueues (workers/producer.py)
and the ingest actor again before it appends (workers/ingest_dead_letters.py).
"""

from __future__ import annotations

from domain.errors import InvalidPayload
from domain.events.base import has_lone_surrogate
from domain.events.code import CodeFilePut, CodeFileRemoved
from domain.events.knowledge import DocumentPut, DocumentRetired
from domain.events.memory import MemoryRecorded
from domain.events.registry import EVENT_TYPES, is_operator_event, is_system_event
from domain.events.sessions import SessionMessagesAppended, SessionMessageSent
from domain.events.transcripts import TranscriptChunksPut

MAX_TENANT_CHARS = 128
_EVENT_FIELDS = frozenset({"type", "data", "stream_id", "schema_version", "expected_version", "idempotency_key",
                           "occurred_at"})

# The route that appends each producer type other than MemoryRecorded (named in the 422's reason).
OWN_ROUTES = {
    DocumentPut.type_name(): "PUT /v1/knowledge/{path}",
    DocumentRetired.type_name(): "DELETE /v1/knowledge/{path}",
    SessionMessagesAppended.type_name(): "POST /v1/sessions/{session_id}/messages",
    SessionMessageSent.type_name(): "POST /v1/sessions/{session_id}/messages/{message_id}/sent",
    TranscriptChunksPut.type_name(): "PUT /v1/transcripts/{transcript_id}",
    CodeFilePut.type_name(): "POST /v1/code/{repo}/files",
    CodeFileRemoved.type_name(): "POST /v1/code/{repo}/files",
}


def producer_refusal(type_name: str) -> str | None:
    """Why a producer may not append an event of this type through the generic append paths, or None: a
    MemoryRecorded; a type the registry does not know (validate_payload names it), a system or an operator event
    (refused with their own reasons)."""
    if (type_name == MemoryRecorded.type_name() or type_name not in EVENT_TYPES or is_system_event(type_name)
            or is_operator_event(type_name)):
        return None
    return (f"{type_name}: producers append MemoryRecorded only through the event API; a {type_name} is appended "
            f"by its own route, which validates it against its log ({OWN_ROUTES.get(type_name, 'its route')})")



def check_message(tenant: object, events: object, metadata: object) -> None:
    """Refuse what no retry of the message could append: raises InvalidPayload with the reason."""
    if not isinstance(tenant, str) or not tenant or len(tenant) > MAX_TENANT_CHARS or "\x00" in tenant \
            or has_lone_surrogate(tenant):
        raise InvalidPayload(f"tenant must be a non-empty string of at most {MAX_TENANT_CHARS} characters")
    if not isinstance(metadata, dict):
        raise InvalidPayload("metadata must be a JSON object")
    if str(metadata.get("actor") or "").startswith("system:"):
        raise InvalidPayload("the ingest queue appends producers' events: the actor must not be a system actor")
    if not isinstance(events, list) or not events:
        raise InvalidPayload("events must be a non-empty list")
    for event in events:
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            raise InvalidPayload("each event must be a JSON object with a string 'type'")
        unknown = sorted(set(event) - _EVENT_FIELDS)
        if unknown:
            raise InvalidPayload(f"{event['type']}: unknown event fields {unknown}; known: {sorted(_EVENT_FIELDS)}")
        if is_system_event(event["type"]):
            raise InvalidPayload(f"{event['type']}: appended by the system, not by producers")
        if is_operator_event(event["type"]):
            raise InvalidPayload(f"{event['type']}: set by an operator through its own route, not appended as an "
                                 "event")
        refusal = producer_refusal(event["type"])
        if refusal:
            raise InvalidPayload(refusal)


__all__ = ["MAX_TENANT_CHARS", "OWN_ROUTES", "check_message", "producer_refusal"]
