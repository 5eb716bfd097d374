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

Mark sent and the resume context read the session's stream from the log, page by page (eventstore/stream.py
stream_pages), so they answer the log's state whatever the projectors' lag, with the workers, Redis or the embedder
down, and hold a page, not the stream: mark sent keeps only the one message's state (domain/sessions/messages.py
message_state); the resume context folds the stream's messages without their text (its outline), plans what fits
the budget, then reads newest first only the messages the plan keeps (domain/sessions/resume.py plan_resume,
render_resume: the same answer as the whole fold's build_resume). It calls no recall subsystem and no model.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import Connection, Engine

from domain.errors import ContentTooLarge, InvalidPayload, NotFound, RetryableConflict
from domain.events import (
    NewEvent,
    RecordedEvent,
    SessionMessage,
    SessionMessagesAppended,
    SessionMessageSent,
    has_lone_surrogate,
    occurred_in_range,
    session_stream,
    validate_payload,
)
from domain.privacy import PrivacyPolicy
from domain.sessions.messages import (
    MessageState,
    SessionLine,
    SessionLog,
    fold_steps,
    line_of,
    message_state,
    message_text,
    resolve_tool_names,
    step_of,
)
from domain.sessions.resume import LineShape, ResumeContext, plan_resume, render_resume, shape_of
from domain.text import has_nul
from eventstore.append import append, existing_positions
from eventstore.stream import stream_event, stream_pages
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
    if len(messages) > settings.limits.max_batch:
        raise InvalidPayload(f"an append holds at most {settings.limits.max_batch} messages, got {len(messages)}")
    raw = [m if m.get("message_id") is not None else {**m, "message_id": str(uuid.uuid4())} for m in messages]
    raw = resolve_tool_names(raw)
    if has_lone_surrogate([session_id, agent_id, project, raw]):
        raise InvalidPayload("text must be valid Unicode (a lone surrogate \\ud800-\\udfff is not)")
    if has_nul([session_id, agent_id, project, raw]):
        raise InvalidPayload("text must not contain NUL (\\u0000) characters")
    limit = settings.sessions.max_session_message_chars
    data = validate_payload(SessionMessagesAppended, {"session_id": session_id, "agent_id": agent_id or None,
                                                      "project": project or None, "messages": raw})
    for i, m in enumerate(SessionMessagesAppended.model_validate(data).messages):
        size = len(message_text(m.content))
        if size > limit:
            raise ContentTooLarge(f"message {i} ({m.message_id}): content is {size} characters; the limit is {limit}")
        if m.created_at is not None:
            occurred_in_range(m.created_at)
    return data


def append_key(session_id: str, message_ids: Sequence[str]) -> str:
    """The idempotency key an append of messages with these ids, in this order, is written under: its event in
    the log says the session holds them (services/chat_import.py looks whole conversations up by it)."""
    return _key("messages", session_id, message_ids)


def check_append(session_id: str, messages: Sequence[dict[str, Any]], agent_id: str | None = None,
                 project: str | None = None) -> None:
    """Refuse (with the reason) an append that append_messages would refuse for its payload, writing nothing: a
    caller checking a whole import before it writes any of it (services/chat_import.py)."""
    _checked(session_id, messages, agent_id, project)


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


def _message_state(conn: Connection, tenant: str, session_id: str, message_id: str) -> MessageState | None:
    """One message as the log says, read page by page keeping only what it needs (not the session's every message)."""
    pages = stream_pages(conn, tenant, session_stream(session_id), (SessionMessagesAppended, SessionMessageSent))
    return message_state(session_id, message_id, (e for page in pages for e in page))


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
    budget = s.sessions.resume_budget_default if budget_tokens is None else budget_tokens
    if not s.sessions.resume_budget_min <= budget <= s.sessions.resume_budget_max:
        raise InvalidPayload(f"budget_tokens must be between {s.sessions.resume_budget_min} and "
                             f"{s.sessions.resume_budget_max}, got {budget}")
    return budget


# A session as its log says, each message without its text (domain/sessions/resume.py LineShape).
SessionOutline = SessionLog[LineShape]


_SESSION_TYPES = (SessionMessagesAppended, SessionMessageSent)


def session_outline(conn: Connection, tenant: str, session_id: str) -> SessionOutline:
    """The fold of the session's stream read page by page, keeping each message's shape, not its text."""
    def shape(m: SessionMessage, e: RecordedEvent) -> LineShape:
        return shape_of(line_of(m, 0, e.occurred_at), e.stream_version)
    pages = stream_pages(conn, tenant, session_stream(session_id), _SESSION_TYPES)
    folded = fold_steps([step_of(session_id, e, shape) for page in pages for e in page])
    return SessionOutline(session_id, folded.agent_id, folded.project, folded.lines, folded.last_position)


def _kept_lines(conn: Connection, tenant: str, outline: SessionOutline, seqs: set[int]) -> dict[int, SessionLine]:
    """The messages `seqs` whole, read newest first page by page from the events that listed them first, and no
    further back than the oldest of them: the text held is what the context holds."""
    wanted = {(line.version, line.message_id): line for line in outline.lines if line.seq in seqs}
    oldest = min((version for version, _ in wanted), default=None)
    found: dict[int, SessionLine] = {}
    if oldest is None:
        return found
    for page in stream_pages(conn, tenant, session_stream(outline.session_id), (SessionMessagesAppended,),
                             newest_first=True):
        for e in page:
            p = e.payload()
            for m in p.messages if isinstance(p, SessionMessagesAppended) else ():
                shape = wanted.get((e.stream_version, m.message_id))
                if shape is not None and shape.seq not in found:  # an id listed twice: its first, as the fold
                    found[shape.seq] = replace(line_of(m, shape.seq, e.occurred_at), sent=shape.sent)
        if page[-1].stream_version <= oldest:
            break
    return found


def resume_context(conn: Connection, tenant: str, session_id: str, budget_tokens: int | None,
                   policy: PrivacyPolicy) -> tuple[SessionOutline, ResumeContext]:
    """The session's resume context from its log (404 when unknown or excluded): the stream's outline, the plan of
    what fits the budget, then the text of only the messages the plan keeps (bounded by the budget, not the
    session's length)."""
    budget = resume_budget(budget_tokens)
    outline = session_outline(conn, tenant, session_id)
    if not outline.lines or policy.excludes(agent_id=outline.agent_id, project=outline.project,
                                            session_id=session_id):
        raise NotFound(f"no session {session_id!r}")
    turns = get_settings().sessions.resume_turns
    plan = plan_resume(session_id, outline.lines, budget, turns)
    return outline, render_resume(session_id, plan, _kept_lines(conn, tenant, outline, plan.seqs), budget, turns)


__all__ = ["MarkedSent", "MessagesAppended", "SessionOutline", "append_key", "append_messages", "check_append",
           "mark_sent", "resume_budget", "resume_context", "session_outline"]
