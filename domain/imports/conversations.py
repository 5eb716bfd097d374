"""An imported conversation, whatever export it came from: its messages in order with their times, and the ids
engramlog derives from it (the session's and transcript's id, each message's id), so a re-import names the same
things and appends nothing. Pure: no IO.

Ids are deterministic: the session (and its transcript: the same id, so the privacy gate's exclude_sessions names
both) is `<source>:<conversation id>`; an id that is not letters, digits and `. _ : @ + -`, or too long, is replaced
by `<source>:h-<its sha256, 32 hex>`. A message keeps its export's id (the ChatGPT node's, the Claude message's
uuid, the JSONL message's message_id) or, without one, `m<its index>` in the conversation.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from domain.events.base import has_lone_surrogate
from domain.events.sessions import MAX_SESSION_ID_CHARS
from domain.text import has_nul

MAX_MESSAGE_ID_CHARS = 128
_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@+-]*\Z")
SOURCE = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}\Z")


class ChatFormatError(ValueError):
    """Why an export cannot be imported: the first problem, where it is (conversation, message, line)."""


@dataclass(frozen=True)
class ImportedMessage:
    message_id: str
    role: str  # user | assistant | system | tool
    content: str
    created_at: datetime | None  # None: the export gives no time for it nor before it
    tool_name: str | None = None

    def as_session_message(self) -> dict[str, Any]:
        """The message as the session write path takes it (services/sessions.py append_messages)."""
        out: dict[str, Any] = {"message_id": self.message_id, "role": self.role, "content": self.content,
                               "created_at": self.created_at}
        if self.tool_name:
            out["tool_name"] = self.tool_name
        return out


@dataclass(frozen=True)
class Conversation:
    source: str  # chatgpt | claude | jsonl, or what a JSONL line names
    conversation_id: str  # the export's own id
    title: str | None
    created_at: datetime | None
    messages: tuple[ImportedMessage, ...]

    @property
    def session_id(self) -> str:
        """The session's id, which is the transcript's too."""
        return f"{self.source}:{safe_id(self.conversation_id, MAX_SESSION_ID_CHARS - len(self.source) - 1)}"

    def transcript(self) -> str:
        """The conversation as a JSONL transcript (domain/transcripts/parse.py's "jsonl": one message a line, its
        time as `timestamp`), the same text for the same conversation, so a re-put appends nothing."""
        lines = []
        for m in self.messages:
            line: dict[str, Any] = {"role": m.role, "content": m.content}
            if m.created_at is not None:
                line["timestamp"] = m.created_at.isoformat()
            lines.append(json.dumps(line, ensure_ascii=False) + "\n")
        return "".join(lines)

    def as_json(self) -> dict[str, Any]:
        """The conversation as one line of the JSONL format (domain/imports/jsonl.py parses it back equal)."""
        out: dict[str, Any] = {"source": self.source, "id": self.conversation_id, "messages": [
            {k: v for k, v in {"message_id": m.message_id, "role": m.role, "content": m.content,
                               "created_at": m.created_at.isoformat() if m.created_at else None,
                               "tool_name": m.tool_name}.items() if v is not None}
            for m in self.messages]}
        if self.title is not None:
            out["title"] = self.title
        if self.created_at is not None:
            out["created_at"] = self.created_at.isoformat()
        return out


def safe_id(value: str, limit: int) -> str:
    """`value` when it can name a session, a transcript and a message as it is, else a hash of it."""
    if len(value) <= limit and _SAFE_ID.match(value):
        return value
    return f"h-{hashlib.sha256(value.encode('utf-8', 'surrogatepass')).hexdigest()[:32]}"


def message_id(value: object, index: int) -> str:
    """A message's id: the export's (hashed when it is long or holds control characters), else `m<index>`."""
    if value is None or value == "":
        return f"m{index}"
    text = str(value)
    if len(text) > MAX_MESSAGE_ID_CHARS or any(ord(c) < 32 or ord(c) == 127 for c in text):
        return f"h-{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:32]}"
    return text


def checked(conversations: list[Conversation]) -> list[Conversation]:
    """The conversations, refused when two name the same session, one names a message twice, or a text is not
    one the log can hold (a lone surrogate, NUL)."""
    seen: set[str] = set()
    for n, c in enumerate(conversations):
        for i, m in enumerate(c.messages):
            if has_lone_surrogate([m.content, m.message_id, m.tool_name]) or has_nul([m.content, m.tool_name]):
                raise ChatFormatError(f"conversation {n} ({c.conversation_id!r}): message {i} ({m.message_id!r}): "
                                      "text must be valid Unicode without NUL (a lone surrogate \\ud800-\\udfff "
                                      "or \\u0000 is not)")
        if has_lone_surrogate([c.conversation_id, c.title, c.source]) or has_nul([c.title]):
            raise ChatFormatError(f"conversation {n}: its id and title must be valid Unicode without NUL")
        if c.session_id in seen:
            raise ChatFormatError(f"conversation {n} ({c.conversation_id!r}): its id appears twice in the export")
        seen.add(c.session_id)
        ids = [m.message_id for m in c.messages]
        if len(set(ids)) != len(ids):
            twice = next(i for i in ids if ids.count(i) > 1)
            raise ChatFormatError(f"conversation {n} ({c.conversation_id!r}): message id {twice!r} appears twice")
    return conversations


def time_of(value: object, where: str) -> datetime | None:
    """An export's time: epoch seconds (a number) or ISO 8601 text (a time without zone read as UTC); None: absent."""
    if value is None or value == "":
        return None
    try:
        if isinstance(value, bool):
            raise ValueError
        if isinstance(value, int | float):
            return datetime.fromtimestamp(value, UTC)
        if isinstance(value, str):
            at = datetime.fromisoformat(value.strip())
            return at.astimezone(UTC) if at.tzinfo else at.replace(tzinfo=UTC)
    except (ValueError, OverflowError, OSError):
        pass
    raise ChatFormatError(f"{where}: {str(value)[:64]!r} is not a time (epoch seconds or ISO 8601)")


def with_times(messages: list[ImportedMessage], start: datetime | None) -> tuple[ImportedMessage, ...]:
    """Each message's time, or (none given) the one before it's, or the conversation's start, or (before any) the
    first time given: an export leaves some messages without one (ChatGPT's system and tool nodes, a JSONL system
    prompt), and a session's messages keep their order."""
    out = []
    last = start or next((m.created_at for m in messages if m.created_at is not None), None)
    for m in messages:
        if m.created_at is None and last is not None:
            m = ImportedMessage(m.message_id, m.role, m.content, last, m.tool_name)
        last = m.created_at or last
        out.append(m)
    return tuple(out)


__all__ = ["SOURCE", "ChatFormatError", "Conversation", "ImportedMessage", "checked", "message_id", "safe_id",
           "time_of", "with_times"]
