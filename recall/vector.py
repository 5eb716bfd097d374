"""The vector leg: cosine search in pgvector, exact for small scopes and iterative HNSW for large ones.

pgvector applies WHERE filters after the HNSW scan, so a selective scope (one agent among many) loses most
of its true neighbours. A scope small enough to scan exactly is scanned exactly (a few ms through the
btree); larger ones use HNSW with iterative scans, which keep walking the graph until enough rows pass (and
when a scan gives up short of that, the query is answered exactly: method "hnsw_iterative+exact").

Only vectors of the query's model are compared (`memory_vectors.model`): after a model change, memories not yet
re-embedded (a rebuild of `vectors`) are scored on their keyword leg alone, never against another model's space.
"""

from __future__ import annotations

import uuid

from sqlalchemy import Connection, text

from recall.scope import Scope


def _where(scope: Scope, model: str) -> tuple[str, dict[str, object]]:
    where, params = scope.where("v")
    return f"{where} AND v.model = :model", {**params, "model": model}


def scope_size(conn: Connection, scope: Scope, cap: int, model: str) -> int:
    where, params = _where(scope, model)
    sql = f"SELECT count(*) FROM (SELECT 1 FROM memory_vectors v WHERE {where} LIMIT :cap) c"
    return conn.execute(text(sql), {**params, "cap": cap}).scalar_one()


def vector_top(conn: Connection, scope: Scope, query_vector: str, n: int, exact_max_rows: int,
               ef_search: int, statuses: tuple[str, ...] | None = None,
               floor: float | None = None, *, model: str) -> tuple[dict[uuid.UUID, float], str]:
    """The top `n` memories by cosine similarity within `scope` among vectors of `model`, and the method used.
    With `statuses`, only memories in one of them; with `floor`, only cosines at or above it."""
    if scope_size(conn, scope, exact_max_rows + 1, model) <= exact_max_rows:
        found, method = _exact(conn, scope, query_vector, n, statuses, model), "exact"
    else:
        found, method = _hnsw_iterative(conn, scope, query_vector, n, ef_search, statuses, model), "hnsw_iterative"
        # An iterative scan gives up at hnsw.max_scan_tuples / its memory limit: when it brought back fewer rows
        # than the scope holds, what it missed is found exactly (slower, never short).
        if len(found) < n and scope_size(conn, scope, n, model) > len(found):
            found, method = _exact(conn, scope, query_vector, n, statuses, model), "hnsw_iterative+exact"
    if floor is not None:
        found = {i: c for i, c in found.items() if c >= floor}
    return found, method


def _exact(conn: Connection, scope: Scope, query_vector: str, n: int,
           statuses: tuple[str, ...] | None, model: str) -> dict[uuid.UUID, float]:
    where, params = _where(scope, model)
    join = ""
    if statuses is not None:
        join = " JOIN memories m ON m.tenant = v.tenant AND m.memory_id = v.memory_id AND m.status = ANY(:statuses)"
        params["statuses"] = list(statuses)
    # "+ 0" makes the sort key an expression the HNSW index cannot serve, so the plan reads the scope's rows
    # through the btree and sorts them: exact, and faster than materialising the scope first.
    sql = f"""
    SELECT v.memory_id, 1 - (v.embedding <=> CAST(:q AS vector)) AS cosine FROM memory_vectors v{join}
    WHERE {where} ORDER BY (v.embedding <=> CAST(:q AS vector)) + 0, v.memory_id LIMIT :n
    """
    return {r.memory_id: float(r.cosine) for r in conn.execute(text(sql), {**params, "q": query_vector, "n": n})}


def _hnsw_iterative(conn: Connection, scope: Scope, query_vector: str, n: int, ef_search: int,
                    statuses: tuple[str, ...] | None, model: str) -> dict[uuid.UUID, float]:
    where, params = _where(scope, model)
    if statuses is not None:
        # A per-row filter (not a join), so the plan stays an ordered HNSW index scan that iterates.
        where += (" AND (SELECT m.status FROM memories m WHERE m.tenant = v.tenant"
                  " AND m.memory_id = v.memory_id) = ANY(:statuses)")
        params["statuses"] = list(statuses)
    conn.execute(text("SET LOCAL hnsw.iterative_scan = relaxed_order"))
    conn.execute(text(f"SET LOCAL hnsw.ef_search = {int(ef_search)}"))
    sql = f"""
    SELECT v.memory_id, 1 - (v.embedding <=> CAST(:q AS vector)) AS cosine FROM memory_vectors v
    WHERE {where} ORDER BY v.embedding <=> CAST(:q AS vector) LIMIT :n
    """
    return {r.memory_id: float(r.cosine) for r in conn.execute(text(sql), {**params, "q": query_vector, "n": n})}


def cosines_for(conn: Connection, tenant: str, ids: list[uuid.UUID], query_vector: str,
                model: str) -> dict[uuid.UUID, float]:
    """Cosine of the query to each of `ids` that has a vector of `model` (BM25-only candidates get their vector
    leg here)."""
    if not ids:
        return {}
    rows = conn.execute(text("""
        SELECT memory_id, 1 - (embedding <=> CAST(:q AS vector)) AS cosine FROM memory_vectors
        WHERE tenant = :tenant AND memory_id = ANY(:ids) AND model = :model"""),
        {"tenant": tenant, "ids": ids, "q": query_vector, "model": model})
    return {r.memory_id: float(r.cosine) for r in rows}


def prf_cosines(conn: Connection, tenant: str, top: list[uuid.UUID], ids: list[uuid.UUID],
                query_vector: str, model: str) -> tuple[dict[uuid.UUID, float], float | None]:
    """Rocchio's inputs, computed in PostgreSQL: the cosine of each of `ids` to the centroid of `top`'s
    vectors, and the centroid's cosine to the query (None when none of `top` has a vector)."""
    if not top or not ids:
        return {}, None
    rows = conn.execute(text("""
        WITH c AS (SELECT avg(embedding) AS e FROM memory_vectors
                   WHERE tenant = :tenant AND memory_id = ANY(:top) AND model = :model)
        SELECT v.memory_id, 1 - (v.embedding <=> c.e) AS cosine, 1 - (c.e <=> CAST(:q AS vector)) AS to_query
        FROM memory_vectors v, c
        WHERE v.tenant = :tenant AND v.memory_id = ANY(:ids) AND v.model = :model AND c.e IS NOT NULL"""),
        {"tenant": tenant, "top": top, "ids": ids, "q": query_vector, "model": model}).all()
    if not rows:
        return {}, None
    return {r.memory_id: float(r.cosine) for r in rows}, float(rows[0].to_query)
