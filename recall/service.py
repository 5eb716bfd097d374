"""Recall v1: hybrid BM25 + vector ranking over the read models. Read-only except for the hit-log event."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import structlog
from sqlalchemy import Engine, text

from domain.errors import InvalidPayload, NotCaughtUp
from domain.events import NewEvent, recall_stream, validate_payload
from domain.ranking import Candidate, Scored, fuse
from domain.text import tokenize
from eventstore.append import append
from infra.embedding import Embedder, to_pgvector
from infra.metrics import EVENTS_APPENDED, RECALL_LATENCY
from infra.settings import Settings
from projections.registry import PROJECTORS
from projections.runner import has_reached
from recall.keyword import bm25_top
from recall.scope import Scope
from recall.vector import cosines_for, vector_top
from services.append_events import has_nul

log = structlog.get_logger(__name__)
MAX_K = 100
MAX_QUERY_CHARS = 4096
READ_MODELS = ("memories", "keyword", "vectors")


@dataclass(frozen=True)
class RecallRequest:
    scope: Scope
    query: str
    k: int = 10
    min_position: int | None = None


@dataclass(frozen=True)
class RecallResult:
    memory_id: uuid.UUID
    content: str
    score: float
    kind: str
    metadata: dict[str, Any]
    occurred_at: datetime
    explanation: dict[str, Any]


@dataclass(frozen=True)
class RecallAnswer:
    recall_id: uuid.UUID
    results: list[RecallResult]
    latency_ms: float
    position: int
    details: dict[str, Any] = field(default_factory=dict)


def validate(request: RecallRequest) -> None:
    if not request.query.strip():
        raise InvalidPayload("query must not be empty")
    if len(request.query) > MAX_QUERY_CHARS:
        raise InvalidPayload(f"query is longer than {MAX_QUERY_CHARS} characters")
    if not 1 <= request.k <= MAX_K:
        raise InvalidPayload(f"k must be between 1 and {MAX_K}")
    if has_nul([request.query, *request.scope.as_dict().values()]):
        raise InvalidPayload("query and scope must not contain NUL (\\u0000) characters")


def wait_for_position(engine: Engine, position: int, timeout_s: float) -> None:
    """Read-your-writes: wait until every read model recall uses has applied `position`."""
    deadline = time.monotonic() + timeout_s
    pending = list(READ_MODELS)
    while True:
        with engine.connect() as conn:
            pending = [name for name in pending if not has_reached(conn, PROJECTORS[name], position)]
        if not pending:
            return
        if time.monotonic() >= deadline:
            raise NotCaughtUp(f"projections {', '.join(pending)} have not reached position {position} "
                              f"after {timeout_s:g}s; retry shortly")
        time.sleep(0.05)


_MEMORIES = text("""
SELECT memory_id, content, kind, metadata, occurred_at FROM memories
WHERE tenant = :tenant AND memory_id = ANY(:ids) AND status = 'active'
""")


def recall(engine: Engine, embedder: Embedder, settings: Settings, request: RecallRequest,
           metadata: dict[str, Any]) -> RecallAnswer:
    validate(request)
    started = time.perf_counter()
    if request.min_position:
        wait_for_position(engine, request.min_position, settings.min_position_wait_s)
    scope, n = request.scope, max(settings.candidates_per_leg, request.k)
    query_vector = to_pgvector(embedder.encode_one(request.query))
    with engine.connect() as conn, conn.begin():
        conn.execute(text("SET TRANSACTION READ ONLY"))
        bm25 = bm25_top(conn, scope, tokenize(request.query), n, settings.bm25_k1, settings.bm25_b)
        cosine, method = vector_top(conn, scope, query_vector, n, settings.exact_scan_max_rows,
                                    settings.hnsw_ef_search)
        cosine.update(cosines_for(conn, scope.tenant, [i for i in bm25 if i not in cosine], query_vector))
        candidates = [Candidate(i, bm25.get(i), cosine.get(i)) for i in sorted({*bm25, *cosine}, key=str)]
        scored = fuse(candidates, settings.weight_vector, settings.weight_keyword, settings.score_threshold)
        rows = {r.memory_id: r for r in conn.execute(_MEMORIES, {"tenant": scope.tenant,
                                                                 "ids": [s.memory_id for s in scored]})}
    top = [s for s in scored if s.memory_id in rows][: request.k]
    results = [_result(s, rows[s.memory_id]) for s in top]
    latency_ms = (time.perf_counter() - started) * 1000
    RECALL_LATENCY.observe(latency_ms / 1000)

    recall_id = uuid.uuid4()
    served = validate_payload("RecallServed", {
        "recall_id": str(recall_id), "query": request.query, "k": request.k, "scope": scope.as_dict(),
        "results": [{"memory_id": str(r.memory_id), "rank": i + 1, "score": r.score} for i, r in enumerate(results)],
        "latency_ms": round(latency_ms, 3),
    })
    with engine.begin() as conn:
        [position] = append(conn, scope.tenant, [NewEvent("RecallServed", recall_stream(recall_id), served,
                                                          expected_version=0)], metadata)
    EVENTS_APPENDED.inc()  # the hit-log event is an append like any other
    log.info("recall.served", recall_id=str(recall_id), results=len(results), latency_ms=round(latency_ms, 1),
             candidates=len(candidates), vector_method=method)
    details = {"candidates": len(candidates), "keyword_candidates": len(bm25), "vector_method": method}
    return RecallAnswer(recall_id, results, latency_ms, position, details)


def _result(s: Scored, row: Any) -> RecallResult:
    legs = [leg for leg, value in (("keyword", s.bm25), ("vector", s.cosine)) if value is not None]
    explanation = {
        "legs": legs, "bm25": s.bm25, "bm25_normalised": round(s.bm25_normalised, 6), "cosine": s.cosine,
        "weight_vector": s.weight_vector, "weight_keyword": s.weight_keyword,
        "note": None if s.cosine is not None else "no vector yet: scored on the keyword leg alone (weight 1)",
    }
    return RecallResult(s.memory_id, row.content, round(s.score, 6), row.kind, row.metadata, row.occurred_at,
                        explanation)
