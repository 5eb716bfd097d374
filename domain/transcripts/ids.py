"""What names a transcript and its chunks, and the limits of a put. Pure."""

from __future__ import annotations

import re
import uuid
from typing import Any, TypeGuard

MAX_TRANSCRIPT_ID_CHARS = 200
MAX_TRANSCRIPT_BYTES = 16 * 1024 * 1024  # one put's UTF-8 body; the whole text is kept in the log
MAX_TRANSCRIPT_LINES = 1_000_000
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@+-]*\Z")
_HASH = re.compile(r"[0-9a-f]{64}\Z")
_NAMESPACE = uuid.UUID("0b6c1f0e-3a5d-4c2e-9f4b-7d2a8e61c905")  # engramlog transcripts


def transcript_id_problem(transcript_id: object) -> str | None:
    """Why `transcript_id` cannot name a transcript, or None. It is also the id the privacy gate's
    exclude_sessions names."""
    if not isinstance(transcript_id, str) or not transcript_id:
        return "a transcript id is a non-empty string"
    if len(transcript_id) > MAX_TRANSCRIPT_ID_CHARS:
        return f"a transcript id has at most {MAX_TRANSCRIPT_ID_CHARS} characters"
    if not _ID.match(transcript_id):
        return "a transcript id is letters, digits and . _ : @ + - (starting with a letter or digit)"
    return None


def is_content_hash(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and bool(_HASH.match(value))


def transcript_stream(transcript_id: str) -> str:
    return f"transcript-{uuid.uuid5(_NAMESPACE, transcript_id)}"


def chunk_id(tenant: str, transcript_id: str, ord_: int, hash_: str) -> uuid.UUID:
    """A chunk's id: one per (transcript, position, content), so an unchanged chunk of a re-put keeps its id (its
    postings and vector), and a chunk whose text changed is a new one."""
    return uuid.uuid5(_NAMESPACE, "\x00".join((tenant, transcript_id, str(ord_), hash_)))


def handle_chunk(tenant: str, handle: dict[str, Any] | None) -> uuid.UUID | None:
    """The chunk a transcripts handle {transcript_id, ord, content_hash, ...} names, or None for a handle without
    the keys of one."""
    if not isinstance(handle, dict):
        return None
    tid, ord_, hash_ = handle.get("transcript_id"), handle.get("ord"), handle.get("content_hash")
    if not isinstance(tid, str) or transcript_id_problem(tid) or not isinstance(ord_, int) \
            or isinstance(ord_, bool) or ord_ < 0 or not is_content_hash(hash_):
        return None
    return chunk_id(tenant, tid, ord_, hash_)


__all__ = ["MAX_TRANSCRIPT_BYTES", "MAX_TRANSCRIPT_ID_CHARS", "MAX_TRANSCRIPT_LINES", "chunk_id", "handle_chunk",
           "is_content_hash", "transcript_id_problem", "transcript_stream"]
