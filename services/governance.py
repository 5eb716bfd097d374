"""The write path's governor, as a service: each recorded memory's fate decided inside the write's transaction.

The decision itself is pure (domain/governance.py: the rules, in order); the reads it needs are in
services/neighbours.py. This module runs them: a batch is checked and embedded first (`prepare`, no
transaction held), then decided in the write's own transaction (`Prepared.decide`, services/append_events.py),
under a transaction-scoped advisory lock per (tenant, agent_id, project) of the batch, taken before the scope
is read and held until the write commits. Two writes to one scope are therefore decided one after the other,
the second seeing the first as an unprojected memory: identical racing writes end as one MemoryAdmitted and
reinforcements of it, never two near-duplicate active memories. A retry of the same batch (the same idempotency
keys) racing the first is caught right after the locks (`Prepared.lock`, then the keys re-checked in
services/append_events.py): it answers the first's result and decides nothing again.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import structlog
from sqlalchemy import Connection, Engine, text

from domain.errors import AlreadySuperseded, InvalidPayload, NotFound
from domain.events import MemoryAdmitted, MemoryRecorded, NewEvent, memory_stream
from domain.governance import Decision, Governor, Knobs, ScopeKey, Write
from domain.salience import Thresholds, Weights
from eventstore.stream import read_streams
from infra.calibration import calibration_for
from infra.embedding import Embedder, embed_cached, from_pgvector, get_embedder
from infra.settings import Settings
from recall.privacy import hidden_memories, policy_of
from services.neighbours import lock_scopes, nearest_in_read_model, stream_states, unprojected

log = structlog.get_logger(__name__)


def knobs(s: Settings) -> Knobs:
    g = s.governance
    weights = Weights(g.salience_w_novelty, g.salience_w_surprise, g.salience_w_decision, g.salience_w_causal,
                      g.salience_w_effort)
    return Knobs(weights, Thresholds(g.gate_active, g.gate_staging), g.reinforce_threshold, g.supersede_threshold,
                 s.limits.max_content_chars, g.reinforce_confidence_gain, s.embedding.embedding_model)


@dataclass
class Prepared:
    """A batch checked and embedded (`prepare`), to be decided in the write's own transaction (`decide`)."""

    governor: Governor
    settings: Settings
    embedder: Embedder
    writes: list[Write]
    explicit: list[Write]
    governed: list[Write]
    started: float
    locked: Connection | None = None  # the transaction holding the scopes' locks, once `lock` took them

    def scopes(self) -> dict[ScopeKey, list[Write]]:
        scopes: dict[ScopeKey, list[Write]] = {}
        for w in self.governed:
            scopes.setdefault((w.memory.agent_id, w.memory.project), []).append(w)
        return scopes

    def lock(self, conn: Connection) -> None:
        """Take the governed scopes' advisory locks on the write's transaction `conn` (held until it ends; none
        for a batch of must-keep memories only). From here to the commit no other write decides in these scopes,
        and every read after it sees what the writes before this one committed (READ COMMITTED: each statement
        takes a fresh snapshot) — so the caller re-checks here whether a concurrent retry of this very batch
        committed first, before deciding anything (services/append_events.py)."""
        if self.locked is conn or not self.governed:
            return
        # Nothing is written before the lock, so no transaction id is held while waiting for it.
        # psycopg prepares a statement after a few runs, and PostgreSQL may then give it a generic plan,
        # blind to the window's LIMIT and positions: 60 ms against 3 ms for _UNPROJECTED. For the rest of
        # this write transaction every statement is planned for its parameters.
        conn.execute(text("SET LOCAL plan_cache_mode = force_custom_plan"))
        lock_scopes(conn, self.governor.tenant, set(self.scopes()), self.settings.governance.governance_lock_timeout_s)
        self.locked = conn

    def decide(self, conn: Connection) -> dict[uuid.UUID, Decision]:
        """Decide every recorded memory; answers {MemoryRecorded event id: decision}. Writes no event (but may
        cache the embedding of reinforced content). `conn` is the write's transaction, in which the caller then
        appends the decisions: the scopes' advisory locks are taken on it first (`lock`, unless the caller took
        them) and held until it ends."""
        if not self.writes:
            return {}
        g, tenant, settings = self.governor, self.governor.tenant, self.settings
        # Reinforced content is embedded on the write's connection: it holds the scope locks, and a second
        # pooled connection per locked writer could exhaust the pool while the others wait on the lock.
        g.embed_texts = lambda texts: [from_pgvector(lit) for lit in embed_cached(conn, self.embedder, tenant, texts)]
        if self.governed:
            self.lock(conn)
            for scope, group in self.scopes().items():
                # The log window first, then the read model: a projection committing between the two statements
                # moves a memory from the first to the second, never out of both (the other order lost it
                # when its vector landed in between; seen on CI). One seen by both counts once (Governor.nearest).
                pending = unprojected(conn, tenant, scope, self.embedder.model,
                                      settings.governance.governance_unprojected_max, [w.literal or "" for w in group])
                found = nearest_in_read_model(conn, tenant, scope, [w.literal or "" for w in group], settings)
                for w, neighbours, waiting in zip(group, found, pending, strict=True):
                    w.neighbours = neighbours + waiting
            # A memory the privacy policy in force hides is no neighbour: a write reinforcing or superseding it
            # would answer its id (an oracle on excluded content); the write is decided as if it were not there.
            hidden = hidden_memories(conn, tenant, policy_of(conn, tenant),
                                     {n.memory_id for w in self.governed for n in w.neighbours})
            if hidden:
                for w in self.governed:
                    w.neighbours = [n for n in w.neighbours if str(n.memory_id) not in hidden]
            # The nearest memories' log state (reinforcements the read model has not applied yet, supersedes,
            # stream heads), read under the locks.
            ids = {n.memory_id for w in self.governed for n in w.neighbours} - set(g.states)
            g.states.update(stream_states(conn, tenant, sorted(ids, key=str)))
            olds = [w for w in self.explicit if not w.memory.must_keep]
            if olds:
                rows = conn.execute(text("""
                    SELECT memory_id, embedding::text AS embedding FROM memory_vectors
                    WHERE tenant = :tenant AND memory_id = ANY(:ids) AND model = :model"""),
                    {"tenant": tenant, "model": settings.embedding.embedding_model,
                     "ids": [w.memory.supersedes for w in olds]}).all()
                old_vectors = {r.memory_id: from_pgvector(r.embedding) for r in rows}
                for w in olds:
                    v = old_vectors.get(w.memory.supersedes)
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
    embedder = get_embedder(settings.embedding.embedding_model)
    g = Governor(tenant, metadata, knobs(settings), datetime.now(UTC))
    writes = [Write(e, MemoryRecorded.model_validate(e.data)) for e in recorded]
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
            g.states = stream_states(conn, tenant, sorted({sup for w in explicit if (sup := w.memory.supersedes)
                                                            and sup not in in_batch}, key=str))
    for old, state in g.states.items():
        if state.recorded is None:
            raise NotFound(f"no memory {old}: nothing to supersede")
        if state.superseded:
            raise AlreadySuperseded(f"memory {old} is already superseded; supersede its successor instead")
    if governed:
        g.calibration = calibration_for(engine, embedder)
        vectors = embed_texts(engine, embedder, tenant, [w.memory.content for w in governed])
        for w, (literal, vector) in zip(governed, vectors, strict=True):
            w.literal, w.vector = literal, vector
    return Prepared(g, settings, embedder, writes, explicit, governed, started)


def embed_texts(engine: Engine, embedder: Any, tenant: str, texts: list[str]) -> list[tuple[str, np.ndarray]]:
    """Embed through the cache (committed at once, so the vectors projector will not compute them again)."""
    with engine.begin() as conn:
        literals = embed_cached(conn, embedder, tenant, texts)
    return [(lit, from_pgvector(lit)) for lit in literals]


def with_decisions(events: Sequence[NewEvent], decisions: dict[uuid.UUID, Decision]) -> list[NewEvent]:
    """The batch to append: the producer's events as given (consecutive positions), then the decisions in the
    same order. Each decision follows its cause, and only names memories recorded before it."""
    return [*events, *(d for e in events if e.event_id in decisions for d in decisions[e.event_id].events)]


def decisions_from_log(engine: Engine, tenant: str, memory_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, Decision]:
    """The decisions already recorded for these memories (a retried write answers what the first one did)."""
    with engine.connect() as conn:
        rows = read_streams(conn, tenant, [memory_stream(i) for i in memory_ids], [MemoryAdmitted])
    out: dict[uuid.UUID, Decision] = {}
    for r in rows:
        d = Decision.from_admitted(r.data)
        out.setdefault(d.memory_id, d)
    return out


__all__ = ["Decision", "Prepared", "decisions_from_log", "knobs", "prepare", "with_decisions"]
