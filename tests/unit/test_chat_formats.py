"""The chat export parsers (domain/imports/): ChatGPT's mapping walked from current_node, Claude's chat_messages,
OpenAI-style JSONL in both shapes, times, ids, detection, the JSONL round trip the CLI relies on, and bad input
refused with where it is."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from domain.imports.chat_formats import detect, parse_chat
from domain.imports.conversations import ChatFormatError
from domain.transcripts.parse import parse_transcript

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "chat"


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def test_chatgpt_follows_the_current_branch_and_keeps_visible_text() -> None:
    kayak, bread = parse_chat(fixture("chatgpt_conversations.json"))
    assert kayak.session_id == "chatgpt:6774f1a0-0c1e-8005-9d3b-2f6c1a9e0b11" and kayak.title == "Kayak trip planning"
    # the hidden system node, the abandoned branch (u2old, a2old) and the reasoning node (t2) are left out
    assert [m.message_id for m in kayak.messages] == ["u1", "a1", "u2", "c3", "x3", "a4"]
    assert [m.role for m in kayak.messages] == ["user", "assistant", "user", "assistant", "tool", "assistant"]
    assert kayak.messages[2].content == "Here is my route map. How cold is the water in June?"  # image part dropped
    assert kayak.messages[4].tool_name == "browser" and "55-60 F" in kayak.messages[4].content
    assert kayak.messages[0].created_at == datetime(2025, 1, 1, 10, 0, 0, 500000, tzinfo=UTC)
    assert kayak.messages[4].created_at == kayak.messages[3].created_at  # no create_time: the one before it's
    # without current_node: down the last child from the root
    assert [m.content for m in bread.messages][0].startswith("My sourdough starter is called Clint")
    assert bread.created_at == datetime.fromtimestamp(1736000000, UTC)


def test_claude_messages_in_order_with_text_blocks() -> None:
    green, empty = parse_chat(fixture("claude_conversations.json"))
    assert green.session_id == "claude:0b3c6c1e-2f4d-4d7e-9a51-3c2f8e7d6a10" and green.title == "Greenhouse watering"
    assert [m.role for m in green.messages] == ["user", "assistant", "user", "assistant"]
    assert green.messages[1].content == "Early watering is good: less evaporation."  # text blocks, not thinking
    assert green.messages[3].created_at == datetime(2025, 3, 4, 8, 20, 12, 512311, tzinfo=UTC)
    assert empty.messages == () and empty.title is None
    wrapped = json.dumps({"conversations": json.loads(fixture("claude_conversations.json"))})
    assert parse_chat(wrapped, "claude") == [green, empty]


def test_jsonl_both_shapes() -> None:
    ft, thread = parse_chat(fixture("openai_messages.jsonl"))
    assert ft.session_id == "jsonl:ft-001" and [m.message_id for m in ft.messages] == ["m0", "m1", "m2"]
    # the system prompt has no time: the first one given
    assert ft.messages[0].created_at == ft.messages[1].created_at == datetime(2025, 5, 1, 7, tzinfo=UTC)
    assert thread.session_id == "jsonl:thread-42"
    assert [m.message_id for m in thread.messages] == ["q1", "r1", "t1", "r2"]
    assert thread.messages[1].content == 'calendar_update({"time": "09:40"})'
    assert thread.messages[2].tool_name == "calendar_update"
    assert thread.messages[0].created_at == datetime.fromtimestamp(1746169200, UTC)


def test_a_line_without_id_is_named_by_its_messages() -> None:
    line = json.dumps({"messages": [{"role": "user", "content": "hello"}]})
    [a] = parse_chat(line)
    [b] = parse_chat(line + "\n")
    [c] = parse_chat(json.dumps({"messages": [{"role": "user", "content": "hello!"}]}))
    assert a.session_id == b.session_id != c.session_id


@pytest.mark.parametrize("name", ["chatgpt_conversations.json", "claude_conversations.json",
                                  "openai_messages.jsonl"])
def test_the_jsonl_round_trip_names_the_same_sessions(name: str) -> None:
    parsed = parse_chat(fixture(name))
    lines = "".join(json.dumps(c.as_json()) + "\n" for c in parsed)
    assert parse_chat(lines, "jsonl") == parsed


def test_detection_and_transcript_rendering() -> None:
    assert detect(fixture("chatgpt_conversations.json").decode()) == "chatgpt"
    assert detect(fixture("claude_conversations.json").decode()) == "claude"
    assert detect(fixture("openai_messages.jsonl").decode()) == "jsonl"
    kayak = parse_chat(fixture("chatgpt_conversations.json"))[0]
    t = parse_transcript(kayak.transcript(), "jsonl")
    assert [(turn.role, turn.content) for turn in t.turns] == [(m.role, m.content) for m in kayak.messages]
    assert kayak.transcript() == parse_chat(fixture("chatgpt_conversations.json"))[0].transcript()


def test_odd_ids_are_hashed_deterministically() -> None:
    line = json.dumps({"id": "a/b c" * 40, "messages": [{"role": "user", "content": "x", "message_id": "\n"}]})
    [c] = parse_chat(line)
    assert c.session_id.startswith("jsonl:h-") and len(c.session_id) == len("jsonl:h-") + 32
    assert c.messages[0].message_id.startswith("h-") and parse_chat(line)[0] == c


@pytest.mark.parametrize(("raw", "fmt", "reason"), [
    (b"", "auto", "empty"),
    (b"caf\xe9", "auto", "UTF-8"),
    (b"[1, 2", "auto", "not JSON"),
    (b'{"a": 1}', "chatgpt", "array of conversations"),
    (b'[{"title": "x"}]', "auto", "--format"),
    (b'[{"mapping": {}}]', "chatgpt", "conversation 0: a ChatGPT conversation has an `id`"),
    (b'[{"id": "c", "mapping": []}]', "chatgpt", "`mapping` is an object"),
    (b'[{"uuid": "c", "chat_messages": [{"sender": "robot", "text": "x"}]}]', "claude", "message 0: sender"),
    (b'[{"uuid": "c", "chat_messages": [{"sender": "human", "text": "x", "created_at": "soon"}]}]', "claude",
     "is not a time"),
    (b'{"messages": [{"role": "wizard", "content": "x"}]}', "jsonl", "line 1: message 0: role"),
    (b'{"role": "user", "content": "x"}', "jsonl", "line 1: a message line names its conversation"),
    (b'{"messages": []}\nnot json', "jsonl", "line 2: not a JSON object"),
    (b'{"id": "a", "messages": []}\n{"id": "a", "messages": []}', "jsonl", "appears twice"),
    (b'{"id": "a", "messages": [{"role": "user", "content": "x", "message_id": "1"}, '
     b'{"role": "user", "content": "y", "message_id": "1"}]}', "jsonl", "message id '1' appears twice"),
    (b'{"messages": []}', "word", "format must be one of"),
    (b'{"id": "s", "messages": [{"role": "user", "content": "half \\ud800"}]}', "jsonl", "lone surrogate"),
    (b'{"id": "s", "messages": [{"role": "user", "content": "nul \\u0000"}]}', "jsonl", "without NUL"),
])
def test_bad_exports_are_refused_with_where(raw: bytes, fmt: str, reason: str) -> None:
    with pytest.raises(ChatFormatError, match=None) as info:
        parse_chat(raw, fmt)
    assert reason in str(info.value), str(info.value)
