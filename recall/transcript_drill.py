"""The drill into a transcript chunk: the exact chunk a handle names (or the current one at a position), and one
ResultDrilled hit-log event (on its recall's stream when it names one, else its own): reads the read model only;
that event is its one write (and what gets the chunk its vector, projections/transcript_vectors.py)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, text

from domain.errors import NotFound
from domain.events import RecallServed, recall_stream
from domain.privacy import PrivacyPolicy, transcript_excluded
from eventstore.stream import first_of_type
from recall.domains.transcripts import TRANSCRIPTS, TranscriptsDomain
from recall.hitlog import append_drilled
from recall.scope import Scope
from recall.timeframe import CHUNK_VERSIONS, NOW, TimeFrame


def _current_hash(frame: TimeFrame) -> Any:
    """The content hash of the chunk at a place of the transcript's version now (or as of the frame)."""
    return text(f"""
    SELECT c.content_hash FROM {frame.units(CHUNK_VERSIONS)} c
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


__all__ = ["ChunkDrilled", "drill_chunk"]
