"""A verbatim transcript parsed into turns, keeping every byte: its lines (with their line endings, so that
`"".join(lines)` is the transcript) and each turn's line range.

Two formats, told apart by the first non-blank line (or named by the caller):

- "jsonl": one message per line, `{"role": ..., "content": ..., "timestamp"?: ...}`, the OpenAI chat shape too
  (content as a list of parts, `tool_calls`, `name`, `tool_call_id`; `created_at` or `time` for the timestamp).
- "text": `[timestamp] ROLE: text` starts a turn; any other line (blank ones too) continues the previous turn.

Blank lines before the first turn belong to it; in JSONL a blank line belongs to the turn before it. Lines are
split on "\\n" only (a "\\r\\n" ending stays on its line). Anything else is refused with its line number.
Pure: no IO.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

Format = Literal["jsonl", "text"]
FORMATS: tuple[Format, ...] = ("jsonl", "text")
MAX_ROLE_CHARS = 64
_LINE = re.compile(r"[^\n]*\n|[^\n]+\Z")
_HEADER = re.compile(r"\[(?P<ts>[^\]\n]{1,64})\][ \t]*(?P<role>[A-Za-z][\w.-]{0,63}):(?:[ \t]?)(?P<text>.*?)\r?\n?\Z",
                     re.DOTALL)
_ROLE = re.compile(r"[A-Za-z][\w.-]{0,63}\Z")
_TIMESTAMP_KEYS = ("timestamp", "created_at", "time")


class TranscriptError(ValueError):
    """Why a transcript cannot be parsed (the first problem, with its line number)."""


@dataclass(frozen=True)
class Turn:
    index: int  # 0-based, in transcript order
    first_line: int  # 1-based, inclusive
    last_line: int
    role: str  # lower case
    content: str  # the message's text (for the index; the verbatim text is the lines)
    timestamp: str | None

    def rendered(self) -> str:
        return f"{self.role}: {self.content}"


@dataclass(frozen=True)
class Transcript:
    format: Format
    lines: list[str]
    turns: list[Turn]

    @property
    def text(self) -> str:
        return "".join(self.lines)


def split_lines(text: str) -> list[str]:
    """The lines of `text`, each with its "\\n" (the last one without, when the text does not end with one)."""
    return _LINE.findall(text)


def _blank(line: str) -> bool:
    return not line.strip()


def detect_format(lines: list[str]) -> Format:
    first = next((line for line in lines if not _blank(line)), "")
    return "jsonl" if first.lstrip("\ufeff \t").startswith("{") else "text"


def _stamp(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise TranscriptError("timestamp must be a string or a number")
    return str(value)


def _parts_text(content: Any, where: str) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict):
                text = part.get("text", part.get("content"))
                if isinstance(text, str):
                    texts.append(text)
            else:
                raise TranscriptError(f"{where}: content parts are objects or strings")
        return "\n".join(texts)
    raise TranscriptError(f"{where}: content must be a string, a list of parts or null")


def _tool_calls_text(calls: Any) -> str:
    if not isinstance(calls, list):
        return ""
    out = []
    for call in calls:
        fn = call.get("function") if isinstance(call, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            args = fn.get("arguments")
            out.append(f"{fn['name']}({args if isinstance(args, str) else json.dumps(args)})")
    return "\n".join(out)


def _message(line: str, number: int) -> tuple[str, str, str | None]:
    where = f"line {number}"
    try:
        data = json.loads(line)
    except ValueError as exc:
        raise TranscriptError(f"{where}: not a JSON object ({exc})") from None
    if not isinstance(data, dict):
        raise TranscriptError(f"{where}: a message is a JSON object with a role")
    role = data.get("role")
    if not isinstance(role, str) or not _ROLE.match(role):
        raise TranscriptError(f"{where}: role must be a word of at most {MAX_ROLE_CHARS} characters")
    if "content" not in data and "tool_calls" not in data:
        raise TranscriptError(f"{where}: a message has content (or tool_calls)")
    content = _parts_text(data.get("content"), where)
    calls = _tool_calls_text(data.get("tool_calls"))
    if calls:
        content = f"{content}\n{calls}" if content else calls
    if isinstance(data.get("name"), str):
        content = f"{data['name']}: {content}"
    stamp = next((data[k] for k in _TIMESTAMP_KEYS if data.get(k) is not None), None)
    try:
        return role.lower(), content, _stamp(stamp)
    except TranscriptError as exc:
        raise TranscriptError(f"{where}: {exc}") from None


def _turns(lines: list[str], fmt: Format, line_offset: int, turn_offset: int) -> list[Turn]:
    starts: list[tuple[int, str, str, str | None]] = []  # (0-based line, role, content, timestamp)
    continued: dict[int, list[str]] = {}  # text turns' continuation lines, by their start
    for i, line in enumerate(lines):
        number = line_offset + i + 1
        body = line.lstrip("\ufeff") if i == 0 else line
        if fmt == "jsonl":
            if _blank(body):
                continue
            starts.append((i, *_message(body, number)))
            continue
        header = _HEADER.match(body)
        if header:
            starts.append((i, header["role"].lower(), header["text"], header["ts"].strip()))
            continued[i] = []
        elif starts:
            continued[starts[-1][0]].append(body.rstrip("\r\n"))
        elif not _blank(body):
            raise TranscriptError(f"line {number}: expected a turn, `[timestamp] ROLE: text`, before any other line")
    if not starts:
        raise TranscriptError("the transcript holds no turn")
    turns = []
    for n, (i, role, content, stamp) in enumerate(starts):
        first = 0 if n == 0 else i  # leading blank lines belong to the first turn
        last = starts[n + 1][0] - 1 if n + 1 < len(starts) else len(lines) - 1
        if fmt == "text" and continued.get(i):
            content = "\n".join([content, *continued[i]]).rstrip("\n")
        turns.append(Turn(turn_offset + n, line_offset + first + 1, line_offset + last + 1, role, content, stamp))
    return turns


def parse_transcript(text: str, fmt: Format | None = None) -> Transcript:
    """The transcript's lines and turns (TranscriptError names the first line that is neither)."""
    lines = split_lines(text)
    fmt = fmt or detect_format(lines)
    if fmt not in FORMATS:
        raise TranscriptError(f"format must be one of {', '.join(FORMATS)}")
    return Transcript(fmt, lines, _turns(lines, fmt, 0, 0))


def parse_chunk(text: str, fmt: Format, line_offset: int = 0, turn_offset: int = 0) -> list[Turn]:
    """The turns of one chunk (whole turns, as chunk_transcript cut them), numbered from the given offsets."""
    return _turns(split_lines(text), fmt, line_offset, turn_offset)


def timestamp_of(value: str | None) -> datetime | None:
    """A turn's timestamp as a time when it reads as ISO 8601 or epoch seconds; None otherwise (it stays text)."""
    if not value:
        return None
    try:
        return datetime.fromtimestamp(float(value), UTC)
    except (ValueError, OverflowError, OSError):
        pass
    try:
        parsed = datetime.fromisoformat(value.strip().replace(" ", "T", 1) if "T" not in value else value.strip())
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


__all__ = ["FORMATS", "Format", "Transcript", "TranscriptError", "Turn", "detect_format", "parse_chunk",
           "parse_transcript", "split_lines", "timestamp_of"]
