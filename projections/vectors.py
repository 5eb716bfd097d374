"""The vectors read model: one embedding per memory in a pgvector column (HNSW, cosine).

Every recorded memory keeps its vector (recall filters by status through `memories`). A memory whose content
changes (MemoryReinforced's or MemoriesMerged's merged content) gets the new content's embedding, through the
embedding cache (the write path's governor has usually put it there already). memory_vector_counts holds each
tenant's count of vectors per model, kept in the same statements: the vector leg sizes a whole tenant by it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import Connection, text

from domain.events import EventSchema, MemoriesMerged, MemoryRecorded, MemoryReinforced, RecordedEvent
from infra.embedding import embed_cached, get_embedder
from infra.settings import get_settings
from projections.base import OneByOne, apply_in_order, types_of

# The vectors inserted (a memory already holding one keeps it), each tenant's count of the model raised by as many.
_INSERT = text("""
WITH added AS (
    INSERT INTO memory_vectors (tenant, memory_id, agent_id, project, session_id, kind, model, embedding)
    SELECT t, i, a, p, s, k, :model, CAST(e AS vector)
    FROM unnest(CAST(:tenants AS text[]), CAST(:ids AS uuid[]), CAST(:agents AS text[]), CAST(:projects AS text[]),
                CAST(:sessions AS text[]), CAST(:kinds AS text[]), CAST(:embeddings AS text[]))
         AS b(t, i, a, p, s, k, e)
    ON CONFLICT (tenant, memory_id) DO NOTHING
    RETURNING tenant
)
INSERT INTO memory_vector_counts (tenant, model, n) SELECT tenant, :model, count(*) FROM added GROUP BY tenant
ON CONFLICT (tenant, model) DO UPDATE SET n = memory_vector_counts.n + EXCLUDED.n
""")

# A new embedding for a memory's vector, and the model it had before (PostgreSQL 18's RETURNING old).
_REEMBED = text("""
UPDATE memory_vectors SET model = :model, embedding = CAST(:embedding AS vector)
WHERE tenant = :tenant AND memory_id = :memory_id
  AND (model <> :model OR embedding <> CAST(:embedding AS vector))
RETURNING old.model AS was
""")
# A vector moved from one model to another: one fewer of the old model, one more of the new; then the old model's
# row gone if it holds none (a rebuild would have no row for it).
_MOVED = text("""
WITH fewer AS (UPDATE memory_vector_counts SET n = n - 1 WHERE tenant = :tenant AND model = :was)
INSERT INTO memory_vector_counts (tenant, model, n) VALUES (:tenant, :model, 1)
ON CONFLICT (tenant, model) DO UPDATE SET n = memory_vector_counts.n + 1
""")
_EMPTIED = text("DELETE FROM memory_vector_counts WHERE tenant = :tenant AND model = :was AND n = 0")


class _Run:
    """Consecutive MemoryRecorded events, embedded (each tenant through its own cache) and inserted in bulk."""

    def __init__(self) -> None:
        self.events: list[tuple[str, MemoryRecorded]] = []

    def add(self, conn: Connection, event: RecordedEvent, p: MemoryRecorded) -> None:
        self.events.append((event.tenant, p))

    def flush(self, conn: Connection) -> None:
        memories, self.events = self.events, []
        if not memories:
            return
        embedder = get_embedder(get_settings().embedding.embedding_model)
        embeddings: list[str] = [""] * len(memories)
        by_tenant: dict[str, list[int]] = {}
        for i, (tenant, _) in enumerate(memories):
            by_tenant.setdefault(tenant, []).append(i)
        for tenant, indexes in by_tenant.items():  # each tenant's own cache
            found = embed_cached(conn, embedder, tenant, [memories[i][1].content for i in indexes])
            for i, literal in zip(indexes, found, strict=True):
                embeddings[i] = literal
        rows: dict[str, list] = {k: [] for k in ("tenants", "ids", "agents", "projects", "sessions", "kinds")}
        for tenant, m in memories:
            for key, value in (("tenants", tenant), ("ids", m.memory_id), ("agents", m.agent_id),
                               ("projects", m.project), ("sessions", m.session_id), ("kinds", m.kind)):
                rows[key].append(value)
        conn.execute(_INSERT, {**rows, "model": embedder.model, "embeddings": embeddings})


def _reembed(conn: Connection, event: RecordedEvent, p: MemoryReinforced | MemoriesMerged) -> None:
    embedder = get_embedder(get_settings().embedding.embedding_model)
    [embedding] = embed_cached(conn, embedder, event.tenant, [p.merged_content])
    changed = conn.execute(_REEMBED, {"tenant": event.tenant, "memory_id": p.memory_id, "model": embedder.model,
                                      "embedding": embedding}).first()
    if changed is not None and changed.was != embedder.model:
        moved = {"tenant": event.tenant, "was": changed.was, "model": embedder.model}
        conn.execute(_MOVED, moved)
        conn.execute(_EMPTIED, moved)


_IN_RUN: dict[type[EventSchema], Callable[[_Run, Connection, RecordedEvent, Any], None]] = {MemoryRecorded: _Run.add}
_ONE_BY_ONE: OneByOne = {MemoryReinforced: _reembed, MemoriesMerged: _reembed}


class VectorsProjector:
    name = "vectors"
    tables = ("memory_vectors", "memory_vector_counts")
    handlers = {**_IN_RUN, **_ONE_BY_ONE}
    types = types_of(handlers)

    def prepare(self) -> None:
        """Load the embedding model before a batch is applied, outside its time limit (projections/runner.py):
        a cold start (the first ONNX export) is no event's fault."""
        get_embedder(get_settings().embedding.embedding_model).warm()

    def apply(self, conn: Connection, events: Sequence[RecordedEvent]) -> None:
        apply_in_order(conn, events, _ONE_BY_ONE, _IN_RUN, _Run())
