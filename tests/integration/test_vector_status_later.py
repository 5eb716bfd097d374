"""The exact vector scan looks statuses up for the scope's nearest rows only (recall/vector.py
_exact_status_later), and still answers the exact top k of the memories in the asked statuses: also when most of
the nearest are in another status (then it searches again with the filter first)."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime

import numpy as np
import pytest
from sqlalchemy import text

MODEL = "status-later-model"


@pytest.fixture
def memories(engine, tenant):
    """40 memories: the 30 nearest to the query direction superseded, the 10 farthest active."""
    from infra.embedding import to_pgvector
    from infra.settings import get_settings

    dim = get_settings().embedding_dim
    rng = np.random.default_rng(11)
    query = rng.normal(size=dim)
    query /= np.linalg.norm(query)
    made = {}
    now = datetime.now(UTC)
    with engine.begin() as conn:
        for i in range(40):
            v = query * (1 - i / 45) + rng.normal(scale=0.05, size=dim)  # nearer for smaller i
            v /= np.linalg.norm(v)
            memory_id, status = uuid.uuid4(), "superseded" if i < 30 else "active"
            made[memory_id] = (status, float(v @ query))
            conn.execute(text("""
                INSERT INTO memory_vectors (tenant, memory_id, agent_id, kind, model, embedding)
                VALUES (:t, :id, 'a', 'observation', :m, CAST(:e AS vector))"""),
                {"t": tenant, "id": memory_id, "m": MODEL, "e": to_pgvector(v)})
            conn.execute(text("""
                INSERT INTO memories (tenant, memory_id, content, content_hash, kind, agent_id, occurred_at,
                                      recorded_at, status, position)
                VALUES (:t, :id, :c, :h, 'observation', 'a', :now, :now, :status, :pos)"""),
                {"t": tenant, "id": memory_id, "c": f"memory {i}", "h": f"h{i}", "now": now, "status": status,
                 "pos": i})
    try:
        yield made, to_pgvector(query)
    finally:
        with engine.begin() as conn:
            for table in ("memory_vectors", "memories"):
                conn.execute(text(f"DELETE FROM {table} WHERE tenant = :t"), {"t": tenant})


@pytest.mark.parametrize("k", [1, 5, 10])
def test_exact_top_k_of_the_asked_statuses(engine, tenant, memories, k) -> None:
    from infra.settings import get_settings
    from recall.scope import Scope
    from recall.vector import nearest_vectors

    made, query = memories
    settings = replace(get_settings(), embedding_model=MODEL)
    for statuses in (("active",), ("superseded",), ("active", "superseded")):
        with engine.connect() as conn:
            [found] = nearest_vectors(conn, Scope(tenant), [query], k, settings, statuses)
        truth = sorted((i for i, (s, _) in made.items() if s in statuses), key=lambda i: -made[i][1])[:k]
        assert found.method == "exact"
        assert [i for i, _ in found.hits] == truth
