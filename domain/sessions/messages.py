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

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Generic, Protocol, Self, TypeVar

from domain.events import RecordedEvent, SessionMessage, SessionMessagesAppended, SessionMessageSent

L = TypeVar("L", bound="Line")

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

    def numbered(self, seq: int) -> SessionLine:
        return replace(self, seq=seq)

    def marked_sent(self) -> SessionLine:
        return replace(self, sent=True)




def utc(at: datetime) -> datetime:
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


def line_of(m: SessionMessage, seq: int, occurred_at: datetime) -> SessionLine:
    return SessionLine(seq, m.message_id, m.role, message_text(m.content), m.tool_name,
                       utc(m.created_at or occurred_at), m.sent, m.checkpoint, tuple(tool_calls_text(m.tool_calls)))


class Line(Protocol):
    """What the fold keeps of a message: a SessionLine, or less of it (domain/sessions/resume.py LineShape)."""
    @property
    def message_id(self) -> str: ...
    def numbered(self, seq: int) -> Self: ...
    def marked_sent(self) -> Self: ...


@dataclass(frozen=True)
class Step(Generic[L]):
    """One event of the session's stream as the fold needs it: its apply order, the lines an append lists (not
    numbered yet) with the append's agent and project, or the message a SessionMessageSent marks."""
    key: tuple[int, int]  # (tx_id, position)
    position: int
    lines: tuple[L, ...] = ()
    owner: tuple[str | None, str | None] | None = None  # an append's (agent_id, project)
    sent: str | None = None


def step_of(session_id: str, e: RecordedEvent, make: Callable[[SessionMessage, RecordedEvent], L]) -> Step[L]:
    """The event as a Step, each message it lists made a line by `make` (one event of another session: a Step that
    only counts toward the newest position)."""
    p = e.payload()
    key = (e.tx_id, e.position)
    if isinstance(p, SessionMessagesAppended) and p.session_id == session_id:
        return Step(key, e.position, tuple(make(m, e) for m in p.messages), (p.agent_id, p.project))
    if isinstance(p, SessionMessageSent) and p.session_id == session_id:
        return Step(key, e.position, sent=p.message_id)
    return Step(key, e.position)


@dataclass(frozen=True)
class Folded(Generic[L]):
    agent_id: str | None
    project: str | None
    lines: tuple[L, ...]
    last_position: int | None


@dataclass(frozen=True)
class SessionLog(Generic[L]):
    """A session as its log says: its lines whole (SessionLine), or their shapes only (resume's LineShape)."""
    session_id: str
    agent_id: str | None
    project: str | None
    lines: tuple[L, ...]
    last_position: int | None  # of the newest event folded


def fold_steps(steps: Iterable[Step[L]]) -> Folded[L]:
    """The fold's rules (the module's docstring) over steps in any order."""
    lines: dict[str, L] = {}
    owner: tuple[str | None, str | None] | None = None
    last: int | None = None
    for s in sorted(steps, key=lambda s: s.key):
        if s.owner is not None:
            owner = owner or s.owner
            for line in s.lines:
                if line.message_id not in lines:
                    lines[line.message_id] = line.numbered(len(lines) + 1)
        elif s.sent is not None and s.sent in lines:
            lines[s.sent] = lines[s.sent].marked_sent()
        last = s.position if last is None else max(last, s.position)
    agent_id, project = owner or (None, None)
    return Folded(agent_id, project, tuple(lines.values()), last)


def fold(session_id: str, events: Iterable[RecordedEvent]) -> SessionLog[SessionLine]:
    """The session's messages from its stream's events (see the module's docstring)."""
    folded = fold_steps(step_of(session_id, e, lambda m, e: line_of(m, 0, e.occurred_at)) for e in events)
    return SessionLog(session_id, folded.agent_id, folded.project, folded.lines, folded.last_position)


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


__all__ = ["Folded", "Line", "MessageState", "SessionLine", "SessionLog", "Step", "fold", "fold_steps", "line_of",
           "message_state", "message_text", "resolve_tool_names", "step_of", "tool_calls_text", "utc"]
