"""Recall: the cost-ordered funnel over the read models (recall.funnel). Read-only except for the hit-log.

    coref → candidates → composite → prf (+ entity boost) → graph walk → rerank → abstention gate

Every stage runs inside one read-only transaction with one clock (`now`, recorded in the explanation: the
activation and edge decay depend on it). The answer carries each result's per-stage scores and each stage's
timing, counts and knobs; the RecallServed event stores the same explanation, so GET /v1/recalls/{id} can say
why a recall answered what it did.

Statuses: by default only active and dormant memories are recalled (dormant ones rank lower through
activation), and staging ones when those do not answer (the staging fallback: the gate abstained or the best
cosine is weak; the explanation's `staging_fallback` says why, and each result's `from_staging`); include_staging
adds staging always, include_history adds superseded (score × superseded_factor),
include_archived adds archived. Discarded and merged memories are never recalled.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import structlog
from sqlalchemy import Engine, text

from domain.errors import InvalidPayload, NotFound
from domain.events import NewEvent, RecallServed, recall_stream, validate_payload
from domain.memory_status import RECALLABLE
from domain.text import has_nul, tokenize
from eventstore.append import append
from eventstore.stream import first_of_type
from infra.embedding import Embedder, to_pgvector
from infra.metrics import RECALL_LATENCY
from infra.settings import Settings
from infra.wake import appended
from recall.consistency import wait_for_position
from recall.funnel import abstain, candidates, composite, coref, graph, prf, rerank
from recall.funnel.types import Item, StageReport, timed
from recall.keyword import bm25_top
from recall.scope import Scope

log = structlog.get_logger(__name__)
MAX_K = 100
MAX_QUERY_CHARS = 4096


@dataclass(frozen=True)
class RecallRequest:
    scope: Scope
    query: str
    k: int = 10
    min_position: int | None = None
    include_staging: bool = False
    include_history: bool = False
    include_archived: bool = False
    trace: bool = False  # answer the ids each stage kept (details.trace): for the attribution study

    def statuses(self) -> tuple[str, ...]:
        extra = [s for s, on in (("staging", self.include_staging), ("superseded", self.include_history),
                                 ("archived", self.include_archived)) if on]
        return (*RECALLABLE, *extra)


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
    explanation: dict[str, Any] = field(default_factory=dict)
    abstained: dict[str, Any] | None = None


def validate(request: RecallRequest) -> None:
    if not request.query.strip():
        raise InvalidPayload("query must not be empty")
    if len(request.query) > MAX_QUERY_CHARS:
        raise InvalidPayload(f"query is longer than {MAX_QUERY_CHARS} characters")
    if not 1 <= request.k <= MAX_K:
        raise InvalidPayload(f"k must be between 1 and {MAX_K}")
    if has_nul([request.query, *request.scope.as_dict().values()]):
        raise InvalidPayload("query and scope must not contain NUL (\\u0000) characters")


@dataclass
class _Pass:
    """One run of the funnel over one set of statuses."""

    statuses: tuple[str, ...]
    query: str
    items: dict[uuid.UUID, Item]
    legs: dict[str, Any]
    ranked: list[Item]
    reports: dict[str, StageReport]
    reranked: bool
    abstained: dict[str, Any] | None
    trace: dict[str, list[str]]

    def best_cosine(self, k: int) -> float | None:
        return max((i.cosine for i in self.ranked[:k] if i.cosine is not None), default=None)


def _run(engine: Engine, embedder: Embedder, settings: Settings, request: RecallRequest,
         statuses: tuple[str, ...], now: datetime, vectors: dict[str, str]) -> _Pass:
    scope, k = request.scope, request.k
    reports = {name: StageReport(name) for name in
               ("embed", "coref", "candidates", "composite", "prf", "graph", "rerank", "abstain")}
    trace: dict[str, list[str]] = {}
    with engine.connect() as conn, conn.begin():
        conn.execute(text("SET TRANSACTION READ ONLY"))
        with timed(reports["coref"]) as r:
            query = coref.resolve(conn, scope, request.query, statuses, settings.coref_recent, r)
        with timed(reports["embed"]) as r:
            if query not in vectors:
                vectors[query] = to_pgvector(embedder.encode_one(query))
            query_vector = vectors[query]
            r.config = {"model": embedder.model}
        with timed(reports["candidates"]) as r:
            items, legs = candidates.generate(conn, scope, query, query_vector, k, statuses, settings, r)
        with timed(reports["composite"]) as r:
            ranked = composite.score(conn, scope.tenant, items, k, now, settings, r)
        if request.trace:
            trace["candidates"] = [str(i) for i in sorted(items, key=lambda i: (-items[i].score, str(i)))]
        with timed(reports["prf"]) as r:
            ranked = prf.feedback(conn, scope.tenant, query, query_vector, ranked, settings, r)
        with timed(reports["graph"]) as r:
            ranked = graph.walk(conn, scope.tenant, ranked, now, settings, r, statuses)
    if request.trace:
        trace["pool"] = [str(i.memory_id) for i in ranked[:rerank.pool_size(k, settings)]]
    with timed(reports["rerank"]) as r:  # outside the transaction: model inference holds no snapshot
        ranked = rerank.rerank(query, ranked, k, settings, r)
    reranked = reports["rerank"].skipped is None and bool(ranked)
    with timed(reports["abstain"]) as r:
        abstained = abstain.judge(query, ranked, reranked, settings, r)
    if request.trace:
        trace["ranked"] = [str(i.memory_id) for i in ranked[:k]]
    return _Pass(statuses, query, items, legs, ranked, reports, reranked, abstained, trace)


def _weak(engine: Engine, first: _Pass, request: RecallRequest, settings: Settings) -> str | None:
    """Why the active and dormant memories do not answer (so staging is looked at), or None when they do:
    the gate abstained; the best cosine is weak; or a query term none of the top results holds is held by a
    staging memory (the right fact may sit in staging while a near one answers: "shellfish" for "peanuts")."""
    if first.abstained:
        return f"abstained: {first.abstained['reason']}"
    best = first.best_cosine(settings.abstain_gate_k)
    if best is not None and best < settings.staging_fallback_sim:  # None: no vector yet, nothing to judge by
        return f"weak relevance: best cosine {best:.3f} < {settings.staging_fallback_sim:g}"
    held = {t for i in first.ranked[:request.k] for t in tokenize(i.content)}
    missing = sorted({t for t in tokenize(first.query) if t not in held})
    if missing:
        with engine.connect() as conn:
            staged = bm25_top(conn, request.scope, missing, 1, settings.bm25_k1, settings.bm25_b, ("staging",))
        if staged:
            return f"query terms only staging holds: {', '.join(missing)}"
    return None


def recall(engine: Engine, embedder: Embedder, settings: Settings, request: RecallRequest,
           metadata: dict[str, Any]) -> RecallAnswer:
    validate(request)
    started = time.perf_counter()
    if request.min_position:
        wait_for_position(engine, request.min_position, settings.min_position_wait_s)
    scope, k = request.scope, request.k
    now = datetime.now(UTC)
    vectors: dict[str, str] = {}
    chosen = _run(engine, embedder, settings, request, request.statuses(), now, vectors)
    # Staging is a safety net: when the recallable memories do not answer, look at staging before giving up.
    fallback: dict[str, Any] | None = None
    why = None
    if settings.staging_fallback and "staging" not in chosen.statuses:
        why = _weak(engine, chosen, request, settings)
    if why:
        second = _run(engine, embedder, settings, request, (*chosen.statuses, "staging"), now, vectors)
        staged = [str(i.memory_id) for i in second.ranked[:k] if i.status == "staging"]
        used = second.abstained is None and bool(staged)
        fallback = {"reason": why, "used": used, "staging_results": staged if used else [],
                    "first_pass": {"abstained": chosen.abstained, "best_cosine": chosen.best_cosine(k)},
                    "floor": settings.staging_fallback_sim}
        if used:
            chosen = second
    statuses, query, items, legs, ranked = chosen.statuses, chosen.query, chosen.items, chosen.legs, chosen.ranked
    reports, abstained, trace = chosen.reports, chosen.abstained, chosen.trace
    top = [] if abstained else ranked[:k]
    results = [_result(i, rank_ + 1, reports["rerank"].skipped) for rank_, i in enumerate(top)]
    latency_ms = (time.perf_counter() - started) * 1000
    RECALL_LATENCY.observe(latency_ms / 1000)

    explanation = {
        "clock": now.isoformat(),
        "query": {"original": request.query, "resolved": query},
        "statuses": list(statuses),
        "vector_method": legs["vector_method"],
        "stages": [reports[n].as_dict() for n in
                   ("coref", "embed", "candidates", "composite", "prf", "graph", "rerank", "abstain")],
        "abstained": abstained,
        "staging_fallback": fallback,
    }
    recall_id = uuid.uuid4()
    served = validate_payload(RecallServed, {
        "recall_id": str(recall_id), "query": request.query, "k": k, "scope": scope.as_dict(),
        "results": [{"memory_id": str(r.memory_id), "rank": i + 1, "score": r.score} for i, r in enumerate(results)],
        "latency_ms": round(latency_ms, 3),
        "explanation": {**explanation, "per_result": [{"memory_id": str(r.memory_id), "stages": r.explanation["stages"]}
                                                      for r in results]},
    })
    with engine.begin() as conn:
        [position] = append(conn, scope.tenant, [NewEvent(RecallServed.type_name(), recall_stream(recall_id), served,
                                                          expected_version=0)], metadata)
    appended(1)  # the hit-log event is an append like any other: counted, and the projectors woken
    log.info("recall.served", recall_id=str(recall_id), results=len(results), latency_ms=round(latency_ms, 1),
             candidates=len(items), vector_method=legs["vector_method"], abstained=abstained is not None,
             reranked=chosen.reranked, staging_fallback=None if fallback is None else fallback["used"])
    details: dict[str, Any] = {
        "candidates": len(items), "keyword_candidates": reports["candidates"].counts.get("keyword", 0),
        "vector_method": legs["vector_method"],
        "timings_ms": {n: round(reports[n].ms, 3) for n in reports},
        "counts": {n: reports[n].counts for n in reports},
    }
    if request.trace:
        details["trace"] = trace
    return RecallAnswer(recall_id, results, latency_ms, position, details, explanation, abstained)


def _result(item: Item, rank_: int, rerank_skipped: str | None) -> RecallResult:
    relevance = item.stages.get("relevance", {})
    explanation = {
        "rank": rank_,
        "legs": item.legs, "bm25": item.bm25, "bm25_normalised": relevance.get("bm25_normalised"),
        "cosine": item.cosine,
        "weight_vector": relevance.get("weight_vector"), "weight_keyword": relevance.get("weight_keyword"),
        "note": None if item.cosine is not None else "no vector yet: scored on the keyword leg alone (weight 1)",
        "status": item.status,
        "from_staging": item.status == "staging",
        "stages": {name: item.stages[name] for name in ("candidates", "composite", "prf", "graph", "rerank")
                   if name in item.stages},
    }
    if rerank_skipped:
        explanation["rerank_skipped"] = rerank_skipped
    return RecallResult(item.memory_id, item.content, round(min(1.0, max(0.0, item.score)), 6), item.kind,
                        item.metadata, item.occurred_at or datetime.now(UTC), explanation)


def get_recall(engine: Engine, tenant: str, recall_id: uuid.UUID) -> dict[str, Any]:
    """What a recall answered and why, from its hit-log event (the tenant's own only)."""
    with engine.connect() as conn:
        row = first_of_type(conn, tenant, recall_stream(recall_id), RecallServed)
    if row is None:
        raise NotFound(f"no recall {recall_id}")
    data = row.data
    explanation = data.get("explanation") or {}
    per_result = {r["memory_id"]: r.get("stages", {}) for r in explanation.get("per_result", [])}
    return {
        "recall_id": data["recall_id"], "query": data["query"], "k": data["k"], "scope": data.get("scope", {}),
        "results": [{**r, "stages": per_result.get(r["memory_id"], {})} for r in data.get("results", [])],
        "latency_ms": data.get("latency_ms"), "position": row.position, "recorded_at": row.recorded_at,
        "abstained": explanation.get("abstained"),
        "explanation": {k_: v for k_, v in explanation.items() if k_ != "per_result"},
    }
