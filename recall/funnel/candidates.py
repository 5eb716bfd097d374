"""Stage 2, candidate generation: BM25 ∪ vector (cosine ≥ a floor). The only eligibility gate of the funnel.

Both legs search the scope and only memories whose status the request may see. Each leg fetches the top
max(candidates_per_leg, k · topn_mult); the vector leg keeps hits at or above `sim_candidate_floor`. A memory
matched by BM25 is a candidate whatever its cosine; its cosine is fetched so every stage can use it. The
memories' rows (content, status, confidence, ...) are read once here for all later stages.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import Connection, text

from domain.text import tokenize
from infra.settings import Settings
from recall.funnel.types import Activity, Item, StageReport
from recall.keyword import MEMORY_KEYWORD, KeywordTables, bm25_top
from recall.scope import Scope
from recall.timeframe import NOW, TimeFrame
from recall.vector import MEMORY_VECTORS, QueryVector, VectorTable, literal, nearest_vectors


def _rows_sql(frame: TimeFrame) -> str:
    """The candidates' rows, each with its activity as of the frame (the composite's ACT-R and feedback inputs) and,
    unless the vector leg brought its cosine (:known), its cosine to the query when it has a vector of the model:
    a BM25 candidate's vector leg, the leg's own expression. The vector is read only for those (a heap page each:
    at 1M memories 160 probes were 2 of the statement's 3 ms)."""
    return (f"SELECT m.memory_id, m.content, m.kind, m.status, m.metadata, m.occurred_at, m.recorded_at,"
            f" m.confidence, CASE WHEN m.memory_id = ANY(:known) THEN NULL ELSE"
            f" (SELECT 1 - (v.embedding <=> CAST(:q AS vector)) FROM {MEMORY_VECTORS.table} v"
            f" WHERE v.tenant = m.tenant AND v.memory_id = m.memory_id AND v.model = :model) END AS cosine,"
            f" a.memory_id AS active, a.access_count, a.last_access_at, a.used_count, a.not_useful_count"
            f" FROM {frame.memories()} m"
            f" LEFT JOIN {frame.activity()} a ON a.tenant = m.tenant AND a.memory_id = m.memory_id"
            f" WHERE m.tenant = :tenant AND m.memory_id = ANY(:ids) AND m.status = ANY(:statuses)"
            f"{frame.valid_sql('m.occurred_at')}")


@dataclass(frozen=True)
class Legs:
    """One search of the two legs: the BM25 top n (id → score, best first), the vector leg's top n (id → cosine,
    best first, before the floor) and how that leg searched ("exact", "hnsw_iterative", ...)."""
    bm25: dict[uuid.UUID, float]
    cosine: dict[uuid.UUID, float]
    method: str

    def entering(self, floor: float) -> set[uuid.UUID]:
        """Who the legs make a candidate: the BM25 top n, and the vector top n at or above the floor."""
        return {*self.bm25, *(i for i, c in self.cosine.items() if c >= floor)}


def search_legs(conn: Connection, scope: Scope, query: str, query_vector: QueryVector, n: int,
                statuses: tuple[str, ...], settings: Settings, frame: TimeFrame = NOW) -> Legs:
    """Both legs' top n for `query` among the memories of `scope` in one of `statuses`, as `frame` holds them. The
    keyword leg first: a `query_vector` still being computed is waited for only after it."""
    keyword, vectors = memory_tables(frame)
    k1, b = bm25_parameters(settings)
    bm25 = bm25_top(conn, scope, tokenize(query), n, k1, b, statuses, keyword, where_params=frame.params())
    [(hits, method)] = nearest_vectors(conn, scope, [literal(query_vector)], n, settings, statuses, vectors,
                                       where_params=frame.params())
    return Legs(bm25, dict(hits), method)


def bm25_parameters(settings: Settings) -> tuple[float, float]:
    """The memories' Okapi k1 and b: the keyword leg's, and what the explanation says it used."""
    return settings.keyword.bm25_k1, settings.keyword.memory_bm25_b


def breadth(k: int, settings: Settings) -> int:
    """How many memories each leg brings: max(candidates_per_leg, k · topn_mult)."""
    return max(settings.hybrid.candidates_per_leg, k * settings.funnel.topn_mult)


def search_with_staging(conn: Connection, scope: Scope, query: str, query_vector: QueryVector, n: int,
                        statuses: tuple[str, ...], settings: Settings) -> tuple[Legs, Legs | None]:
    """The legs of a pass over `statuses` and of the staging fallback's pass (`statuses` and staging), from one
    search of 2n over both, when it proves the first: a leg's scores do not depend on the statuses searched (idf
    and avgdl are the tenant's), so the top n over `statuses` is the first n of the 2n not in staging whenever at
    least n of them are not, or the search ran out. Otherwise the first pass's legs are searched on their own.
    Exact where the legs are (iterative HNSW stays approximate, as it is on its own). As (first, with staging),
    with staging None when no staging memory enters its candidates: that pass would rank the first pass's
    candidates again and answer no staging memory, so the fallback (recall/service.py) skips it."""
    wide = search_legs(conn, scope, query, query_vector, 2 * n, (*statuses, "staging"), settings)
    ids = list({*wide.bm25, *wide.cosine})
    staged = set(conn.execute(text("SELECT memory_id FROM memories WHERE tenant = :tenant"
                                   " AND memory_id = ANY(:ids) AND status = 'staging'"),
                              {"tenant": scope.tenant, "ids": ids}).scalars()) if ids else set()

    def split(scores: dict[uuid.UUID, float]) -> tuple[dict[uuid.UUID, float] | None, dict[uuid.UUID, float]]:
        kept = [(i, v) for i, v in scores.items() if i not in staged]
        proved = len(scores) < 2 * n or len(kept) >= n
        return (dict(kept[:n]) if proved else None), dict(list(scores.items())[:n])

    (bm25, bm25_all), (cosine, cosine_all) = split(wide.bm25), split(wide.cosine)
    with_staging = Legs(bm25_all, cosine_all, wide.method)
    second = with_staging if with_staging.entering(settings.funnel.sim_candidate_floor) & staged else None
    if bm25 is None or cosine is None:
        return search_legs(conn, scope, query, query_vector, n, statuses, settings), second
    return Legs(bm25, cosine, wide.method), second


def generate(conn: Connection, scope: Scope, query: str, query_vector: QueryVector, k: int, statuses: tuple[str, ...],
             settings: Settings, report: StageReport, frame: TimeFrame = NOW,
             legs: Legs | None = None,
             known: Mapping[uuid.UUID, Item] | None = None) -> tuple[dict[uuid.UUID, Item], dict[str, Any]]:
    """The candidates by id, and facts about the legs (vector method, terms) for the explanation. With a `frame`
    (since / until, as_of) both legs search only the memories it holds, as it held them (recall/timeframe.py).
    `legs`: searched already for `query` over `statuses` at this breadth (search_with_staging). `known`: candidates
    a pass of the same recall read for the same query vector, over statuses these include (the staging fallback's
    pass follows the first): their rows are not read again."""
    n = breadth(k, settings)
    if legs is None:
        legs = search_legs(conn, scope, query, query_vector, n, statuses, settings, frame)
    bm25, raw_cosine = legs.bm25, legs.cosine
    floor = settings.funnel.sim_candidate_floor
    ids = sorted(legs.entering(floor), key=str)
    items = {i: _again(known[i], bm25.get(i)) for i in ids if known is not None and i in known}
    unread = [i for i in ids if i not in items]
    # BM25 candidates outside the vector leg's top n get their cosine with their rows.
    known_cosine = [i for i in unread if i in raw_cosine]
    params = {"tenant": scope.tenant, "ids": unread, "statuses": list(statuses), "q": literal(query_vector),
              "model": settings.embedding.embedding_model, "known": known_cosine, **frame.params()}
    for row in conn.execute(text(_rows_sql(frame)), params) if unread else ():
        cosine = raw_cosine.get(row.memory_id, row.cosine)
        items[row.memory_id] = Item(
            memory_id=row.memory_id, bm25=bm25.get(row.memory_id),
            cosine=None if cosine is None else float(cosine),
            content=row.content, kind=row.kind, status=row.status, metadata=row.metadata,
            occurred_at=row.occurred_at, recorded_at=row.recorded_at, confidence=float(row.confidence),
            activity=None if row.active is None else Activity(row.access_count, row.last_access_at, row.used_count,
                                                              row.not_useful_count))
    below = sum(1 for c in raw_cosine.values() if c < floor)
    k1, b = bm25_parameters(settings)
    report.config = {"per_leg": n, "sim_candidate_floor": floor, "statuses": list(statuses),
                     "bm25": {"k1": k1, "b": b}}
    if frame.explain():
        report.config["time_frame"] = frame.explain()
    report.counts = {"keyword": len(bm25), "vector": len(raw_cosine) - below, "vector_below_floor": below,
                     "both": sum(1 for i in items.values() if i.bm25 is not None and (i.cosine or -1) >= floor),
                     "candidates": len(items)}
    for item in items.values():
        item.stages["candidates"] = {"legs": item.legs, "bm25": item.bm25, "cosine": item.cosine}
    return items, {"vector_method": legs.method, "terms": sorted(set(tokenize(query)))}


def _again(seen: Item, bm25: float | None) -> Item:
    """A candidate a previous pass read, as its row gave it (what the stages set since left behind), with this
    pass's BM25 (the same score when both legs hold it: a leg's scores do not depend on the statuses searched)."""
    return Item(memory_id=seen.memory_id, bm25=bm25, cosine=seen.cosine, content=seen.content, kind=seen.kind,
                status=seen.status, metadata=seen.metadata, occurred_at=seen.occurred_at,
                recorded_at=seen.recorded_at, confidence=seen.confidence, activity=seen.activity)


def memory_tables(frame: TimeFrame) -> tuple[KeywordTables, VectorTable]:
    """The memories' BM25 and vector tables whose status filter reads the memories as `frame` holds them."""
    if frame.current and not frame.dated:
        return MEMORY_KEYWORD, MEMORY_VECTORS
    return (replace(MEMORY_KEYWORD, status_filter=frame.memory_status_filter("d")),
            replace(MEMORY_VECTORS, status_filter=frame.memory_status_filter("v")))
