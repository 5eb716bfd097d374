"""The one filtered vector search (recall/vector.py::nearest_vectors), as recall and the governor call it.

A scope says per column what None means: any value (recall's Scope) or IS NULL (Scope.exactly, the governor's).
Rows go straight into memory_vectors and memories for this test's tenant (and are removed after it, so the
shared read models stay what the projections made): vectors near one of a few directions, in four scopes, one
archived memory, and a copy of a vector under another model.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import numpy as np
import pytest
from sqlalchemy import text

MODEL = "scope-test-model"
SCOPES = [("a", None), (None, None), ("a", "p"), ("b", None)]  # (agent_id, project)
PER_SCOPE = 6


def _literal(v: np.ndarray) -> str:
    from infra.embedding import to_pgvector

    return to_pgvector(v / np.linalg.norm(v))


@pytest.fixture
def rows(engine, tenant):
    """Inserted rows by id: (agent_id, project, status, model, vector); and the query directions."""
    from infra.settings import get_settings

    rng = np.random.default_rng(7)
    dim = get_settings().embedding.embedding_dim
    directions = rng.normal(size=(2, dim))
    made: dict[uuid.UUID, tuple[str | None, str | None, str, str, np.ndarray]] = {}
    for s, (agent, project) in enumerate(SCOPES):
        for j in range(PER_SCOPE):
            vector = directions[j % 2] + rng.normal(scale=0.5, size=dim)
            status = "archived" if (s, j) == (0, 0) else "staging" if j == 1 else "active"
            made[uuid.uuid4()] = (agent, project, status, MODEL, vector)
    first = next(iter(made))
    made[uuid.uuid4()] = (*made[first][:3], "another-model", made[first][4])  # same vector, another space
    now = datetime.now(UTC)
    with engine.begin() as conn:
        for position, (memory_id, (agent, project, status, model, vector)) in enumerate(made.items()):
            conn.execute(text("""
                INSERT INTO memory_vectors (tenant, memory_id, agent_id, project, kind, model, embedding)
                VALUES (:t, :id, :agent, :project, 'observation', :model, CAST(:e AS vector))"""),
                {"t": tenant, "id": memory_id, "agent": agent, "project": project, "model": model,
                 "e": _literal(vector)})
            conn.execute(text("""
                INSERT INTO memories (tenant, memory_id, content, content_hash, kind, agent_id, project,
                                      occurred_at, recorded_at, status, position)
                VALUES (:t, :id, :c, :h, 'observation', :agent, :project, :now, :now, :status, :pos)"""),
                {"t": tenant, "id": memory_id, "c": f"memory {position}", "h": f"h{position}", "agent": agent,
                 "project": project, "now": now, "status": status, "pos": position})
    try:
        yield made, [_literal(d) for d in directions]
    finally:
        with engine.begin() as conn:
            for table in ("memory_vectors", "memories"):
                conn.execute(text(f"DELETE FROM {table} WHERE tenant = :t"), {"t": tenant})


def _settings(exact_scan_max_rows: int = 20_000):
    from infra.settings import get_settings, replace

    return replace(get_settings(), embedding_model=MODEL, exact_scan_max_rows=exact_scan_max_rows,
                   hnsw_ef_search=200)


def _truth(made, query: str, keep, k: int) -> list[uuid.UUID]:
    q = np.asarray([float(x) for x in query.strip("[]").split(",")])
    scored = [(-float(q @ (v / np.linalg.norm(v))), str(i), i) for i, (a, p, s, m, v) in made.items()
              if m == MODEL and keep(a, p, s)]
    return [i for _, _, i in sorted(scored)[:k]]


def _search(engine, scope, queries, k, statuses=None, exact_scan_max_rows=20_000):
    from recall.vector import nearest_vectors

    with engine.connect() as conn, conn.begin():
        return nearest_vectors(conn, scope, queries, k, _settings(exact_scan_max_rows), statuses)


def test_none_means_is_null_in_an_exact_scope_and_any_value_in_a_recall_scope(engine, tenant, rows):
    from recall.scope import Scope

    made, queries = rows
    k = len(made)
    cases = [
        (Scope.exactly(tenant, "a", None), lambda a, p, s: (a, p) == ("a", None)),
        (Scope(tenant, agent_id="a"), lambda a, p, s: a == "a"),
        (Scope.exactly(tenant, None, None), lambda a, p, s: (a, p) == (None, None)),
        (Scope(tenant), lambda a, p, s: True),
    ]
    for scope, keep in cases:
        [(hits, method)] = _search(engine, scope, queries[:1], k)
        assert method == "exact"
        assert [i for i, _ in hits] == _truth(made, queries[0], keep, k), scope


def test_batched_queries_answer_each_as_alone_on_both_paths(engine, tenant, rows):
    from recall.scope import Scope

    made, queries = rows
    scope = Scope(tenant, agent_id="a")
    for exact_max in (20_000, 0):  # 0: every scope is "large", so the iterative HNSW path is taken
        batched = _search(engine, scope, queries, 4, exact_scan_max_rows=exact_max)
        alone = [_search(engine, scope, [q], 4, exact_scan_max_rows=exact_max)[0] for q in queries]
        assert [n.hits for n in batched] == [n.hits for n in alone]
        for q, n in zip(queries, batched, strict=True):
            assert [i for i, _ in n.hits] == _truth(made, q, lambda a, p, s: a == "a", 4)
            assert [c for _, c in n.hits] == sorted((c for _, c in n.hits), reverse=True)
            assert n.method == "exact" if exact_max else n.method.startswith("hnsw_iterative"), n.method


def test_statuses_filter_on_both_paths(engine, tenant, rows):
    from recall.scope import Scope

    made, queries = rows
    scope = Scope.exactly(tenant, "a", None)
    for exact_max in (20_000, 0):
        [(hits, _)] = _search(engine, scope, queries[:1], PER_SCOPE, ("active",), exact_max)
        expected = _truth(made, queries[0], lambda a, p, s: (a, p) == ("a", None) and s == "active", PER_SCOPE)
        assert [i for i, _ in hits] == expected and len(expected) == PER_SCOPE - 2
        [(hits, _)] = _search(engine, scope, queries[:1], PER_SCOPE, None, exact_max)
        assert len(hits) == PER_SCOPE  # without statuses the archived and staging ones count too


def test_another_models_vectors_are_never_compared(engine, tenant, rows):
    from recall.scope import Scope

    made, queries = rows
    other = {i for i, (_, _, _, m, _) in made.items() if m != MODEL}
    for exact_max in (20_000, 0):
        [(hits, _)] = _search(engine, Scope(tenant), queries[:1], len(made), None, exact_max)
        assert len(hits) == len(made) - 1 and not other & {i for i, _ in hits}


def test_an_empty_scope_or_no_query(engine, tenant, rows):
    from recall.scope import Scope

    assert _search(engine, Scope.exactly(tenant, "nobody", None), rows[1], 3) == [([], "exact"), ([], "exact")]
    assert _search(engine, Scope(tenant), [], 3) == []


def test_the_governor_reads_its_exact_scope_with_the_rows(engine, tenant, rows):
    from domain.governance import NEAREST_PER_QUERY
    from domain.memory_status import NEIGHBOUR_STATUSES
    from services.neighbours import nearest_in_read_model

    made, queries = rows
    with engine.connect() as conn, conn.begin():
        found = nearest_in_read_model(conn, tenant, (None, None), queries, _settings())
        content = dict(conn.execute(text("SELECT memory_id, content FROM memories WHERE tenant = :t"),
                                    {"t": tenant}).all())
    for q, near in zip(queries, found, strict=True):
        expected = _truth(made, q, lambda a, p, s: (a, p) == (None, None) and s in NEIGHBOUR_STATUSES,
                          NEAREST_PER_QUERY)
        assert [n.memory_id for n in near] == expected
        assert all(n.content == content[n.memory_id] and n.source == "read_model" for n in near)
        assert [n.status for n in near] == [made[i][2] for i in expected]
