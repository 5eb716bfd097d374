"""Transcripts, pure (domain/transcripts/): both formats parse into turns keeping every byte, chunks are whole turns
and exact slices, appending turns changes only the last chunk(s), and what cannot be parsed is refused with its
line."""

from __future__ import annotations

import json

import pytest

from domain.transcripts.chunks import chunk_transcript
from domain.transcripts.ids import chunk_id, handle_chunk, transcript_id_problem
from domain.transcripts.parse import TranscriptError, parse_chunk, parse_transcript, split_lines, timestamp_of


def _text_turns(n: int, start: int = 0) -> str:
    return "".join(f"[2026-01-01T10:{i // 60 % 60:02d}:{i % 60:02d}Z] {'USER' if i % 2 == 0 else 'ASSISTANT'}: "
                   f"turn {i} about topic{i}\n" + ("  a continuation line\n" if i % 3 == 0 else "")
                   for i in range(start, start + n))


def test_text_lines_parse_into_turns_with_continuations() -> None:
    text = ("\n[2026-01-01 10:00] USER: how do I roll back?\nthe deploy failed\n\n"
            "[2026-01-01 10:01] ASSISTANT: run deploy undo\r\n")
    t = parse_transcript(text)
    assert t.format == "text" and t.text == text
    assert [(x.role, x.content, x.first_line, x.last_line) for x in t.turns] == [
        ("user", "how do I roll back?\nthe deploy failed", 1, 4), ("assistant", "run deploy undo", 5, 5)]
    assert t.turns[0].timestamp == "2026-01-01 10:00"
    assert timestamp_of(t.turns[0].timestamp) is not None and timestamp_of("not a time") is None


def test_jsonl_and_the_openai_shape_parse() -> None:
    lines = [{"role": "system", "content": "be brief"},
             {"role": "user", "content": [{"type": "text", "text": "weather in Oslo?"}], "timestamp": 1767261600},
             {"role": "assistant", "content": None,
              "tool_calls": [{"id": "c1", "type": "function",
                              "function": {"name": "weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
             {"role": "tool", "tool_call_id": "c1", "name": "weather", "content": "rain, 4C"}]
    text = "\n".join(json.dumps(m) for m in lines) + "\n\n"
    t = parse_transcript(text)
    assert t.format == "jsonl" and t.text == text
    assert [x.role for x in t.turns] == ["system", "user", "assistant", "tool"]
    assert t.turns[1].content == "weather in Oslo?" and t.turns[1].timestamp == "1767261600"
    assert "weather(" in t.turns[2].content and t.turns[3].content == "weather: rain, 4C"
    assert t.turns[3].last_line == 5  # the trailing blank line belongs to the turn before it


@pytest.mark.parametrize(("text", "fmt", "line"), [
    ("hello there\n[t] USER: hi\n", None, "line 1"),
    ('{"role": "user", "content": "a"}\nnot json\n', None, "line 2"),
    ('{"role": "user", "content": "a"}\n[1, 2]\n', None, "line 2"),
    ('{"content": "no role"}\n', None, "line 1"),
    ('{"role": "user"}\n', None, "line 1"),
    ('{"role": "user", "content": 5}\n', None, "line 1"),
    ("\n\n  \n", None, "no turn"),
    ("", None, "no turn"),
    ('{"role": "user", "content": "a"}\n', "text", "line 1"),
])
def test_unparseable_transcripts_are_refused_with_the_line(text: str, fmt: str | None, line: str) -> None:
    with pytest.raises(TranscriptError, match=line):
        parse_transcript(text, fmt)  # type: ignore[arg-type]


def test_chunks_are_whole_turns_and_exact_slices() -> None:
    text = _text_turns(37)
    t = parse_transcript(text)
    chunks = chunk_transcript(t, turns_per_chunk=5)
    assert "".join(c.text for c in chunks) == text
    assert [c.last_turn - c.first_turn + 1 for c in chunks] == [5] * 7 + [2]
    lines = split_lines(text)
    for c in chunks:
        assert c.text == "".join(lines[c.first_line - 1:c.last_line])
        assert [x.index for x in parse_chunk(c.text, "text", c.first_line - 1, c.first_turn)] == \
            list(range(c.first_turn, c.last_turn + 1))


def test_a_long_turn_is_a_chunk_of_its_own_and_never_split() -> None:
    text = "[1] USER: short\n[2] ASSISTANT: " + "x" * 500 + "\n[3] USER: short again\n"
    chunks = chunk_transcript(parse_transcript(text), turns_per_chunk=10, max_chars=100)
    assert [(c.first_turn, c.last_turn) for c in chunks] == [(0, 0), (1, 1), (2, 2)]
    assert "".join(c.text for c in chunks) == text


@pytest.mark.parametrize("trailing_newline", [True, False])
def test_appending_turns_changes_only_the_last_chunks(trailing_newline: bool) -> None:
    before = _text_turns(100)
    after = before + _text_turns(10, start=100)
    if not trailing_newline:
        before = before.rstrip("\n")
    old = chunk_transcript(parse_transcript(before))
    new = chunk_transcript(parse_transcript(after))
    same = sum(1 for a, b in zip(old, new, strict=False) if a.content_hash == b.content_hash)
    assert same >= len(old) - 1  # at most the last old chunk changed (it grew, or got its final newline)
    assert [c.content_hash for c in new[:same]] == [c.content_hash for c in old[:same]]
    changed = {c.content_hash for c in new} - {c.content_hash for c in old}
    assert 1 <= len(changed) <= len(new) - same


def test_ids_and_handles() -> None:
    assert transcript_id_problem("session-2026-01-01T10:00@host") is None
    for bad in ("", "a/b", "../x", "x" * 201, "-leading", "a b", 5):
        assert transcript_id_problem(bad) is not None
    h = "a" * 64
    assert handle_chunk("t", {"transcript_id": "s1", "ord": 3, "content_hash": h}) == chunk_id("t", "s1", 3, h)
    for bad in (None, {"transcript_id": "s1", "ord": -1, "content_hash": h},
                {"transcript_id": "s1", "ord": True, "content_hash": h},
                {"transcript_id": "s1", "ord": 1, "content_hash": "nope"}, {"ord": 1, "content_hash": h}):
        assert handle_chunk("t", bad) is None  # type: ignore[arg-type]
