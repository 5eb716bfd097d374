"""Transcripts' events: one TranscriptChunksPut per version of a verbatim transcript, carrying only the chunks whose
text the transcript's log does not hold yet (delta-sync by content hash), and the version's full ordered list of
chunk hashes, so the verbatim text is the concatenation of the chunks those hashes name (in this event or an
earlier one on the stream).

Stream: transcript-<uuid5 of the id> (domain/transcripts/ids.py transcript_stream); a put is appended at the
stream's current version, so of two concurrent puts only one wins. A transcript's version is the stream version.
A chunk's decay decisions go on transcript-chunk-<chunk_id> (chunk_stream).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import Field, field_validator, model_validator

from domain.events.base import DecayStatus, EventSchema, SystemEvent, check_metadata
from domain.text import content_hash
from domain.transcripts.ids import is_content_hash, transcript_id_problem
from domain.transcripts.parse import Format


class TranscriptChunk(EventSchema):
    content_hash: str  # sha256 of text, checked
    text: str  # the exact slice of the transcript: whole lines of whole turns

    @model_validator(mode="after")
    def _hash_matches(self) -> TranscriptChunk:
        if content_hash(self.text) != self.content_hash:
            raise ValueError("content_hash is not the sha256 of text")
        return self


class TranscriptChunksPut(EventSchema):
    """A producer put a transcript's text (a new version). Stream: transcript_stream(transcript_id)."""

    transcript_id: str
    format: Format
    content_hash: str  # sha256 of the whole text
    chunk_hashes: list[str] = Field(min_length=1)  # the version's chunks, in order (a hash may repeat)
    chunks: list[TranscriptChunk] = Field(default_factory=list)  # the texts new to the stream, each hash once
    turns: int = Field(default=0, ge=0)  # how many turns the version holds (what an unchanged put answers)
    metadata: dict[str, Any] = Field(default_factory=dict)

    _metadata = field_validator("metadata")(check_metadata)

    @field_validator("transcript_id")
    @classmethod
    def _id(cls, value: str) -> str:
        problem = transcript_id_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _consistent(self) -> TranscriptChunksPut:
        if not is_content_hash(self.content_hash) or not all(is_content_hash(h) for h in self.chunk_hashes):
            raise ValueError("hashes are sha256 hex digests")
        carried = [c.content_hash for c in self.chunks]
        if len(set(carried)) != len(carried):
            raise ValueError("a chunk is carried twice")
        if not set(carried) <= set(self.chunk_hashes):
            raise ValueError("a carried chunk is not in chunk_hashes")
        return self


class TranscriptChunkStatusChanged(SystemEvent):
    """System decision taken with a clock (decay of an unreferenced chunk, workers/reference_decay.py): a replay
    reproduces it exactly. Stream: chunk_stream(chunk_id)."""

    chunk_id: uuid.UUID
    transcript_id: str
    ord: int = Field(ge=0)
    content_hash: str
    from_status: DecayStatus
    to_status: DecayStatus
    reason: str
    clock: datetime
    inputs: dict[str, Any] = Field(default_factory=dict)


def chunk_stream(chunk: uuid.UUID) -> str:
    return f"transcript-chunk-{chunk}"


__all__ = ["TranscriptChunk", "TranscriptChunkStatusChanged", "TranscriptChunksPut", "chunk_stream"]
