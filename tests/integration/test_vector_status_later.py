"""The exact vector scan looks statuses up for the scope's nearest rows only (recall/vector.py
_exact_status_later), and still answers the exact top k of the memories in the asked statuses: also when most of
the nearest are in another status (then it searches again with the filter first)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import numpy as np
import pytest
from sqlalchemy import text

MODEL = "status-later-model"


def _nearer_and_nearer(seed: int, n: int = 40) -> tuple[np.ndarray, list[np.ndarray]]:
    """A unit query direction and `n` unit vectors around it, nearer to it for a smaller index."""
    from infra.settings import get_settings

    dim = get_settings().embedding.embedding_dim
    rng = np.random.default_rng(seed)
    query = rng.normal(size=dim)
    query /= np.linalg.norm(query)
    vectors = []
    for i in range(n):
        v = query * (1 - i / 45) + rng.normal(scale=0.05, size=dim)
        vectors.append(v / np.linalg.norm(v))
    return query, vectors


@pytest.fixture
def memories(engine, tenant):
    """40 memories: the 30 nearest to the query direction superseded, the 10 farthest active."""
    from infra.embedding import to_pgvector

    query, vectors = _nearer_and_nearer(11)
    made = {}
    now = datetime.now(UTC)
    with engine.begin() as conn:
        for i, v in enumerate(vectors):
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
    from infra.settings import get_settings, replace
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


def test_a_scope_small_enough_is_counted_and_searched_in_one_statement(engine, tenant, memories) -> None:
    """The count that picks exact or HNSW rides in the exact search's statement (recall/vector.py
    _exact_unless_large); past exact_scan_max_rows that statement only counts, and the HNSW search follows."""
    from sqlalchemy import event

    from infra.settings import get_settings, replace
    from recall.scope import Scope
    from recall.vector import nearest_vectors

    made, query = memories
    statements: list[str] = []

    def capture(conn, cursor, statement, params, context, many) -> None:
        statements.append(statement)

    for max_rows, method, issued in ((100, "exact", 1), (10, "hnsw_iterative", 3)):
        settings = replace(get_settings(), embedding_model=MODEL, exact_scan_max_rows=max_rows)
        statements.clear()
        event.listen(engine, "before_cursor_execute", capture)
        try:
            with engine.connect() as conn:
                [found] = nearest_vectors(conn, Scope(tenant), [query], 5, settings, ("superseded",))
        finally:
            event.remove(engine, "before_cursor_execute", capture)
        truth = sorted((i for i, (s, _) in made.items() if s == "superseded"), key=lambda i: -made[i][1])[:5]
        assert found.method == method and [i for i, _ in found.hits] == truth
        assert len(statements) == issued, statements  # HNSW: the count, its settings, its search


@pytest.fixture
def sections(engine, tenant):
    """40 knowledge sections of one document: the 30 nearest to the query direction archived, then 5 active on a
    path a gate hides, then 5 active on another."""
    from infra.embedding import to_pgvector

    query, vectors = _nearer_and_nearer(12)
    made = {}
    now = datetime.now(UTC)
    with engine.begin() as conn:
        for i, v in enumerate(vectors):
            section_id, status, path = uuid.uuid4(), "archived" if i < 30 else "active", f"p{i // 35}.md"
            made[section_id] = (status, path, float(v @ query))
            conn.execute(text("""
                INSERT INTO knowledge_section_vectors (tenant, section_id, model, embedding)
                VALUES (:t, :id, :m, CAST(:e AS vector))"""),
                {"t": tenant, "id": section_id, "m": MODEL, "e": to_pgvector(v)})
            conn.execute(text("""
                INSERT INTO knowledge_sections (tenant, section_id, document_id, path, heading_path, ordinal,
                    content_hash, first_version, version, text, length, status, created_at, status_changed_at)
                VALUES (:t, :id, :path, :path, :h, :i, :h, 1, 1, :h, 2, :status, :now, :now)"""),
                {"t": tenant, "id": section_id, "path": path, "h": f"# s{i}", "i": i, "status": status, "now": now})
    try:
        yield made, to_pgvector(query)
    finally:
        with engine.begin() as conn:
            for table in ("knowledge_section_vectors", "knowledge_sections"):
                conn.execute(text(f"DELETE FROM {table} WHERE tenant = :t"), {"t": tenant})


@pytest.mark.parametrize("k", [1, 5, 10])
def test_an_item_domains_whole_tenant_looks_its_units_up_later_and_stays_exact(engine, tenant, sections, k) -> None:
    """A whole tenant's section vectors are sorted alone and each of the nearest's section looked up (status and
    gate); when fewer than k of them pass, the search runs again with the filters first. Either way: the exact top
    k of the sections the status and the gate keep."""
    from sqlalchemy import event

    from infra.settings import get_settings, replace
    from recall.domains.knowledge import SECTION_VECTORS
    from recall.scope import Scope
    from recall.vector import nearest_vectors

    made, query = sections
    settings = replace(get_settings(), embedding_model=MODEL)
    for statuses, gate in ((("archived",), ""), (("active",), ""), (("active",), "d.path <> 'p0.md'"),
                           (("active", "archived"), "d.path <> 'p0.md'")):
        statements: list[str] = []

        def seen(conn, cursor, statement, *args, statements: list[str] = statements) -> None:
            statements.append(statement)

        with engine.connect() as conn:
            event.listen(engine, "before_cursor_execute", seen)
            try:
                [found] = nearest_vectors(conn, Scope(tenant), [query], k, settings, statuses, SECTION_VECTORS, gate)
            finally:
                event.remove(engine, "before_cursor_execute", seen)
        kept = [i for i, (s, path, _) in made.items() if s in statuses and not (gate and path == "p0.md")]
        assert found.method == "exact"
        assert [i for i, _ in found.hits] == sorted(kept, key=lambda i: -made[i][2])[:k], (statuses, gate)
        assert "LIMIT %(width)s" in statements[0]  # the units looked up after the sort
        # the nearest 2k + 20 hold k that pass, or are all 40 vectors; else the search with the filters first runs
        passed = sum(1 for i, *_ in sorted(made.items(), key=lambda x: -x[1][2])[:2 * k + 20] if i in kept)
        assert len(statements) == (1 if passed >= k or 2 * k + 20 >= 40 else 2), (statuses, gate)
