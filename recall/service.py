"""Recall: the cost-ordered funnel over the read models (recall.funnel). Read-only except for the hit-log.

    coref → candidates → composite → prf (+ entity boost) → graph walk → rerank → abstention gate

Every stage runs inside one read-only transaction with one clock (`now`, recorded in the explanation: the
activation and edge decay depend on it; under as_of, the position's recorded time). The answer carries each
result's per-stage scores and each stage's timing, counts and knobs; the RecallServed event stores the same
explanation, so GET /v1/recalls/{id} can say why a recall answered what it did.

Statuses: by default only active and dormant memories are recalled (dormant ones rank lower through
activation), and staging ones when those do not answer (the staging fallback: the gate abstained or the best
cosine is weak; the explanation's `staging_fallback` says why, and each result's `from_staging`; the first pass
searches its legs at twice the breadth with staging, so that second pass ranks legs already searched, and is
skipped when no staging memory enters them, since it could then only rank the first pass's candidates again:
recall/funnel/candidates.py search_with_staging); include_staging adds staging always, include_history adds
superseded (score × superseded_factor), include_archived adds archived.
Discarded and merged memories are never recalled.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import structlog
from sqlalchemy import Engine

from domain.errors import InvalidPayload
from domain.memory_status import RECALLABLE
from domain.privacy import NO_POLICY, PrivacyPolicy
from domain.temporal import TimeTarget, resolve
from domain.text import has_nul, tokenize
from infra.db import read_only, reading
from infra.embedding import Embedder
from infra.metrics import RECALL_LATENCY
from infra.settings import Settings
from recall.funnel import abstain, candidates, composite, coref, graph, prf, privacy, rerank
from recall.funnel.types import Item, StageReport, timed
from recall.hitlog import append_served, served_record
from recall.keyword import holds_any
from recall.relevance import grade_items
from recall.scope import Scope
from recall.timeframe import NOW, TimeFrame, clock_of
from recall.vector import QueryVector, literal

log = structlog.get_logger(__name__)
MAX_K = 100
MAX_QUERY_CHARS = 4096


@dataclass(frozen=True)
class RecallRequest:
    scope: Scope
    query: str
    k: int = 10
    include_staging: bool = False
    include_history: bool = False
    include_archived: bool = False
    trace: bool = False  # answer the ids each stage kept (details.trace): for the attribution study
    # The clock the query's time words ("last Tuesday", "in May") are read against (domain/temporal.py);
    # None: the recall's own clock.
    reference_time: datetime | None = None
    # Valid time (since / until on occurred_at) and recorded time (as_of, a log position): recall/timeframe.py.
    frame: TimeFrame = NOW

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
    relevance: float = 0.0  # the calibrated chance it answers the query, the scale every domain shares


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
    request.frame.check()


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
    excluded: int = 0  # results the privacy gate dropped after the graph walk
    skipped: str | None = None  # why this pass ranked nothing (the staging fallback's, when staging cannot answer)
    # The staging fallback's legs, searched with this pass's (candidates.search_with_staging): None when no
    # staging memory enters them; only when `staging_searched`.
    staging_legs: candidates.Legs | None = None
    staging_searched: bool = False

    def best_cosine(self, k: int) -> float | None:
        return max((i.cosine for i in self.ranked[:k] if i.cosine is not None), default=None)


NO_STAGING_CANDIDATE = "skipped: no staging memory enters the BM25 or vector top n with staging"


def _run(engine: Engine, embedder: Embedder, settings: Settings, request: RecallRequest,
         statuses: tuple[str, ...], now: datetime, vectors: dict[str, QueryVector], policy: PrivacyPolicy,
         when: TimeTarget | None = None, first: _Pass | None = None) -> _Pass:
    """One pass of the funnel. A first pass that may be followed by the staging fallback's searches its legs for
    both at once (candidates.search_with_staging). `first`: the pass the staging fallback's pass follows; with
    the same query, it ranks the legs that pass searched for it, or is skipped, ranking nothing, when no staging
    memory enters them: it would rank that pass's candidates again, answering no staging memory."""
    # The policy's agents, projects and sessions are filtered in every leg's SQL (recall/scope.py); the gate after
    # the graph walk checks every remaining item, tags included, whatever stage brought it in.
    scope, k = replace(request.scope, policy=policy), request.k
    reports = {name: StageReport(name) for name in
               ("embed", "coref", "candidates", "composite", "prf", "graph", "rerank", "abstain")}
    trace: dict[str, list[str]] = {}
    current = request.frame.current and not request.frame.dated
    with read_only(engine) as conn:
        with timed(reports["coref"]) as r:
            query = coref.resolve(conn, scope, request.query, statuses, settings.funnel.coref_recent, r, request.frame)
        with timed(reports["embed"]) as r:
            if query not in vectors:
                vectors[query] = embedder.query_vector(scope.tenant, query)
            pending = vectors[query]
            r.config = {"model": embedder.model}
            if not isinstance(pending, str):
                r.config["computed"] = "beside coreference and the keyword leg: the candidates stage waits for it"
        with timed(reports["candidates"]) as r:
            legs, staging_legs, searched, known = None, None, False, None
            if first is not None and first.staging_searched and query == first.query:
                if first.staging_legs is None:
                    return _Pass(statuses, query, {}, {}, [], reports, False, None, trace, skipped=NO_STAGING_CANDIDATE)
                legs, known = first.staging_legs, first.items  # the rows that pass read are not read again
            elif (first is None and current and settings.abstention.staging_fallback
                  and "staging" not in statuses):
                legs, staging_legs = candidates.search_with_staging(
                    conn, scope, query, pending, candidates.breadth(k, settings), statuses, settings)
                searched = True
            items, legs_facts = candidates.generate(conn, scope, query, pending, k, statuses, settings, r,
                                                    request.frame, legs=legs, known=known)
            query_vector = vectors[query] = literal(pending)
            if searched:
                r.config["legs"] = "searched at twice the breadth with staging, for the staging fallback too"
            elif legs is not None:
                r.config["legs"] = "the first pass's search with staging"
        with timed(reports["composite"]) as r:
            ranked = composite.score(conn, scope.tenant, items, k, now, settings, r, when)
        if request.trace:
            trace["candidates"] = [str(i) for i in sorted(items, key=lambda i: (-items[i].score, str(i)))]
        with timed(reports["prf"]) as r:
            ranked = prf.feedback(conn, scope.tenant, query, query_vector, ranked, settings, r)
        with timed(reports["graph"]) as r:
            ranked = graph.walk(conn, scope.tenant, ranked, now, settings, r, statuses)
        ranked, excluded = privacy.drop_excluded(conn, scope.tenant, ranked, policy)
    if request.trace:
        trace["pool"] = [str(i.memory_id) for i in ranked[:rerank.pool_size(k, settings)]]
    with timed(reports["rerank"]) as r:  # outside the transaction: model inference holds no snapshot
        ranked = rerank.rerank(query, ranked, k, settings, r)
    reranked = reports["rerank"].skipped is None and bool(ranked)
    with timed(reports["abstain"]) as r:
        grade_items(query, ranked[:max(k, settings.abstention.abstain_gate_k)], settings.embedding.embedding_model)
        abstained = abstain.judge(query, ranked, reranked, settings, r)
    if request.trace:
        trace["ranked"] = [str(i.memory_id) for i in ranked[:k]]
    return _Pass(statuses, query, items, legs_facts, ranked, reports, reranked, abstained, trace, excluded,
                 staging_legs=staging_legs, staging_searched=searched)


def _weak(engine: Engine, first: _Pass, request: RecallRequest, settings: Settings,
          policy: PrivacyPolicy) -> str | None:
    """Why the active and dormant memories do not answer (so staging is looked at), or None when they do:
    the gate abstained; the best cosine is weak; or a query term none of the top results holds is held by a
    staging memory (the right fact may sit in staging while a near one answers: "shellfish" for "peanuts")."""
    if first.abstained:
        return f"abstained: {first.abstained['reason']}"
    best = first.best_cosine(settings.abstention.abstain_gate_k)
    if best is not None and best < settings.abstention.staging_fallback_sim:  # None: no vector yet, nothing to judge by
        return f"weak relevance: best cosine {best:.3f} < {settings.abstention.staging_fallback_sim:g}"
    held = {t for i in first.ranked[:request.k] for t in tokenize(i.content)}
    missing = sorted({t for t in tokenize(first.query) if t not in held})
    if missing:
        with reading(engine) as conn:
            staged = holds_any(conn, replace(request.scope, policy=policy), missing, ("staging",),
                               candidates.memory_tables(request.frame)[0], where_params=request.frame.params())
        if staged:
            return f"query terms only staging holds: {', '.join(missing)}"
    return None


@dataclass(frozen=True)
class Funnelled:
    """What the funnel answered, before the hit-log: the results, the explanation the hit-log stores, details."""

    results: list[RecallResult]
    explanation: dict[str, Any]
    details: dict[str, Any]
    abstained: dict[str, Any] | None
    log: dict[str, Any]


def search(engine: Engine, embedder: Embedder, settings: Settings, request: RecallRequest,
           policy: PrivacyPolicy = NO_POLICY, vectors: dict[str, QueryVector] | None = None,
           now: datetime | None = None) -> Funnelled:
    """The funnel over the memories (read-only): the top request.k, none the privacy policy excludes.
    `vectors` caches query embeddings by text (the aggregator hands in the query's, maybe still being computed)."""
    k = request.k
    # Under as_of the clock is the position's recorded time: activation ages, edge decay and the query's time words
    # are those of then (recall/timeframe.py clock_of), whatever clock the caller hands in.
    now = clock_of(engine, request.scope.tenant, request.frame, now or datetime.now(UTC))
    if vectors is None:  # the query's vector is computed while the first pass reads coreference and its keyword leg
        vectors = {request.query: embedder.query_vector_soon(request.scope.tenant, request.query)}
    when = resolve(request.query, request.reference_time or now)
    chosen = _run(engine, embedder, settings, request, request.statuses(), now, vectors, policy, when)
    # Staging is a safety net: when the recallable memories do not answer, look at staging before giving up.
    fallback: dict[str, Any] | None = None
    why = None
    if settings.abstention.staging_fallback and "staging" not in chosen.statuses:
        why = _weak(engine, chosen, request, settings, policy)
    if why:
        second = _run(engine, embedder, settings, request, (*chosen.statuses, "staging"), now, vectors, policy,
                      when, first=chosen)
        staged = [str(i.memory_id) for i in second.ranked[:k] if i.status == "staging"]
        used = second.abstained is None and bool(staged)
        fallback = {"reason": why, "used": used, "staging_results": staged if used else [],
                    "first_pass": {"abstained": chosen.abstained, "best_cosine": chosen.best_cosine(k)},
                    "floor": settings.abstention.staging_fallback_sim,
                    "second_pass": second.skipped or "run"}
        if used:
            chosen = second
    statuses, query, items, legs, ranked = chosen.statuses, chosen.query, chosen.items, chosen.legs, chosen.ranked
    reports, abstained, trace = chosen.reports, chosen.abstained, chosen.trace
    top = [] if abstained else ranked[:k]
    results = [_result(i, rank_ + 1, reports["rerank"].skipped) for rank_, i in enumerate(top)]
    explanation = {
        "clock": now.isoformat(),
        "query": {"original": request.query, "resolved": query,
                  # the span of time the query names, read against reference_time (else the clock)
                  "time": when.as_dict() if when else None,
                  "reference_time": request.reference_time.isoformat() if request.reference_time else None},
        "statuses": list(statuses),
        "vector_method": legs["vector_method"],
        "stages": [reports[n].as_dict() for n in
                   ("coref", "embed", "candidates", "composite", "prf", "graph", "rerank", "abstain")],
        "abstained": abstained,
        "staging_fallback": fallback,
        "time_frame": request.frame.explain(),
    }
    if not policy.empty:
        explanation["privacy"] = {"excluded": chosen.excluded}
    details: dict[str, Any] = {
        "candidates": len(items), "keyword_candidates": reports["candidates"].counts.get("keyword", 0),
        "vector_method": legs["vector_method"],
        "timings_ms": {n: round(reports[n].ms, 3) for n in reports},
        "counts": {n: reports[n].counts for n in reports},
    }
    if request.trace:
        details["trace"] = trace
    return Funnelled(results, explanation, details, abstained,
                     {"candidates": len(items), "vector_method": legs["vector_method"],
                      "reranked": chosen.reranked, "staging_fallback": None if fallback is None else fallback["used"]})


def hit_entries(results: list[RecallResult]) -> list[dict[str, Any]]:
    """The memories' entries of a RecallServed: id, rank, score, layer, legs."""
    return [{"domain": "memories", "memory_id": str(r.memory_id), "rank": i + 1, "score": r.score, "layer": "index",
             "legs": {"keyword": r.explanation.get("bm25"), "vector": r.explanation.get("cosine")},
             "relevance": r.relevance}
            for i, r in enumerate(results)]


def recall(engine: Engine, embedder: Embedder, settings: Settings, request: RecallRequest,
           metadata: dict[str, Any], policy: PrivacyPolicy = NO_POLICY) -> RecallAnswer:
    """One recall over the memories: the funnel, then its one effect, the hit-log event."""
    validate(request)
    started = time.perf_counter()
    found = search(engine, embedder, settings, request, policy)
    latency_ms = (time.perf_counter() - started) * 1000
    RECALL_LATENCY.observe(latency_ms / 1000)
    recall_id = uuid.uuid4()
    position = append_served(engine, request.scope.tenant, recall_id, {
        "query": request.query, "k": request.k, "scope": request.scope.as_dict(),
        "results": hit_entries(found.results), "latency_ms": round(latency_ms, 3),
        "explanation": {**found.explanation, "per_result": [
            {"memory_id": str(r.memory_id), "stages": r.explanation["stages"]} for r in found.results]},
    }, metadata)
    log.info("recall.served", recall_id=str(recall_id), results=len(found.results), latency_ms=round(latency_ms, 1),
             abstained=found.abstained is not None, **found.log)
    return RecallAnswer(recall_id, found.results, latency_ms, position, found.details, found.explanation,
                        found.abstained)


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
    if "calibrated" in item.stages:
        explanation["relevance"] = item.stages["calibrated"]
    return RecallResult(item.memory_id, item.content, round(min(1.0, max(0.0, item.score)), 6), item.kind,
                        item.metadata, item.occurred_at or datetime.now(UTC), explanation, item.calibrated)


def get_recall(engine: Engine, tenant: str, recall_id: uuid.UUID) -> dict[str, Any]:
    """What a recall answered and why, from its hit-log event (the tenant's own only), each result marked
    `drilled` when an agent fetched it by its handle afterwards."""
    record = served_record(engine, tenant, recall_id)
    data = record["data"]
    explanation = data.get("explanation") or {}
    per_result = {r["memory_id"]: r.get("stages", {}) for r in explanation.get("per_result", [])}
    return {
        "recall_id": data["recall_id"], "query": data["query"], "k": data["k"], "scope": data.get("scope", {}),
        "domains": data.get("domains", ["memories"]),
        "results": [{**r, "stages": per_result.get(r.get("memory_id") or "", {})} for r in data.get("results", [])],
        "latency_ms": data.get("latency_ms"), "position": record["position"], "recorded_at": record["recorded_at"],
        "abstained": explanation.get("abstained"),
        "explanation": {k_: v for k_, v in explanation.items() if k_ != "per_result"},
    }
