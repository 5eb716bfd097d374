"""The governor's reads, under the write's scope locks: the nearest memories of a scope (the vectors read model,
and memories recorded but not yet projected), and what each memory's own stream says now.

"Nearest" is the most similar memory in the write's scope (tenant, agent_id, project; None matches None) with
status active, staging or dormant, among: the vectors read model joined with memories (vectors of the
configured model only); and memories recorded and admitted but not yet projected (their embedding is in the
tenant's embedding cache: the governor put it there; their status is read from their own stream). The
memories admitted earlier in the same batch are the governor's own (domain/governance.py).
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Sequence
from typing import Any

import structlog
from sqlalchemy import Connection, Engine, text
from sqlalchemy import exc as sa_exc

from domain.errors import AlreadySuperseded, Busy, NotFound
from domain.events import MemoryRecorded, MemoryReinforced, MemorySuperseded, memory_stream
from domain.governance import NEAREST_PER_QUERY, NearMemory, ScopeKey, StreamState
from domain.memory_status import NEIGHBOUR_STATUSES
from domain.reinforce import INITIAL_CONFIDENCE
from domain.text import content_hash
from eventstore.stream import read_streams
from eventstore.unprojected import beyond_window, floor, unprojected_memories
from infra.settings import Settings
from recall.scope import Scope
from recall.vector import nearest_vectors

log = structlog.get_logger(__name__)


# The shortlist's rows; a memory that left the statuses since the vector search is dropped, as it would have
# been one statement later.
_NEAR_ROWS = text("""
SELECT memory_id, status, content, confidence, reinforced_count FROM memories
WHERE tenant = :tenant AND memory_id = ANY(:ids) AND status = ANY(:statuses)
""")


def nearest_in_read_model(conn: Connection, tenant: str, scope: ScopeKey, vectors: list[str],
                          settings: Settings) -> list[list[NearMemory]]:
    """The NEAREST_PER_QUERY most similar memories of the scope with a NEIGHBOUR_STATUSES status, for each query
    vector: one filtered vector search for all of them (recall/vector.py), then the shortlist's rows."""
    found = nearest_vectors(conn, Scope.exactly(tenant, *scope), vectors, NEAREST_PER_QUERY, settings,
                            NEIGHBOUR_STATUSES)
    ids = sorted({memory_id for n in found for memory_id, _ in n.hits}, key=str)
    rows = {r.memory_id: r for r in conn.execute(_NEAR_ROWS, {"tenant": tenant, "ids": ids,
                                                             "statuses": list(NEIGHBOUR_STATUSES)})} if ids else {}
    return [[NearMemory(i, cosine, rows[i].status, rows[i].content, float(rows[i].confidence),
                        rows[i].reinforced_count, "read_model") for i, cosine in n.hits if i in rows] for n in found]


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


def unprojected(conn: Connection, tenant: str, scope: ScopeKey, model: str, limit: int,
                 vectors: list[str]) -> list[list[NearMemory]]:
    """For each query vector, the NEAREST_PER_QUERY most similar of the scope's memories admitted active,
    staging or dormant whose projection has not caught up yet: among the tenant's newest `limit`
    (ENGRAMLOG_GOVERNANCE_UNPROJECTED_MAX) recorded events above the projections' floor, so a write costs the
    same however far the projections lag (with no worker running, say); beyond the window a near-duplicate is
    caught once projected, by the next writes. Their vectors come from the embedding cache and are compared in
    PostgreSQL (a memory written must-keep was not embedded on the write path: it is compared once projected)."""
    below = floor(conn)
    rows = unprojected_memories(conn, tenant, scope[0], scope[1], model, below, limit, NEIGHBOUR_STATUSES)
    quiet = time.monotonic() - _window_warned_at.get(tenant, -1e9) < 60
    if not quiet and beyond_window(conn, tenant, below, limit):
        _window_warned_at[tenant] = time.monotonic()  # once a minute per tenant: every write would say it
        log.warning("governance.unprojected_window_full", tenant=tenant, window=limit, floor=below)
    out: list[list[NearMemory]] = [[] for _ in vectors]
    if not rows:
        return out
    by_hash: dict[str, list[Any]] = {}
    for r in rows:
        by_hash.setdefault(content_hash(r.content), []).append(r)
    nearest = conn.execute(_NEAREST_CACHED, {"tenant": tenant, "model": model, "hashes": list(by_hash), "qs": vectors,
                                             "k": NEAREST_PER_QUERY})
    for n in nearest:
        for r in by_hash[n.content_hash]:
            out[n.ord - 1].append(NearMemory(r.memory_id, float(n.cosine), r.status, r.content, INITIAL_CONFIDENCE,
                                             0, "unprojected"))
    return out


_LOCK_SCOPE = text("SELECT pg_advisory_xact_lock(CAST(:key AS bigint))")


def scope_lock_key(tenant: str, scope: ScopeKey) -> int:
    """The advisory lock key of one governed scope (64 bits of a SHA-256: stable across processes)."""
    digest = hashlib.sha256(json.dumps(["engramlog.governance", tenant, *scope]).encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def lock_scopes(conn: Connection, tenant: str, scopes: set[ScopeKey], timeout_s: float | None = None) -> None:
    """Hold the scopes' locks until `conn`'s transaction ends; taken in key order, so batches never deadlock.
    With `timeout_s`, a lock another write holds longer than that is Busy (503, nothing written), not a wait
    that ends in a client's or a proxy's timeout."""
    if timeout_s is not None:
        conn.execute(text(f"SET LOCAL lock_timeout = {max(1, int(timeout_s * 1000))}"))
    try:
        for key in sorted({scope_lock_key(tenant, s) for s in scopes}):
            conn.execute(_LOCK_SCOPE, {"key": key})
    except sa_exc.OperationalError as exc:
        if getattr(exc.orig, "sqlstate", None) != "55P03":  # lock_not_available
            raise
        raise Busy(f"another write to this scope has held it for {timeout_s:g}s; retry shortly") from exc
    if timeout_s is not None:
        conn.execute(text("SET LOCAL lock_timeout = 0"))  # the rest of the write waits as usual


def stream_states(conn: Connection, tenant: str, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, StreamState]:
    """What the log says of these memories now (authoritative, whatever the projections' lag)."""
    states = {i: StreamState() for i in ids}
    if not ids:
        return states
    by_stream = {memory_stream(i): i for i in ids}
    for r in read_streams(conn, tenant, list(by_stream)):
        s = states[by_stream[r.stream_id]]
        s.version = max(s.version, r.stream_version)
        if r.is_a(MemoryRecorded):
            s.recorded = r.data
        elif r.is_a(MemorySuperseded) and r.data.get("memory_id") == str(by_stream[r.stream_id]):
            s.superseded = True
        elif r.is_a(MemoryReinforced):
            s.reinforcements += 1
            s.last_reinforced = r.data
    return states


def old_memory(engine: Engine, tenant: str, memory_id: uuid.UUID) -> dict[str, Any]:
    """The MemoryRecorded payload of a memory of this tenant, for a supersede: 404 if unknown, 409 if superseded."""
    with engine.connect() as conn:
        state = stream_states(conn, tenant, [memory_id])[memory_id]
    if state.recorded is None:
        raise NotFound(f"no memory {memory_id}")
    if state.superseded:
        raise AlreadySuperseded(f"memory {memory_id} is already superseded; supersede its successor instead "
                                f"(GET /v1/memories/{memory_id}/history)")
    return state.recorded


__all__ = ["lock_scopes", "nearest_in_read_model", "old_memory", "scope_lock_key", "stream_states", "unprojected"]
