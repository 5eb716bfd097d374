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
from eventstore.stream import read_stream
from projections.lazy_vectors import HIT_LOG, LazySurface, LazyVectorsProjector

log = structlog.get_logger(__name__)
TRANSCRIPTS = "transcripts"  # the domain's name in hit-log results


def _texts_from_log(conn: Connection, tenant: str, handles: dict[uuid.UUID, dict[str, Any]]) -> dict[uuid.UUID, str]:
    """Each handle's chunk as the embedder reads it (its turns' roles and texts), from the transcript's log (each
    transcript's stream read once, up to the newest version asked)."""
    by_transcript: dict[str, list[tuple[uuid.UUID, dict[str, Any]]]] = {}
    for cid, h in handles.items():
        by_transcript.setdefault(h["transcript_id"], []).append((cid, h))
    out: dict[uuid.UUID, str] = {}
    for tid, wanted in sorted(by_transcript.items()):
        newest = max(h["version"] for _, h in wanted)
        events = read_stream(conn, tenant, transcript_stream(tid), [TranscriptChunksPut], newest + 1)
        for cid, h in wanted:
            found = next(((e.data["format"], c["text"]) for e in reversed(events) if e.stream_version <= h["version"]
                          for c in e.data.get("chunks", ()) if c["content_hash"] == h["content_hash"]), None)
            if found is None:
                log.warning("transcript_vectors.chunk_not_in_log", tenant=tenant, transcript_id=tid,
                            ord=h["ord"], version=h["version"])
                continue
            try:
                out[cid] = "\n".join(t.rendered() for t in parse_chunk(found[1], found[0]))
            except TranscriptError:
                log.warning("transcript_vectors.chunk_unparseable", tenant=tenant, transcript_id=tid, ord=h["ord"])
    return out


CHUNKS = LazySurface("transcript_vectors", "transcript_chunk_vectors", "chunk_id", TRANSCRIPTS, handle_chunk,
                     _texts_from_log)


class TranscriptVectorsProjector(LazyVectorsProjector):
    surface = CHUNKS
    handlers = HIT_LOG


__all__ = ["CHUNKS", "TranscriptVectorsProjector"]
