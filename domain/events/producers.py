"""What a producer appends through the generic append paths (POST /v1/events, the ingest queue): MemoryRecorded
only. Every other producer type has its own route, which checks what the projectors and the read routes rely on
beyond the payload (a transcript's chunks against its log, a session's message ids and order, a document's or a
file's version), so one forged through the generic paths is refused with the route that appends it.
"""

from __future__ import annotations

from domain.events.code import CodeFilePut, CodeFileRemoved
from domain.events.knowledge import DocumentPut, DocumentRetired
from domain.events.memory import MemoryRecorded
from domain.events.registry import EVENT_TYPES, is_operator_event, is_system_event
from domain.events.sessions import SessionMessagesAppended, SessionMessageSent
from domain.events.transcripts import TranscriptChunksPut

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


__all__ = ["OWN_ROUTES", "producer_refusal"]
