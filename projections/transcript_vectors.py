"""Transcript chunks' vectors (transcript_chunk_vectors), embedded lazily: a chunk gets its vector the first time
the hit-log shows it was used, never by a sweep over the transcripts (following projections/section_vectors.py).

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
from collections.abc import Sequence
from typing import Any

import structlog
from sqlalchemy import Connection, text

from domain.events import RecallServed, RecordedEvent, ResultDrilled, TranscriptChunksPut
from domain.transcripts.ids import handle_chunk, transcript_stream
from domain.transcripts.parse import TranscriptError, parse_chunk
from eventstore.stream import read_stream
from infra.embedding import embed_cached, get_embedder
from infra.settings import get_settings
from projections.base import apply_in_order, types_of

log = structlog.get_logger(__name__)
TRANSCRIPTS = "transcripts"  # the domain's name in hit-log results
EMBED_CHUNK = 256  # texts per embed_cached call

_HAVE = text("""
SELECT chunk_id FROM transcript_chunk_vectors
WHERE tenant = :tenant AND model = :model AND chunk_id = ANY(CAST(:ids AS uuid[]))
""")
_INSERT = text("""
INSERT INTO transcript_chunk_vectors (tenant, chunk_id, model, embedding)
SELECT :tenant, b.i, :model, CAST(b.e AS vector)
FROM unnest(CAST(:ids AS uuid[]), CAST(:embeddings AS text[])) AS b(i, e)
ON CONFLICT DO NOTHING
""")


class _Wanted:
    """Chunks asked for by consecutive hit-log events, embedded and inserted in bulk."""

    def __init__(self) -> None:
        self.handles: dict[tuple[str, uuid.UUID], dict[str, Any]] = {}

    def add_served(self, conn: Connection, event: RecordedEvent, p: RecallServed) -> None:
        for r in p.results:
            if r.domain == TRANSCRIPTS:
                self._add(event.tenant, r.handle)

    def add_drilled(self, conn: Connection, event: RecordedEvent, p: ResultDrilled) -> None:
        if p.domain == TRANSCRIPTS:
            self._add(event.tenant, p.handle)

    def _add(self, tenant: str, handle: dict[str, Any] | None) -> None:
        cid = handle_chunk(tenant, handle)
        if cid is None or not isinstance(handle.get("version"), int):  # type: ignore[union-attr]
            log.warning("transcript_vectors.bad_handle", tenant=tenant, handle=str(handle)[:300])
            return
        self.handles.setdefault((tenant, cid), handle)  # type: ignore[arg-type]

    def flush(self, conn: Connection) -> None:
        handles, self.handles = self.handles, {}
        if not handles:
            return
        model = get_embedder(get_settings().embedding_model).model
        for tenant in sorted({t for t, _ in handles}):
            ids = sorted((c for t, c in handles if t == tenant), key=str)
            have = set(conn.execute(_HAVE, {"tenant": tenant, "model": model, "ids": ids}).scalars())
            todo = {c: handles[(tenant, c)] for c in ids if c not in have}
            _embed(conn, tenant, model, sorted(_texts_from_log(conn, tenant, todo).items(), key=lambda i: str(i[0])))


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


def _embed(conn: Connection, tenant: str, model: str, chunks: list[tuple[uuid.UUID, str]]) -> None:
    embedder = get_embedder(get_settings().embedding_model)
    for start in range(0, len(chunks), EMBED_CHUNK):
        part = chunks[start:start + EMBED_CHUNK]
        embeddings = embed_cached(conn, embedder, tenant, [t for _, t in part])
        conn.execute(_INSERT, {"tenant": tenant, "model": model, "ids": [c for c, _ in part],
                               "embeddings": embeddings})


_IN_RUN = {RecallServed: _Wanted.add_served, ResultDrilled: _Wanted.add_drilled}


class TranscriptVectorsProjector:
    name = "transcript_vectors"
    tables = ("transcript_chunk_vectors",)
    handlers = _IN_RUN
    types = types_of(handlers)

    def apply(self, conn: Connection, events: Sequence[RecordedEvent]) -> None:
        apply_in_order(conn, events, {}, _IN_RUN, _Wanted())


__all__ = ["TranscriptVectorsProjector"]
