"""Transcripts: PUT /v1/transcripts/{id} (the verbatim text), GET /v1/transcripts, GET /v1/transcripts/{id}
(the text, byte for byte), GET /v1/transcripts/{id}/lines, the drill GET /v1/transcripts/{id}/chunks/{ord}."""

from __future__ import annotations

import uuid
from datetime import datetime

from engramlog_client.models.common import Response


class TranscriptWritten(Response):
    transcript_id: str
    version: int
    content_hash: str
    format: str  # jsonl | text
    changed: bool  # False: the text was already the current version; nothing was appended
    chunks: int
    chunks_written: int  # only the chunks new to its log are written
    chunks_reused: int
    lines: int
    turns: int
    bytes: int
    position: int | None = None


class TranscriptListed(Response):
    transcript_id: str
    version: int
    content_hash: str
    format: str
    chunks: int
    lines: int
    turns: int
    bytes: int
    started_at: datetime | None = None
    ended_at: datetime | None = None
    updated_at: datetime


class TranscriptsList(Response):
    transcripts: list[TranscriptListed]
    next_after: str | None = None  # pass it back as `after` for the next page


class TranscriptText(Response):
    """The current version's verbatim text (from the answer's body and its X-Transcript-* headers)."""

    transcript_id: str
    version: int
    content_hash: str
    format: str
    text: str


class TranscriptLines(Response):
    transcript_id: str
    version: int
    first: int  # 1-based, inclusive
    last: int
    lines_total: int
    text: str  # exactly those lines, line endings kept


class TranscriptChunk(Response):
    transcript_id: str
    ord: int
    content_hash: str
    version: int
    text: str
    lines: list[int]  # [first, last]
    turns: list[int]
    started_at: datetime | None = None
    ended_at: datetime | None = None
    status: str


class ChunkDrilled(Response):
    chunk: TranscriptChunk
    drill_id: uuid.UUID
    position: int
