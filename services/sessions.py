"""Session messages' write path (append, mark sent) and the resume context, all on the session's own stream.

Append: one SessionMessagesAppended per call (one message or a batch, validated whole, then one transaction);
a message without a message_id gets a generated one (stored in the event, so the log holds it); a tool result's
tool_name is resolved within the batch (domain/sessions/messages.py resolve_tool_names). A session's agent and
project are fixed by its first append (appended at stream version 0: of two racing first appends one wins, the
other is answered 409); a later append naming another is refused (422), one naming none takes the session's.

A retry never doubles the log: an append whose every message carries the client's message_id is keyed by
(session, those ids in order) and a mark sent by (session, message), so a resent request (its answer lost, or sent
again while the first was still running) appends nothing and is answered the first one's position (eventstore
append answers an idempotency key's original position). An append with a server-generated id cannot be recognised
again and is not keyed.

Mark sent and the resume context read the session's stream from the log (domain/sessions/messages.py fold; mark
sent page by page, keeping only the one message's state: message_state), so they answer the log's state whatever
the projectors' lag, with the workers, Redis or the embedder down: the resume context calls no recall subsystem and
no model (domain/sessions/resume.py).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine

from domain.errors import ContentTooLarge, InvalidPayload, NotFound, RetryableConflict
from domain.events import (
    NewEvent,
    SessionMessagesAppended,
    SessionMessageSent,
    has_lone_surrogate,
    occurred_in_range,
    session_stream,
    validate_payload,
)
from domain.privacy import PrivacyPolicy
from domain.sessions.messages import MessageState, SessionLog, fold, message_state, message_text, resolve_tool_names
from domain.sessions.resume import ResumeContext, build_resume
from domain.text import has_nul
from eventstore.append import append, existing_positions
from eventstore.stream import read_stream, stream_event, stream_pages
from infra.settings import get_settings
from infra.wake import appended

_ATTEMPTS = 3  # a concurrent append to the same session took the stream version: read the head again


@dataclass(frozen=True)
class MessagesAppended:
    session_id: str
    message_ids: list[str]
    position: int


def _key(kind: str, session_id: str, message_ids: Sequence[str]) -> str:
    """A write's idempotency key from what names it (hashed: ids are free text, a key is at most 200 chars)."""
    digest = hashlib.sha256(json.dumps([session_id, *message_ids]).encode()).hexdigest()
    return f"session-{kind}:{digest}"


def _append_key(session_id: str, messages: Sequence[dict[str, Any]]) -> str | None:
    """The append's key when the client named every message (else a retry holds other generated ids)."""
    ids = [i for m in messages if (i := m.get("message_id")) is not None]
    return _key("messages", session_id, ids) if len(ids) == len(messages) else None


def _checked(session_id: str, messages: Sequence[dict[str, Any]], agent_id: str | None,
             project: str | None) -> dict[str, Any]:
    """The SessionMessagesAppended payload, or the reason it is refused (nothing is written for a refused one)."""
    if not messages:
        raise InvalidPayload("an append needs at least one message")
    settings = get_settings()
    if len(messages) > settings.max_batch:
        raise InvalidPayload(f"an append holds at most {settings.max_batch} messages, got {len(messages)}")
    raw = [m if m.get("message_id") is not None else {**m, "message_id": str(uuid.uuid4())} for m in messages]
    raw = resolve_tool_names(raw)
    if has_lone_surrogate([session_id, agent_id, project, raw]):
        raise InvalidPayload("text must be valid Unicode (a lone surrogate \\ud800-\\udfff is not)")
    if has_nul([session_id, agent_id, project, raw]):
        raise InvalidPayload("text must not contain NUL (\\u0000) characters")
    limit = settings.max_session_message_chars
    data = validate_payload(SessionMessagesAppended, {"session_id": session_id, "agent_id": agent_id or None,
                                                      "project": project or None, "messages": raw})
    for i, m in enumerate(SessionMessagesAppended.model_validate(data).messages):
        size = len(message_text(m.content))
        if size > limit:
            raise ContentTooLarge(f"message {i} ({m.message_id}): content is {size} characters; the limit is {limit}")
        if m.created_at is not None:
            occurred_in_range(m.created_at)
    return data


def _first(conn: Connection, tenant: str, session_id: str) -> dict[str, Any] | None:
    first = stream_event(conn, tenant, session_stream(session_id), 1)
    return None if first is None else first.data


def append_messages(engine: Engine, tenant: str, session_id: str, messages: Sequence[dict[str, Any]],
                    metadata: dict[str, Any], agent_id: str | None = None,
                    project: str | None = None, policy: PrivacyPolicy | None = None) -> MessagesAppended:
    """Append a batch to the session's stream. A session the privacy policy excludes (by its id, the agent or
    project asked, or its first append's) is refused, nothing written: an append into it would be hidden at once,
    and its answer (written, or "belongs to another agent_id") would tell that the log holds it."""
    idempotency_key = _append_key(session_id, messages)
    data = _checked(session_id, messages, agent_id, project)
    if policy is not None:
        _writable(policy, session_id, agent_id, project)
    stream = session_stream(session_id)
    for attempt in range(_ATTEMPTS):
        try:
            with engine.begin() as conn:
                first = _first(conn, tenant, session_id)
                expected = None
                if first is None:
                    expected = 0
                else:
                    if policy is not None:
                        _writable(policy, session_id, first.get("agent_id"), first.get("project"))
                    for key in ("agent_id", "project"):
                        if data[key] is not None and data[key] != first.get(key):
                            raise InvalidPayload(f"session {session_id!r} belongs to another {key} (its first "
                                                 f"append's); append without {key} or to another session")
                    data = {**data, "agent_id": first.get("agent_id"), "project": first.get("project")}
                    retried = (existing_positions(conn, tenant, [idempotency_key]).get(idempotency_key)
                               if idempotency_key else None)
                    if retried is not None:  # a resent append: the first one's answer, nothing appended
                        return MessagesAppended(session_id, [m["message_id"] for m in data["messages"]], retried)
                [position] = append(conn, tenant, [NewEvent(SessionMessagesAppended.type_name(), stream, data,
                                                            expected_version=expected,
                                                            idempotency_key=idempotency_key)],
                                    metadata)
            break
        except RetryableConflict:
            if attempt == _ATTEMPTS - 1:
                raise
    appended(1)
    return MessagesAppended(session_id, [m["message_id"] for m in data["messages"]], position)


def _writable(policy: PrivacyPolicy, session_id: str, agent_id: str | None, project: str | None) -> None:
    if policy.excludes(session_id=session_id, agent_id=agent_id, project=project):
        raise InvalidPayload(f"session {session_id!r} is excluded by the tenant's privacy policy (exclude_sessions, "
                             "exclude_agents, exclude_projects); it is not written")


def session_log(conn: Connection, tenant: str, session_id: str) -> SessionLog:
    """The session as its log says (domain/sessions/messages.py fold)."""
    stream = session_stream(session_id)
    return fold(session_id, read_stream(conn, tenant, stream, (SessionMessagesAppended, SessionMessageSent)))


def _message_state(conn: Connection, tenant: str, session_id: str, message_id: str) -> MessageState | None:
    """One message as the log says, read page by page keeping only what it needs (not the session's every message)."""
    pages = stream_pages(conn, tenant, session_stream(session_id), (SessionMessagesAppended, SessionMessageSent))
    return message_state(session_id, message_id, (e for page in pages for e in page))


def _visible(log: SessionLog, policy: PrivacyPolicy) -> bool:
    return bool(log.lines) and not policy.excludes(agent_id=log.agent_id, project=log.project,
                                                   session_id=log.session_id)


@dataclass(frozen=True)
class MarkedSent:
    session_id: str
    message_id: str
    changed: bool  # False: it was sent already (nothing appended)
    position: int | None  # of the SessionMessageSent that marked it (None: it was appended sent)


def mark_sent(engine: Engine, tenant: str, session_id: str, message_id: str, metadata: dict[str, Any],
              policy: PrivacyPolicy) -> MarkedSent:
    """Mark a pending message sent (404 when the session, visible to the caller, does not hold it)."""
    data = validate_payload(SessionMessageSent, {"session_id": session_id, "message_id": message_id})
    key = _key("sent", session_id, [message_id])  # a message is marked sent once: a racing retry appends nothing
    for attempt in range(_ATTEMPTS):
        try:
            with engine.begin() as conn:
                state = _message_state(conn, tenant, session_id, message_id)
                if state is None or policy.excludes(agent_id=state.agent_id, project=state.project,
                                                    session_id=session_id):
                    raise NotFound(f"session {session_id!r} holds no message {message_id!r}")
                if state.sent:  # the mark that sent it, or (appended sent) the session's newest: read-your-writes
                    return MarkedSent(session_id, message_id, False,
                                      existing_positions(conn, tenant, [key]).get(key) or state.last_position)
                [position] = append(conn, tenant, [NewEvent(SessionMessageSent.type_name(),
                                                            session_stream(session_id), data, idempotency_key=key)],
                                    metadata)
            break
        except RetryableConflict:  # another append took the stream version: read the log again
            if attempt == _ATTEMPTS - 1:
                raise
    appended(1)
    return MarkedSent(session_id, message_id, True, position)


def resume_budget(budget_tokens: int | None) -> int:
    s = get_settings()
    budget = s.resume_budget_default if budget_tokens is None else budget_tokens
    if not s.resume_budget_min <= budget <= s.resume_budget_max:
        raise InvalidPayload(f"budget_tokens must be between {s.resume_budget_min} and {s.resume_budget_max}, "
                             f"got {budget}")
    return budget


def resume_context(conn: Connection, tenant: str, session_id: str, budget_tokens: int | None,
                   policy: PrivacyPolicy) -> tuple[SessionLog, ResumeContext]:
    """The session's resume context from its log (404 when unknown or excluded)."""
    budget = resume_budget(budget_tokens)
    log = session_log(conn, tenant, session_id)
    if not _visible(log, policy):
        raise NotFound(f"no session {session_id!r}")
    return log, build_resume(log, budget, get_settings().resume_turns)


__all__ = ["MarkedSent", "MessagesAppended", "append_messages", "mark_sent", "resume_budget", "resume_context",
           "session_log"]
