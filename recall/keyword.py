"""The keyword leg: Okapi BM25 scored inside PostgreSQL over the postings a keyword projector keeps.

One statement serves every domain with BM25 postings: `KeywordTables` names a domain's tables (memories' by
default: projections/keyword.py; knowledge sections': projections/knowledge.py).

The idf of each query term is computed once (a MATERIALIZED CTE, float8 arithmetic) and looked up per posting,
not joined: joined, the planner inlined the CTE (a numeric ln per posting) and, estimating a term's postings by
the average (1 / distinct terms), chose one index descent into the documents per posting, whatever a common term's
real count. Scanned by `term = ANY(:terms)`, the postings are estimated from the term's statistics (its most
common values), so a query touching many postings joins its documents by hash (bench/sessions_recall.py --profile).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import Connection, text

from recall.scope import Scope


@dataclass(frozen=True)
class KeywordTables:
    postings: str  # (tenant, term, <id>, tf, length)
    terms: str  # (tenant, term, df)
    stats: str  # (tenant, n_docs, total_length)
    docs: str  # one row per document, alias d: what the scope filters
    id_column: str
    status_filter: str  # SQL on d, with :statuses: the document is in one of them


MEMORY_KEYWORD = KeywordTables(
    "keyword_postings", "keyword_terms", "keyword_stats", "keyword_docs", "memory_id",
    "EXISTS (SELECT 1 FROM memories m WHERE m.tenant = d.tenant AND m.memory_id = d.memory_id"
    " AND m.status = ANY(:statuses))")
SECTION_KEYWORD = KeywordTables("knowledge_postings", "knowledge_terms", "knowledge_stats", "knowledge_sections",
                                "section_id", "d.status = ANY(:statuses)")


def bm25_top(conn: Connection, scope: Scope, terms: list[str], n: int, k1: float, b: float,
             statuses: tuple[str, ...] | None = None, tables: KeywordTables = MEMORY_KEYWORD,
             where_sql: str = "", where_params: dict[str, object] | None = None) -> dict[uuid.UUID, float]:
    """The top `n` documents (memories by default) by BM25 for the distinct `terms`, within `scope` (and, when
    given, whose document has one of `statuses`: the funnel's eligibility rule; and `where_sql` on d)."""
    if not terms:
        return {}
    t, key = tables, tables.id_column
    where, params = scope.where("d")
    if statuses is not None:
        where += f" AND {t.status_filter}"
        params = {**params, "statuses": list(statuses)}
    if where_sql:
        where += f" AND {where_sql}"
        params = {**params, **(where_params or {})}
    sql = f"""
    WITH stats AS (
        SELECT n_docs, total_length::float8 / greatest(n_docs, 1) AS avgdl FROM {t.stats} WHERE tenant = :tenant
    ), idf AS MATERIALIZED (
        SELECT t.term, ln(1 + (s.n_docs - t.df + 0.5)::float8 / (t.df + 0.5)) AS idf
        FROM {t.terms} t CROSS JOIN stats s WHERE t.tenant = :tenant AND t.term = ANY(:terms)
    )
    SELECT p.{key} AS id,
           sum(coalesce((SELECT i.idf FROM idf i WHERE i.term = p.term), 0)
               * p.tf * (:k1 + 1) / (p.tf + :k1 * (1 - :b + :b * p.length / s.avgdl))) AS score
    FROM {t.postings} p
    CROSS JOIN stats s
    JOIN {t.docs} d ON d.tenant = p.tenant AND d.{key} = p.{key}
    WHERE p.tenant = :tenant AND p.term = ANY(:terms) AND {where}
    GROUP BY p.{key}
    ORDER BY score DESC, p.{key}
    LIMIT :n
    """
    rows = conn.execute(text(sql), {**params, "terms": sorted(set(terms)), "k1": k1, "b": b, "n": n})
    return {r.id: float(r.score) for r in rows}
