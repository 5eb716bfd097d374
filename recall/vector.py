"""The vector leg: cosine search in pgvector, exact for small scopes and iterative HNSW for large ones.

pgvector applies WHERE filters after the HNSW scan, so a selective scope (one agent among many) loses most
of its true neighbours. A scope small enough to scan exactly is scanned exactly (a few ms through the
btree); larger ones use HNSW with iterative scans, which keep walking the graph until enough rows pass.
"""

from __future__ import annotations

import uuid

from sqlalchemy import Connection, text

from recall.scope import Scope


def scope_size(conn: Connection, scope: Scope, cap: int) -> int:
    where, params = scope.where("v")
    sql = f"SELECT count(*) FROM (SELECT 1 FROM memory_vectors v WHERE {where} LIMIT :cap) c"
    return conn.execute(text(sql), {**params, "cap": cap}).scalar_one()


def vector_top(conn: Connection, scope: Scope, query_vector: str, n: int, exact_max_rows: int,
               ef_search: int) -> tuple[dict[uuid.UUID, float], str]:
    """The top `n` memories by cosine similarity within `scope`, and the method used."""
    where, params = scope.where("v")
    params = {**params, "q": query_vector, "n": n}
    if scope_size(conn, scope, exact_max_rows + 1) <= exact_max_rows:
        method = "exact"
        sql = f"""
        WITH scoped AS MATERIALIZED (SELECT v.memory_id, v.embedding FROM memory_vectors v WHERE {where})
        SELECT memory_id, 1 - (embedding <=> CAST(:q AS vector)) AS cosine FROM scoped
        ORDER BY embedding <=> CAST(:q AS vector), memory_id LIMIT :n
        """
    else:
        method = "hnsw_iterative"
        conn.execute(text("SET LOCAL hnsw.iterative_scan = relaxed_order"))
        conn.execute(text(f"SET LOCAL hnsw.ef_search = {int(ef_search)}"))
        sql = f"""
        SELECT v.memory_id, 1 - (v.embedding <=> CAST(:q AS vector)) AS cosine FROM memory_vectors v
        WHERE {where} ORDER BY v.embedding <=> CAST(:q AS vector) LIMIT :n
        """
    rows = conn.execute(text(sql), params)
    return {r.memory_id: float(r.cosine) for r in rows}, method


def cosines_for(conn: Connection, tenant: str, ids: list[uuid.UUID], query_vector: str) -> dict[uuid.UUID, float]:
    """Cosine of the query to each of `ids` that has a vector (BM25-only candidates get their vector leg here)."""
    if not ids:
        return {}
    rows = conn.execute(text("""
        SELECT memory_id, 1 - (embedding <=> CAST(:q AS vector)) AS cosine FROM memory_vectors
        WHERE tenant = :tenant AND memory_id = ANY(:ids)"""), {"tenant": tenant, "ids": ids, "q": query_vector})
    return {r.memory_id: float(r.cosine) for r in rows}
