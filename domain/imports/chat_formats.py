"""Chat exports parsed into conversations (domain/imports/conversations.py). Pure: no IO.

- "chatgpt": ChatGPT's `conversations.json` (Settings → Data controls → Export): a JSON array of conversations
  (`id` / `conversation_id`, `title`, `create_time` epoch seconds, `current_node`, `mapping`: node id → {parent,
  children, message: {author.role, author.name, content: {content_type, parts | text | result}, create_time,
  metadata}}). The conversation is the path from `current_node` back to the root (the branch the user last saw;
  without `current_node`, the last child at each fork). Kept: user, assistant, system and tool messages with text
  (a part's string, or its `text`); left out: empty ones, those the export marks hidden
  (`is_visually_hidden_from_conversation`) and reasoning (`thoughts`, `reasoning_recap`) and the user's custom
  instructions (`user_editable_context`). A tool message's `author.name` is its tool_name.
- "claude": Claude's `conversations.json` (Settings → Privacy → Export data): a JSON array of conversations
  (`uuid`, `name`, `created_at` ISO, `chat_messages`: [{`uuid`, `sender` human | assistant, `text`, `content`:
  [{type: text, text} ...], `created_at`}]), or an object holding that array as `conversations`. A message's text is
  its `text`, else its text content blocks joined; messages in their listed order.
- "jsonl": OpenAI-style message JSONL (domain/imports/jsonl.py).

"auto" tells them apart: a first non-blank character `{` whose line is a whole JSON value → jsonl; else the JSON's
conversations hold `mapping` → chatgpt, `chat_messages` → claude.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from domain.imports.conversations import (
    ChatFormatError,
    Conversation,
    ImportedMessage,
    checked,
    message_id,
    time_of,
    with_times,
)
from domain.imports.jsonl import parse_jsonl

ChatFormat = Literal["chatgpt", "claude", "jsonl"]
CHAT_FORMATS: tuple[str, ...] = ("chatgpt", "claude", "jsonl", "auto")
_ROLES = ("user", "assistant", "system", "tool")
_SKIPPED_CONTENT = ("thoughts", "reasoning_recap", "user_editable_context", "model_editable_context")
_CLAUDE_SENDERS = {"human": "user", "user": "user", "assistant": "assistant", "system": "system"}


def decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8").lstrip("\ufeff")
    except UnicodeDecodeError as exc:
        raise ChatFormatError(f"the export is not UTF-8 text (byte {exc.start})") from None


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ChatFormatError(f"the export is not JSON ({exc})") from None


def _conversations_of(data: Any) -> list[Any]:
    if isinstance(data, dict) and isinstance(data.get("conversations"), list):
        data = data["conversations"]
    if not isinstance(data, list):
        raise ChatFormatError("the export is a JSON array of conversations (or an object with `conversations`)")
    return data


def detect(text: str) -> ChatFormat:
    first = text.lstrip()
    if not first:
        raise ChatFormatError("the export is empty")
    if first.startswith("{"):
        try:
            json.loads(first.split("\n", 1)[0])
            return "jsonl"  # a first line that is a whole JSON object: one object a line
        except ValueError:
            pass
    items = _conversations_of(_json(text))
    head = next((c for c in items if isinstance(c, dict)), None)
    if head is None:
        raise ChatFormatError("the export holds no conversation")
    if "mapping" in head:
        return "chatgpt"
    if "chat_messages" in head:
        return "claude"
    raise ChatFormatError("not a ChatGPT export (conversations with `mapping`), a Claude export (with "
                          "`chat_messages`) nor JSONL: name the format with --format")


def parse_chat(raw: bytes | str, fmt: str = "auto") -> list[Conversation]:
    """The export's conversations in its order (ChatFormatError: the first problem, where it is)."""
    if fmt not in CHAT_FORMATS:
        raise ChatFormatError(f"format must be one of {', '.join(CHAT_FORMATS)}")
    text = decode(raw) if isinstance(raw, bytes) else raw.lstrip("\ufeff")
    chosen = detect(text) if fmt == "auto" else fmt
    if chosen == "jsonl":
        return checked(parse_jsonl(text))
    items = _conversations_of(_json(text))
    parse = _chatgpt if chosen == "chatgpt" else _claude
    out = []
    for n, item in enumerate(items):
        if not isinstance(item, dict):
            raise ChatFormatError(f"conversation {n}: a conversation is a JSON object")
        out.append(parse(item, f"conversation {n}"))
    return checked(out)


def _text_of(content: Any) -> str:
    """A ChatGPT message's text: its parts' strings (and parts' `text`), else its `text`, else its `result`."""
    if not isinstance(content, dict):
        return ""
    parts = content.get("parts")
    if isinstance(parts, list):
        texts = [p if isinstance(p, str) else p.get("text") if isinstance(p, dict) else None for p in parts]
        return "\n".join(t for t in texts if isinstance(t, str) and t)
    for key in ("text", "result"):
        if isinstance(content.get(key), str):
            return str(content[key])
    return ""


def _path(mapping: dict[str, Any], current: Any, where: str) -> list[dict[str, Any]]:
    """The nodes from the root to `current` (or, without it, down the last child at each fork)."""
    nodes: list[dict[str, Any]] = []
    seen: set[str] = set()
    at: Any = current
    if isinstance(current, str) and current in mapping:
        while isinstance(at, str) and at in mapping:
            if at in seen:
                raise ChatFormatError(f"{where}: the mapping's parents form a cycle at node {at!r}")
            seen.add(at)
            node = mapping[at]
            if not isinstance(node, dict):
                raise ChatFormatError(f"{where}: mapping node {at!r} is not an object")
            nodes.append(node)
            at = node.get("parent")
        return nodes[::-1]
    roots = [k for k, v in mapping.items() if isinstance(v, dict) and v.get("parent") not in mapping]
    at = roots[0] if roots else None
    while isinstance(at, str) and at in mapping and at not in seen:
        seen.add(at)
        node = mapping[at]
        if not isinstance(node, dict):
            raise ChatFormatError(f"{where}: mapping node {at!r} is not an object")
        nodes.append(node)
        children = node.get("children")
        at = children[-1] if isinstance(children, list) and children else None
    return nodes


def _chatgpt(item: dict[str, Any], where: str) -> Conversation:
    cid = item.get("conversation_id") or item.get("id")
    if not isinstance(cid, str) or not cid:
        raise ChatFormatError(f"{where}: a ChatGPT conversation has an `id` (or `conversation_id`)")
    where = f"{where} ({cid})"
    mapping = item.get("mapping")
    if not isinstance(mapping, dict):
        raise ChatFormatError(f"{where}: `mapping` is an object of message nodes")
    messages: list[ImportedMessage] = []
    for node in _path(mapping, item.get("current_node"), where):
        m = node.get("message")
        if not isinstance(m, dict):
            continue  # the root, or a node without a message
        author: dict[str, Any] = m["author"] if isinstance(m.get("author"), dict) else {}
        role = author.get("role")
        content = m.get("content")
        meta: dict[str, Any] = m["metadata"] if isinstance(m.get("metadata"), dict) else {}
        if role not in _ROLES or meta.get("is_visually_hidden_from_conversation") or (
                isinstance(content, dict) and content.get("content_type") in _SKIPPED_CONTENT):
            continue
        text = _text_of(content)
        if not text.strip():
            continue
        name = author.get("name")
        messages.append(ImportedMessage(
            message_id(m.get("id") or node.get("id"), len(messages)), role, text,
            time_of(m.get("create_time"), f"{where}: message {m.get('id')!r}: create_time"),
            name[:128] if role == "tool" and isinstance(name, str) and name else None))
    start = time_of(item.get("create_time"), f"{where}: create_time")
    title = item.get("title") if isinstance(item.get("title"), str) else None
    return Conversation("chatgpt", cid, title, start, with_times(messages, start))


def _claude_text(m: dict[str, Any]) -> str:
    if isinstance(m.get("text"), str) and m["text"].strip():
        return str(m["text"])
    blocks = m.get("content")
    if not isinstance(blocks, list):
        return ""
    return "\n".join(b["text"] for b in blocks if isinstance(b, dict) and b.get("type") == "text"
                     and isinstance(b.get("text"), str) and b["text"])


def _claude(item: dict[str, Any], where: str) -> Conversation:
    cid = item.get("uuid") or item.get("id")
    if not isinstance(cid, str) or not cid:
        raise ChatFormatError(f"{where}: a Claude conversation has a `uuid`")
    where = f"{where} ({cid})"
    raw = item.get("chat_messages")
    if not isinstance(raw, list):
        raise ChatFormatError(f"{where}: `chat_messages` is a list of messages")
    messages: list[ImportedMessage] = []
    for i, m in enumerate(raw):
        if not isinstance(m, dict):
            raise ChatFormatError(f"{where}: message {i} is not an object")
        role = _CLAUDE_SENDERS.get(str(m.get("sender")))
        if role is None:
            raise ChatFormatError(f"{where}: message {i}: sender is human or assistant, not {m.get('sender')!r}")
        text = _claude_text(m)
        if not text.strip():
            continue
        messages.append(ImportedMessage(message_id(m.get("uuid"), len(messages)), role, text,
                                        time_of(m.get("created_at"), f"{where}: message {i}: created_at")))
    start = time_of(item.get("created_at"), f"{where}: created_at")
    title = item.get("name") if isinstance(item.get("name"), str) else None
    return Conversation("claude", cid, title or None, start, with_times(messages, start))


__all__ = ["CHAT_FORMATS", "ChatFormat", "decode", "detect", "parse_chat"]
