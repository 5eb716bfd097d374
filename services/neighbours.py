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

log = structlog.get_logger(__name__)


def _scope_where(alias: str, scope: ScopeKey) -> tuple[str, dict[str, Any]]:
    clauses, params = [f"{alias}.tenant = :tenant"], {}
    for column, value in zip(("agent_id", "project"), scope, strict=True):
        if value is None:
            clauses.append(f"{alias}.{column} IS NULL")
        else:
            clauses.append(f"{alias}.{column} = :{column}")
            params[column] = value
    return " AND ".join(clauses), params


def nearest_in_read_model(conn: Connection, tenant: str, scope: ScopeKey, vectors: list[str],
                           settings: Settings) -> list[list[NearMemory]]:
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
    out: list[list[NearMemory]] = [[] for _ in vectors]
    for r in conn.execute(text(sql), {**params, "recallable": list(NEIGHBOUR_STATUSES)}):
        out[r.ord - 1].append(NearMemory(r.memory_id, float(r.cosine), r.status, r.content, float(r.confidence),
                                         r.reinforced_count, "read_model"))
    return out


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
