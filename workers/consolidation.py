"""The "sleep" cycle: consolidate each tenant's memories, scope by scope, with an explicit clock.

    consolidate(engine, clock)                              # every tenant, every agent
    consolidate(engine, clock, tenant="acme", agent_id="a") # one agent's scopes of one tenant

A scope is (tenant, agent_id, project): memories are clustered, linked and merged only within their scope,
so recall's scope filters keep finding what they found. Every recallable memory (active, dormant) with a vector
takes part, however large the scope: its memories are read in chunks of `consolidation_max_memories`
(ENGRAMLOG_CONSOLIDATION_MAX_MEMORIES), near-duplicates are pruned over the whole scope without an n×n matrix,
and the survivors are then planned in pages of that many (oldest first): clusters and bridges form within a
page, merges and edge transfers span the scope. Memory: the scope's vectors (n·d float32) plus one page's
matrices. The report counts the memories considered and the pages per scope; nothing is left out. The phases
and the idempotency argument are in domain/consolidation.py; this module reads the snapshot, and appends the plan:
MemoriesMerged on the kept memory's stream, EdgeAdjusted (target weights, never increments) and one
ConsolidationCompleted per tenant on the run's stream `consolidation-<run_id>`, all of a tenant in one
transaction, by the actor "system:scheduler". ConsolidationCompleted is the stored report; it is appended on
every run that found memories to consolidate, also when nothing changed (its counts are then all zero), so
the log shows that the cycle ran and with which clock. A second run in a row appends only that. The report also
says what deep recall could not answer in the run's scope: the live blind spots at the clock (how many, the top
ones by priority; read from the `blind_spots` read model, deep_recall/blind_spots.py), read-only.

Merges against concurrent writes: the plan is made on a snapshot without locks; a run with merges is appended
holding the governor's scope locks (services/neighbours.py `scope_lock_key`, as session locks, in key order) of
the merges' scopes, and only if, under those locks, every memory a merge names is as the plan saw it (every event
on its stream applied by the memories projection, same content, still active or dormant). The MemoriesMerged
carries the kept memory's stream head as its expected version. Otherwise the run is planned again on a fresh
snapshot (up to MERGE_ATTEMPTS times). The locks are held until the memories projection has applied the merges,
so a write the governor decides next in those scopes reinforces the merged state (content, pooled confidence),
never the stale one, and never reinforces a memory that was just merged away.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import numpy as np
import structlog
from sqlalchemy import Connection, Engine, text

from deep_recall.blind_spots import live_summary as live_blind_spots
from domain.consolidation import ConsolidationConfig, Edge, EdgeChange, Merge, Node, Plan, plan, prune
from domain.errors import ConcurrencyConflict, NotCaughtUp
from domain.events import ConsolidationCompleted, EdgeAdjusted, MemoriesMerged, NewEvent, memory_stream
from domain.memory_status import RECALLABLE
from eventstore.append import append
from eventstore.stream import stream_heads
from infra.settings import Settings, get_settings
from infra.wake import appended
from services.neighbours import scope_lock_key
from workers.lifecycle import SCHEDULER_ACTOR, append_system_events, as_clock, job_lock, sync_projections

log = structlog.get_logger(__name__)
MAX_SCOPES_IN_REPORT = 100
TOP_BLIND_SPOTS = 10  # blind spots listed in a run's report (all are counted)
READ_MODELS = ("memories", "vectors", "activity", "edges", "deep_recall")  # deep_recall: the blind spots reported
MERGE_ATTEMPTS = 5  # plans of one tenant's run, when a merge's memories changed between snapshot and append
ScopeKey = tuple[str | None, str | None]  # (agent_id, project), as the governor locks it


def config_from(settings: Settings) -> ConsolidationConfig:
    return ConsolidationConfig(
        cluster_max_distance=settings.consolidation.consolidation_cluster_distance,
        max_cluster_size=settings.consolidation.consolidation_max_cluster,
        bridge_min_similarity=settings.consolidation.consolidation_bridge_min,
        duplicate_similarity=settings.consolidation.consolidation_duplicate,
        edge_floor=settings.consolidation.consolidation_edge_floor,
        forget_min_age_days=settings.consolidation.consolidation_forget_age_days,
        forget_idle_days=settings.consolidation.consolidation_forget_idle_days,
        node_cap=settings.consolidation.consolidation_node_cap,
    )


def consolidation_stream(run_id: uuid.UUID) -> str:
    return f"consolidation-{run_id}"


@dataclass
class TenantRun:
    tenant: str
    run_id: uuid.UUID
    clock: datetime
    report: dict[str, Any]
    position: int | None = None
    appended: int = 0  # events this run appended


@dataclass
class ConsolidationResult:
    clock: datetime
    runs: list[TenantRun] = field(default_factory=list)

    def totals(self) -> dict[str, int]:
        total: Counter[str] = Counter()
        for r in self.runs:
            total.update(r.report["changes"])
        return dict(total)


_TENANTS = text("""
SELECT DISTINCT tenant FROM memories
WHERE status = ANY(:statuses) AND (CAST(:tenant AS text) IS NULL OR tenant = :tenant) ORDER BY tenant
""")
_SCOPES = text("""
SELECT DISTINCT agent_id, project FROM memories
WHERE tenant = :tenant AND status = ANY(:statuses) AND (CAST(:agent AS text) IS NULL OR agent_id = :agent)
ORDER BY agent_id NULLS FIRST, project NULLS FIRST
""")
# The scope's recallable memories with a vector, oldest first (the order pages are cut in), read in chunks.
_NODES = text("""
SELECT m.memory_id, m.kind, m.content, m.recorded_at, coalesce(a.access_count, 0) AS access_count,
       a.last_access_at, CAST(v.embedding AS text) AS embedding
FROM memories m
JOIN memory_vectors v ON v.tenant = m.tenant AND v.memory_id = m.memory_id
LEFT JOIN memory_activity a ON a.tenant = m.tenant AND a.memory_id = m.memory_id
WHERE m.tenant = :tenant AND m.status = ANY(:statuses)
  AND m.agent_id IS NOT DISTINCT FROM :agent AND m.project IS NOT DISTINCT FROM :project
ORDER BY m.recorded_at, m.memory_id
""")
# Every edge touching these memories, whatever its status.
_EDGES_OF = text("""
SELECT source_id, target_id, kind, weight, updated_at FROM memory_edges
WHERE tenant = :tenant AND (source_id = ANY(:ids) OR target_id = ANY(:ids))
""")
# The edges touching a memory of the scope that is not a node (not recallable, or without a vector) and touching
# no node of the scope: no page loads them, they are planned last (decay, forget, unlink), as before paging.
_ORPHAN_EDGES = text("""
WITH scope AS (
    SELECT m.memory_id, (m.status = ANY(:statuses) AND EXISTS (
               SELECT 1 FROM memory_vectors v WHERE v.tenant = m.tenant AND v.memory_id = m.memory_id)) AS node
    FROM memories m WHERE m.tenant = :tenant
      AND m.agent_id IS NOT DISTINCT FROM :agent AND m.project IS NOT DISTINCT FROM :project)
SELECT e.source_id, e.target_id, e.kind, e.weight, e.updated_at FROM memory_edges e
WHERE e.tenant = :tenant
  AND (e.source_id IN (SELECT memory_id FROM scope WHERE NOT node)
       OR e.target_id IN (SELECT memory_id FROM scope WHERE NOT node))
  AND e.source_id NOT IN (SELECT memory_id FROM scope WHERE node)
  AND e.target_id NOT IN (SELECT memory_id FROM scope WHERE node)
""")
_LAST_ACCESS = text("""
SELECT memory_id, last_access_at FROM memory_activity WHERE tenant = :tenant AND memory_id = ANY(:ids)
""")
EdgeKey = tuple[uuid.UUID, uuid.UUID, str]


def _vector(raw: str) -> np.ndarray:
    """A unit vector, kept as float32 (a scope's vectors are held whole; similarities are taken in float64)."""
    v = np.asarray(json.loads(raw), dtype=np.float64)
    norm = np.linalg.norm(v)
    return (v / norm if norm > 0 else v).astype(np.float32)


class _Overlay:
    """What earlier pages and scopes of this run decided about edges, as if already applied, by endpoint."""

    def __init__(self) -> None:
        self.changes: dict[EdgeKey, EdgeChange] = {}
        self.by_node: dict[uuid.UUID, set[EdgeKey]] = {}

    def add(self, change: EdgeChange) -> None:
        key = (change.source_id, change.target_id, change.kind)
        self.changes[key] = change
        for m in key[:2]:
            self.by_node.setdefault(m, set()).add(key)

    def apply(self, edges: dict[EdgeKey, Edge], node_ids: set[uuid.UUID], clock: datetime) -> None:
        touched = node_ids | {m for k in edges for m in k[:2]}
        for key in sorted({k for m in touched for k in self.by_node.get(m, ())}, key=str):
            change = self.changes[key]
            if change.weight <= 0:
                edges.pop(key, None)
            elif key in edges or key[0] in node_ids or key[1] in node_ids:
                edges[key] = Edge(key[0], key[1], key[2], change.weight, clock)


@dataclass
class _ScopeRun:
    memories: int = 0
    pages: int = 0


def _read_nodes(conn: Connection, scope: dict[str, Any], chunk: int) -> list[Node]:
    """The scope's nodes, oldest first, fetched `chunk` rows at a time (a server-side cursor)."""
    result = conn.execute(_NODES.execution_options(yield_per=chunk), {**scope, "statuses": list(RECALLABLE)})
    return [Node(r.memory_id, r.kind, r.content, r.recorded_at, r.access_count, r.last_access_at,
                 _vector(r.embedding)) for r in result]


def _plan_part(conn: Connection, tenant: str, nodes: list[Node], edge_rows: Any, clock: datetime,
               config: ConsolidationConfig, overlay: _Overlay, merges: list[Merge],
               merged_into: dict[uuid.UUID, uuid.UUID], ids: set[uuid.UUID]) -> Plan:
    edges: dict[EdgeKey, Edge] = {(r.source_id, r.target_id, r.kind): Edge(r.source_id, r.target_id, r.kind,
                                                                              r.weight, r.updated_at)
                                  for r in edge_rows}
    overlay.apply(edges, ids, clock)
    endpoints = sorted({m for k in edges for m in k[:2]} | {n.memory_id for n in nodes}, key=str)
    activity = {n.memory_id: n.last_access_at for n in nodes}
    activity.update({r.memory_id: r.last_access_at
                     for r in conn.execute(_LAST_ACCESS, {"tenant": tenant, "ids": endpoints})})
    return plan(nodes, list(edges.values()), activity, clock, config, merges=merges, merged_into=merged_into)


def _scope_plans(conn: Connection, tenant: str, agent: str | None, project: str | None, clock: datetime,
                 config: ConsolidationConfig, page_size: int, overlay: _Overlay, run: _ScopeRun,
                 seen: dict[uuid.UUID, str]) -> Iterator[Plan]:
    """The scope's plans, page by page, then its orphan edges'. The caller adds each plan's edge changes to
    `overlay` before asking for the next one. `seen` receives the snapshot's content of every memory a merge
    names (checked again before the merges are appended)."""
    scope = {"tenant": tenant, "agent": agent, "project": project}
    nodes = _read_nodes(conn, scope, page_size)
    run.memories = len(nodes)
    merges = prune(nodes, config.duplicate_similarity)
    merged_into = {m: k.memory_id for k in merges for m in k.merged_ids}
    named = set(merged_into) | {k.memory_id for k in merges}
    seen.update({n.memory_id: n.content for n in nodes if n.memory_id in named})
    by_kept = {k.memory_id: k for k in merges}
    survivors = [n for n in nodes if n.memory_id not in merged_into]  # oldest first, as read
    del nodes
    for start in range(0, len(survivors), page_size):
        page = survivors[start:start + page_size]
        page_merges = [by_kept[n.memory_id] for n in page if n.memory_id in by_kept]
        ids = {n.memory_id for n in page} | {m for k in page_merges for m in k.merged_ids}
        rows = conn.execute(_EDGES_OF, {"tenant": tenant, "ids": sorted(ids, key=str)}).all()
        run.pages += 1
        yield _plan_part(conn, tenant, page, rows, clock, config, overlay, page_merges, merged_into, ids)
    orphans = conn.execute(_ORPHAN_EDGES, {**scope, "statuses": list(RECALLABLE)}).all()
    if orphans:
        yield _plan_part(conn, tenant, [], orphans, clock, config, overlay, [], merged_into, set())


def consolidate(engine: Engine, clock: datetime | None = None, tenant: str | None = None,
                agent_id: str | None = None, settings: Settings | None = None,
                wait: bool = True) -> ConsolidationResult:
    """Run one sleep cycle with `clock` (read once: now, when not given). Answers the per-tenant reports.
    With `wait` false, raise JobBusy instead of waiting for a cycle already running."""
    clock = as_clock(clock)
    settings = settings or get_settings()
    config = config_from(settings)
    result = ConsolidationResult(clock)
    with job_lock(engine, "consolidation", wait):
        sync_projections(engine, READ_MODELS)
        with engine.connect() as conn:
            tenants = [r.tenant for r in conn.execute(_TENANTS, {"statuses": list(RECALLABLE), "tenant": tenant})]
        for t in tenants:
            result.runs.append(_consolidate_tenant(engine, t, agent_id, clock, config, settings))
        if any(any(r.report["changes"].values()) for r in result.runs):
            sync_projections(engine, READ_MODELS)
    if result.runs:
        appended(sum(r.appended for r in result.runs))
    log.info("lifecycle.consolidated", clock=clock.isoformat(), tenants=len(result.runs), **result.totals())
    return result


@dataclass
class _TenantPlan:
    run_id: uuid.UUID
    events: list[NewEvent]
    report: dict[str, Any]
    merge_scopes: set[ScopeKey] = field(default_factory=set)
    seen: dict[uuid.UUID, str] = field(default_factory=dict)  # memory named by a merge → content planned on


class StalePlan(ConcurrencyConflict):
    """A memory a merge names changed after the snapshot the plan was made on."""


def _consolidate_tenant(engine: Engine, tenant: str, agent_id: str | None, clock: datetime,
                        config: ConsolidationConfig, settings: Settings) -> TenantRun:
    for attempt in range(1, MERGE_ATTEMPTS + 1):
        planned = _plan_tenant(engine, tenant, agent_id, clock, config, settings)
        metadata = {"actor": SCHEDULER_ACTOR, "source": "consolidation", "correlation_id": str(planned.run_id)}
        try:
            if planned.merge_scopes:
                positions = _append_merges(engine, tenant, planned, metadata)
            else:
                positions = append_system_events(engine, tenant, planned.events, metadata)
            break
        except ConcurrencyConflict as exc:  # StalePlan, or a writer won the race on a kept memory's stream
            if attempt == MERGE_ATTEMPTS:
                raise
            log.info("lifecycle.consolidation_replan", tenant=tenant, attempt=attempt, reason=str(exc))
            sync_projections(engine, READ_MODELS)
    report = planned.report
    log.info("lifecycle.consolidation_run", tenant=tenant, run_id=str(planned.run_id), **report["changes"])
    return TenantRun(tenant, planned.run_id, clock, report, positions[-1], len(positions))


_SESSION_LOCK = text("SELECT pg_advisory_lock(CAST(:key AS bigint))")
_SESSION_UNLOCK = text("SELECT pg_advisory_unlock(CAST(:key AS bigint))")
_MEMORIES_NOW = text("SELECT memory_id, status, content FROM memories WHERE tenant = :tenant AND memory_id = ANY(:ids)")


def _append_merges(engine: Engine, tenant: str, planned: _TenantPlan, metadata: dict[str, Any]) -> list[int]:
    """Append the run holding the merges' scope locks, if the memories they name are as planned; then wait for
    the memories projection to apply it before letting writes into those scopes again."""
    from projections.registry import get_projector
    from projections.runner import load_checkpoint

    keys = sorted({scope_lock_key(tenant, s) for s in planned.merge_scopes})
    with engine.connect() as conn:
        taken: list[int] = []
        try:
            for key in keys:  # the order lock_scopes takes them in: no deadlock with a governed write
                conn.execute(_SESSION_LOCK, {"key": key})
                taken.append(key)
            conn.commit()
            with conn.begin():
                checkpoint = load_checkpoint(conn, "memories", tenant)  # the tenant's partition's
                streams = {memory_stream(m): m for m in planned.seen}
                # Each stream's head, and whether the memories projection has applied every event on it.
                now = stream_heads(conn, tenant, list(streams), get_projector("memories").types, checkpoint)
                state = {r.memory_id: r for r in conn.execute(_MEMORIES_NOW, {"tenant": tenant,
                                                                              "ids": list(planned.seen)})}
                for memory_id, content in planned.seen.items():
                    stream, row = now.get(memory_stream(memory_id)), state.get(memory_id)
                    if stream is None or not stream.applied or row is None or row.status not in RECALLABLE \
                            or row.content != content:
                        raise StalePlan(f"memory {memory_id} changed after the consolidation snapshot")
                events = [replace(e, expected_version=now[e.stream_id].version) if e.is_a(MemoriesMerged) else e
                          for e in planned.events]
                positions = append(conn, tenant, events, metadata)
            # Writes in these scopes wait until the merges are in the read model the governor decides from.
            try:
                sync_projections(engine, ("memories",))
            except NotCaughtUp as exc:  # appended all the same; the next writes may decide on the older state
                log.warning("lifecycle.consolidation_merges_unprojected", tenant=tenant, reason=str(exc))
            return positions
        finally:
            conn.rollback()
            for key in taken:
                conn.execute(_SESSION_UNLOCK, {"key": key})
            conn.commit()


def _plan_tenant(engine: Engine, tenant: str, agent_id: str | None, clock: datetime, config: ConsolidationConfig,
                 settings: Settings) -> _TenantPlan:
    run_id = uuid.uuid4()
    overlay = _Overlay()
    events: list[NewEvent] = []
    scopes: list[dict[str, Any]] = []
    changes: Counter[str] = Counter()
    observed: Counter[str] = Counter()
    merge_scopes: set[ScopeKey] = set()
    named: dict[uuid.UUID, str] = {}
    page_size = settings.consolidation.consolidation_max_memories
    with engine.connect() as conn:
        units = conn.execute(_SCOPES, {"tenant": tenant, "statuses": list(RECALLABLE), "agent": agent_id}).all()
        for unit in units:
            run = _ScopeRun()
            counts: Counter[str] = Counter()
            seen = {"clusters": 0, "largest_cluster": 0}
            for p in _scope_plans(conn, tenant, unit.agent_id, unit.project, clock, config, page_size, overlay, run,
                                  named):
                counts.update(p.counts())
                page_seen = p.observed()
                seen["clusters"] += page_seen["clusters"]
                seen["largest_cluster"] = max(seen["largest_cluster"], page_seen["largest_cluster"])
                for m in p.merges:
                    merge_scopes.add((unit.agent_id, unit.project))
                    merged = MemoriesMerged(memory_id=m.memory_id, merged_ids=list(m.merged_ids),
                                            similarity=m.similarity, merged_content=m.merged_content, clock=clock)
                    events.append(NewEvent.of(merged, memory_stream(m.memory_id), occurred_at=clock))
                for e in p.edges:
                    overlay.add(e)
                    adjusted = EdgeAdjusted(source_id=e.source_id, target_id=e.target_id, edge_kind=e.kind,
                                            weight=e.weight, reason=f"{e.phase}: {e.reason}", clock=clock)
                    events.append(NewEvent.of(adjusted, consolidation_stream(run_id), occurred_at=clock))
            changes.update(counts)
            observed["memories"] += run.memories
            observed["pages"] += run.pages
            observed["clusters"] += seen["clusters"]
            observed["largest_cluster"] = max(observed["largest_cluster"], seen["largest_cluster"])
            scopes.append({"agent_id": unit.agent_id, "project": unit.project, "memories": run.memories,
                           "pages": run.pages, **seen, "changes": {k: v for k, v in counts.items() if v}})
        blind_spots = live_blind_spots(conn, tenant, agent_id, clock, TOP_BLIND_SPOTS)
    phases = ("merged", "strengthened", "bridged", "unlinked", "forgotten", "transferred", "capped")
    report = {
        "scopes": len(units), **{k: observed[k] for k in ("memories", "pages", "clusters", "largest_cluster")},
        "page_size": page_size,
        "changes": {k: changes[k] for k in phases},
        "per_scope": scopes[:MAX_SCOPES_IN_REPORT],
        "blind_spots": blind_spots,
        "config": {k: getattr(config, k) for k in config.__dataclass_fields__},
    }
    completed = ConsolidationCompleted(run_id=run_id, tenant_scope={"tenant": tenant, "agent_id": agent_id},
                                       clock=clock, report=report)
    events.append(NewEvent.of(completed, consolidation_stream(run_id), occurred_at=clock))
    return _TenantPlan(run_id, events, report, merge_scopes, named)
