"""The keyword leg: Okapi BM25 scored inside PostgreSQL over the postings a keyword projector keeps.

One statement serves every domain with BM25 postings: `KeywordTables` names a domain's tables (memories' by
default: readmodels/memories.py; an item domain's from its declaration, readmodels/item_domains.py).

The idf of each query term is computed once (a MATERIALIZED CTE, float8 arithmetic) and looked up per posting,
not joined: joined, the planner inlined the CTE (a numeric ln per posting) and, estimating a term's postings by
the average (1 / distinct terms), chose one index descent into the documents per posting, whatever a common term's
real count.

Past WALK_OVER_POSTINGS (20k; memories: READ_ALL_MAX, `KeywordTables.walk_over`) postings of the query's terms in
the tenant, candidates come from each term's best postings, not all of them: a term common to most documents would
otherwise cost all its postings (sessions at 100k messages: 840 ms). A term with at most FULL_WALK (2,000) postings
is walked to its end; any other gives its first PER_TERM (500) postings, among the documents the scope and statuses
allow, in impact order: (length + 10) / tf ascending, the order of a posting's BM25 weight tf·(k1+1) / (tf + k1·(1
− b + b·length/avgdl)) for b = 0.75 and an average length of 30. Migration 0021 indexes every postings table by
(tenant, term, that order, id), with tf and length included since 0031, so each term's walk reads its first
postings that pass the filters from the index alone and stops. Each candidate is then scored with Okapi BM25
exactly: its walked postings, plus one primary-key probe for each term walked short of its end that its walk did
not bring; a candidate whose walked score, with each such term at the most its postings past the walked ones can
weigh, stays under the n-th best walked score cannot be in the top n and is not probed. A whole-tenant scope walks
each term's postings of every document (from the index alone: joining each walked posting to its document for the
filters was a third of the walk at 100k session messages) and looks the filters up for its best candidates only.

The walk proves its own answer (a threshold test, as in Fagin's threshold algorithm): a document outside it
holds none of the fully walked terms, and of each term walked short only postings past the last walked one, whose
weight is bounded (_SHIFT: the impact order is the weight's order up to a bounded shift). When n candidates
outscore the sum of those bounds, the walk's top n is the exact top n. Otherwise every posting is read, unless
they number more than READ_ALL_MAX (50k): then the walk's best candidates answer (measured at 100k session
messages: bench/sessions_recall.py). Below WALK_OVER_POSTINGS every posting is read at once, the cheaper plan, and
so is it for a narrow scope (one agent's documents, NARROW_SCOPE_MAX), whose own postings a walk would find only
past many of the tenant's.

Two round trips per keyword leg: the count of the terms' postings, then the plan's statement. At most
WALK_OVER_POSTINGS, it is the read of every posting alone. Past it, one statement holds every plan, and the scope's
size and the walk's test pick one inside PostgreSQL (each branch gated by a one-time filter, so the others are never
run). A count gone stale by a write between the two reads every posting, which is always exact.

A whole tenant's documents past PACKED_OVER postings and up to PACKED_UP_TO are scored from their postings
packed per term instead, and so are an agent's (at most narrow_max of them: their ids read once, documents_among):
recall/packed_bm25.py, every posting, a few rows a term read as bytes, summed in numpy; the filters looked up for
the best `later_width(n)` in rank order. The same answer as reading every posting, which answers whenever too few
of those pass. That replaces the read of every posting up to `walk_over` and the walk (whose answer past
READ_ALL_MAX is not always exact) from there to PACKED_UP_TO. Past it the walk stays: it reads a bounded number of
postings a term where the packed read scores every one (at 1M memories, past 150k postings: 38 against 23 ms p50).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import Connection, TextClause, text

from infra.db import unprepared
from readmodels.item_domains import UNIT_STATUS, ItemDomain
from readmodels.memories import MEMORY_POSTINGS
from readmodels.postings import Postings
from recall.packed_bm25 import bm25_top_packed, documents_among
from recall.scope import Scope, later_width

PER_TERM = 500  # each open query term's postings walked, best first
# Up to this many postings of the query's terms in the tenant (their df summed), every posting is read at once.
WALK_OVER_POSTINGS = 20_000
FULL_WALK = 2000  # a term with at most this many postings is walked to its end
READ_ALL_MAX = 50_000  # past this many postings a walk that is not exact answers anyway
# A narrow scope (one agent's documents, at most this many and a tenth of the tenant's) reads every posting of the
# terms and keeps its own by a hash of its documents, read from the agent index: exact, and cheaper than a walk,
# which passes over ~1 / share of a term's postings to find its best in the scope (one agent of a hundred at 1M
# memories: p50 100 ms walked, 15 ms read).
NARROW_SCOPE_MAX = 20_000
# Past this many postings of the query's terms and up to PACKED_UP_TO, a whole tenant's documents are scored from
# their packed postings (recall/packed_bm25.py): a few rows a term instead of a row a posting. Exact, so it also
# replaces the walk past walk_over, while it is the faster: at 1M memories, 50k-100k postings 15 against 24-26 ms
# p50; 100k-150k about even; past 150k the walk, which reads a bounded number a term (docs/recall.md, session 28).
PACKED_OVER = 5000
PACKED_UP_TO = 100_000
# A posting's impact order, best first; migration 0021's (tenant, term, <this>, id) indexes serve it.
IMPACT_ORDER = "(p.length + 10)::float8 / p.tf"
# A posting's weight is (k1 + 1) / (1 + k1·b·r / avgdl) with r = (length + avgdl·(1 − b)/b) / tf: falling in r.
# Past a term's last walked posting (impact x), r ≥ x + min(0, avgdl·(1 − b)/b − 10) (tf ≥ 1), which bounds the
# weight of every posting the walk left; b = 0 bounds it by k1 + 1.
_SHIFT = "CASE WHEN :b > 0 THEN least(0, s.avgdl * (1 - :b) / :b - 10) ELSE 0 END"
_WALK_OK = "(SELECT ok FROM walk_ok)"  # the walk answers (its CTE in _sql); every read of all postings is its NOT


@dataclass(frozen=True)
class KeywordTables:
    index: Postings  # postings (tenant, term, <id>, tf, length), terms (tenant, term, df), stats, the id column
    docs: str  # one row per document, alias d: what the scope filters
    status_filter: str  # SQL on d, with :statuses: the document is in one of them
    # docs is indexed by (tenant, agent_id, <id>): a scope naming an agent is sized, and its documents read, in that
    # index alone, so a narrow one reads every posting instead of walking (NARROW_SCOPE_MAX)
    agent_index: bool = False
    # Past this many postings of the query's terms a walk may bring the candidates (WALK_OVER_POSTINGS). Short
    # documents of even length, where a term occurs once (memories: one fact each), give a term's postings nearly
    # one weight, so a walk's bound past its first postings stays near the best and cannot prove its top n: it
    # then read every posting as well. Theirs reads every posting up to READ_ALL_MAX, and walks only past it.
    walk_over: int = WALK_OVER_POSTINGS
    # Whose postings are packed per term too (readmodels/term_blocks.py): a whole-tenant scope (or, with
    # agent_index, an agent's) past PACKED_OVER postings is scored from them, its filters looked up in this table
    # (alias d, as `docs`, which it may be)
    packed_docs: str | None = None

    @classmethod
    def of(cls, domain: ItemDomain) -> KeywordTables:
        """An item domain's: its postings, over its units table, by each unit's status (a packed read's filters
        looked up there too)."""
        return cls(domain.postings, domain.table, UNIT_STATUS,
                   packed_docs=domain.table if domain.postings.blocks else None)

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
    " AND m.status = ANY(:statuses))", agent_index=True, walk_over=READ_ALL_MAX,
    # a memory's scope columns and status in one row: one probe a candidate, not one in keyword_docs and one here
    packed_docs="memories")


def bm25_top(conn: Connection, scope: Scope, terms: list[str], n: int, k1: float, b: float,
             statuses: tuple[str, ...] | None = None, tables: KeywordTables = MEMORY_KEYWORD,
             where_sql: str = "", where_params: dict[str, object] | None = None,
             per_term: int = PER_TERM, walk_over: int | None = None,
             read_all_max: int = READ_ALL_MAX, full_walk: int = FULL_WALK,
             narrow_max: int = NARROW_SCOPE_MAX) -> dict[uuid.UUID, float]:
    """The top `n` documents (memories by default) by BM25 for the distinct `terms`, within `scope` (and, when
    given, whose document has one of `statuses`: the funnel's eligibility rule; and `where_sql` on d), among each
    term's first `per_term` postings in impact order when the terms have more than `walk_over` postings (the
    tables' own by default; the module's docstring); a scope of one agent's documents, when they are at most
    `narrow_max` and a tenth of the tenant's, reads every posting instead (the tables' agent_index)."""
    if not terms:
        return {}
    t = tables
    walk_over = t.walk_over if walk_over is None else walk_over
    where, params = _filters(scope, t, statuses, where_sql, where_params)
    # the agent's documents bound the scope's (its other filters only narrow it), counted in the agent index
    narrowable = t.agent_index and scope.agent_id is not None
    agent_docs = "d.tenant = :tenant AND d.agent_id = :agent_id" if narrowable else None
    distinct = sorted(set(terms))
    # Few postings (every query at the bench's sizes): the read of them all, a statement a third the size to plan.
    postings = term_postings(conn, t, scope.tenant, distinct)
    if t.packed_docs and (scope.whole_tenant or agent_docs) and PACKED_OVER < postings <= PACKED_UP_TO:
        # a scope naming an agent scores the agent's documents only, when they are at most narrow_max
        among = None if agent_docs is None else documents_among(conn, t.docs, t.id_column, agent_docs, params,
                                                                 narrow_max)
        if agent_docs is None or among is not None:
            packed = bm25_top_packed(conn, t.index, scope.tenant, distinct, n, later_width(n), k1, b, t.packed_docs,
                                     where, params, among)
            if packed is not None:
                return packed
    rows = unprepared(conn, _sql(t, where, scope.whole_tenant, agent_docs, postings > walk_over, len(distinct)),
                      {**params, "terms": distinct, **{f"term_{i}": term for i, term in enumerate(distinct)},
                       "postings": postings, "k1": k1, "b": b, "n": n,
                       "per_term": per_term, "walk_over": walk_over, "read_all_max": read_all_max,
                       "full_walk": full_walk, "width": later_width(n), "narrow_max": narrow_max})
    return {r.id: float(r.score) for r in rows}


def holds_any(conn: Connection, scope: Scope, terms: list[str], statuses: tuple[str, ...] | None = None,
              tables: KeywordTables = MEMORY_KEYWORD, where_sql: str = "",
              where_params: dict[str, object] | None = None) -> bool:
    """Whether a document of `scope` (with one of `statuses`, and `where_sql` on d) holds any of `terms`: whether
    bm25_top would answer any document (every held term weighs more than 0), without scoring one. PostgreSQL stops
    at the first (at 1M memories, the staging fallback's check: 0.6 ms p50 against 9.0 for BM25's top 1)."""
    if not terms:
        return False
    where, params = _filters(scope, tables, statuses, where_sql, where_params)
    key = tables.id_column
    [row] = unprepared(conn, f"""SELECT EXISTS (
        SELECT 1 FROM {tables.postings} p JOIN {tables.docs} d ON d.tenant = p.tenant AND d.{key} = p.{key}
        WHERE p.tenant = :tenant AND p.term = ANY(:terms) AND {where}) AS held""",
                       {**params, "terms": sorted(set(terms))})
    return bool(row.held)


def _filters(scope: Scope, t: KeywordTables, statuses: tuple[str, ...] | None, where_sql: str,
             where_params: dict[str, object] | None) -> tuple[str, dict[str, object]]:
    """The WHERE on d (a document): the scope, the statuses and `where_sql`, with their parameters."""
    where, params = scope.where("d")
    if statuses is not None:
        where += f" AND {t.status_filter}"
        params = {**params, "statuses": list(statuses)}
    if where_sql:
        where += f" AND {where_sql}"
    # where_params bind where_sql's parameters, or a status_filter's (a recall's time frame: recall/timeframe.py)
    return where, {**params, **(where_params or {})}


def term_postings(conn: Connection, t: KeywordTables, tenant: str, terms: list[str]) -> int:
    """The distinct `terms`' postings in the tenant (their df summed): what picks the leg's plan (past walk_over a
    walk may bring the candidates; between PACKED_OVER and PACKED_UP_TO the packed read)."""
    return int(conn.execute(_postings_of(t), {"tenant": tenant, "terms": terms}).scalar_one())


def _postings_of(t: KeywordTables) -> TextClause:
    return text(f"SELECT coalesce(sum(df), 0) FROM {t.terms} WHERE tenant = :tenant AND term = ANY(:terms)")


def _idf_of(n_terms: int) -> str:
    """A posting's idf (SQL on p): its term's, matched against the query's terms (:term_0 ...), each one's idf read
    once from the idf CTE (an uncorrelated subquery: an InitPlan). Looked up in the CTE per posting instead, the read
    of 40k postings at 1M memories took 26 ms against 20-21 (bench: docs/recall.md, session 21)."""
    term = "CAST(:term_{} AS text)"
    branches = " ".join(f"WHEN {term.format(j)} THEN (SELECT x.idf FROM idf x WHERE x.term = {term.format(j)})"
                        for j in range(n_terms))
    return f"coalesce(CASE p.term {branches} END, 0)"


def _sql(t: KeywordTables, where: str, later: bool, agent_docs: str | None, walkable: bool, n_terms: int) -> str:
    """One statement for every plan: the query terms' postings in the tenant (:postings, their df summed), the
    scope's size and the walk's own bound pick one in PostgreSQL, each branch gated by a one-time filter, so the
    others are never run. `later` (a whole-tenant scope): reading every posting or walking, the filters are looked
    up after scoring (_filter_later, _walk_later). `agent_docs` (SQL on d: the documents of the agent the scope
    names): when they are few (:narrow_max, and a tenth of the tenant's), every posting is read, never walked. Not
    `walkable` (the terms' postings are at most :walk_over, so no walk runs): the read of every posting alone, the
    same rows; PostgreSQL plans the whole statement, unrun branches too, and the walk's CTEs were half its cost
    (planning 1.1 → 0.6 ms, execution 0.8 → 0.5 ms, the memories' leg at the recall_multi bench's sizes).
    `n_terms` (at least 1): the query's distinct terms, bound as :term_0 ... (_idf_of)."""
    key = t.id_column
    weight = "p.tf * (:k1 + 1) / (p.tf + :k1 * (1 - :b + :b * p.length / s.avgdl))"
    idf_of = _idf_of(n_terms)
    settled = "(SELECT ok FROM settled)"
    stats = f"""stats AS (
        SELECT n_docs, total_length::float8 / greatest(n_docs, 1) AS avgdl FROM {t.stats} WHERE tenant = :tenant
    )"""
    idf = f"""idf AS MATERIALIZED (
        SELECT t.term, t.df, ln(1 + (s.n_docs - t.df + 0.5)::float8 / (t.df + 0.5)) AS idf
        FROM {t.terms} t CROSS JOIN stats s WHERE t.tenant = :tenant AND t.term = ANY(:terms)
    )"""
    unwalked = f"NOT {_WALK_OK} AND " if walkable else ""  # the read of every posting, when the walk does not answer
    read_all = f"""
    -- Read every posting of the terms, the idf looked up per posting: few postings, or a walk not exact.
    (SELECT p.{key} AS id, sum({idf_of} * {weight}) AS score
     FROM {t.postings} p
     CROSS JOIN stats s
     JOIN {t.docs} d ON d.tenant = p.tenant AND d.{key} = p.{key}
     WHERE {unwalked}p.tenant = :tenant AND p.term = ANY(:terms) AND {where}
       {f"AND NOT {settled}" if later else ""}
     GROUP BY p.{key}
     ORDER BY score DESC, p.{key}
     LIMIT :n)"""
    later_ctes = _filter_later(t, where, weight, idf_of, unwalked) if later else ""
    if not walkable:
        # one branch is already in order; after the filter-later branch, the union is put in it
        return f"WITH {stats}, {idf}{later_ctes}{read_all}" + ("\n    ORDER BY score DESC, id" if later else "")
    narrow = (f"""SELECT coalesce(c.n <= :narrow_max AND c.n * 10 <= (SELECT n_docs FROM stats), false) AS yes FROM (
            SELECT count(*) AS n FROM (SELECT 1 FROM {t.docs} d WHERE {agent_docs} LIMIT :narrow_max + 1) s) c"""
              if agent_docs else "SELECT false AS yes")
    # A whole-tenant scope walks each term's postings from the index alone and looks the filters up for the best
    # candidates only (_walk_later); any other scope walks among the documents it allows.
    walk_filter = ("""
            WHERE p.tenant = :tenant AND p.term = i.term""" if later else f"""
            JOIN {t.docs} d ON d.tenant = p.tenant AND d.{key} = p.{key}
            WHERE p.tenant = :tenant AND p.term = i.term AND {where}""")
    walk_tail, walk_answer = _walk_later(t, where) if later else _walk_filtered()
    cut = ":width" if later else ":n"  # the floor's rank among the walked scores
    return f"""
    WITH total AS MATERIALIZED (
        SELECT CAST(:postings AS bigint) AS postings  -- the terms' postings, as bm25_top counted them (_postings_of)
    ), {stats}, narrow AS MATERIALIZED (
        -- a scope of few of the tenant's documents: every posting read and kept by a hash of its documents
        {narrow}
    ), walks AS MATERIALIZED (
        -- each term's best postings bring the candidates: past walk_over postings of the terms, unless narrow
        SELECT (SELECT postings FROM total) > :walk_over AND NOT (SELECT yes FROM narrow) AS yes
    ), {idf}, walked AS MATERIALIZED (
        -- each term's best postings in impact order: all of a rare term's (df ≤ full_walk), per_term of another's
        SELECT i.term, c.id, c.tf, c.length, c.impact FROM idf i CROSS JOIN LATERAL (
            SELECT p.{key} AS id, p.tf, p.length, {IMPACT_ORDER} AS impact FROM {t.postings} p{walk_filter}
            ORDER BY {IMPACT_ORDER}, p.{key}
            LIMIT CASE WHEN i.df <= :full_walk THEN i.df ELSE :per_term END) c
        WHERE (SELECT yes FROM walks)
    ), reach AS MATERIALIZED (
        -- open: walked short of its end, so documents outside the walk may hold the term; bound: the most its
        -- postings past the last walked one can add to a score (idf times the weight bound there, _SHIFT)
        SELECT r.*, CASE WHEN r.open THEN r.idf * (:k1 + 1)
                    / (1 + :k1 * :b * greatest(r.last + {_SHIFT}, 0) / s.avgdl) ELSE 0 END AS bound
        FROM (SELECT i.term, i.idf, i.df > :full_walk AND count(w.id) >= :per_term AS open, max(w.impact) AS last
              FROM idf i LEFT JOIN walked w ON w.term = i.term GROUP BY i.term, i.idf, i.df) r CROSS JOIN stats s
    ), unseen AS MATERIALIZED (
        -- the most a document outside the walk can score: every open term's bound
        SELECT coalesce(sum(bound), 0) AS most FROM reach
    ), partial AS MATERIALIZED (
        -- each candidate's score from its walked postings, the terms they hold, and the most it can score: its
        -- walked score plus the bound of each open term its walk did not bring
        SELECT p.id, array_agg(p.term) AS seen, sum(r.idf * {weight}) AS score,
               sum(r.idf * {weight}) + (SELECT most FROM unseen) - sum(r.bound) AS most
        FROM walked p JOIN reach r ON r.term = p.term CROSS JOIN stats s GROUP BY p.id
    ), floor AS MATERIALIZED (
        -- the n-th best walked score, under the n-th best score: a candidate that cannot reach it is not probed
        -- (filtering later, the width-th: the n that pass are among the best width)
        SELECT coalesce((SELECT score FROM partial ORDER BY score DESC LIMIT 1 OFFSET {cut} - 1), 0) AS low
    ), walk_scored AS MATERIALIZED (
        -- each candidate's exact score: its walked postings, plus one primary-key probe per open term its walk
        -- did not bring (a term walked to its end holds no other)
        SELECT c.id, c.score + coalesce((
            SELECT sum(r.idf * {weight}) FROM reach r CROSS JOIN LATERAL (
                SELECT p.tf, p.length FROM {t.postings} p
                WHERE p.tenant = :tenant AND p.term = r.term AND p.{key} = c.id LIMIT 1) p
            WHERE r.open AND r.term <> ALL(c.seen)), 0) AS score
        FROM partial c CROSS JOIN stats s
        WHERE c.most >= (SELECT low FROM floor)
    ){walk_tail}{later_ctes}{read_all}
    UNION ALL
    -- The walk: each term's best postings bring the candidates, scored over all their postings.
    ({walk_answer})
    ORDER BY score DESC, id
    """


def _walk_filtered() -> tuple[str, str]:
    """The walk's test and answer among the scope's documents: its top n is exact when n candidates outscore any
    document outside it (or no term is open: every document holding one was walked); a candidate not probed
    cannot reach the n-th best walked score. Past read_all_max postings it answers anyway."""
    return """, walk_ok AS MATERIALIZED (
        SELECT (SELECT yes FROM walks) AND (
            (SELECT postings FROM total) > :read_all_max
            OR (SELECT count(*) FROM walk_scored WHERE score > (SELECT most FROM unseen)) >= :n
            OR NOT EXISTS (SELECT 1 FROM reach WHERE open)) AS ok
    )""", f"SELECT id, score FROM walk_scored WHERE {_WALK_OK} ORDER BY score DESC, id LIMIT :n"


def _walk_later(t: KeywordTables, where: str) -> tuple[str, str]:
    """The walk's test and answer for a whole-tenant scope, whose walk took the postings of every document: the
    filters are looked up for the best `width` exactly scored candidates, in order, until n pass. Those n are the
    exact top n when each outscores any document outside the walk: a candidate left unprobed cannot reach the
    width-th best walked score, and the best `width` scored are all at least that. With no term open and fewer
    than `width` candidates, every document holding a term was scored and looked up. Otherwise the read of every
    posting answers; past read_all_max postings the walk's answer stands anyway."""
    tail = f"""{_looked_up(t, where, "walk_scored", "walk_best", "walk_passed")}, walk_ok AS MATERIALIZED (
        SELECT (SELECT yes FROM walks) AND (
            (SELECT postings FROM total) > :read_all_max
            OR ((SELECT count(*) FROM walk_passed) >= :n
                AND (SELECT min(score) FROM walk_passed) > (SELECT most FROM unseen))
            OR (NOT EXISTS (SELECT 1 FROM reach WHERE open) AND (SELECT count(*) FROM walk_best) < :width)) AS ok
    )"""
    return tail, f"SELECT id, score FROM walk_passed WHERE {_WALK_OK} ORDER BY score DESC, id LIMIT :n"


def _filter_later(t: KeywordTables, where: str, weight: str, idf_of: str, unwalked: str) -> str:
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
        WHERE {unwalked}p.tenant = :tenant AND p.term = ANY(:terms)
        GROUP BY p.{key}
    ){_looked_up(t, where, "scored", "best", "passed")}, settled AS MATERIALIZED (
        SELECT (SELECT count(*) FROM passed) >= :n OR (SELECT count(*) FROM best) < :width AS ok
    )
    (SELECT id, score FROM passed WHERE (SELECT ok FROM settled))
    UNION ALL"""


def _looked_up(t: KeywordTables, where: str, scored: str, best: str, passed: str) -> str:
    """Two CTEs (after a comma) for a whole-tenant plan that filters after scoring: `best`, the best `width` of the
    CTE `scored` (id, score); `passed`, the first n of them, in order, whose documents pass `where` (looked up by
    primary key, PostgreSQL stopping at the n-th)."""
    key = t.id_column
    return f""", {best} AS MATERIALIZED (
        SELECT id, score FROM {scored} ORDER BY score DESC, id LIMIT :width
    ), {passed} AS MATERIALIZED (
        SELECT c.id, c.score FROM {best} c JOIN {t.docs} d ON d.tenant = :tenant AND d.{key} = c.id
        WHERE {where} ORDER BY c.score DESC, c.id LIMIT :n
    )"""
