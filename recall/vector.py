"""Filtered cosine search in pgvector, the one both the recall funnel and the governor use: exact for small
scopes and iterative HNSW for large ones, several query vectors in one statement.

pgvector applies WHERE filters after the HNSW scan, so a selective scope (one agent among many) loses most
of its true neighbours. A scope small enough to scan exactly is scanned exactly (a few ms through the
btree); larger ones use HNSW with iterative scans, which keep walking the graph until enough rows pass (and
when a scan gives up short of that, the query is answered exactly: method "hnsw_iterative+exact").

It searches memories (memory_vectors, scoped on its own columns) by default, or another domain's vectors named by a
VectorTable (knowledge sections: knowledge_section_vectors, scoped on knowledge_sections). Only vectors of the
configured model are compared (`<table>.model`): after a model change, memories not yet re-embedded (a rebuild
of `vectors`) are scored on their keyword leg alone, never against another model's space. What None means in the
scope (any value for recall, IS NULL for the governor) is the Scope's to say.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple

from sqlalchemy import Connection, text

from infra.settings import Settings
from readmodels.item_domains import UNIT_STATUS, ItemDomain
from recall.scope import Scope, later_width


@dataclass(frozen=True)
class VectorTable:
    """What is searched: a table of (tenant, <id_column>, model, embedding), alias v. The scope (and `where_sql`)
    filters v's own columns, or, with `scoped_by`, the row of that table (alias d) with the same tenant and id;
    `status_filter` is SQL with :statuses on v (or d)."""
    table: str
    id_column: str
    status_filter: str
    scoped_by: str | None = None
    counts: str | None = None  # (tenant, model, n): each tenant's vectors per model, kept with the table

    @classmethod
    def of(cls, domain: ItemDomain) -> VectorTable:
        """An item domain's lazily embedded vectors, scoped by its units table, by each unit's status."""
        if domain.vectors is None:
            raise ValueError(f"{domain.name} declares no vectors table")
        return cls(domain.vectors, domain.versions.key, UNIT_STATUS, scoped_by=domain.table)


# A query's vector: its pgvector literal, or what answers it once asked (Embedder.query_vector_soon: the embedding
# computed meanwhile, so a search runs its keyword leg first and waits for the vector only for its vector leg).
QueryVector = str | Callable[[], str]


def literal(vector: QueryVector) -> str:
    """The pgvector literal of `vector`, waiting for it when it is still being computed."""
    return vector if isinstance(vector, str) else vector()


MEMORY_VECTORS = VectorTable(
    "memory_vectors", "memory_id",
    # The status filter is a scalar subquery on the primary key, not a join: a join on status lets a planner with
    # stale statistics pick the (tenant, status) index and a nested loop over the whole scope (measured: 470 ms
    # instead of 5 ms for 2,000 memories), and a per-row filter keeps the HNSW plan an ordered index scan that
    # iterates.
    "(SELECT m.status FROM memories m WHERE m.tenant = v.tenant AND m.memory_id = v.memory_id) = ANY(:statuses)",
    counts="memory_vector_counts")


class Nearest(NamedTuple):
    """One query vector's nearest memories (or rows of another VectorTable), most similar first, and how they were
    found ("exact", "hnsw_iterative" or "hnsw_iterative+exact")."""
    hits: list[tuple[uuid.UUID, float]]
    method: str


@dataclass(frozen=True)
class _Search:
    """One call's table, model, status and extra filters, for the statements below."""
    table: VectorTable
    model: str
    statuses: tuple[str, ...] | None = None
    where_sql: str = ""
    where_params: dict[str, object] | None = None


# A tenant's vectors of the search's model, whatever else filters them.
_TENANT_MODEL = "v.tenant = :tenant AND v.model = :model"


def _where(scope: Scope, s: _Search, filtered: bool = True) -> tuple[str, dict[str, object]]:
    """The WHERE on v: the scope, the model and (when `filtered`) the statuses and `where_sql`."""
    t = s.table
    where, params = _filters(scope, s, filtered)
    if t.scoped_by is None:
        return f"{where} AND v.model = :model", {**params, "model": s.model}
    return f"{_TENANT_MODEL} AND {_unit_holds(t, where)}", {**params, "model": s.model}


def _filters(scope: Scope, s: _Search, filtered: bool = True) -> tuple[str, dict[str, object]]:
    """The scope and (when `filtered`) the statuses and `where_sql`, on v, or on d (a scoped_by table's unit)."""
    t = s.table
    where, params = scope.where("v" if t.scoped_by is None else "d")
    if filtered and s.statuses is not None:
        where += f" AND {t.status_filter}"
        params["statuses"] = list(s.statuses)
    if filtered and s.where_sql:
        where = f"{where} AND {s.where_sql}"
    if filtered:  # where_sql's parameters, or a status_filter's (a recall's time frame: recall/timeframe.py)
        params = {**params, **(s.where_params or {})}
    return where, params


def _unit_holds(t: VectorTable, where: str, per_row: bool = False) -> str:
    """SQL on v (its tenant and id): the unit of a scoped_by table's vector has a row on which `where` (on d) holds.
    An EXISTS, which the planner may join (a hash of every unit row); `per_row`, a lookup by primary key for each
    row of v, for the few rows a sort kept (as memories' status is looked up)."""
    unit = f"FROM {t.scoped_by} d WHERE d.tenant = v.tenant AND d.{t.id_column} = v.{t.id_column} AND {where}"
    return f"(SELECT true {unit} LIMIT 1)" if per_row else f"EXISTS (SELECT 1 {unit})"


def _size_where(scope: Scope, s: _Search) -> tuple[str, dict[str, object]]:
    """The WHERE on v of a scope's size count (no status or other filter). An item domain's whole tenant is counted
    on its vectors alone, not joined to its units: the count only picks an exact scan or HNSW (a vector whose unit
    is gone, or a privacy policy hides, counts, harmlessly), and the join read every unit row (at ten times
    bench/recall_multi.py's sizes, a hash of 7,500 transcript chunks for 286 vectors: 2.2 of the statement's 2.9 ms)."""
    if s.table.scoped_by is not None and scope.whole_tenant:
        return _TENANT_MODEL, {"tenant": scope.tenant, "model": s.model}
    return _where(scope, s, filtered=False)


def _size_sql(scope: Scope, s: _Search) -> tuple[str, dict[str, object]]:
    """The scope's size as one row (n), counted up to :cap. A whole tenant that no policy filters is past :max_rows
    when the table's counts say so, and is then not counted: a count past the limit read 20,001 index entries only
    to learn it was past (3.2 ms of memories' 35 at 30k). Under the limit it is counted, so a scope the counts do not
    know yet is still searched exactly (CASE runs the count only when it is reached)."""
    where, params = _size_where(scope, s)
    counted = f"(SELECT count(*) FROM (SELECT 1 FROM {s.table.table} v WHERE {where} LIMIT :cap) c)"
    if s.table.counts is None or not scope.unfiltered:
        return f"SELECT {counted} AS n", params
    kept = f"(SELECT k.n FROM {s.table.counts} k WHERE k.tenant = :tenant AND k.model = :model)"
    return f"SELECT CASE WHEN {kept} > :max_rows THEN {kept} ELSE {counted} END AS n", params


def scope_size(conn: Connection, scope: Scope, cap: int, model: str, table: VectorTable = MEMORY_VECTORS) -> int:
    where, params = _size_where(scope, _Search(table, model))
    sql = f"SELECT count(*) FROM (SELECT 1 FROM {table.table} v WHERE {where} LIMIT :cap) c"
    return conn.execute(text(sql), {**params, "cap": cap}).scalar_one()


def nearest_vectors(conn: Connection, scope: Scope, query_vectors: Sequence[str], k: int, settings: Settings,
                    statuses: tuple[str, ...] | None = None, table: VectorTable = MEMORY_VECTORS,
                    where_sql: str = "", where_params: dict[str, object] | None = None) -> list[Nearest]:
    """For each query vector (pgvector literals), the `k` most similar memories (or rows of `table`) of `scope`
    among vectors of `settings.embedding.embedding_model`; with `statuses`, only those in one of them; with `where_sql`,
    only rows it holds for (SQL on the scoped alias). Exact when the scope holds at most
    `settings.hybrid.exact_scan_max_rows` vectors, else iterative HNSW with `settings.hybrid.hnsw_ef_search`."""
    if not query_vectors:
        return []
    model = settings.embedding.embedding_model
    search = _Search(table, model, statuses, where_sql, where_params)
    later = len(query_vectors) == 1 and _status_later(scope, search)
    size, exact = _exact_unless_large(conn, scope, query_vectors, k, search, settings.hybrid.exact_scan_max_rows, later)
    if size == 0:
        return [Nearest([], "exact") for _ in query_vectors]
    if size <= settings.hybrid.exact_scan_max_rows:
        if later and len(exact[0]) < k and size > later_width(k):  # too many of the nearest are filtered out
            exact = _exact(conn, scope, query_vectors, k, search)
        return [Nearest(hits, "exact") for hits in exact]
    found = [Nearest(hits, "hnsw_iterative") for hits in
             _hnsw_iterative(conn, scope, query_vectors, k, settings.hybrid.hnsw_ef_search, search)]
    # An iterative scan gives up at hnsw.max_scan_tuples / its memory limit: a query that brought back fewer rows
    # than the scope holds is answered exactly instead (slower, never short).
    short = [i for i, n in enumerate(found) if len(n.hits) < k]
    held = scope_size(conn, scope, k, model, table) if short else 0
    again = [i for i in short if held > len(found[i].hits)]
    if again:
        exact = _exact(conn, scope, [query_vectors[i] for i in again], k, search)
        for i, hits in zip(again, exact, strict=True):
            found[i] = Nearest(hits, "hnsw_iterative+exact")
    return found


def _per_query(conn: Connection, sql: str, params: dict[str, object],
               query_vectors: Sequence[str]) -> list[list[tuple[uuid.UUID, float]]]:
    out: list[list[tuple[uuid.UUID, float]]] = [[] for _ in query_vectors]
    for r in conn.execute(text(sql), {**params, "qs": list(query_vectors)}):
        out[r.ord - 1].append((r.id, float(r.cosine)))
    return out


_QUERIES = "unnest(CAST(:qs AS vector[])) WITH ORDINALITY AS q(vec, ord)"


def _exact_sql(scope: Scope, n_queries: int, s: _Search) -> tuple[str, str, dict[str, object]]:
    """The exact search as (its CTEs, its SELECT of (ord, id, cosine), its parameters but :qs and :k)."""
    where, params = _where(scope, s)
    table, key = s.table.table, s.table.id_column
    if n_queries == 1:
        # "+ 0" makes the sort key an expression the HNSW index cannot serve, so the plan reads the scope's rows
        # through the btree and sorts them: exact, and faster than materialising the scope first (one query).
        scoped, source = "", f"{table} v"
    else:
        # Several queries: the scope is read (and filtered) once, then sorted per query (measured on a 2,000-row
        # scope: 8 queries in 28 ms materialised against 62 ms reading the scope per query; one query in 9 ms
        # read per query against 15 ms materialised).
        scoped = f"scoped AS MATERIALIZED (SELECT v.{key}, v.embedding FROM {table} v WHERE {where})"
        source, where = "scoped v", "true"
    select = f"""
    SELECT q.ord, c.id, c.cosine FROM {_QUERIES} CROSS JOIN LATERAL (
        SELECT v.{key} AS id, 1 - (v.embedding <=> q.vec) AS cosine FROM {source}
        WHERE {where} ORDER BY (v.embedding <=> q.vec) + 0, v.{key} LIMIT :k) c"""
    return scoped, select, params


_BY_QUERY = "ORDER BY ord, cosine DESC, id"


def _exact(conn: Connection, scope: Scope, query_vectors: Sequence[str], k: int,
           s: _Search) -> list[list[tuple[uuid.UUID, float]]]:
    scoped, select, params = _exact_sql(scope, len(query_vectors), s)
    sql = f"{'WITH ' + scoped if scoped else ''} {select} {_BY_QUERY}"
    return _per_query(conn, sql, {**params, "k": k}, query_vectors)


def _exact_unless_large(conn: Connection, scope: Scope, query_vectors: Sequence[str], k: int, s: _Search,
                        max_rows: int, later: bool) -> tuple[int, list[list[tuple[uuid.UUID, float]]]]:
    """The scope's vector count (counted to max_rows + 1) and, when it is at most max_rows, the exact search (with
    the status looked up later when `later`), in one statement: a first row (ord 0) carries the count, and the
    search's branch is gated by a one-time filter on it, so a large scope is only counted."""
    ctes, select, params = (_status_later_sql(scope, s) if later else _exact_sql(scope, len(query_vectors), s))
    counted, unfiltered = _size_sql(scope, s)
    size = f"size AS MATERIALIZED ({counted})"
    sql = f"""WITH {', '.join(c for c in (size, ctes) if c)}
    SELECT 0::bigint AS ord, NULL AS id, (SELECT n FROM size)::float8 AS cosine
    UNION ALL ({select} WHERE (SELECT n FROM size) <= :max_rows)
    {_BY_QUERY}"""
    rows = conn.execute(text(sql), {**unfiltered, **params, "k": k, "width": later_width(k), "cap": max_rows + 1,
                                    "max_rows": max_rows, "qs": list(query_vectors)}).all()
    out: list[list[tuple[uuid.UUID, float]]] = [[] for _ in query_vectors]
    for r in rows[1:]:
        out[r.ord - 1].append((r.id, float(r.cosine)))
    return int(rows[0].cosine), out


def _status_later(scope: Scope, s: _Search) -> bool:
    """Whether the filters can wait until after the sort, the sort then reading the scope's vectors alone: memories'
    status, a per-row lookup on v, when the scope is v's own columns and nothing else filters; a scoped_by table's
    unit (its status and every other filter on it), when the scope is the whole tenant, whose vectors are sorted."""
    if s.statuses is None:
        return False
    return not s.where_sql if s.table.scoped_by is None else scope.whole_tenant


def _status_later_sql(scope: Scope, s: _Search) -> tuple[str, str, dict[str, object]]:
    """The exact search of one query vector with the filters looked up for the nearest later_width(k) rows of the
    scope only, not for every row of it (a lookup per row was most of an exact scan's cost: 10k memories, ~390 ms of
    a loaded 2-core machine's time; for knowledge sections, a hash of every section row: 1.2 of 1.9 ms at 1,100
    sections). Exact whenever k rows pass: every row outside those nearest is farther than all of them. The caller
    searches with the filters first when fewer pass and the scope holds more. As (no CTE, its SELECT of (ord, id,
    cosine), its parameters but :qs, :k and :width)."""
    table, key = s.table.table, s.table.id_column
    if s.table.scoped_by is None:
        where, params = _where(scope, replace(s, statuses=None))
        params["statuses"] = list(s.statuses or ())
        later = s.table.status_filter
    else:  # the whole tenant's vectors sorted; the unit's row then holds the status and every other filter
        on_unit, params = _filters(scope, s)
        where, params = _TENANT_MODEL, {**params, "model": s.model}
        later = _unit_holds(s.table, on_unit, per_row=True)
    select = f"""
    SELECT q.ord, c.id, c.cosine FROM {_QUERIES} CROSS JOIN LATERAL (
        SELECT v.{key} AS id, v.cosine FROM (
            SELECT v.tenant, v.{key}, 1 - (v.embedding <=> q.vec) AS cosine FROM {table} v
            WHERE {where} ORDER BY (v.embedding <=> q.vec) + 0, v.{key} LIMIT :width) v
        WHERE {later} ORDER BY v.cosine DESC, v.{key} LIMIT :k) c"""
    return "", select, params


def _hnsw_iterative(conn: Connection, scope: Scope, query_vectors: Sequence[str], k: int, ef_search: int,
                    s: _Search) -> list[list[tuple[uuid.UUID, float]]]:
    where, params = _where(scope, s)
    table, key = s.table.table, s.table.id_column
    conn.execute(text("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true),"
                      " set_config('hnsw.ef_search', :ef, true)"), {"ef": str(int(ef_search))})
    sql = f"""
    SELECT q.ord, c.id, c.cosine FROM {_QUERIES} CROSS JOIN LATERAL (
        SELECT v.{key} AS id, 1 - (v.embedding <=> q.vec) AS cosine FROM {table} v
        WHERE {where} ORDER BY v.embedding <=> q.vec LIMIT :k) c
    ORDER BY q.ord, c.cosine DESC, c.id
    """
    return _per_query(conn, sql, {**params, "k": k}, query_vectors)


def cosines_for(conn: Connection, tenant: str, ids: list[uuid.UUID], query_vector: str,
                model: str, table: VectorTable = MEMORY_VECTORS) -> dict[uuid.UUID, float]:
    """Cosine of the query to each of `ids` that has a vector of `model` in `table` (memories by default; BM25-only
    candidates get their vector leg here)."""
    if not ids:
        return {}
    key = table.id_column
    rows = conn.execute(text(f"""
        SELECT {key} AS id, 1 - (embedding <=> CAST(:q AS vector)) AS cosine FROM {table.table}
        WHERE tenant = :tenant AND {key} = ANY(:ids) AND model = :model"""),
        {"tenant": tenant, "ids": ids, "q": query_vector, "model": model})
    return {r.id: float(r.cosine) for r in rows}


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
