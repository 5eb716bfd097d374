"""Vectors are compared only within the query's model, and the embedding cache is each tenant's own.

A vector recorded under another model is another space: recall scores that memory on its keyword leg alone
(a model change is a rebuild of `vectors`), and the governor never compares it. A tenant's write never finds
another tenant's cached embedding, so its timing tells nothing about what others wrote.
"""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import text

# It rebuilds or verifies whole projections (or scans every table): on a database of its own that costs its
# own writes, not whatever ran before it on this xdist worker.
pytestmark = pytest.mark.own_database


def _project(engine) -> None:
    from projections.registry import PROJECTORS
    from projections.runner import catch_up

    for name in ("memories", "keyword", "vectors", "entities"):
        catch_up(engine, PROJECTORS[name], 500)


def test_recall_compares_only_vectors_of_the_querys_model(app, engine, tenant, monkeypatch):
    from fastapi.testclient import TestClient

    import api.context
    from infra.settings import get_settings, replace

    key = f"key-{tenant}"
    settings = replace(get_settings(), api_keys={key: tenant})
    monkeypatch.setattr(api.context, "get_settings", lambda: settings)
    with TestClient(app, headers={"Authorization": f"Bearer {key}"}) as http:
        w = http.post("/v1/memories", json={"content": "Quentin keeps the spare keys in the blue drawer",
                                            "agent_id": "m", "must_keep": True}).json()
        _project(engine)
        query = {"query": "where are the spare keys kept?", "agent_id": "m"}
        first = http.post("/v1/recall", json=query).json()["results"][0]
        assert first["memory_id"] == w["memory_id"] and first["explanation"]["cosine"] is not None
        model = get_settings().embedding.embedding_model
        with engine.begin() as conn:  # as if written by another model, before a rebuild of vectors
            conn.execute(text("UPDATE memory_vectors SET model = 'another-model' WHERE tenant = :t"), {"t": tenant})
        try:
            after = http.post("/v1/recall", json=query).json()["results"][0]
            assert after["memory_id"] == w["memory_id"]
            assert after["explanation"]["cosine"] is None and "no vector yet" in after["explanation"]["note"]
        finally:  # the table back as the log has it: later tests verify vectors against a rebuild
            with engine.begin() as conn:
                conn.execute(text("UPDATE memory_vectors SET model = :m WHERE tenant = :t"), {"m": model, "t": tenant})


def test_the_embedding_cache_is_each_tenants_own(engine, tenant):
    from services.remember import MemoryInput, remember

    other = f"{tenant}-b"
    secret = f"Project Falcon's launch code is {uuid.uuid4().hex[:8]}"
    remember(engine, tenant, [MemoryInput(content=secret)], {"source": "test"})
    _project(engine)

    def cached(t: str) -> int:
        with engine.connect() as conn:
            return conn.execute(text("SELECT count(*) FROM embedding_cache WHERE tenant = :t"), {"t": t}).scalar_one()

    assert cached(tenant) >= 1 and cached(other) == 0
    remember(engine, other, [MemoryInput(content=secret)], {"source": "test"})
    assert cached(other) == 1  # embedded again for its own tenant, not found in the first one's cache
