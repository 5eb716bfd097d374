"""The aggregator: one query fanned out to the recall domains, answered as buckets, one per domain.

Per-domain scores are not comparable, so buckets never mix them: each domain that answers gets an equal quota
(ceiling // N, at least 1) and its own bucket, and buckets come in the order the domains were asked for
(activation order). A domain asked for that has nothing in the scope, or nothing relevant, answers an empty
bucket with its reason. Beside the buckets, one fused list: the buckets' results by their calibrated relevance
(the chance each answers the query, one scale across domains: recall/relevance.py), top k.

Read-only: the query is embedded once here, while the domains run their keyword legs (no item is embedded on the
read path: workers embed them lazily, from the hit-log), and the one write is a single RecallServed for the whole
fan-out.
"""

from __future__ import annotations

import contextvars
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, TypeVar

import structlog
from sqlalchemy import Engine

from domain.errors import InvalidPayload
from domain.privacy import NO_POLICY, PrivacyPolicy
from infra.db import reading
from infra.embedding import Embedder
from infra.metrics import RECALL_LATENCY
from infra.settings import Settings
from recall.domains.base import DomainAnswer, DomainHit, DomainQuery, held
from recall.domains.registry import DOMAINS
from recall.hitlog import append_served
from recall.scope import Scope
from recall.service import MAX_K, RecallRequest, validate
from recall.timeframe import NOW, TimeFrame

log = structlog.get_logger(__name__)
T = TypeVar("T")

# The fan-out's threads, kept between requests: a pool made per request started a thread per domain each time, and
# the request waited in each start for the new thread to get the GIL (py-spy: ~4 ms a recall/multi in
# Thread.start). Its tasks wait on nothing of it (the query's embedding runs on the embedder's own threads), so
# requests that share it queue at worst, never deadlock.
FAN_OUT_THREADS = 4 * (len(DOMAINS) + 1)
_fan_out = ThreadPoolExecutor(max_workers=FAN_OUT_THREADS, thread_name_prefix="recall-multi")


def _submit(fn: Callable[..., T], *args: Any) -> Future[T]:
    """`fn(*args)` on the fan-out's threads, in a copy of the caller's context (its log's correlation id)."""
    return _fan_out.submit(contextvars.copy_context().run, fn, *args)


@dataclass(frozen=True)
class MultiRequest:
    scope: Scope
    query: str
    domains: tuple[str, ...] = ()  # () = the domains with data in the scope, in registry order
    k: int | None = None  # the ceiling; None = settings.funnel.recall_multi_ceiling
    include_history: bool = False
    options: dict[str, Any] = field(default_factory=dict)
    frame: TimeFrame = NOW  # since / until, as_of (recall/timeframe.py)


@dataclass(frozen=True)
class Bucket:
    domain: str
    quota: int
    results: list[DomainHit]
    reason: str | None
    explanation: dict[str, Any]


@dataclass(frozen=True)
class Fused:
    """One result of the fused list: a bucket's result, by the relevance every domain shares."""
    domain: str
    rank: int  # its rank in its bucket, 1-based
    hit: DomainHit


@dataclass(frozen=True)
class MultiAnswer:
    recall_id: uuid.UUID
    buckets: list[Bucket]
    latency_ms: float
    position: int
    results: list[Fused] = field(default_factory=list)  # the buckets' results, best relevance first, top k


def fused(buckets: list[Bucket], k: int) -> list[Fused]:
    """Every bucket's results in one list by calibrated relevance (ties: the asked order, then bucket rank)."""
    ranked = [(-h.relevance, order, rank, Fused(b.domain, rank, h))
              for order, b in enumerate(buckets) for rank, h in enumerate(b.results, 1)]
    return [f for *_, f in sorted(ranked, key=lambda r: r[:3])][:k]


def check(request: MultiRequest) -> None:
    validate(RecallRequest(request.scope, request.query, request.k or 1, frame=request.frame))
    unknown = [d for d in request.domains if d not in DOMAINS]
    if unknown:
        raise InvalidPayload(f"unknown domains: {', '.join(unknown)}; known: {', '.join(DOMAINS)}")
    if len(set(request.domains)) != len(request.domains):
        raise InvalidPayload("domains must not repeat")
    if request.k is not None and not 1 <= request.k <= MAX_K:
        raise InvalidPayload(f"k must be between 1 and {MAX_K}")


def recall_multi(engine: Engine, embedder: Embedder, settings: Settings, request: MultiRequest,
                 metadata: dict[str, Any], policy: PrivacyPolicy = NO_POLICY) -> MultiAnswer:
    check(request)
    started = time.perf_counter()
    now = datetime.now(UTC)
    scope = request.scope
    with reading(engine) as conn:  # every domain's data check in one statement
        found = held(conn, {d: DOMAINS[d].data_check(scope) for d in (request.domains or DOMAINS)})
    with_data = [d for d, has in found.items() if has]
    asked = list(request.domains) or with_data  # asked for by name: answered, if only with "no data"
    ceiling = request.k or settings.funnel.recall_multi_ceiling
    quota = max(1, ceiling // max(1, len(with_data)))
    keyword_q = DomainQuery(scope, request.query, quota, now, policy, None, request.include_history, request.options,
                            request.frame, held=request.frame.as_of is None)

    def answer(name: str, q: DomainQuery) -> DomainAnswer:
        if name not in with_data:
            return DomainAnswer([], "no data")
        unkept = [t for t in request.frame.times() if t not in DOMAINS[name].times]
        if unkept:  # e.g. a document has no valid time: under since / until it answers nothing rather than all
            return DomainAnswer([], f"no {' or '.join(unkept)} time kept by this domain: nothing answers under "
                                    f"{'since/until' if 'valid' in unkept else 'as_of'}")
        try:
            return DOMAINS[name].search(engine, q)
        except InvalidPayload:
            raise
        except Exception as exc:  # one domain failing leaves the others' buckets, with its reason
            log.exception("recall_multi.domain_failed", domain=name)
            return DomainAnswer([], f"failed: {type(exc).__name__}")

    # The query is embedded once, while every domain runs its keyword leg (the model runs outside the GIL); a domain
    # with a vector leg waits for the vector only there.
    q = keyword_q
    if any(DOMAINS[d].vector_leg for d in with_data):
        q = replace(keyword_q, query_vector=embedder.query_vector_soon(scope.tenant, request.query))
    asking = {d: _submit(answer, d, q if DOMAINS[d].vector_leg else keyword_q) for d in asked}
    answers = [asking[d].result() for d in asked]
    buckets = [Bucket(name, quota if name in with_data else 0, a.results[:quota], a.reason, a.explanation)
               for name, a in zip(asked, answers, strict=True)]
    latency_ms = (time.perf_counter() - started) * 1000
    RECALL_LATENCY.observe(latency_ms / 1000)
    recall_id = uuid.uuid4()
    entries = [{"domain": b.domain, "memory_id": str(h.memory_id) if h.memory_id else None,
                "handle": None if h.memory_id else h.handle, "rank": rank, "score": h.score, "layer": h.layer,
                "legs": h.legs, "relevance": h.relevance} for b in buckets for rank, h in enumerate(b.results, 1)]
    per_result = [{"memory_id": str(h.memory_id), "stages": h.explanation.get("stages", {})}
                  for b in buckets for h in b.results if h.memory_id]
    position = append_served(engine, scope.tenant, recall_id, {
        "query": request.query, "k": ceiling, "scope": scope.as_dict(), "results": entries,
        "latency_ms": round(latency_ms, 3), "domains": asked,
        "explanation": {"clock": now.isoformat(), "quota": quota, "domains_with_data": with_data,
                        "time_frame": request.frame.explain(),
                        "buckets": [{"domain": b.domain, "quota": b.quota, "results": len(b.results),
                                     "reason": b.reason} for b in buckets],
                        "per_result": per_result},
    }, metadata)
    log.info("recall_multi.served", recall_id=str(recall_id), domains=asked, quota=quota,
             results={b.domain: len(b.results) for b in buckets}, latency_ms=round(latency_ms, 1))
    return MultiAnswer(recall_id, buckets, latency_ms, position, fused(buckets, ceiling))


__all__ = ["Bucket", "Fused", "MultiAnswer", "MultiRequest", "check", "fused", "recall_multi"]
