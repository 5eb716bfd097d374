"""The transcripts domain: recall over transcripts' turn-aligned chunks, and the drill (an exact chunk by its handle).

search: Okapi BM25 over the chunks (recall/keyword.py with the chunks' tables; what is indexed is each turn's role
and text) ∪ the vector leg over the chunks that have a vector of the configured model (transcript_chunk_vectors,
filled lazily from the hit-log), fused by domain/ranking.fuse: a chunk without a vector is scored on its BM25 leg
renormalised to weight 1 (recall/hybrid.py: the hybrid leg knowledge, transcripts and code share). Active and
dormant chunks answer (those of each transcript's current version; dormant: unreferenced for a while,
workers/reference_decay.py), as knowledge's sections do; with include_history, replaced
and archived ones too, scored ×0.1. A transcript the privacy policy's exclude_sessions names is never
answered (its id is the session's).

A result's handle {transcript_id, ord, content_hash, lines, version} names the chunk by its position and content
(lines: its [first, last] line numbers, 1-based; version: the transcript version that placed it there, its text
in the log at or before it), so a drill answers the exact text a recall answered even after the transcript grew.

drill_chunk: the exact chunk a handle names (or the current one at a position), and one ResultDrilled hit-log event
(recall/hitlog.py append_drilled): reads the read model only; that event is its one write (and what gets the chunk
its vector, projections/transcript_vectors.py). list_transcripts: transcripts as the read model has them
(GET /v1/transcripts: what `engramlog transcripts sync` compares its files' content hashes with).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine, ScalarSelect, text

from domain.errors import NotFound
from domain.events import RecallServed, recall_stream
from domain.memory_status import RECALLABLE
from domain.privacy import PrivacyPolicy, transcript_excluded
from domain.text import tokenize
from domain.transcripts.ids import handle_chunk
from eventstore.stream import first_of_type
from infra.db import read_only
from infra.settings import get_settings
from readmodels.item_domains import CHUNKS
from recall.domains.base import DomainAnswer, DomainHit, DomainQuery, data_check, held
from recall.hitlog import append_drilled
from recall.hybrid import HybridLeg, answer, gather, graded, pool_size, scored
from recall.keyword import KeywordTables
from recall.relevance import scale
from recall.scope import Scope
from recall.timeframe import NOW, TimeFrame
from recall.vector import VectorTable
from recall.visible_pages import visible_page

TRANSCRIPTS = CHUNKS.name
RECALLED = RECALLABLE  # answered by default: the memories' and knowledge's rule
HISTORY = ("replaced", "archived")  # answered only when history is asked for, scored ×recall.hybrid.HISTORY_FACTOR

CHUNK_KEYWORD = KeywordTables.of(CHUNKS)
# Chunks are embedded lazily (projections/transcript_vectors.py): the vector leg covers exactly the embedded ones.
CHUNK_VECTORS = VectorTable.of(CHUNKS)
CHUNK_LEG = HybridLeg(CHUNK_KEYWORD, CHUNK_VECTORS, RECALLED, HISTORY, versions=CHUNKS.versions)

_COLUMNS = ("c.chunk_id, c.transcript_id, c.ord, c.content_hash, c.version, c.text, c.first_line, c.last_line,"
            " c.first_turn, c.last_turn, c.started_at, c.ended_at, c.status, c.ref_count")


def _rows(frame: TimeFrame) -> Any:
    return text(f"SELECT {_COLUMNS} FROM {frame.units(CHUNKS.versions)} c"
                " WHERE c.tenant = :tenant AND c.chunk_id = ANY(:ids)")


def _has_data(frame: TimeFrame) -> str:
    return (f"SELECT EXISTS (SELECT 1 FROM {frame.units(CHUNKS.versions)} c WHERE c.tenant = :tenant"
                " AND c.status = ANY(:statuses))")


def _gate_sql(policy: PrivacyPolicy, frame: TimeFrame) -> tuple[str, dict[str, object]]:
    """The privacy gate's and the valid-time filter's SQL on d (transcript_chunks), and their parameters with the
    frame's (an as_of leg's status filter binds :tf_as_of)."""
    sql, params = "TRUE" + frame.span_sql("d.started_at", "d.ended_at"), frame.params()
    if policy.exclude_sessions:
        sql += " AND NOT d.transcript_id = ANY(:x_transcripts)"
        params["x_transcripts"] = list(policy.exclude_sessions)
    return ("" if sql == "TRUE" else sql), params


def excluded(policy: PrivacyPolicy, transcript_id: str) -> bool:
    return policy.excludes(session_id=transcript_id)


def handle_of(row: Any) -> dict[str, Any]:
    return {"transcript_id": row.transcript_id, "ord": row.ord, "content_hash": row.content_hash,
            "lines": [row.first_line, row.last_line], "version": row.version}


def chunk_out(row: Any) -> dict[str, Any]:
    return {"transcript_id": row.transcript_id, "ord": row.ord, "content_hash": row.content_hash,
            "version": row.version, "text": row.text, "lines": [row.first_line, row.last_line],
            "turns": [row.first_turn, row.last_turn], "started_at": row.started_at, "ended_at": row.ended_at,
            "status": row.status}


class TranscriptsDomain:
    name = TRANSCRIPTS
    read_models = (CHUNKS.projection,)  # what a read of it waits for (min_position); chunk vectors lazily
    vector_leg = CHUNKS.vectors is not None  # a vectors table declared: the query's vector is read
    # valid: a chunk's [started_at, ended_at] (one with no start answers no dated recall); recorded:
    # transcript_chunk_versions (as_of)
    times = ("valid", "recorded")

    def data_check(self, scope: Scope, frame: TimeFrame = NOW) -> ScalarSelect[Any]:
        return data_check(_has_data(frame), {"tenant": scope.tenant, "statuses": list(RECALLED), **frame.params()})

    def has_data(self, conn: Connection, scope: Scope, frame: TimeFrame = NOW) -> bool:
        return held(conn, {self.name: self.data_check(scope, frame)})[self.name]

    def search(self, engine: Engine, q: DomainQuery) -> DomainAnswer:
        settings = get_settings()
        scope = Scope(q.scope.tenant)  # transcripts belong to the tenant, not to an agent, project or session
        statuses = CHUNK_LEG.statuses(q.include_history)
        n = pool_size(settings, q, gated_per_item=False)
        with read_only(engine) as conn:
            if not q.held and not self.has_data(conn, scope, q.frame) and not q.include_history:
                return DomainAnswer([], "no data")
            legs = gather(conn, scope, CHUNK_LEG.framed(q.frame), tokenize(q.query), q.query_vector, n, settings,
                          statuses, *_gate_sql(q.policy, q.frame))
            ids = legs.ids
            if not ids:
                return DomainAnswer([], "no match")
            rows = {r.chunk_id: r for r in conn.execute(_rows(q.frame), {"tenant": scope.tenant, "ids": ids,
                                                                         **q.frame.params()})}
        allowed = [i for i in ids if i in rows and not excluded(q.policy, rows[i].transcript_id)]
        fused = scored(legs, allowed, CHUNK_LEG, lambda i: rows[i].status, settings)
        fused.sort(key=lambda f: (-f.score, rows[f.id].transcript_id, rows[f.id].ord))
        grade = scale(TRANSCRIPTS, settings.embedding.embedding_model)
        hits = [DomainHit(content=row.text, score=f.score, handle=handle_of(row), legs=f.legs, relevance=rel,
                          fields={"transcript_id": row.transcript_id, "ord": row.ord,
                                  "lines": [row.first_line, row.last_line], "turns": [row.first_turn, row.last_turn],
                                  "started_at": row.started_at, "version": row.version, "status": row.status},
                          explanation=why)
                for f in fused[:q.k]  # ranked by the fused score: only the answered ones are graded
                for row in (rows[f.id],)
                for rel, why in (graded(f, grade, q.query, row.text),)]
        return answer(hits, q.k, len(ids), len(allowed))

    def fetch(self, conn: Connection, scope: Scope, handle: dict[str, Any], policy: PrivacyPolicy,
              frame: TimeFrame = NOW) -> Any:
        """The exact chunk the handle names (any status: an old handle still answers its text), as chunk_out (as
        it stood at the frame's as_of), or None when unknown (then) or excluded."""
        cid = handle_chunk(scope.tenant, handle)
        if cid is None or excluded(policy, handle["transcript_id"]):
            return None
        row = conn.execute(_rows(frame), {"tenant": scope.tenant, "ids": [cid], **frame.params()}).first()
        return chunk_out(row) if row is not None else None


def _current_hash(frame: TimeFrame) -> Any:
    """The content hash of the chunk at a place of the transcript's version now (or as of the frame)."""
    return text(f"""
    SELECT c.content_hash FROM {frame.units(CHUNKS.versions)} c
    WHERE c.tenant = :tenant AND c.transcript_id = :transcript_id AND c.ord = :ord AND c.status <> 'replaced'
    """)


@dataclass(frozen=True)
class ChunkDrilled:
    chunk: dict[str, Any]  # TranscriptsDomain.fetch's answer
    drill_id: uuid.UUID
    position: int


def drill_chunk(engine: Engine, tenant: str, transcript_id: str, ord_: int, policy: PrivacyPolicy,
                metadata: dict[str, Any], content_hash: str | None = None,
                recall_id: uuid.UUID | None = None, frame: TimeFrame = NOW) -> ChunkDrilled:
    """`frame` with as_of: the chunk as it stood at that position (one put later is unknown, 404)."""
    unknown = f"no chunk {ord_} in transcript {transcript_id!r}"
    with engine.connect() as conn:
        if recall_id is not None and first_of_type(conn, tenant, recall_stream(recall_id), RecallServed) is None:
            raise NotFound(f"no recall {recall_id}")
        if transcript_excluded(policy, transcript_id):  # as an unknown transcript's chunk answers
            raise NotFound(unknown if content_hash is None else f"{unknown} with content hash {content_hash}")
        if content_hash is None:
            content_hash = conn.execute(_current_hash(frame), {"tenant": tenant, "transcript_id": transcript_id,
                                                               "ord": ord_, **frame.params()}).scalar_one_or_none()
            if content_hash is None:
                raise NotFound(unknown)
        handle = {"transcript_id": transcript_id, "ord": ord_, "content_hash": content_hash}
        found = TranscriptsDomain().fetch(conn, Scope(tenant), handle, policy, frame)
    if found is None:
        raise NotFound(unknown if content_hash is None else f"{unknown} with content hash {content_hash}")
    handle.update(lines=found["lines"], version=found["version"])
    drill_id, position = append_drilled(engine, tenant, TRANSCRIPTS, handle, recall_id, metadata)
    return ChunkDrilled(found, drill_id, position)


MAX_LISTED = 10_000
_LIST = text("""
SELECT transcript_id, version, content_hash, format, chunks, lines, turns, bytes, started_at, ended_at, updated_at
FROM transcripts WHERE tenant = :tenant AND transcript_id > :after
ORDER BY transcript_id LIMIT :limit
""")


def list_transcripts(conn: Connection, tenant: str, policy: PrivacyPolicy, after: str = "",
                     limit: int = 1000) -> tuple[list[dict[str, Any]], str | None]:
    """The tenant's transcripts by id, after `after`, none the policy hides; and the id to page on from (None: no
    more)."""
    def read(cursor: str, n: int) -> list[Any]:
        return list(conn.execute(_LIST, {"tenant": tenant, "after": cursor, "limit": n}).all())

    rows, next_after = visible_page(read, lambda r: r.transcript_id,
                                    lambda r: not transcript_excluded(policy, r.transcript_id),
                                    after, min(limit, MAX_LISTED))
    return [dict(r._mapping) for r in rows], next_after


__all__ = ["CHUNK_KEYWORD", "CHUNK_LEG", "CHUNK_VECTORS", "ChunkDrilled", "TRANSCRIPTS", "TranscriptsDomain",
           "chunk_out", "drill_chunk", "handle_of", "list_transcripts"]
