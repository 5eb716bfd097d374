"""The write path's governor: what each recorded memory becomes, decided inside the write's one transaction.

For every MemoryRecorded of a batch, in batch order, the first rule that applies decides:

1. must-keep → MemoryAdmitted(active, reason "must_keep"): the gate is bypassed and nothing is embedded here
   (the vectors projector embeds it as usual). A `supersedes` on it is still honoured (rule 2's event).
2. explicit `supersedes` → admitted active, and MemorySuperseded(old, new, the write's reason, "explicit"),
   appended with the writer's own metadata: the writer decided it.
3. a correction signal (the producer's signals.correction, else a correction phrase) and a nearest memory at
   cosine ≥ ENGRAMLOG_SUPERSEDE_THRESHOLD → admitted active, and MemorySuperseded(nearest, new,
   "correction_signal").
4. a near memory that already holds the observation (domain/novelty.is_repeat: every content term in it, or
   cosine ≥ ENGRAMLOG_REINFORCE_THRESHOLD, and no key term it lacks: a new number is never merged away; filler
   reinforces nothing) → MemoryReinforced(that memory, merged content per
   domain/reinforce.py, new confidence); the observation is admitted as `discard` (reason "reinforced <id>"),
   so it stays in the log but not in recall; a staging or dormant memory reinforced is made active again
   (MemoryStatusChanged, reason "reinforced", with the clock read here).
5. otherwise → MemoryAdmitted with the salience gate's disposition (domain/salience.py), its novelty the
   information novelty of domain/novelty.py against the NEAREST_PER_QUERY nearest memories, calibrated to the
   embedding model (infra/calibration.py); the evidence (terms, key terms, per neighbour what is new, the
   calibration) is recorded in the decision's inputs (`novelty_evidence`).

"Nearest" is the most similar memory in the write's scope (tenant, agent_id, project; None matches None) with
status active, staging or dormant, among: the vectors read model joined with memories; memories recorded
and admitted but not yet projected (their embedding is in the cache: the governor put it there; their status
is read from their own stream); and the memories admitted earlier in the same batch. A neighbour the log
already shows superseded is skipped, whatever the read model says. Every MemoryAdmitted carries all the
inputs used, and every decision is appended by the system actor (except rule 2's, see above) with
causation_id = the MemoryRecorded's event id, so the projectors only apply decisions and a replay reproduces
them.

Concurrency: a batch is checked and embedded first (`prepare`, no transaction held), then decided in the
write's own transaction (`Prepared.decide`, services/append_events.py), under a transaction-scoped advisory
lock per (tenant, agent_id, project) of the batch, taken before the scope is read and held until the write
commits. Two writes to one scope are therefore decided one after the other,
the second seeing the first as an unprojected memory: identical racing writes end as one MemoryAdmitted and
reinforcements of it, never two near-duplicate active memories.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import structlog
from sqlalchemy import Connection, Engine, text

from domain.classify import classify, route
from domain.errors import AlreadySuperseded, InvalidPayload, NotFound
from domain.events import SYSTEM_ACTOR, MemoryRecorded, NewEvent, memory_stream, validate_payload
from domain.novelty import Calibration, Neighbour, is_repeat, novelty
from domain.reinforce import INITIAL_CONFIDENCE, merge_content, reinforced_confidence
from domain.salience import Thresholds, Weights, correction_signal, resolve_signals, salience
from domain.text import content_hash
from infra.calibration import calibration_for
from infra.embedding import embed_cached, from_pgvector, get_embedder
from infra.settings import Settings

log = structlog.get_logger(__name__)

RECALLABLE = ("active", "staging", "dormant")
NEAREST_PER_QUERY = 3
_DISPOSITION_STATUS = {"active": "active", "staging": "staging", "discard": "discarded"}

ScopeKey = tuple[str | None, str | None]  # (agent_id, project) within the tenant


@dataclass(frozen=True)
class Decision:
    """What the governor made of one recorded memory (the write's answer), and the events that say so."""

    memory_id: uuid.UUID
    disposition: str
    salience: float
    memory_type: str
    route: str
    reason: str
    reinforced: uuid.UUID | None = None
    supersedes: uuid.UUID | None = None
    events: tuple[NewEvent, ...] = ()

    @classmethod
    def from_admitted(cls, data: dict[str, Any]) -> Decision:
        """The decision as the log holds it (for a retried write: the same answer as the first time)."""
        inputs = data.get("inputs") or {}
        as_id = (lambda v: uuid.UUID(v) if v else None)  # noqa: E731
        return cls(uuid.UUID(data["memory_id"]), data["disposition"], data["salience"], data["kind"], data["route"],
                   data["reason"], as_id(inputs.get("reinforced")), as_id(inputs.get("supersedes")))


@dataclass
class _Neighbour:
    memory_id: uuid.UUID
    cosine: float
    status: str
    content: str
    confidence: float
    reinforced_count: int
    source: str  # read_model | unprojected | batch


@dataclass
class _Known:
    """A memory this batch admitted or changed: its latest state, for the decisions after it in the batch."""

    memory_id: uuid.UUID
    scope: ScopeKey
    vector: np.ndarray | None
    status: str
    content: str
    confidence: float
    reinforced_count: int = 0
    touched_stream: bool = False  # an event of this batch is on its stream: no expected_version on it


@dataclass
class _Write:
    event: NewEvent
    memory: MemoryRecorded
    vector: np.ndarray | None = None
    literal: str | None = None  # the vector as a pgvector literal
    neighbours: list[_Neighbour] = field(default_factory=list)
    old_cosine: float | None = None  # explicit supersede: cosine to the memory it supersedes, when projected


def _settings_weights(s: Settings) -> tuple[Weights, Thresholds]:
    weights = Weights(s.salience_w_novelty, s.salience_w_surprise, s.salience_w_decision, s.salience_w_causal,
                      s.salience_w_effort)
    return weights, Thresholds(s.gate_active, s.gate_staging)


def _scope_where(alias: str, scope: ScopeKey) -> tuple[str, dict[str, Any]]:
    clauses, params = [f"{alias}.tenant = :tenant"], {}
    for column, value in zip(("agent_id", "project"), scope, strict=True):
        if value is None:
            clauses.append(f"{alias}.{column} IS NULL")
        else:
            clauses.append(f"{alias}.{column} = :{column}")
            params[column] = value
    return " AND ".join(clauses), params


def _nearest_in_read_model(conn: Connection, tenant: str, scope: ScopeKey, vectors: list[str],
                           settings: Settings) -> list[list[_Neighbour]]:
    """The NEAREST_PER_QUERY most similar recallable memories of the scope, for each query vector, one query."""
    where, params = _scope_where("v", scope)
    where += " AND v.model = :model"  # another model's vectors are another space: never compared
    params = {**params, "tenant": tenant, "model": settings.embedding_model}
    size = conn.execute(text(f"SELECT count(*) FROM (SELECT 1 FROM memory_vectors v WHERE {where} LIMIT :cap) c"),
                        {**params, "cap": settings.exact_scan_max_rows + 1}).scalar_one()
    params = {**params, "qs": vectors, "k": NEAREST_PER_QUERY}
    if size == 0:
        return [[] for _ in vectors]
    # The status filter is a scalar subquery on the primary key, and the memories' other columns are joined
    # on the shortlist only: a join on status lets a planner with stale statistics pick the (tenant, status)
    # index and a nested loop over the whole scope (measured: 470 ms instead of 5 ms for 2,000 memories).
    recallable = ("(SELECT m.status FROM memories m WHERE m.tenant = v.tenant AND m.memory_id = v.memory_id)"
                  " = ANY(:recallable)")
    if size <= settings.exact_scan_max_rows:
        nearest = f"""
        WITH scoped AS MATERIALIZED (SELECT v.memory_id, v.embedding FROM memory_vectors v
                                     WHERE {where} AND {recallable})
        SELECT q.ord, c.memory_id, c.cosine FROM unnest(CAST(:qs AS vector[])) WITH ORDINALITY AS q(vec, ord)
        CROSS JOIN LATERAL (
            SELECT s.memory_id, 1 - (s.embedding <=> q.vec) AS cosine
            FROM scoped s ORDER BY s.embedding <=> q.vec, s.memory_id LIMIT :k) c
        """
    else:  # a large scope: iterative HNSW (approximate), filtered as it walks
        conn.execute(text("SET LOCAL hnsw.iterative_scan = relaxed_order"))
        conn.execute(text(f"SET LOCAL hnsw.ef_search = {int(settings.hnsw_ef_search)}"))
        nearest = f"""
        SELECT q.ord, c.memory_id, c.cosine FROM unnest(CAST(:qs AS vector[])) WITH ORDINALITY AS q(vec, ord)
        CROSS JOIN LATERAL (
            SELECT v.memory_id, 1 - (v.embedding <=> q.vec) AS cosine FROM memory_vectors v
            WHERE {where} AND {recallable} ORDER BY v.embedding <=> q.vec LIMIT :k) c
        """
    sql = f"""
    WITH nearest AS ({nearest})
    SELECT n.ord, n.memory_id, n.cosine, m.status, m.content, m.confidence, m.reinforced_count
    FROM nearest n JOIN memories m ON m.tenant = :tenant AND m.memory_id = n.memory_id
    ORDER BY n.ord, n.cosine DESC, n.memory_id
    """
    out: list[list[_Neighbour]] = [[] for _ in vectors]
    for r in conn.execute(text(sql), {**params, "recallable": list(RECALLABLE)}):
        out[r.ord - 1].append(_Neighbour(r.memory_id, float(r.cosine), r.status, r.content, float(r.confidence),
                                         r.reinforced_count, "read_model"))
    return out


# Memories of one scope recorded and admitted but not yet in both read models the nearest search uses, with
# their status from their own stream (a status change or a supersede the projector has not applied yet counts).
_UNPROJECTED = text("""
WITH recent AS MATERIALIZED (
    SELECT position, stream_id, data FROM events
    WHERE tenant = :tenant AND type = 'MemoryRecorded' AND position > :floor
    ORDER BY position DESC LIMIT :limit
), pending AS MATERIALIZED (
    SELECT r.position, r.stream_id, CAST(r.data->>'memory_id' AS uuid) AS memory_id, r.data->>'content' AS content
    FROM recent r
    WHERE r.data->>'agent_id' IS NOT DISTINCT FROM CAST(:agent_id AS text)
      AND r.data->>'project' IS NOT DISTINCT FROM CAST(:project AS text)
      AND NOT (EXISTS (SELECT 1 FROM memories m WHERE m.tenant = :tenant
                         AND m.memory_id = CAST(r.data->>'memory_id' AS uuid) AND m.status <> 'pending')
               AND EXISTS (SELECT 1 FROM memory_vectors v WHERE v.tenant = :tenant AND v.model = :model
                             AND v.memory_id = CAST(r.data->>'memory_id' AS uuid)))
)
-- The memory's own stream, read once through its (tenant, stream_id, version) key: a type predicate here would
-- let the planner walk every event of that type in the tenant instead.
SELECT p.memory_id, p.content,
       coalesce(s.changed, CASE s.disposition WHEN 'discard' THEN 'discarded' ELSE s.disposition END) AS status
FROM pending p
CROSS JOIN LATERAL (
    SELECT (array_agg(x.data->>'to_status' ORDER BY x.stream_version DESC)
                FILTER (WHERE x.type = 'MemoryStatusChanged'))[1] AS changed,
           (array_agg(x.data->>'disposition') FILTER (WHERE x.type = 'MemoryAdmitted'))[1] AS disposition,
           bool_or(x.type = 'MemorySuperseded') AS superseded
    FROM events x WHERE x.tenant = :tenant AND x.stream_id = p.stream_id
) s
WHERE coalesce(s.changed, CASE s.disposition WHEN 'discard' THEN 'discarded' ELSE s.disposition END)
      = ANY(:recallable) AND NOT s.superseded
ORDER BY p.position DESC
""")
# Whether the tenant has more recorded events above the floor than the window the governor looks through.
_BEYOND_WINDOW = text("""
SELECT count(*) > :limit FROM (SELECT 1 FROM events WHERE tenant = :tenant AND type = 'MemoryRecorded'
                                 AND position > :floor LIMIT :limit + 1) w
""")
# Below every event the slower of the two projections has not applied. Projectors advance in (tx_id, position)
# order, so an event whose transaction committed late can sit below the checkpoint's position unapplied: the
# floor is the lowest position among the first events after each checkpoint in that order (a late commit is
# among them: its transaction id is older than any applied after it), and never above the checkpoint itself.
_FLOOR = text("""
SELECT greatest(0, coalesce(min(least(c.position, (
    SELECT min(ahead.position) FROM (
        SELECT e.position FROM events e WHERE (e.tx_id, e.position) > (c.tx_id, c.position)
        ORDER BY e.tx_id, e.position LIMIT :look_ahead) ahead))), 0) - 1)
FROM projection_checkpoints c WHERE c.name IN ('memories', 'vectors')
""")
FLOOR_LOOK_AHEAD = 10_000
# The cached vectors nearest each query vector among the given contents (vectors never leave PostgreSQL).
_NEAREST_CACHED = text("""
WITH cached AS MATERIALIZED (
    SELECT content_hash, embedding FROM embedding_cache
    WHERE tenant = :tenant AND model = :model AND content_hash = ANY(:hashes)
)
SELECT q.ord, c.content_hash, c.cosine FROM unnest(CAST(:qs AS vector[])) WITH ORDINALITY AS q(vec, ord)
CROSS JOIN LATERAL (
    SELECT e.content_hash, 1 - (e.embedding <=> q.vec) AS cosine FROM cached e
    ORDER BY e.embedding <=> q.vec, e.content_hash LIMIT :k) c
""")


_window_warned_at: dict[str, float] = {}


def _unprojected(conn: Connection, tenant: str, scope: ScopeKey, model: str, limit: int,
                 vectors: list[str]) -> list[list[_Neighbour]]:
    """For each query vector, the NEAREST_PER_QUERY most similar of the scope's memories admitted active,
    staging or dormant whose projection has not caught up yet: among the tenant's newest `limit`
    (ENGRAMLOG_GOVERNANCE_UNPROJECTED_MAX) recorded events above the projections' floor, so a write costs the
    same however far the projections lag (with no worker running, say); beyond the window a near-duplicate is
    caught once projected, by the next writes. Their vectors come from the embedding cache and are compared in
    PostgreSQL (a memory written must-keep was not embedded on the write path: it is compared once projected)."""
    floor = conn.execute(_FLOOR, {"look_ahead": FLOOR_LOOK_AHEAD}).scalar_one()
    params = {"tenant": tenant, "floor": floor, "limit": limit}
    rows = conn.execute(_UNPROJECTED, {**params, "agent_id": scope[0], "project": scope[1], "model": model,
                                       "recallable": list(RECALLABLE)}).all()
    quiet = time.monotonic() - _window_warned_at.get(tenant, -1e9) < 60
    if not quiet and conn.execute(_BEYOND_WINDOW, params).scalar_one():
        _window_warned_at[tenant] = time.monotonic()  # once a minute per tenant: every write would say it
        log.warning("governance.unprojected_window_full", tenant=tenant, window=limit, floor=floor)
    out: list[list[_Neighbour]] = [[] for _ in vectors]
    if not rows:
        return out
    by_hash: dict[str, list[Any]] = {}
    for r in rows:
        by_hash.setdefault(content_hash(r.content), []).append(r)
    nearest = conn.execute(_NEAREST_CACHED, {"tenant": tenant, "model": model, "hashes": list(by_hash), "qs": vectors,
                                             "k": NEAREST_PER_QUERY})
    for n in nearest:
        for r in by_hash[n.content_hash]:
            out[n.ord - 1].append(_Neighbour(r.memory_id, float(n.cosine), r.status, r.content, INITIAL_CONFIDENCE,
                                             0, "unprojected"))
    return out


_LOCK_SCOPE = text("SELECT pg_advisory_xact_lock(CAST(:key AS bigint))")


def scope_lock_key(tenant: str, scope: ScopeKey) -> int:
    """The advisory lock key of one governed scope (64 bits of a SHA-256: stable across processes)."""
    digest = hashlib.sha256(json.dumps(["engramlog.governance", tenant, *scope]).encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def lock_scopes(conn: Connection, tenant: str, scopes: set[ScopeKey]) -> None:
    """Hold the scopes' locks until `conn`'s transaction ends; taken in key order, so batches never deadlock."""
    for key in sorted({scope_lock_key(tenant, s) for s in scopes}):
        conn.execute(_LOCK_SCOPE, {"key": key})


_STREAMS = text("""
SELECT stream_id, type, data, stream_version FROM events
WHERE tenant = :tenant AND stream_id = ANY(:streams) ORDER BY stream_id, stream_version
""")


@dataclass
class _StreamState:
    recorded: dict[str, Any] | None = None
    superseded: bool = False
    version: int = 0
    reinforcements: int = 0
    last_reinforced: dict[str, Any] | None = None


def _stream_states(conn: Connection, tenant: str, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, _StreamState]:
    """What the log says of these memories now (authoritative, whatever the projections' lag)."""
    states = {i: _StreamState() for i in ids}
    if not ids:
        return states
    by_stream = {memory_stream(i): i for i in ids}
    for r in conn.execute(_STREAMS, {"tenant": tenant, "streams": list(by_stream)}):
        s = states[by_stream[r.stream_id]]
        s.version = max(s.version, r.stream_version)
        if r.type == "MemoryRecorded":
            s.recorded = r.data
        elif r.type == "MemorySuperseded" and r.data.get("memory_id") == str(by_stream[r.stream_id]):
            s.superseded = True
        elif r.type == "MemoryReinforced":
            s.reinforcements += 1
            s.last_reinforced = r.data
    return states


def old_memory(engine: Engine, tenant: str, memory_id: uuid.UUID) -> dict[str, Any]:
    """The MemoryRecorded payload of a memory of this tenant, for a supersede: 404 if unknown, 409 if superseded."""
    with engine.connect() as conn:
        state = _stream_states(conn, tenant, [memory_id])[memory_id]
    if state.recorded is None:
        raise NotFound(f"no memory {memory_id}")
    if state.superseded:
        raise AlreadySuperseded(f"memory {memory_id} is already superseded; supersede its successor instead "
                                f"(GET /v1/memories/{memory_id}/history)")
    return state.recorded


class _Governor:
    def __init__(self, engine: Engine, tenant: str, metadata: dict[str, Any], settings: Settings) -> None:
        self.engine, self.tenant, self.metadata, self.settings = engine, tenant, metadata, settings
        self.conn: Connection | None = None  # the write's transaction, once deciding
        self.weights, self.thresholds = _settings_weights(settings)
        self.clock = datetime.now(UTC)
        self.known: dict[uuid.UUID, _Known] = {}  # admitted or changed in this batch, in batch order
        self.superseded: set[uuid.UUID] = set()
        self.states: dict[uuid.UUID, _StreamState] = {}
        self.embedder = get_embedder(settings.embedding_model)
        self.calibration: Calibration | None = None  # the model's novelty calibration, read once governed

    # ------------------------------------------------------------------------------------------- metadata

    def system_metadata(self, cause: NewEvent) -> dict[str, Any]:
        return {"actor": SYSTEM_ACTOR, "correlation_id": self.metadata.get("correlation_id"),
                "causation_id": str(cause.event_id), "source": self.metadata.get("source"),
                "requested_by": self.metadata.get("actor")}

    def event(self, type_: str, memory_id: uuid.UUID, data: dict[str, Any], metadata: dict[str, Any],
              expected_version: int | None = None) -> NewEvent:
        return NewEvent(type_, memory_stream(memory_id), validate_payload(type_, data),
                        expected_version=expected_version, metadata=metadata)

    def expected_version(self, memory_id: uuid.UUID) -> int | None:
        """Optimistic concurrency on the superseded memory's stream, unless this batch already wrote to it."""
        known = self.known.get(memory_id)
        state = self.states.get(memory_id)
        if (known and known.touched_stream) or state is None or state.recorded is None:
            return None
        return state.version

    # ------------------------------------------------------------------------------------------- decisions

    def decide(self, w: _Write) -> Decision:
        m = w.memory
        typed = classify(m.content, m.kind)
        routed = route(m.content, typed.memory_type, m.kind, m.project)
        base = {"kind": m.kind, "memory_type": typed.memory_type, "type_source": typed.source,
                "type_rule": typed.rule, "route": routed.route, "route_rule": routed.rule,
                "must_keep": m.must_keep}
        if m.must_keep:
            return self.admit(w, "active", 1.0, typed.memory_type, routed.route, "must_keep",
                              {**base, "gate": "bypassed (must_keep): salience 1.0 by convention"},
                              supersede=(m.supersedes, "explicit", None) if m.supersedes else None)

        nearest = self.nearest(w)
        signals = m.signals.model_dump() if m.signals else None
        compared = w.neighbours[:NEAREST_PER_QUERY]
        assert self.calibration is not None, "prepare() calibrates before any governed decision"
        informed = novelty(m.content, [Neighbour(str(n.memory_id), n.cosine, n.content) for n in compared],
                           self.calibration)
        scored = salience(informed.value, resolve_signals(m.content, signals), typed.memory_type, self.weights,
                          self.thresholds)
        correction = correction_signal(m.content, signals)
        # The neighbour that already holds the observation (a repeat or a paraphrase, no new key term), if any.
        repeat = None if informed.filler else next(
            (n for n, c in zip(compared, informed.comparisons, strict=True)
             if is_repeat(c, self.settings.reinforce_threshold)), None)
        inputs = {**base, **scored.inputs(), "novelty_evidence": informed.as_dict(),
                  "correction": correction.as_dict(),
                  "nearest_id": str(nearest.memory_id) if nearest else None,
                  "nearest_cosine": round(nearest.cosine, 6) if nearest else None,
                  "nearest_source": nearest.source if nearest else None,
                  "neighbours": [{"memory_id": str(n.memory_id), "cosine": round(n.cosine, 6), "source": n.source}
                                 for n in compared],
                  "weights": self.weights.as_dict(),
                  "thresholds": {"active": self.thresholds.active, "staging": self.thresholds.staging,
                                 "reinforce": self.settings.reinforce_threshold,
                                 "supersede": self.settings.supersede_threshold},
                  "embedding_model": self.embedder.model}

        if m.supersedes:
            similarity = self.similarity_to(w, m.supersedes)
            return self.admit(w, "active", scored.score, typed.memory_type, routed.route, f"supersedes {m.supersedes}",
                              inputs, supersede=(m.supersedes, "explicit", similarity))
        if correction.value and nearest and nearest.cosine >= self.settings.supersede_threshold:
            return self.admit(w, "active", scored.score, typed.memory_type, routed.route,
                              f"supersedes {nearest.memory_id} (correction signal)", inputs,
                              supersede=(nearest.memory_id, "correction_signal", nearest.cosine))
        if repeat is not None:
            return self.reinforce(w, repeat, scored.score, typed.memory_type, routed.route, inputs)
        return self.admit(w, scored.disposition, scored.score, typed.memory_type, routed.route,
                          f"salience {scored.score:.3f} → {scored.disposition}", inputs)

    def admit(self, w: _Write, disposition: str, score: float, memory_type: str, route_: str, reason: str,
              inputs: dict[str, Any], supersede: tuple[uuid.UUID, str, float | None] | None = None) -> Decision:
        m = w.memory
        old = supersede[0] if supersede else None
        inputs = {**inputs, "supersedes": str(old) if old else None, "reinforced": None}
        admitted = self.event("MemoryAdmitted", m.memory_id, {
            "memory_id": str(m.memory_id), "disposition": disposition, "salience": round(score, 6),
            "kind": memory_type, "route": route_, "reason": reason, "inputs": inputs}, self.system_metadata(w.event))
        events = [admitted]
        if supersede:
            old, trigger, similarity = supersede
            if old in self.superseded:
                raise AlreadySuperseded(f"memory {old} is superseded twice in one batch")
            if trigger == "explicit":
                why = m.reason or "superseded by the producer"
                meta = {**self.metadata, "causation_id": str(w.event.event_id)}
            else:
                why = m.reason or f"correction signal on a matched concept (cosine {similarity:.3f})"
                meta = self.system_metadata(w.event)
            events.append(self.event("MemorySuperseded", old, {
                "memory_id": str(old), "superseded_by": str(m.memory_id), "reason": why, "trigger": trigger,
                "similarity": None if similarity is None else round(similarity, 6)}, meta,
                expected_version=self.expected_version(old)))
            self.superseded.add(old)
            self.known.pop(old, None)
        if disposition in ("active", "staging"):
            self.known[m.memory_id] = _Known(m.memory_id, (m.agent_id, m.project), w.vector,
                                             _DISPOSITION_STATUS[disposition], m.content, INITIAL_CONFIDENCE,
                                             touched_stream=True)
        return Decision(m.memory_id, disposition, round(score, 6), memory_type, route_, reason,
                        supersedes=old, events=tuple(events))

    def reinforce(self, w: _Write, nearest: _Neighbour, score: float, memory_type: str, route_: str,
                  inputs: dict[str, Any]) -> Decision:
        m, target = w.memory, nearest.memory_id
        known = self.known.get(target)
        if known is not None:
            content, confidence, status = known.content, known.confidence, known.status
        else:
            content, confidence, status = nearest.content, nearest.confidence, nearest.status
            state = self.states.get(target)
            if state and state.reinforcements > nearest.reinforced_count and state.last_reinforced:
                # The log holds reinforcements the read model has not applied yet: start from the latest.
                content = state.last_reinforced["merged_content"]
                confidence = state.last_reinforced["confidence"]
        merged = merge_content(content, m.content, self.settings.max_content_chars)
        new_confidence = round(reinforced_confidence(confidence, self.settings.reinforce_confidence_gain), 6)
        reason = f"reinforced {target}"
        inputs = {**inputs, "reinforced": str(target), "supersedes": None,
                  "target_status": status, "target_confidence": confidence,
                  "merge": "unchanged" if merged == content else "merged",
                  "confidence_gain": self.settings.reinforce_confidence_gain}
        meta = self.system_metadata(w.event)
        events = [
            self.event("MemoryAdmitted", m.memory_id, {
                "memory_id": str(m.memory_id), "disposition": "discard", "salience": round(score, 6),
                "kind": memory_type, "route": route_, "reason": reason, "inputs": inputs}, meta),
            self.event("MemoryReinforced", target, {
                "memory_id": str(target), "observation_id": str(m.memory_id), "similarity": round(nearest.cosine, 6),
                "merged_content": merged, "confidence": new_confidence}, meta),
        ]
        if status in ("staging", "dormant"):
            events.append(self.event("MemoryStatusChanged", target, {
                "memory_id": str(target), "from_status": status, "to_status": "active", "reason": "reinforced",
                "clock": self.clock.isoformat(),
                "inputs": {"observation_id": str(m.memory_id), "similarity": round(nearest.cosine, 6)}}, meta))
        vector = known.vector if known is not None else None
        if merged != content:
            vector = self.embed([merged])[0]
        self.known[target] = _Known(target, (m.agent_id, m.project), vector, "active", merged, new_confidence,
                                    (known.reinforced_count if known else nearest.reinforced_count) + 1,
                                    touched_stream=True)
        return Decision(m.memory_id, "discard", round(score, 6), memory_type, route_, reason, reinforced=target,
                        events=tuple(events))

    # ------------------------------------------------------------------------------------------- neighbours

    def embed(self, texts: list[str]) -> list[np.ndarray]:
        # On the write's connection: it holds the scope locks, and a second pooled connection per locked
        # writer could exhaust the pool while the others wait on the lock.
        if self.conn is None:
            raise RuntimeError("the governor embeds reinforced content only while deciding")
        return [from_pgvector(lit) for lit in embed_cached(self.conn, self.embedder, self.tenant, texts)]

    def nearest(self, w: _Write) -> _Neighbour | None:
        """The most similar recallable memory of the write's scope, this batch's changes applied."""
        scope = (w.memory.agent_id, w.memory.project)
        best: dict[uuid.UUID, _Neighbour] = {}
        for n in w.neighbours:
            if n.memory_id in self.superseded or n.memory_id == w.memory.memory_id:
                continue
            state = self.states.get(n.memory_id)
            if state is not None and state.superseded:  # the log is ahead of the read model
                continue
            known = self.known.get(n.memory_id)
            if known is None:
                best.setdefault(n.memory_id, n)
            elif known.vector is None:  # changed in this batch but not its content: its state, the same cosine
                best.setdefault(n.memory_id, _Neighbour(n.memory_id, n.cosine, known.status, known.content,
                                                        known.confidence, known.reinforced_count, n.source))
        for k in self.known.values():
            if k.scope != scope or k.vector is None or k.memory_id == w.memory.memory_id:
                continue
            cosine = float(np.dot(w.vector, k.vector))  # type: ignore[arg-type]
            best[k.memory_id] = _Neighbour(k.memory_id, cosine, k.status, k.content, k.confidence,
                                           k.reinforced_count, "batch")
        ranked = sorted(best.values(), key=lambda n: (-n.cosine, str(n.memory_id)))
        w.neighbours = ranked
        return ranked[0] if ranked else None

    def similarity_to(self, w: _Write, memory_id: uuid.UUID) -> float | None:
        for n in w.neighbours:
            if n.memory_id == memory_id:
                return n.cosine
        known = self.known.get(memory_id)
        if known is not None and known.vector is not None and w.vector is not None:
            return float(np.dot(w.vector, known.vector))
        return w.old_cosine


@dataclass
class Prepared:
    """A batch checked and embedded (`prepare`), to be decided in the write's own transaction (`decide`)."""

    governor: _Governor
    writes: list[_Write]
    explicit: list[_Write]
    governed: list[_Write]
    started: float

    def decide(self, conn: Connection) -> dict[uuid.UUID, Decision]:
        """Decide every recorded memory; answers {MemoryRecorded event id: decision}. Writes no event (but may
        cache the embedding of reinforced content). `conn` is the write's transaction, in which the caller then
        appends the decisions: the scopes' advisory locks are taken on it first and held until it ends."""
        if not self.writes:
            return {}
        g, tenant, settings = self.governor, self.governor.tenant, self.governor.settings
        g.conn = conn
        if self.governed:
            scopes: dict[ScopeKey, list[_Write]] = {}
            for w in self.governed:
                scopes.setdefault((w.memory.agent_id, w.memory.project), []).append(w)
            # From here to the commit no other write decides in these scopes, and every read below sees what
            # the writes before this one committed (READ COMMITTED: each statement takes a fresh snapshot).
            # Nothing is written before the lock, so no transaction id is held while waiting for it.
            # psycopg prepares a statement after a few runs, and PostgreSQL may then give it a generic plan,
            # blind to the window's LIMIT and positions: 60 ms against 3 ms for _UNPROJECTED. For the rest of
            # this write transaction every statement is planned for its parameters.
            conn.execute(text("SET LOCAL plan_cache_mode = force_custom_plan"))
            lock_scopes(conn, tenant, set(scopes))
            for scope, group in scopes.items():
                found = _nearest_in_read_model(conn, tenant, scope, [w.literal or "" for w in group], settings)
                pending = _unprojected(conn, tenant, scope, g.embedder.model, settings.governance_unprojected_max,
                                       [w.literal or "" for w in group])
                for w, neighbours, unprojected in zip(group, found, pending, strict=True):
                    w.neighbours = neighbours + unprojected
            # The nearest memories' log state (reinforcements the read model has not applied yet, supersedes,
            # stream heads), read under the locks.
            ids = {n.memory_id for w in self.governed for n in w.neighbours} - set(g.states)
            g.states.update(_stream_states(conn, tenant, sorted(ids, key=str)))
            olds = [w for w in self.explicit if not w.memory.must_keep]
            if olds:
                rows = conn.execute(text("""
                    SELECT memory_id, embedding::text AS embedding FROM memory_vectors
                    WHERE tenant = :tenant AND memory_id = ANY(:ids) AND model = :model"""),
                    {"tenant": tenant, "model": settings.embedding_model,
                     "ids": [w.memory.supersedes for w in olds]}).all()
                old_vectors = {r.memory_id: from_pgvector(r.embedding) for r in rows}
                for w in olds:
                    v = old_vectors.get(w.memory.supersedes)  # type: ignore[arg-type]
                    if v is not None and w.vector is not None:
                        w.old_cosine = float(np.dot(w.vector, v))

        decisions: dict[uuid.UUID, Decision] = {}
        for w in self.writes:
            decisions[w.event.event_id] = g.decide(w)
        counts: dict[str, int] = {}
        for d in decisions.values():
            key = "reinforced" if d.reinforced else "superseding" if d.supersedes else d.disposition
            counts[key] = counts.get(key, 0) + 1
        log.info("governance.decided", tenant=tenant, memories=len(self.writes), governed=len(self.governed),
                 ms=round((time.perf_counter() - self.started) * 1000, 1), **counts)
        return decisions


def prepare(engine: Engine, tenant: str, recorded: Sequence[NewEvent], metadata: dict[str, Any],
            settings: Settings) -> Prepared:
    """The first phase, before the write's transaction: refuse bad supersedes (404, 409, 422) and embed the
    governed memories through the cache (committed on its own). The model is the slow part: it runs with no
    transaction held and outside the scope locks."""
    started = time.perf_counter()
    g = _Governor(engine, tenant, metadata, settings)
    writes = [_Write(e, MemoryRecorded.model_validate(e.data)) for e in recorded]
    order = {w.memory.memory_id: i for i, w in enumerate(writes)}
    in_batch = set(order)

    # Explicit supersedes: the old memory must be this tenant's (404), not superseded yet (409), not the write;
    # one recorded in the same batch must come before the write that supersedes it.
    explicit = [w for w in writes if w.memory.supersedes]
    for w in explicit:
        old = w.memory.supersedes
        if old == w.memory.memory_id:
            raise InvalidPayload(f"memory {old} cannot supersede itself")
        if old in in_batch and order[old] > order[w.memory.memory_id]:
            raise InvalidPayload(f"memory {old} is recorded after the memory that supersedes it in this batch")
    governed = [w for w in writes if not w.memory.must_keep]
    if explicit:  # the append re-checks these streams' heads (expected_version)
        with engine.connect() as conn:
            g.states = _stream_states(conn, tenant, sorted({w.memory.supersedes for w in explicit  # type: ignore[misc]
                                                            if w.memory.supersedes not in in_batch}, key=str))
    for old, state in g.states.items():
        if state.recorded is None:
            raise NotFound(f"no memory {old}: nothing to supersede")
        if state.superseded:
            raise AlreadySuperseded(f"memory {old} is already superseded; supersede its successor instead")
    if governed:
        g.calibration = calibration_for(engine, g.embedder)
        vectors = embed_texts(engine, g.embedder, tenant, [w.memory.content for w in governed])
        for w, (literal, vector) in zip(governed, vectors, strict=True):
            w.literal, w.vector = literal, vector
    return Prepared(g, writes, explicit, governed, started)


def embed_texts(engine: Engine, embedder: Any, tenant: str, texts: list[str]) -> list[tuple[str, np.ndarray]]:
    """Embed through the cache (committed at once, so the vectors projector will not compute them again)."""
    with engine.begin() as conn:
        literals = embed_cached(conn, embedder, tenant, texts)
    return [(lit, from_pgvector(lit)) for lit in literals]


def with_decisions(events: Sequence[NewEvent], decisions: dict[uuid.UUID, Decision]) -> list[NewEvent]:
    """The batch to append: the producer's events as given (consecutive positions), then the decisions in the
    same order. Each decision follows its cause, and only names memories recorded before it."""
    return [*events, *(d for e in events if e.event_id in decisions for d in decisions[e.event_id].events)]


_ADMITTED = text("""
SELECT data FROM events WHERE tenant = :tenant AND stream_id = ANY(:streams) AND type = 'MemoryAdmitted'
ORDER BY position
""")


def decisions_from_log(engine: Engine, tenant: str, memory_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, Decision]:
    """The decisions already recorded for these memories (a retried write answers what the first one did)."""
    with engine.connect() as conn:
        rows = conn.execute(_ADMITTED, {"tenant": tenant, "streams": [memory_stream(i) for i in memory_ids]}).all()
    out: dict[uuid.UUID, Decision] = {}
    for r in rows:
        d = Decision.from_admitted(r.data)
        out.setdefault(d.memory_id, d)
    return out


__all__ = ["Decision", "Prepared", "decisions_from_log", "lock_scopes", "old_memory", "prepare",
           "scope_lock_key", "with_decisions"]
