"""Put a verbatim transcript, and read it back from the log, byte for byte.

A put parses the text into turns and cuts it into turn-aligned chunks (domain/transcripts/), then appends one
TranscriptChunksPut on the transcript's stream at its current version (of two concurrent puts only one wins: 409)
carrying only the chunks whose text the stream does not hold yet, with the version's ordered chunk hashes: a
transcript put again after turns were appended writes its grown last chunk and the new ones, and reports the
others as reused. An unchanged transcript (same text, same format) appends nothing and says so. Every check runs
before anything is written.

The verbatim text is read from the log (read-your-writes, no projection to wait for): the chunks the newest
version names, each from the event that carried it. The stream is read page by page (eventstore/stream.py
stream_pages), newest first, so memory is bounded by a page and the answer, not the transcript's history.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine

from domain.errors import ContentTooLarge, InvalidPayload, NotFound
from domain.events import NewEvent, RecordedEvent, TranscriptChunksPut, validate_payload
from domain.text import content_hash, has_nul
from domain.transcripts.chunks import chunk_transcript
from domain.transcripts.ids import (
    MAX_TRANSCRIPT_BYTES,
    MAX_TRANSCRIPT_LINES,
    transcript_id_problem,
    transcript_stream,
)
from domain.transcripts.parse import FORMATS, Format, TranscriptError, parse_transcript, split_lines
from eventstore.append import append
from eventstore.stream import stream_pages
from infra.wake import appended


@dataclass(frozen=True)
class TranscriptWritten:
    transcript_id: str
    version: int
    content_hash: str
    format: str
    changed: bool  # False: the same text was already the current version (nothing appended)
    chunks: int
    chunks_written: int  # chunks whose text this put appended
    chunks_reused: int  # chunks already in the log (of this transcript), named by hash only
    lines: int
    turns: int
    bytes: int
    position: int | None = None


@dataclass(frozen=True)
class TranscriptText:
    transcript_id: str
    version: int
    content_hash: str
    format: str
    text: str


def check_id(transcript_id: str) -> None:
    problem = transcript_id_problem(transcript_id)
    if problem:
        raise InvalidPayload(f"transcript id {transcript_id!r}: {problem}")


def decode(raw: bytes) -> str:
    """A put's body as text: UTF-8, at most MAX_TRANSCRIPT_BYTES, no NUL (refused with the reason otherwise)."""
    if len(raw) > MAX_TRANSCRIPT_BYTES:
        raise ContentTooLarge(f"the transcript is {len(raw)} bytes; the limit is {MAX_TRANSCRIPT_BYTES}")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidPayload(f"the transcript is not UTF-8 text (byte {exc.start})") from None


@dataclass(frozen=True)
class _Held:
    last: RecordedEvent | None  # the newest put (None: no such transcript)
    head: int  # the stream's head version (0: no such transcript)
    hashes: frozenset[str]  # of every chunk text the stream holds


def _held(conn: Connection, tenant: str, transcript_id: str) -> _Held:
    """What a put needs of the stream, read page by page (newest first): only the chunks' hashes are kept."""
    last: RecordedEvent | None = None
    head = 0
    hashes: set[str] = set()
    for page in stream_pages(conn, tenant, transcript_stream(transcript_id), newest_first=True):
        head = head or page[0].stream_version
        for e in page:
            if e.is_a(TranscriptChunksPut):
                last = last or e
                hashes.update(c["content_hash"] for c in e.data.get("chunks", ()))
    return _Held(last, head, frozenset(hashes))


def put_transcript(engine: Engine, tenant: str, transcript_id: str, text: str, metadata: dict[str, Any],
                   fmt: str | None = None) -> TranscriptWritten:
    check_id(transcript_id)
    if fmt is not None and fmt not in FORMATS:
        raise InvalidPayload(f"format must be one of {', '.join(FORMATS)}")
    if len(text.encode("utf-8")) > MAX_TRANSCRIPT_BYTES:
        raise ContentTooLarge(f"the transcript is over the limit of {MAX_TRANSCRIPT_BYTES} bytes")
    if has_nul(text):
        raise InvalidPayload("the transcript must not contain NUL (\\u0000) characters")
    lines = len(split_lines(text))
    if lines > MAX_TRANSCRIPT_LINES:
        raise ContentTooLarge(f"the transcript has more than {MAX_TRANSCRIPT_LINES} lines")
    whole, size = content_hash(text), len(text.encode("utf-8"))
    with engine.connect() as conn:
        stream = _held(conn, tenant, transcript_id)
    last, head = stream.last, stream.head
    # Unchanged (the same text, and the same format when one is named): answered before any parsing.
    if last is not None and last.data["content_hash"] == whole and fmt in (None, last.data["format"]):
        n = len(last.data["chunk_hashes"])
        return TranscriptWritten(transcript_id, last.stream_version, whole, last.data["format"], False, n, 0, n,
                                 lines, int(last.data.get("turns") or 0), size, last.position)
    try:
        parsed = parse_transcript(text, fmt)
    except TranscriptError as exc:
        raise InvalidPayload(f"transcript {transcript_id!r}: {exc}") from None
    chunks = chunk_transcript(parsed)
    held = stream.hashes
    carried: dict[str, str] = {}
    for c in chunks:
        if c.content_hash not in held:
            carried.setdefault(c.content_hash, c.text)
    data = validate_payload(TranscriptChunksPut, {
        "transcript_id": transcript_id, "format": parsed.format, "content_hash": whole,
        "chunk_hashes": [c.content_hash for c in chunks], "turns": len(parsed.turns),
        "chunks": [{"content_hash": h, "text": t} for h, t in carried.items()]})
    # At the version read above: a put in between (which `held` would not know) makes this one a 409.
    with engine.begin() as conn:
        [position] = append(conn, tenant, [NewEvent(TranscriptChunksPut.type_name(), transcript_stream(transcript_id),
                                                    data, expected_version=head)], metadata)
    appended(1)
    written = sum(1 for c in chunks if c.content_hash in carried)
    return TranscriptWritten(transcript_id, head + 1, whole, parsed.format, True, len(chunks), written,
                             len(chunks) - written, lines, len(parsed.turns), size, position)


def transcript_text(conn: Connection, tenant: str, transcript_id: str, as_of: int | None = None) -> TranscriptText:
    """The transcript's current version (or its version as of a log position), reassembled from the chunks in its
    log (404 when there is none, or none yet then)."""
    check_id(transcript_id)
    # Newest first, page by page, keeping only the texts the newest version names: the read stops once it has them.
    last: RecordedEvent | None = None
    wanted: set[str] = set()
    texts: dict[str, str] = {}
    for page in stream_pages(conn, tenant, transcript_stream(transcript_id), (TranscriptChunksPut,),
                             newest_first=True):
        for e in page:
            if last is None and as_of is not None and e.position > as_of:
                continue  # put after the as_of position (an earlier version may still hold its texts: read on)
            if last is None:
                last, wanted = e, set(e.data["chunk_hashes"])
            texts.update((c["content_hash"], c["text"]) for c in e.data.get("chunks", ())
                         if c["content_hash"] in wanted and c["content_hash"] not in texts)
        if len(texts) == len(wanted):
            break
    if last is None:
        raise NotFound(f"no transcript {transcript_id!r}")
    text = "".join(texts[h] for h in last.data["chunk_hashes"])
    return TranscriptText(transcript_id, last.stream_version, last.data["content_hash"], last.data["format"], text)


@dataclass(frozen=True)
class TranscriptLines:
    transcript_id: str
    version: int
    first: int  # 1-based, inclusive
    last: int
    lines_total: int
    text: str  # the exact slice: those lines with their line endings


def transcript_lines(conn: Connection, tenant: str, transcript_id: str, first: int = 1,
                     last: int | None = None, as_of: int | None = None) -> TranscriptLines:
    """Lines first..last (1-based, inclusive; last past the end: to the end) of the current version (or the
    version as of a log position)."""
    whole = transcript_text(conn, tenant, transcript_id, as_of)
    lines = split_lines(whole.text)
    last = len(lines) if last is None else min(last, len(lines))
    if first < 1:
        raise InvalidPayload("from is 1 or more (lines are numbered from 1)")
    if first > len(lines):
        raise InvalidPayload(f"from {first} is past the last line ({len(lines)})")
    if last < first:
        raise InvalidPayload(f"to ({last}) is before from ({first})")
    return TranscriptLines(transcript_id, whole.version, first, last, len(lines), "".join(lines[first - 1:last]))


__all__ = ["Format", "TranscriptLines", "TranscriptText", "TranscriptWritten", "check_id", "decode",
           "put_transcript", "transcript_lines", "transcript_text"]
