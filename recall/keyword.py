"""The keyword leg: Okapi BM25 scored inside PostgreSQL over the postings a keyword projector keeps.

One statement serves every domain with BM25 postings: `KeywordTables` names a domain's tables (memories' by
default: readmodels/memories.py; an item domain's from its declaration, readmodels/item_domains.py).

The idf of each query term is computed once (a MATERIALIZED CTE, float8 arithmetic) and looked up per posting,
not joined: joined, the planner inlined the CTE (a numeric ln per posting) and, estimating a term's postings by
the average (1 / distinct terms), chose one index descent into the documents per posting, whatever a common term's
real count.

Past WALK_OVER_POSTINGS (200k) postings of the query's terms in the tenant, candidates come from each term's best
postings, not all of them: a term common to most documents would otherwise cost all its postings (sessions at
100k messages: 840 ms). Below it every posting is read, as the cheaper plan. Each query term contributes its first
PER_TERM postings, among the documents the scope and statuses allow, in impact order: (length + 10) / tf
ascending, the order of a posting's BM25 weight tf·(k1+1) / (tf + k1·(1 − b + b·length/avgdl)) for b = 0.75 and
an average length of 30 (the weight orders postings as (length + avgdl·(1−b)/b) / tf; with tf 1, the usual case in
short texts, by length alone, whatever avgdl is). Migration 0021 indexes every postings table by (tenant, term,
that order, id), so each term's walk reads its first PER_TERM postings that pass the filters and stops. The
union of those candidates is then scored with Okapi BM25 exactly, over all of each candidate's postings of the
query terms (looked up by document). A term with at most PER_TERM postings in scope gives all of them, so a
document holding any rarer query term is always a candidate, and on a corpus where no query term is that common
the answer is what scoring every posting gives; only documents that match nothing but common terms, beyond
each one's PER_TERM best, are left out.

Both plans are one statement: the count of the terms' postings picks one inside PostgreSQL (each branch gated by
a one-time filter on it, so the other is never run), one round trip per keyword leg.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import Connection, text

from readmodels.item_domains import UNIT_STATUS, ItemDomain
from readmodels.memories import MEMORY_POSTINGS
from readmodels.postings import Postings
from recall.scope import Scope, later_width

PER_TERM = 1000  # each query term's postings that may bring in a candidate
# Up to this many postings of the query's terms in the tenant (their df summed), every posting is read: walking
# each term's best costs index probes per posting where reading them all is one hash join, and measured it did not
# pay at the sizes tried (2 cores at load 25-30: 50k memories, whole tenant, 231 ms read whole against 287 ms
# walked; 30k session messages, Zipf terms, 345 against 415 ms, same top 10), so the walk is kept for tenants
# far past those (not measured yet: 100k+ messages, 1M memories).
WALK_OVER_POSTINGS = 200_000
# A posting's impact order, best first; migration 0021's (tenant, term, <this>, id) indexes serve it.
IMPACT_ORDER = "(p.length + 10)::float8 / p.tf"


@dataclass(frozen=True)
class KeywordTables:
    index: Postings  # postings (tenant, term, <id>, tf, length), terms (tenant, term, df), stats, the id column
    docs: str  # one row per document, alias d: what the scope filters
    status_filter: str  # SQL on d, with :statuses: the document is in one of them

    @classmethod
    def of(cls, domain: ItemDomain) -> KeywordTables:
        """An item domain's: its postings, over its units table, by each unit's status."""
        return cls(domain.postings, domain.table, UNIT_STATUS)

    @property
    def postings(self) -> str:
        return self.index.postings

    @property
    def terms(self) -> str:
        return self.index.terms

    @property
    def stats(self) -> str:
        return self.index.stats

    @property
    def id_column(self) -> str:
        return self.index.id_column


MEMORY_KEYWORD = KeywordTables(
    MEMORY_POSTINGS, "keyword_docs",
    "EXISTS (SELECT 1 FROM memories m WHERE m.tenant = d.tenant AND m.memory_id = d.memory_id"
    " AND m.status = ANY(:statuses))")


def bm25_top(conn: Connection, scope: Scope, terms: list[str], n: int, k1: float, b: float,
             statuses: tuple[str, ...] | None = None, tables: KeywordTables = MEMORY_KEYWORD,
             where_sql: str = "", where_params: dict[str, object] | None = None,
             per_term: int = PER_TERM, walk_over: int = WALK_OVER_POSTINGS) -> dict[uuid.UUID, float]:
    """The top `n` documents (memories by default) by BM25 for the distinct `terms`, within `scope` (and, when
    given, whose document has one of `statuses`: the funnel's eligibility rule; and `where_sql` on d), among each
    term's first `per_term` postings in impact order when the terms have more than `walk_over` postings (the
    module's docstring)."""
    if not terms:
        return {}
    t = tables
    where, params = scope.where("d")
    if statuses is not None:
        where += f" AND {t.status_filter}"
        params = {**params, "statuses": list(statuses)}
    if where_sql:
        where += f" AND {where_sql}"
    # where_params bind where_sql's parameters, or a status_filter's (a recall's time frame: recall/timeframe.py)
    params = {**params, **(where_params or {})}
    distinct = sorted(set(terms))
    rows = conn.execute(text(_sql(t, where, scope.whole_tenant)),
                        {**params, "terms": distinct, "k1": k1, "b": b, "n": n, "per_term": per_term,
                         "walk_over": walk_over, "width": later_width(n)})
    return {r.id: float(r.score) for r in rows}


def _sql(t: KeywordTables, where: str, later: bool) -> str:
    """One statement for both plans: the query terms' postings in the tenant (their df summed) pick one in
    PostgreSQL, each plan's branch gated by a one-time filter on that count, so the other is never run. `later`
    (a whole-tenant scope): reading every posting, the filters are looked up after scoring (_filter_later)."""
    key = t.id_column
    weight = "p.tf * (:k1 + 1) / (p.tf + :k1 * (1 - :b + :b * p.length / s.avgdl))"
    idf_of = "coalesce((SELECT i.idf FROM idf i WHERE i.term = p.term), 0)"
    settled = "(SELECT ok FROM settled)"
    return f"""
    WITH total AS MATERIALIZED (
        SELECT coalesce(sum(df), 0) AS postings FROM {t.terms} WHERE tenant = :tenant AND term = ANY(:terms)
    ), stats AS (
        SELECT n_docs, total_length::float8 / greatest(n_docs, 1) AS avgdl FROM {t.stats} WHERE tenant = :tenant
    ), idf AS MATERIALIZED (
        SELECT t.term, ln(1 + (s.n_docs - t.df + 0.5)::float8 / (t.df + 0.5)) AS idf
        FROM {t.terms} t CROSS JOIN stats s WHERE t.tenant = :tenant AND t.term = ANY(:terms)
    ), candidates AS MATERIALIZED (
        SELECT DISTINCT c.id FROM idf i CROSS JOIN LATERAL (
            SELECT p.{key} AS id FROM {t.postings} p
            JOIN {t.docs} d ON d.tenant = p.tenant AND d.{key} = p.{key}
            WHERE p.tenant = :tenant AND p.term = i.term AND {where}
            ORDER BY {IMPACT_ORDER}, p.{key}
            LIMIT :per_term) c
    ){_filter_later(t, where, weight, idf_of) if later else ""}
    -- Few enough postings to read them all: every posting of the terms, the idf looked up per posting.
    (SELECT p.{key} AS id, sum({idf_of} * {weight}) AS score
     FROM {t.postings} p
     CROSS JOIN stats s
     JOIN {t.docs} d ON d.tenant = p.tenant AND d.{key} = p.{key}
     WHERE (SELECT postings FROM total) <= :walk_over AND p.tenant = :tenant AND p.term = ANY(:terms) AND {where}
       {f"AND NOT {settled}" if later else ""}
     GROUP BY p.{key}
     ORDER BY score DESC, p.{key}
     LIMIT :n)
    UNION ALL
    -- Past WALK_OVER_POSTINGS: each term's best postings bring the candidates, scored over all their postings.
    (SELECT p.{key} AS id, sum(i.idf * {weight}) AS score
     FROM candidates c
     JOIN {t.postings} p ON p.tenant = :tenant AND p.{key} = c.id AND p.term = ANY(:terms)
     JOIN idf i ON i.term = p.term
     CROSS JOIN stats s
     WHERE (SELECT postings FROM total) > :walk_over
     GROUP BY p.{key}
     ORDER BY score DESC, p.{key}
     LIMIT :n)
    ORDER BY score DESC, id
    """


def _filter_later(t: KeywordTables, where: str, weight: str, idf_of: str) -> str:
    """The filter-later plan's CTEs and its branch (then UNION ALL), for a whole-tenant scope reading every posting:
    the documents are scored from the postings alone (which hold each one's length), and the scope, status and
    other filters are looked up for the best `width` only, not joined for every document of the tenant (a hash of
    every document's row was most of the leg's cost, and grew with the tenant, not the query). Exact whenever n of
    them pass, or all scored documents were looked at: every document outside them scores lower than all of them,
    in the same (score, id) order. Otherwise `settled` is false and the read-all branch answers."""
    key = t.id_column
    return f""", scored AS MATERIALIZED (
        SELECT p.{key} AS id, sum({idf_of} * {weight}) AS score
        FROM {t.postings} p CROSS JOIN stats s
        WHERE (SELECT postings FROM total) <= :walk_over AND p.tenant = :tenant AND p.term = ANY(:terms)
        GROUP BY p.{key}
    ), best AS MATERIALIZED (
        SELECT id, score FROM scored ORDER BY score DESC, id LIMIT :width
    ), passed AS MATERIALIZED (
        SELECT c.id, c.score FROM best c JOIN {t.docs} d ON d.tenant = :tenant AND d.{key} = c.id
        WHERE {where} ORDER BY c.score DESC, c.id LIMIT :n
    ), settled AS MATERIALIZED (
        SELECT (SELECT count(*) FROM passed) >= :n OR (SELECT count(*) FROM best) < :width AS ok
    )
    (SELECT id, score FROM passed WHERE (SELECT ok FROM settled))
    UNION ALL"""


