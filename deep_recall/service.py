"""POST /v1/deep_recall: the cache, the smart shortcut, the loop, blind spots and the audit, in that order.

1. The query cache (deep_recall/cache.py) answers a question asked in the same scope within the hour at once.
2. The smart shortcut: a quick hybrid recall (recall/multi); when deep_shortcut_hits results of its fused list
   have a calibrated relevance of at least deep_shortcut_score (one scale across domains: an unrelated code
   symbol does not count as a good memory hit), they are the answer.
   With no model configured, the quick recall's results are the answer whatever their scores (`shortcut` false
   unless its condition held, stopped "final"), and the reason says so.
3. Otherwise the loop (deep_recall/loop.py) over the bootstrap snapshot and the live APIs.
A deep recall with no useful answer registers its question as a blind spot (BlindSpotRegistered). Every deep
recall, cached and shortcut ones included, is one DeepRecallServed on its recall-<id> stream.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog
from sqlalchemy import Engine

from deep_recall import audit_size, cache, capacity
from deep_recall.budget import Limits, Prices, Tracker
from deep_recall.deadline import HardTimeout
from deep_recall.live import Caller, LiveAPIs, cap, plain
from deep_recall.loop import Env, Loop, Outcome
from deep_recall.models import configured_models
from deep_recall.store import Store
from domain.errors import InvalidPayload, RetryableConflict
from domain.events import (
    BlindSpotRegistered,
    DeepRecallServed,
    NewEvent,
    blind_spot_stream,
    deep_scope_key,
    validate_payload,
)
from domain.events.deep_recall import MAX_AUDIT_SEARCHES, MAX_AUDIT_SESSIONS, MAX_QUESTION_CHARS
from domain.privacy import PrivacyPolicy
from eventstore.append import append
from eventstore.stream import stream_pages
from infra.embedding import Embedder
from infra.settings import Settings
from infra.wake import appended
from recall.hitlog import append_deep_served
from recall.multi import MultiRequest, recall_multi
from recall.scope import Scope

log = structlog.get_logger(__name__)
MAX_DEPTH = 3
SEED_TRANSCRIPTS = 5
NOT_FOUND = "NOT FOUND"
BLIND_SPOT_ATTEMPTS = 5  # concurrent deep recalls of one scope race for its blind-spot stream


@dataclass(frozen=True)
class DeepRequest:
    question: str
    agent_id: str | None = None
    project: str | None = None
    session_id: str | None = None
    max_depth: int = 1
    budgets: dict[str, float | None] = field(default_factory=dict)  # iterations, sub_calls, cost_usd, timeout_s
    min_position: int | None = None  # read-your-writes: a cached answer computed before it is not served


def _check(request: DeepRequest) -> None:
    if not request.question.strip():
        raise InvalidPayload("question must not be empty")
    if len(request.question) > MAX_QUESTION_CHARS:
        raise InvalidPayload(f"question is at most {MAX_QUESTION_CHARS} characters")
    if not 1 <= request.max_depth <= MAX_DEPTH:
        raise InvalidPayload(f"max_depth must be between 1 and {MAX_DEPTH}")


def _flat(answer: Any) -> list[dict[str, Any]]:
    """The quick recall's fused list (recall/multi: best calibrated relevance first, one scale across domains)."""
    return [plain({"domain": f.domain, "relevance": round(f.hit.relevance, 4), "score": round(f.hit.score, 4),
                   "content": cap(f.hit.content, 4000), "memory_id": f.hit.memory_id, "handle": f.hit.handle})
            for f in answer.results]


def _as_answer(results: list[dict[str, Any]]) -> str:
    return "\n".join(f"- [{r['domain']} {r['relevance']:.2f}] {r['content']}" for r in results)


def _seeds(question: str) -> list[str]:
    """A few diverse seed queries: the question, and its longest words (the likely names and topics)."""
    words = sorted({w.strip("?.,!:;\"'()").lower() for w in question.split()}, key=len, reverse=True)
    words = [w for w in words if len(w) > 3]
    seeds = [question, " ".join(words[:3]), " ".join(words[3:6])]
    return [s for i, s in enumerate(seeds) if s.strip() and s not in seeds[:i]]


def _bootstrap(live: LiveAPIs, request: DeepRequest, settings: Settings) -> dict[str, Any]:
    """The snapshot the root model starts from, cut to deep_max_context_tokens (about 4 characters a token)."""
    budget = settings.deep.deep_max_context_tokens * 4
    sessions = plain(live.list_sessions_raw())
    knowledge: list[dict[str, Any]] = []
    for seed in _seeds(request.question):
        try:
            knowledge += live.search(seed, max_results=10)
        except Exception as exc:  # the snapshot is best effort: the live APIs cover what it lacks
            log.warning("deep_recall.seed_failed", error=str(exc))
    live.calls = []
    ordered = sorted(sessions, key=lambda s: s["session_id"] != request.session_id)  # the caller's own first
    transcripts: dict[str, str] = {}
    used = len(str(sessions)) + len(str(knowledge))
    for s in ordered[:SEED_TRANSCRIPTS]:
        if used >= budget:
            break
        try:
            body = cap(live.transcript(s["session_id"]), budget - used)
        except LookupError:
            continue
        transcripts[s["session_id"]] = body
        used += len(body)
    firsts = [s["first_at"] for s in sessions if s.get("first_at")]
    lasts = [s["last_at"] for s in sessions if s.get("last_at")]
    return {"sessions": sessions[:200], "date_range": {"first": min(firsts, default=None),
                                                       "last": max(lasts, default=None)},
            "recent_transcripts": transcripts, "knowledge": knowledge,
            "built_at": datetime.now(UTC).isoformat()}


def _useful(answer: str | None) -> bool:
    return bool(answer and answer.strip() and not answer.strip().upper().startswith(NOT_FOUND))


def _blind_spot(engine: Engine, settings: Settings, tenant: str, request: DeepRequest, recall_id: uuid.UUID,
                reason: str, metadata: dict[str, Any]) -> None:
    """Register the question as a knowledge gap, unless the same question is a live gap of the scope already
    (decided from the scope's stream in the log, so a lagging projector never lets it in twice)."""
    for attempt in range(BLIND_SPOT_ATTEMPTS):
        try:
            if _register_blind_spot(engine, settings, tenant, request, recall_id, reason, metadata):
                appended(1)
            return
        except RetryableConflict:  # a concurrent deep recall of the scope took the stream's version: read it again
            if attempt == BLIND_SPOT_ATTEMPTS - 1:
                raise


def _register_blind_spot(engine: Engine, settings: Settings, tenant: str, request: DeepRequest,
                         recall_id: uuid.UUID, reason: str, metadata: dict[str, Any]) -> bool:
    scope_key = deep_scope_key(request.agent_id, request.session_id, request.project)
    now = datetime.now(UTC)
    asked = " ".join(request.question.lower().split())
    with engine.begin() as conn:
        # Newest first (an older gap has expired sooner), page by page: the first live match ends the read.
        for page in stream_pages(conn, tenant, blind_spot_stream(scope_key), (BlindSpotRegistered,), newest_first=True):
            for event in page:
                gap = event.payload()
                if (isinstance(gap, BlindSpotRegistered) and gap.expires_at > now
                        and " ".join(gap.question.lower().split()) == asked):
                    return False
        data = validate_payload(BlindSpotRegistered, {
            "gap_id": str(uuid.uuid4()), "scope_key": scope_key, "agent_id": request.agent_id,
            "session_id": request.session_id, "project": request.project, "question": request.question,
            "priority": settings.deep.blind_spot_priority, "registered_at": now.isoformat(),
            "expires_at": (now + timedelta(seconds=settings.deep.blind_spot_ttl_s)).isoformat(),
            "recall_id": str(recall_id), "reason": reason[:2000]})
        append(conn, tenant, [NewEvent(BlindSpotRegistered.type_name(), blind_spot_stream(scope_key), data)],
               {**metadata, "actor": "system:deep_recall"})
    return True


def deep_recall(engine: Engine, embedder: Embedder, settings: Settings, request: DeepRequest, tenant: str,
                metadata: dict[str, Any], policy: PrivacyPolicy, policy_position: int | None = None) -> dict[str, Any]:
    """`policy_position`: its PrivacyPolicySet's (None: never set), the version the query cache and the bootstrap
    snapshot are keyed by, so a new policy is in force for the very next deep recall."""
    _check(request)
    limits = Limits.of(settings, **request.budgets)  # type: ignore[arg-type]  # the route's BudgetsIn: ints where int
    started = time.perf_counter()
    deadline_from = time.monotonic()  # the hard timeout covers the whole call, the quick recall included
    recall_id = uuid.uuid4()
    scope = {"agent_id": request.agent_id, "project": request.project, "session_id": request.session_id}
    record: dict[str, Any] = {"recall_id": str(recall_id), "question": request.question, "scope": scope,
                              "shortcut": False, "budgets": {"iterations": limits.iterations,
                                                             "sub_calls": limits.sub_calls,
                                                             "cost_usd": limits.cost_usd,
                                                             "timeout_s": limits.timeout_s,
                                                             "max_depth": request.max_depth}}
    cache_scope = {**scope, "max_depth": request.max_depth, "policy": policy_position}
    seen = request.min_position or 0
    hit = cache.cached(settings, tenant, cache_scope, request.question)
    # An answer is cached with the min_position it was computed at: a caller who wrote since (the SDK sends its
    # last write's position) must not be answered from before that write.
    if hit is not None and seen <= hit.get("seen_position", 0):
        record.update(cached=True, answer=hit["answer"], stopped="final", shortcut=hit.get("shortcut", False),
                      reason=f"from the query cache (deep recall {hit['recall_id']})")
        return _served(engine, tenant, record, started, metadata, 0, 0, {"input": 0, "output": 0, "total": 0}, 0.0,
                       results=hit.get("results", []))

    caused = {**metadata, "causation_id": str(recall_id)}  # each search's RecallServed names this deep recall
    try:
        with capacity.searching(settings, deadline_from + limits.timeout_s):  # deep recall's searches take turns
            quick = recall_multi(engine, embedder, settings,
                                 MultiRequest(Scope(tenant, request.agent_id, request.project), request.question),
                                 caused, policy)
    except HardTimeout as exc:  # its turn to search did not come before the deadline (or the API is stopping)
        record.update(answer=None, stopped="timeout", reason=str(exc))
        return _served(engine, tenant, record, started, metadata, 0, 0, {"input": 0, "output": 0, "total": 0}, 0.0)
    results = _flat(quick)
    record["shortcut_recall_id"] = str(quick.recall_id)
    high = [r for r in results if r["relevance"] >= settings.deep.deep_shortcut_score]
    models = configured_models(settings)
    record["shortcut_results"] = results
    fired = len(high) >= settings.deep.deep_shortcut_hits
    if fired or models is None:
        # `shortcut` says whether the shortcut's condition held; without a model the quick recall's results are
        # the answer either way (stopped "final": nothing was cut short), and the reason says which it was.
        shown = high if fired else results
        reason = (f"{len(high)} results of relevance >= {settings.deep.deep_shortcut_score}" if fired else
                  "no model configured (ENGRAMLOG_LLM_MODEL is empty): the quick recall's results as they are "
                  f"(the shortcut needs {settings.deep.deep_shortcut_hits} of relevance >= "
                  f"{settings.deep.deep_shortcut_score}, {len(high)} did)")
        record.update(shortcut=fired, answer=_as_answer(shown) or None, stopped="final", reason=reason,
                      shortcut_results=shown)
        if not shown:
            _blind_spot(engine, settings, tenant, request, recall_id, "no results", metadata)
        return _served(engine, tenant, record, started, metadata, 0, 0, {"input": 0, "output": 0, "total": 0}, 0.0,
                       results=shown)

    root, sub = models
    record["models"] = {"root": root.model, "sub": sub.model}
    tracker = Tracker(limits, Prices(settings.llm.llm_prices), started=deadline_from)
    live = LiveAPIs(engine, embedder, settings,
                    Caller(tenant, request.agent_id, request.project, request.session_id, policy, caused),
                    tracker.deadline)
    store = Store(engine, tenant, request.agent_id, request.session_id, request.project, recall_id, metadata,
                  max_calls=settings.deep.deep_store_calls, max_bytes=settings.deep.deep_store_bytes)
    store.withhold(policy)  # values kept under an earlier policy that the one in force hides
    context = store.bootstrap(settings.deep.deep_bootstrap_ttl_s, lambda: _bootstrap(live, request, settings),
                              policy_position)
    record["bootstrap_sessions"] = list(dict.fromkeys(
        [s["session_id"] for s in context.get("sessions", [])] + list(context.get("recent_transcripts", {}))
    ))[:MAX_AUDIT_SESSIONS]
    sub_calls: list[dict[str, Any]] = []
    try:
        # One sandbox worker per nesting level, waited for until the deadline at the latest (deep_recall/capacity.py).
        with capacity.reserve(settings, request.max_depth, tracker.deadline) as reservation:
            env = Env(settings, live, store, tracker, sub, reservation, sub_calls)
            outcome = Loop(env, root, request.max_depth, limits.iterations, nested=False).run(request.question,
                                                                                            context)
    except HardTimeout as exc:  # no loop ran
        outcome = Outcome(None, "timeout", str(exc), [])
    record.update(answer=outcome.answer, stopped=outcome.stopped, reason=outcome.reason,
                  iterations=outcome.iterations, sub_calls=sub_calls,
                  search_recall_ids=list(live.search_recall_ids)[:MAX_AUDIT_SEARCHES])
    if not _useful(outcome.answer):
        _blind_spot(engine, settings, tenant, request, recall_id,
                    outcome.reason or f"answered {outcome.answer!r}"[:500], metadata)
    audit_size.fit(record, settings.deep.deep_audit_bytes)  # the model's code decides how much there is to audit
    answer = {**_served(engine, tenant, record, started, metadata, tracker.iterations, tracker.sub_calls,
                        tracker.tokens(), tracker.cost_usd), "answer": outcome.answer}  # whole, even if cut there
    if outcome.stopped == "final" and _useful(outcome.answer):
        cache.keep(settings, tenant, cache_scope, request.question, {**answer, "seen_position": seen})
    return answer


def _served(engine: Engine, tenant: str, record: dict[str, Any], started: float, metadata: dict[str, Any],
            iterations: int, sub_calls: int, tokens: dict[str, int], cost_usd: float,
            results: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Append the deep recall's DeepRecallServed and answer the route's body (`results`: the quick recall's, when
    they are the answer)."""
    latency_ms = round((time.perf_counter() - started) * 1000, 3)
    data = validate_payload(DeepRecallServed, {**record, "tokens": tokens, "cost_usd": round(cost_usd, 6),
                                               "latency_ms": latency_ms})
    recall_id = uuid.UUID(record["recall_id"])
    position = append_deep_served(engine, tenant, recall_id, data, metadata)
    log.info("deep_recall.served", recall_id=record["recall_id"], shortcut=record["shortcut"],
             cached=record.get("cached", False), stopped=record["stopped"], iterations=iterations,
             sub_calls=sub_calls, cost_usd=round(cost_usd, 6), latency_ms=latency_ms)
    return {"recall_id": record["recall_id"], "answer": record.get("answer"), "shortcut": record["shortcut"],
            "cached": record.get("cached", False), "iterations": iterations, "sub_calls": sub_calls,
            "cost_usd": round(cost_usd, 6), "tokens": tokens, "stopped": record["stopped"],
            "reason": record.get("reason"), "results": results or [], "latency_ms": latency_ms,
            "position": position}


__all__ = ["DeepRequest", "deep_recall"]
