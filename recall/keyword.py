"""The keyword leg: Okapi BM25 scored inside PostgreSQL over the postings the keyword projector keeps."""

from __future__ import annotations

import uuid

from sqlalchemy import Connection, text

from recall.scope import Scope


def bm25_top(conn: Connection, scope: Scope, terms: list[str], n: int, k1: float, b: float,
             statuses: tuple[str, ...] | None = None) -> dict[uuid.UUID, float]:
    """The top `n` memories by BM25 for the distinct `terms`, within `scope` (and, when given, whose memory has
    one of `statuses`: the funnel's eligibility rule)."""
    if not terms:
        return {}
    where, params = scope.where("d")
    if statuses is not None:
        where += (" AND EXISTS (SELECT 1 FROM memories m WHERE m.tenant = d.tenant AND m.memory_id = d.memory_id"
                  " AND m.status = ANY(:statuses))")
        params = {**params, "statuses": list(statuses)}
    sql = f"""
    WITH stats AS (
        SELECT n_docs, total_length::float8 / greatest(n_docs, 1) AS avgdl FROM keyword_stats WHERE tenant = :tenant
    ), idf AS (
        SELECT t.term, ln(1 + (s.n_docs - t.df + 0.5) / (t.df + 0.5)) AS idf
        FROM keyword_terms t CROSS JOIN stats s WHERE t.tenant = :tenant AND t.term = ANY(:terms)
    )
    SELECT p.memory_id,
           sum(i.idf * p.tf * (:k1 + 1) / (p.tf + :k1 * (1 - :b + :b * p.length / s.avgdl))) AS score
    FROM keyword_postings p
    JOIN idf i ON i.term = p.term
    CROSS JOIN stats s
    JOIN keyword_docs d ON d.tenant = p.tenant AND d.memory_id = p.memory_id
    WHERE p.tenant = :tenant AND p.term = ANY(:terms) AND {where}
    GROUP BY p.memory_id
    ORDER BY score DESC, p.memory_id
    LIMIT :n
    """
    rows = conn.execute(text(sql), {**params, "terms": sorted(set(terms)), "k1": k1, "b": b, "n": n})
    return {r.memory_id: float(r.score) for r in rows}
