"""The vectors read model: one embedding per memory in a pgvector column (HNSW, cosine)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, text

from domain.events import MemoryRecorded, RecordedEvent
from infra.embedding import embed_cached, get_embedder
from infra.settings import get_settings

_INSERT = text("""
INSERT INTO memory_vectors (tenant, memory_id, agent_id, project, session_id, kind, model, embedding)
SELECT t, i, a, p, s, k, :model, CAST(e AS vector)
FROM unnest(CAST(:tenants AS text[]), CAST(:ids AS uuid[]), CAST(:agents AS text[]), CAST(:projects AS text[]),
            CAST(:sessions AS text[]), CAST(:kinds AS text[]), CAST(:embeddings AS text[]))
     AS b(t, i, a, p, s, k, e)
""")


class VectorsProjector:
    name = "vectors"
    tables = ("memory_vectors",)
    types = ("MemoryRecorded",)

    def apply(self, conn: Connection, events: Sequence[RecordedEvent]) -> None:
        memories = [(e.tenant, e.payload()) for e in events]
        if not memories:
            return
        embedder = get_embedder(get_settings().embedding_model)
        embeddings = embed_cached(conn, embedder, [m.content for _, m in memories])  # type: ignore[attr-defined]
        rows: dict[str, list] = {k: [] for k in ("tenants", "ids", "agents", "projects", "sessions", "kinds")}
        for tenant, m in memories:
            assert isinstance(m, MemoryRecorded)
            for key, value in (("tenants", tenant), ("ids", m.memory_id), ("agents", m.agent_id),
                               ("projects", m.project), ("sessions", m.session_id), ("kinds", m.kind)):
                rows[key].append(value)
        conn.execute(_INSERT, {**rows, "model": embedder.model, "embeddings": embeddings})
