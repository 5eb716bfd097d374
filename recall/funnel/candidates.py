"""Stage 2, candidate generation: BM25 ∪ vector (cosine ≥ a floor). The only eligibility gate of the funnel.

Both legs search the scope and only memories whose status the request may see. Each leg fetches the top
max(candidates_per_leg, k · topn_mult); the vector leg keeps hits at or above `sim_candidate_floor`. A memory
matched by BM25 is a candidate whatever its cosine; its cosine is fetched so every stage can use it. The
memories' rows (content, status, confidence, ...) are read once here for all later stages.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import Connection, text

from domain.text import tokenize
from infra.settings import Settings
from recall.funnel.types import Activity, Item, StageReport
from recall.keyword import MEMORY_KEYWORD, READ_ALL_MAX, KeywordTables, bm25_top
from recall.scope import Scope
from recall.timeframe import NOW, TimeFrame
from recall.vector import MEMORY_VECTORS, VectorTable, nearest_vectors


def _rows_sql(frame: TimeFrame) -> str:
    """The candidates' rows, each with its cosine to the query when it has a vector of the model (the vector leg's
    own for its hits, the same expression; a BM25 candidate's vector leg for the others) and its activity as of
    the frame (the composite's ACT-R and feedback inputs)."""
    return (f"SELECT m.memory_id, m.content, m.kind, m.status, m.metadata, m.occurred_at, m.recorded_at,"
            f" m.confidence, 1 - (v.embedding <=> CAST(:q AS vector)) AS cosine, a.memory_id AS active,"
            f" a.access_count, a.last_access_at, a.used_count, a.not_useful_count FROM {frame.memories()} m"
            f" LEFT JOIN {MEMORY_VECTORS.table} v ON v.tenant = m.tenant AND v.memory_id = m.memory_id"
            f" AND v.model = :model"
            f" LEFT JOIN {frame.activity()} a ON a.tenant = m.tenant AND a.memory_id = m.memory_id"
            f" WHERE m.tenant = :tenant AND m.memory_id = ANY(:ids) AND m.status = ANY(:statuses)"
            f"{frame.valid_sql('m.occurred_at')}")


def generate(conn: Connection, scope: Scope, query: str, query_vector: str, k: int, statuses: tuple[str, ...],
             settings: Settings, report: StageReport,
             frame: TimeFrame = NOW) -> tuple[dict[uuid.UUID, Item], dict[str, Any]]:
    """The candidates by id, and facts about the legs (vector method, terms) for the explanation. With a `frame`
    (since / until, as_of) both legs search only the memories it holds, as it held them (recall/timeframe.py)."""
    n = max(settings.hybrid.candidates_per_leg, k * settings.funnel.topn_mult)
    terms = tokenize(query)
    keyword, vectors = memory_tables(frame)
    bm25 = bm25_top(conn, scope, terms, n, settings.keyword.bm25_k1, settings.keyword.bm25_b, statuses, keyword,
                    where_params=frame.params())
    [(hits, method)] = nearest_vectors(conn, scope, [query_vector], n, settings, statuses, vectors,
                                       where_params=frame.params())
    raw_cosine = dict(hits)
    floor = settings.funnel.sim_candidate_floor
    ids = sorted({*bm25, *(i for i in raw_cosine if raw_cosine[i] >= floor)}, key=str)
    items: dict[uuid.UUID, Item] = {}
    # BM25 candidates outside the vector leg's top n (or under its floor) get their cosine with their rows.
    for row in conn.execute(text(_rows_sql(frame)), {"tenant": scope.tenant, "ids": ids, "statuses": list(statuses),
                                                     "q": query_vector, "model": settings.embedding.embedding_model,
                                                     **frame.params()}):
        items[row.memory_id] = Item(
            memory_id=row.memory_id, bm25=bm25.get(row.memory_id),
            cosine=None if row.cosine is None else float(row.cosine),
            content=row.content, kind=row.kind, status=row.status, metadata=row.metadata,
            occurred_at=row.occurred_at, recorded_at=row.recorded_at, confidence=float(row.confidence),
            activity=None if row.active is None else Activity(row.access_count, row.last_access_at, row.used_count,
                                                              row.not_useful_count))
    below = sum(1 for c in raw_cosine.values() if c < floor)
    report.config = {"per_leg": n, "sim_candidate_floor": floor, "statuses": list(statuses)}
    if frame.explain():
        report.config["time_frame"] = frame.explain()
    report.counts = {"keyword": len(bm25), "vector": len(raw_cosine) - below, "vector_below_floor": below,
                     "both": sum(1 for i in items.values() if i.bm25 is not None and (i.cosine or -1) >= floor),
                     "candidates": len(items)}
    for item in items.values():
        item.stages["candidates"] = {"legs": item.legs, "bm25": item.bm25, "cosine": item.cosine}
    bars = LegBars(query, n, min(bm25.values()) if len(bm25) >= n else None,
                   max(floor, min(raw_cosine.values())) if method == "exact" and len(raw_cosine) >= n else floor)
    return items, {"vector_method": method, "terms": sorted(set(terms)), "bars": bars}


@dataclass(frozen=True)
class LegBars:
    """What a memory must reach to enter a pass's candidates through each leg, read off that pass's legs: its full
    BM25 top n's lowest score (None: the leg was short, any match enters) and, when the vector leg was exact and
    full, its lowest cosine (else only the floor). The scores do not depend on statuses (idf and avgdl are the
    tenant's), so a memory under both bars could not displace one of these candidates."""
    query: str
    n: int
    bm25: float | None
    cosine: float


def staging_could_enter(conn: Connection, scope: Scope, query: str, query_vector: str, settings: Settings,
                        bars: LegBars) -> bool:
    """Whether a staging memory of `scope` could be a candidate of the query in the current frame, were staging
    added to the statuses of the pass `bars` describes: its BM25 reaches the bar (any match when the query's terms
    have more than READ_ALL_MAX postings, where a walk not proved exact answers and its candidates depend on the
    statuses; up to it the keyword leg is the exact top n) or its cosine
    reaches the vector bar. When none can, a pass with staging added has the same candidates and answers no staging
    memory (the staging fallback, recall/service.py, skips it). A resolved query other than `bars.query`: True."""
    if query != bars.query:
        return True
    # The best staging memory by the vector leg's own search (exact or iterative HNSW by the scope's size), so the
    # test is as exact as the pass it stands for. An exact scan of every staging memory's vector read the whole
    # table: 17 ms at 30k memories with 3.8k in staging, against 1-2 ms through HNSW with the same answer.
    [(best, _method)] = nearest_vectors(conn, scope, [query_vector], 1, settings, ("staging",), MEMORY_VECTORS)
    if best and best[0][1] >= bars.cosine:
        return True
    terms = sorted(set(tokenize(query)))
    staged = bm25_top(conn, scope, terms, 1, settings.keyword.bm25_k1, settings.keyword.bm25_b, ("staging",),
                      MEMORY_KEYWORD)
    if not staged:
        return False
    postings = conn.execute(text(f"SELECT coalesce(sum(df), 0) FROM {MEMORY_KEYWORD.terms}"
                                 " WHERE tenant = :tenant AND term = ANY(:terms)"),
                            {"tenant": scope.tenant, "terms": terms}).scalar_one()
    return postings > READ_ALL_MAX or bars.bm25 is None or max(staged.values()) >= bars.bm25


def memory_tables(frame: TimeFrame) -> tuple[KeywordTables, VectorTable]:
    """The memories' BM25 and vector tables whose status filter reads the memories as `frame` holds them."""
    if frame.current and not frame.dated:
        return MEMORY_KEYWORD, MEMORY_VECTORS
    return (replace(MEMORY_KEYWORD, status_filter=frame.memory_status_filter("d")),
            replace(MEMORY_VECTORS, status_filter=frame.memory_status_filter("v")))
