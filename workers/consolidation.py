"""The "sleep" cycle: consolidate each tenant's memories, scope by scope, with an explicit clock.

    consolidate(engine, clock)                              # every tenant, every agent
    consolidate(engine, clock, tenant="acme", agent_id="a") # one agent's scopes of one tenant

A scope is (tenant, agent_id, project): memories are clustered, linked and merged only within their scope,
so recall's scope filters keep finding what they found. Recallable memories (active, dormant) with a vector
take part, at most `consolidation_max_memories` per scope (the most recently referenced). The phases and the
idempotency argument are in domain/consolidation.py; this module reads the snapshot, and appends the plan:
MemoriesMerged on the kept memory's stream, EdgeAdjusted (target weights, never increments) and one
ConsolidationCompleted per tenant on the run's stream `consolidation-<run_id>`, all of a tenant in one
transaction, by the actor "system:scheduler". ConsolidationCompleted is the stored report; it is appended on
every run that found memories to consolidate, also when nothing changed (its counts are then all zero), so
the log shows that the cycle ran and with which clock. A second run in a row appends only that.
"""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import structlog
from sqlalchemy import Connection, Engine, text

from domain.consolidation import ConsolidationConfig, Edge, EdgeChange, Node, Plan, plan
from domain.events import NewEvent, memory_stream, validate_payload
from infra.settings import Settings, get_settings
from workers.lifecycle import SCHEDULER_ACTOR, append_system_events, as_clock, job_lock, sync_projections

log = structlog.get_logger(__name__)
RECALLABLE = ("active", "dormant")
MAX_SCOPES_IN_REPORT = 100
READ_MODELS = ("memories", "vectors", "activity", "edges")


def config_from(settings: Settings) -> ConsolidationConfig:
    return ConsolidationConfig(
        cluster_max_distance=settings.consolidation_cluster_distance,
        max_cluster_size=settings.consolidation_max_cluster,
        bridge_min_similarity=settings.consolidation_bridge_min,
        duplicate_similarity=settings.consolidation_duplicate,
        edge_floor=settings.consolidation_edge_floor,
        forget_min_age_days=settings.consolidation_forget_age_days,
        forget_idle_days=settings.consolidation_forget_idle_days,
        node_cap=settings.consolidation_node_cap,
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
_NODES = text("""
SELECT m.memory_id, m.kind, m.content, m.recorded_at, coalesce(a.access_count, 0) AS access_count,
       a.last_access_at, CAST(v.embedding AS text) AS embedding
FROM memories m
JOIN memory_vectors v ON v.tenant = m.tenant AND v.memory_id = m.memory_id
LEFT JOIN memory_activity a ON a.tenant = m.tenant AND a.memory_id = m.memory_id
WHERE m.tenant = :tenant AND m.status = ANY(:statuses)
  AND m.agent_id IS NOT DISTINCT FROM :agent AND m.project IS NOT DISTINCT FROM :project
ORDER BY greatest(m.recorded_at, a.last_access_at) DESC, m.memory_id
LIMIT :limit
""")
# Every edge touching any memory of the scope, whatever its status.
_EDGES = text("""
WITH scope AS (SELECT memory_id FROM memories WHERE tenant = :tenant
               AND agent_id IS NOT DISTINCT FROM :agent AND project IS NOT DISTINCT FROM :project)
SELECT e.source_id, e.target_id, e.kind, e.weight, e.updated_at FROM memory_edges e
WHERE e.tenant = :tenant
  AND (e.source_id IN (SELECT memory_id FROM scope) OR e.target_id IN (SELECT memory_id FROM scope))
""")
_LAST_ACCESS = text("""
SELECT memory_id, last_access_at FROM memory_activity WHERE tenant = :tenant AND memory_id = ANY(:ids)
""")


def _vector(raw: str) -> np.ndarray:
    v = np.asarray([float(x) for x in raw.strip("[]").split(",")], dtype=np.float64)
    norm = np.linalg.norm(v)
    return v / norm if norm > 0 else v


def _plan_scope(conn: Connection, tenant: str, agent: str | None, project: str | None, clock: datetime,
                config: ConsolidationConfig, limit: int,
                overlay: dict[tuple[uuid.UUID, uuid.UUID, str], EdgeChange]) -> Plan:
    scope = {"tenant": tenant, "agent": agent, "project": project}
    nodes = [Node(r.memory_id, r.kind, r.content, r.recorded_at, r.access_count, r.last_access_at,
                  _vector(r.embedding))
             for r in conn.execute(_NODES, {**scope, "statuses": list(RECALLABLE), "limit": limit})]
    edges: dict[tuple[uuid.UUID, uuid.UUID, str], Edge] = {}
    for r in conn.execute(_EDGES, scope):
        edges[(r.source_id, r.target_id, r.kind)] = Edge(r.source_id, r.target_id, r.kind, r.weight, r.updated_at)
    # What earlier scopes of this run decided about shared edges, as if already applied.
    node_ids = {n.memory_id for n in nodes}
    for key, change in overlay.items():
        if change.weight <= 0:
            edges.pop(key, None)
        elif key in edges or key[0] in node_ids or key[1] in node_ids:
            edges[key] = Edge(key[0], key[1], key[2], change.weight, clock)
    endpoints = sorted({m for k in edges for m in k[:2]} | {n.memory_id for n in nodes}, key=str)
    activity = {n.memory_id: n.last_access_at for n in nodes}
    activity.update({r.memory_id: r.last_access_at
                     for r in conn.execute(_LAST_ACCESS, {"tenant": tenant, "ids": endpoints})})
    return plan(nodes, list(edges.values()), activity, clock, config)


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
        from workers.wake import wake_projections

        wake_projections()
    log.info("lifecycle.consolidated", clock=clock.isoformat(), tenants=len(result.runs), **result.totals())
    return result


def _consolidate_tenant(engine: Engine, tenant: str, agent_id: str | None, clock: datetime,
                        config: ConsolidationConfig, settings: Settings) -> TenantRun:
    run_id = uuid.uuid4()
    overlay: dict[tuple[uuid.UUID, uuid.UUID, str], EdgeChange] = {}
    events: list[NewEvent] = []
    scopes: list[dict[str, Any]] = []
    changes: Counter[str] = Counter()
    observed: Counter[str] = Counter()
    with engine.connect() as conn:
        units = conn.execute(_SCOPES, {"tenant": tenant, "statuses": list(RECALLABLE), "agent": agent_id}).all()
        for unit in units:
            p = _plan_scope(conn, tenant, unit.agent_id, unit.project, clock, config,
                            settings.consolidation_max_memories, overlay)
            counts, seen = p.counts(), p.observed()
            changes.update(counts)
            observed["memories"] += seen["memories"]
            observed["clusters"] += seen["clusters"]
            observed["largest_cluster"] = max(observed["largest_cluster"], seen["largest_cluster"])
            scopes.append({"agent_id": unit.agent_id, "project": unit.project, **seen,
                           "changes": {k: v for k, v in counts.items() if v}})
            for m in p.merges:
                data = validate_payload("MemoriesMerged", {
                    "memory_id": str(m.memory_id), "merged_ids": [str(i) for i in m.merged_ids],
                    "similarity": m.similarity, "merged_content": m.merged_content, "clock": clock.isoformat()})
                events.append(NewEvent("MemoriesMerged", memory_stream(m.memory_id), data, occurred_at=clock))
            for e in p.edges:
                overlay[(e.source_id, e.target_id, e.kind)] = e
                data = validate_payload("EdgeAdjusted", {
                    "source_id": str(e.source_id), "target_id": str(e.target_id), "edge_kind": e.kind,
                    "weight": e.weight, "reason": f"{e.phase}: {e.reason}", "clock": clock.isoformat()})
                events.append(NewEvent("EdgeAdjusted", consolidation_stream(run_id), data, occurred_at=clock))
    phases = ("merged", "strengthened", "bridged", "unlinked", "forgotten", "transferred", "capped")
    report = {
        "scopes": len(units), **{k: observed[k] for k in ("memories", "clusters", "largest_cluster")},
        "changes": {k: changes[k] for k in phases},
        "per_scope": scopes[:MAX_SCOPES_IN_REPORT],
        "config": {k: getattr(config, k) for k in config.__dataclass_fields__},
    }
    completed = validate_payload("ConsolidationCompleted", {
        "run_id": str(run_id), "tenant_scope": {"tenant": tenant, "agent_id": agent_id},
        "clock": clock.isoformat(), "report": report})
    events.append(NewEvent("ConsolidationCompleted", consolidation_stream(run_id), completed, occurred_at=clock))
    metadata = {"actor": SCHEDULER_ACTOR, "source": "consolidation", "correlation_id": str(run_id)}
    positions = append_system_events(engine, tenant, events, metadata)
    log.info("lifecycle.consolidation_run", tenant=tenant, run_id=str(run_id), **report["changes"])
    return TenantRun(tenant, run_id, clock, report, positions[-1])
