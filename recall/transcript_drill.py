"""The drill into a transcript chunk: the exact chunk a handle names (or the current one at a position), and one
ResultDrilled hit-log event (on its recall's stream when it names one, else its own): reads the read model only;
that event is its one write (and what gets the chunk its vector, projections/transcript_vectors.py)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, text

from domain.errors import NotFound
from domain.events import NewEvent, RecallServed, ResultDrilled, drill_stream, recall_stream
from domain.privacy import PrivacyPolicy, transcript_excluded
from eventstore.append import append
from eventstore.stream import first_of_type
from infra.wake import appended
from recall.domains.transcripts import TRANSCRIPTS, TranscriptsDomain
from recall.scope import Scope

_CURRENT_HASH = text("""
SELECT content_hash FROM transcript_chunks
WHERE tenant = :tenant AND transcript_id = :transcript_id AND ord = :ord AND status <> 'replaced'
""")


@dataclass(frozen=True)
class ChunkDrilled:
    chunk: dict[str, Any]  # TranscriptsDomain.fetch's answer
    drill_id: uuid.UUID
    position: int


def drill_chunk(engine: Engine, tenant: str, transcript_id: str, ord_: int, policy: PrivacyPolicy,
                metadata: dict[str, Any], content_hash: str | None = None,
                recall_id: uuid.UUID | None = None) -> ChunkDrilled:
    unknown = f"no chunk {ord_} in transcript {transcript_id!r}"
    with engine.connect() as conn:
        if recall_id is not None and first_of_type(conn, tenant, recall_stream(recall_id), RecallServed) is None:
            raise NotFound(f"no recall {recall_id}")
        if transcript_excluded(policy, transcript_id):  # as an unknown transcript's chunk answers
            raise NotFound(unknown if content_hash is None else f"{unknown} with content hash {content_hash}")
        if content_hash is None:
            content_hash = conn.execute(_CURRENT_HASH, {"tenant": tenant, "transcript_id": transcript_id,
                                                        "ord": ord_}).scalar_one_or_none()
            if content_hash is None:
                raise NotFound(unknown)
        handle = {"transcript_id": transcript_id, "ord": ord_, "content_hash": content_hash}
        found = TranscriptsDomain().fetch(conn, Scope(tenant), handle, policy)
    if found is None:
        raise NotFound(unknown if content_hash is None else f"{unknown} with content hash {content_hash}")
    handle.update(lines=found["lines"], version=found["version"])
    drill_id = uuid.uuid4()
    event = ResultDrilled(drill_id=drill_id, domain=TRANSCRIPTS, handle=handle, recall_id=recall_id)
    stream = recall_stream(recall_id) if recall_id is not None else drill_stream(drill_id)
    with engine.begin() as conn:
        [position] = append(conn, tenant, [NewEvent.of(event, stream)], metadata)
    appended(1)
    return ChunkDrilled(found, drill_id, position)


__all__ = ["ChunkDrilled", "drill_chunk"]
