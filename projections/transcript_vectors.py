"""Transcript chunks' vectors (transcript_chunk_vectors), embedded lazily: a chunk gets its vector the first time
the hit-log shows it was used, never by a sweep over the transcripts (projections/lazy_vectors.py, the projector
knowledge and transcripts share).

| event         | effect: chunks without a vector of the configured model get one                       |
| ------------- | ------------------------------------------------------------------------------------- |
| RecallServed  | each "transcripts" result's chunk                                                     |
| ResultDrilled | its "transcripts" chunk                                                               |

A handle names a chunk by (transcript id, position, content hash) and the transcript version the recall saw. Its
text comes from the log, never from another projection's tables: the TranscriptChunksPut events of the
transcript's stream up to that version, the newest carrying that hash; what is embedded is the chunk's turns
(role and text, as BM25 reads them). A handle naming no chunk there is skipped (logged), by every run alike, so
which chunks have vectors follows from the events alone and a rebuild reproduces the set; embeddings go through
the embedding cache, so a rebuild computes nothing already computed.
"""

from __future__ import annotations

import uuid
from typing import Any

import structlog
from sqlalchemy import Connection

from domain.events import TranscriptChunksPut
from domain.transcripts.ids import handle_chunk, transcript_stream
from domain.transcripts.parse import TranscriptError, parse_chunk
from eventstore.stream import stream_pages
from projections.lazy_vectors import HIT_LOG, LazySurface, LazyVectorsProjector
from readmodels.item_domains import CHUNKS as CHUNK_ITEMS

log = structlog.get_logger(__name__)


def _texts_from_log(conn: Connection, tenant: str, handles: dict[uuid.UUID, dict[str, Any]]) -> dict[uuid.UUID, str]:
    """Each handle's chunk as the embedder reads it (its turns' roles and texts), from the transcript's log (each
    transcript's stream read once, newest first, until every handle of it is found)."""
    by_transcript: dict[str, list[tuple[uuid.UUID, dict[str, Any]]]] = {}
    for cid, h in handles.items():
        by_transcript.setdefault(h["transcript_id"], []).append((cid, h))
    out: dict[uuid.UUID, str] = {}
    for tid, wanted in sorted(by_transcript.items()):
        found: dict[uuid.UUID, tuple[Any, str]] = {}  # (format, text)
        # Newest first, page by page, until every handle has its chunk: the first event at or before a handle's
        # version that carries its hash is the newest such (a page is held, not the stream).
        for page in stream_pages(conn, tenant, transcript_stream(tid), [TranscriptChunksPut], newest_first=True):
            for e in page:
                chunks = {c["content_hash"]: c["text"] for c in reversed(e.data.get("chunks", ()))}
                for cid, h in wanted:
                    if cid not in found and e.stream_version <= h["version"] and h["content_hash"] in chunks:
                        found[cid] = (e.data["format"], chunks[h["content_hash"]])
            if len(found) == len(wanted):
                break
        for cid, h in wanted:
            if cid not in found:
                log.warning("transcript_vectors.chunk_not_in_log", tenant=tenant, transcript_id=tid,
                            ord=h["ord"], version=h["version"])
                continue
            fmt, chunk = found[cid]
            try:
                out[cid] = "\n".join(t.rendered() for t in parse_chunk(chunk, fmt))
            except TranscriptError:
                log.warning("transcript_vectors.chunk_unparseable", tenant=tenant, transcript_id=tid, ord=h["ord"])
    return out


CHUNKS = LazySurface("transcript_vectors", CHUNK_ITEMS, handle_chunk, _texts_from_log)


class TranscriptVectorsProjector(LazyVectorsProjector):
    surface = CHUNKS
    handlers = HIT_LOG


__all__ = ["CHUNKS", "TranscriptVectorsProjector"]
