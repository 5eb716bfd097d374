"""A session's messages as its log says: the text of a message, tool names, and the fold of a session's events.

The fold is the one statement of what a session holds, shared by the projector (projections/sessions.py, which
applies the same rules row by row) and the resume context (domain/sessions/resume.py, built from the log):
- events in apply order, (tx_id, position): the order every projector applies them in;
- each message gets the next `seq` of its session (1, 2, ...), in the order its append lists them;
- a message_id seen before in the session is ignored (the first append wins: an agent may forward its whole list
  again); a SessionMessageSent for a message the session does not hold changes nothing;
- the session's agent and project are its first append's;
- created_at is the message's own, else its event's occurred_at; all times are answered in UTC.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from domain.events import RecordedEvent, SessionMessage, SessionMessagesAppended, SessionMessageSent

_TEXT_PARTS = {"text": "text", "input_text": "text", "output_text": "text", "refusal": "refusal"}


def message_text(content: str | list[dict[str, Any]] | None) -> str:
    """A message's searchable text: the string as is, or its text parts joined by newlines (image, audio and
    file parts hold no text); null content (an assistant's tool calls only) is the empty string."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(str(p.get(_TEXT_PARTS[p["type"]]) or "") for p in content
                     if p.get("type") in _TEXT_PARTS)


def tool_calls_text(tool_calls: list[dict[str, Any]] | None) -> list[str]:
    """One line per tool call: `name(arguments)` as the OpenAI shape holds them."""
    lines = []
    for call in tool_calls or []:
        fn = f if isinstance(f := call.get("function"), dict) else {}
        lines.append(f"{fn.get('name') or call.get('name') or '?'}({fn.get('arguments') or ''})")
    return lines


def resolve_tool_names(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each role=tool message's tool_name: its own, else its `name`, else the function name of the call its
    tool_call_id answers among the earlier messages of the same list (an agent forwards calls and results
    together). Messages of other roles are unchanged."""
    calls: dict[str, str] = {}
    out = []
    for m in messages:
        for call in m.get("tool_calls") or []:
            fn = f if isinstance(call, dict) and isinstance(f := call.get("function"), dict) else {}
            if isinstance(call, dict) and isinstance(call.get("id"), str) and isinstance(fn.get("name"), str):
                calls[call["id"]] = fn["name"]
        if m.get("role") == "tool" and not m.get("tool_name"):
            name = m.get("name") or calls.get(m.get("tool_call_id") or "")
            if isinstance(name, str) and name:
                m = {**m, "tool_name": name[:128]}
        out.append(m)
    return out


@dataclass(frozen=True)
class SessionLine:
    seq: int
    message_id: str
    role: str
    text: str
    tool_name: str | None
    created_at: datetime
    sent: bool
    checkpoint: bool
    tool_calls: tuple[str, ...] = ()


@dataclass(frozen=True)
class SessionLog:
    session_id: str
    agent_id: str | None
    project: str | None
    lines: tuple[SessionLine, ...]
    last_position: int | None  # of the newest event folded


def utc(at: datetime) -> datetime:
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


def line_of(m: SessionMessage, seq: int, occurred_at: datetime) -> SessionLine:
    return SessionLine(seq, m.message_id, m.role, message_text(m.content), m.tool_name,
                       utc(m.created_at or occurred_at), m.sent, m.checkpoint, tuple(tool_calls_text(m.tool_calls)))


def fold(session_id: str, events: Iterable[RecordedEvent]) -> SessionLog:
    """The session's messages from its stream's events (see the module's docstring)."""
    ordered = sorted(events, key=lambda e: (e.tx_id, e.position))
    lines: dict[str, SessionLine] = {}
    agent_id = project = None
    first = True
    for e in ordered:
        p = e.payload()
        if isinstance(p, SessionMessagesAppended) and p.session_id == session_id:
            if first:
                agent_id, project, first = p.agent_id, p.project, False
            for m in p.messages:
                if m.message_id not in lines:
                    lines[m.message_id] = line_of(m, len(lines) + 1, e.occurred_at)
        elif isinstance(p, SessionMessageSent) and p.session_id == session_id and p.message_id in lines:
            lines[p.message_id] = replace(lines[p.message_id], sent=True)
    last = max((e.position for e in ordered), default=None)
    return SessionLog(session_id, agent_id, project, tuple(lines.values()), last)


@dataclass(frozen=True)
class MessageState:
    """One message as the fold would hold it, and what mark sent needs of its session."""
    agent_id: str | None  # the session's (its first append's)
    project: str | None
    sent: bool
    last_position: int | None  # of the newest event folded


def message_state(session_id: str, message_id: str, events: Iterable[RecordedEvent]) -> MessageState | None:
    """What `fold` says of one message (None: the session does not hold it), from the session's events in any
    order, keeping O(1) of them: the first append in apply order, the first listing the message and the newest
    SessionMessageSent of it (a mark before the message's first listing changes nothing, as in `fold`)."""
    def key(e: RecordedEvent) -> tuple[int, int]:
        return (e.tx_id, e.position)
    first: tuple[tuple[int, int], SessionMessagesAppended] | None = None
    listing: tuple[tuple[int, int], bool] | None = None
    marked: tuple[int, int] | None = None
    last: int | None = None
    for e in events:
        p = e.payload()
        if isinstance(p, SessionMessagesAppended) and p.session_id == session_id:
            if first is None or key(e) < first[0]:
                first = (key(e), p)
            m = next((m for m in p.messages if m.message_id == message_id), None)
            if m is not None and (listing is None or key(e) < listing[0]):
                listing = (key(e), m.sent)
        elif isinstance(p, SessionMessageSent) and p.session_id == session_id and p.message_id == message_id:
            marked = key(e) if marked is None else max(marked, key(e))
        last = e.position if last is None else max(last, e.position)
    if first is None or listing is None:
        return None
    sent = listing[1] or (marked is not None and marked > listing[0])
    return MessageState(first[1].agent_id, first[1].project, sent, last)


__all__ = ["MessageState", "SessionLine", "SessionLog", "fold", "line_of", "message_state", "message_text",
           "resolve_tool_names", "tool_calls_text", "utc"]
