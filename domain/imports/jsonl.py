"""OpenAI-style message JSONL, two shapes, mixed freely (one JSON object a line; blank lines skipped). Pure.

- one conversation a line: `{"messages": [{"role", "content", ...}, ...], "id"?, "title"?, "created_at"?,
  "source"?}`, the OpenAI chat fine-tuning shape. The conversation's id is the line's `id` (or `conversation_id`,
  `session_id`); a line without one is named by the hash of its messages (the same line, the same conversation;
  an edited line, another one).
- one message a line: `{"conversation_id" (or "session_id", "thread_id"), "role", "content", ...}`; the lines of
  one conversation id are its messages in file order (they need not be adjacent).

A message: `role` user | assistant | system | tool (`developer` read as system), `content` a string, a list of
parts (their text) or null with `tool_calls` (rendered `name(arguments)`); optional `message_id` (or `id`),
`created_at` (or `timestamp`, `create_time`: ISO 8601 or epoch seconds) and `tool_name` (or `name` on a tool
message). `source` (a lower-case word) names the session's prefix, `jsonl` by default: a conversation another
format parsed, written back by Conversation.as_json, is the same session (what `engramlog import chat` sends).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from domain.imports.conversations import (
    SOURCE,
    ChatFormatError,
    Conversation,
    ImportedMessage,
    message_id,
    time_of,
    with_times,
)

_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system", "tool": "tool"}
_CONVERSATION_KEYS = ("id", "conversation_id", "session_id")
_MESSAGE_CONVERSATION_KEYS = ("conversation_id", "session_id", "thread_id")
_TIME_KEYS = ("created_at", "timestamp", "create_time")


def _content(m: dict[str, Any], where: str) -> str:
    content = m.get("content")
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        texts = [p if isinstance(p, str) else p.get("text") if isinstance(p, dict) else None for p in content]
        text = "\n".join(t for t in texts if isinstance(t, str) and t)
    elif content is None:
        text = ""
    else:
        raise ChatFormatError(f"{where}: content is a string, a list of parts or null")
    calls = []
    for call in m.get("tool_calls") or ():
        fn = call.get("function") if isinstance(call, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            args = fn.get("arguments")
            calls.append(f"{fn['name']}({args if isinstance(args, str) else json.dumps(args)})")
    return "\n".join(t for t in (text, *calls) if t)


def _message(m: Any, index: int, where: str) -> ImportedMessage | None:
    if not isinstance(m, dict):
        raise ChatFormatError(f"{where}: a message is a JSON object with a role")
    role = _ROLES.get(str(m.get("role")))
    if role is None:
        raise ChatFormatError(f"{where}: role is one of {', '.join(_ROLES)}, not {str(m.get('role'))[:64]!r}")
    text = _content(m, where)
    if not text.strip():
        return None
    at = time_of(next((m[k] for k in _TIME_KEYS if m.get(k) is not None), None), f"{where}: created_at")
    tool = m.get("tool_name") or (m.get("name") if role == "tool" else None)
    return ImportedMessage(message_id(m.get("message_id") or m.get("id"), index), role, text, at,
                           tool[:128] if isinstance(tool, str) and tool else None)


def _source(line: dict[str, Any], where: str) -> str:
    source = line.get("source", "jsonl")
    if not isinstance(source, str) or not SOURCE.match(source):
        raise ChatFormatError(f"{where}: source is a lower-case word of at most 32 characters")
    return source


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _whole(line: dict[str, Any], where: str) -> Conversation:
    raw = line["messages"]
    if not isinstance(raw, list):
        raise ChatFormatError(f"{where}: messages is a list")
    cid = next((str(line[k]) for k in _CONVERSATION_KEYS if line.get(k) not in (None, "")), None)
    if cid is None:
        cid = hashlib.sha256(json.dumps(raw, sort_keys=True).encode("utf-8", "surrogatepass")).hexdigest()[:32]
    messages: list[ImportedMessage] = []
    for i, m in enumerate(raw):
        got = _message(m, len(messages), f"{where}: message {i}")
        if got is not None:
            messages.append(got)
    start = time_of(line.get("created_at"), f"{where}: created_at")
    return Conversation(_source(line, where), cid, _text(line.get("title")), start, with_times(messages, start))


def parse_jsonl(text: str) -> list[Conversation]:
    """The file's conversations, in the order each first appears."""
    order: list[tuple[str, str] | Conversation] = []  # a whole conversation, or the key of a message-lines one
    grouped: dict[tuple[str, str], list[ImportedMessage]] = {}
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        where = f"line {number}"
        try:
            data = json.loads(line)
        except ValueError as exc:
            raise ChatFormatError(f"{where}: not a JSON object ({exc})") from None
        if not isinstance(data, dict):
            raise ChatFormatError(f"{where}: a line is a JSON object (a conversation or a message)")
        if "messages" in data:
            order.append(_whole(data, where))
            continue
        cid = next((str(data[k]) for k in _MESSAGE_CONVERSATION_KEYS if data.get(k) not in (None, "")), None)
        if cid is None:
            raise ChatFormatError(f"{where}: a message line names its conversation (conversation_id) or the line "
                                  "is a conversation ({\"messages\": [...]})")
        key = (_source(data, where), cid)
        if key not in grouped:
            grouped[key] = []
            order.append(key)
        got = _message(data, len(grouped[key]), where)
        if got is not None:
            grouped[key].append(got)
    if not order:
        raise ChatFormatError("the export holds no conversation")
    return [item if isinstance(item, Conversation) else
            Conversation(item[0], item[1], None, None, with_times(grouped[item], None)) for item in order]


__all__ = ["parse_jsonl"]
