"""Stage 5, graph walk: a beam search, depth `graph_depth` (2), over the association edges of the kinds in
ENGRAMLOG_GRAPH_KINDS (semantic, temporal, causal, entity), boosting candidates already in the pool that the
walk reaches. It adds nothing: candidate generation stays the only eligibility gate.

Temporal edges are also implicit: a memory's temporal neighbours are the `graph_temporal_span` memories just
before and just after it on its agent's timeline (by occurred_at, then log position) within
`graph_temporal_window_s` of it, with weight `graph_temporal_weight` — episodic contiguity, read from the
memories read model at query time (explicit temporal edges in memory_edges are walked as well).

Entity edges: two memories of one agent that talk about the same entity (the `memory_entities` read model,
projections/entities.py), with weight `graph_entity_weight`, through entities no more than
`graph_entity_max_df` of the agent's memories talk about: "Oliver" links the few memories about the dog, while
a name on every other utterance links nothing.

Seeds: the top `graph_beam` memories of the pool, each with its score as activation. At each depth every
frontier node spreads activation × min(edge weight, 1) to its neighbours (edge weights decayed at the recall's
clock, recall/edges.py seen_from); the `graph_beam` most activated newly reached nodes form the next
frontier (they may lie outside the pool: a path can pass through them). A pool memory reached with
activation a gets score ← score + gain · min(a, 1) · (1 − score), which stays in [0, 1]. A depth reads the
frontier's three kinds of neighbour (memory_edges, timeline, entity) in one statement (`neighbourhood`).
"""

from __future__ import annotations

import functools
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, TextClause, text

from domain.memory_status import RECALLABLE
from infra.settings import Settings
from recall.edges import EDGES_SQL, Neighbour, seen_from
from recall.funnel.composite import unasked
from recall.funnel.types import Item, StageReport, rank

# Timeline neighbours: the :span recallable memories just before and after each frontier memory on its agent's
# timeline, within :window seconds.
_TIMELINE_SQL = """
SELECT f.memory_id AS source, n.memory_id AS target FROM memories f
CROSS JOIN LATERAL (
    (SELECT m.memory_id FROM memories m
     WHERE m.tenant = f.tenant AND m.agent_id IS NOT DISTINCT FROM f.agent_id AND m.status = ANY(:statuses)
       AND m.occurred_at >= f.occurred_at - make_interval(secs => :window)
       AND (m.occurred_at, m.position) < (f.occurred_at, f.position)
     ORDER BY m.occurred_at DESC, m.position DESC LIMIT :span)
    UNION ALL
    (SELECT m.memory_id FROM memories m
     WHERE m.tenant = f.tenant AND m.agent_id IS NOT DISTINCT FROM f.agent_id AND m.status = ANY(:statuses)
       AND m.occurred_at <= f.occurred_at + make_interval(secs => :window)
       AND (m.occurred_at, m.position) > (f.occurred_at, f.position)
     ORDER BY m.occurred_at, m.position LIMIT :span)
) n
WHERE f.tenant = :tenant AND f.memory_id = ANY(:ids)
"""


# Entity neighbours: the other recallable memories of the same agent that talk about an entity a frontier memory
# talks about, through entities no more than :max_df of that agent's memories talk about. A long text names tens
# of entities, so every step is bounded by what the frontier names, whatever the planner estimates: each distinct
# (entity, agent) pair of the frontier is counted once (MATERIALIZED: inlined, the planner re-ran the counts for
# every frontier row, quadratic in the entities named) and no further than :max_df + 1 (a hub entity's rows are
# not all read); a specific entity's other memories are read by its index, at most :max_df of them (the LIMIT
# keeps that a lookup per frontier row: a plain join was planned as a scan of the tenant's memories against the
# frontier's rows). A memory without an agent has no entity neighbours (its NULL agent equals none), so those
# rows are left out before anything is counted. The CTEs open the statement's WITH; `_ENTITY_SQL` reads them.
_ENTITY_CTES = """
src AS MATERIALIZED (
    SELECT memory_id, entity, agent_id FROM memory_entities
    WHERE tenant = :tenant AND memory_id = ANY(:ids) AND agent_id IS NOT NULL
), specific AS MATERIALIZED (
    SELECT s.entity, s.agent_id FROM (SELECT DISTINCT entity, agent_id FROM src) s
    CROSS JOIN LATERAL (SELECT count(*) AS df FROM (
        SELECT 1 FROM memory_entities e WHERE e.tenant = :tenant AND e.entity = s.entity AND e.agent_id = s.agent_id
        LIMIT :max_df + 1) capped) d
    WHERE d.df BETWEEN 2 AND :max_df
), pairs AS MATERIALIZED (
    SELECT DISTINCT s.memory_id AS source, o.memory_id AS target
    FROM src s
    JOIN specific USING (entity, agent_id)
    CROSS JOIN LATERAL (
        SELECT e.memory_id FROM memory_entities e
        WHERE e.tenant = :tenant AND e.entity = s.entity AND e.agent_id = s.agent_id AND e.memory_id <> s.memory_id
        LIMIT :max_df) o
)
"""
_ENTITY_SQL = """
SELECT p.source, p.target FROM pairs p
WHERE EXISTS (SELECT 1 FROM memories m WHERE m.tenant = :tenant AND m.memory_id = p.target
                                         AND m.status = ANY(:statuses))
"""


@functools.cache
def neighbourhood_statement(timeline: bool, entity: bool) -> TextClause:
    """One round trip per depth: the frontier's memory_edges rows (recall/edges.py EDGES_SQL), then, when asked
    for, its timeline and entity pairs, told apart by `branch` (the pairs leave the edge columns NULL)."""
    branches = [f"SELECT 'edge' AS branch, e.source_id, e.target_id, e.kind, e.weight, e.updated_at"
                f" FROM ({EDGES_SQL}) e"]
    if timeline:
        branches.append(f"SELECT 'timeline', t.source, t.target, NULL, NULL, NULL FROM ({_TIMELINE_SQL}) t")
    if entity:
        branches.append(f"SELECT 'entity', p.source, p.target, NULL, NULL, NULL FROM ({_ENTITY_SQL}) p")
    return text(("WITH " + _ENTITY_CTES if entity else "") + "\nUNION ALL\n".join(branches))


Pair = tuple[uuid.UUID, uuid.UUID]  # (frontier memory, neighbour)


@dataclass(frozen=True)
class Neighbourhood:
    """A frontier's neighbours at one depth (`neighbourhood`)."""
    edges: list[Neighbour]  # memory_edges, decayed at the recall's clock, strongest first (recall/edges.py)
    timeline: list[Pair] | None  # None: the walk follows no timeline neighbours under these settings
    entity: list[Pair] | None  # None: the walk follows no entity neighbours under these settings


def _pairs(rows: list[Any]) -> list[Pair]:
    return sorted(((r.source_id, r.target_id) for r in rows), key=lambda p: (str(p[0]), str(p[1])))


def neighbourhood(conn: Connection, tenant: str, ids: list[uuid.UUID], now: datetime, settings: Settings,
                  statuses: tuple[str, ...] = RECALLABLE) -> Neighbourhood:
    """The memory_edges neighbours of `ids` (of settings.graph.graph_kinds), their timeline neighbours and their entity
    neighbours (the rules in the module's docstring), in one statement. Timeline neighbours are read when
    "temporal" is walked with a span and a weight, entity neighbours when "entity" is walked with a weight and a
    max_df of at least 2; otherwise their branch is not in the statement."""
    kinds = settings.graph.graph_kinds
    timeline = ("temporal" in kinds and settings.graph.graph_temporal_span > 0
                and settings.graph.graph_temporal_weight > 0)
    entity = "entity" in kinds and settings.graph.graph_entity_weight > 0 and settings.graph.graph_entity_max_df >= 2
    params: dict[str, Any] = {"tenant": tenant, "ids": ids, "kinds": list(kinds)}
    if timeline or entity:
        params["statuses"] = list(statuses)
    if timeline:
        params |= {"span": settings.graph.graph_temporal_span, "window": settings.graph.graph_temporal_window_s}
    if entity:
        params["max_df"] = settings.graph.graph_entity_max_df
    rows: dict[str, list[Any]] = {"edge": [], "timeline": [], "entity": []}
    for r in conn.execute(neighbourhood_statement(timeline, entity), params):
        rows[r.branch].append(r)
    return Neighbourhood(seen_from(rows["edge"], ids, now), _pairs(rows["timeline"]) if timeline else None,
                         _pairs(rows["entity"]) if entity else None)


def walk(conn: Connection, tenant: str, pool: list[Item], now: datetime, settings: Settings,
         report: StageReport, statuses: tuple[str, ...] = RECALLABLE) -> list[Item]:
    beam, depth = settings.graph.graph_beam, settings.graph.graph_depth
    gain, kinds = settings.graph.graph_gain, settings.graph.graph_kinds
    report.config = {"beam": beam, "depth": depth, "gain": gain, "kinds": list(kinds),
                     "temporal_span": settings.graph.graph_temporal_span,
                     "temporal_window_s": settings.graph.graph_temporal_window_s,
                     "temporal_weight": settings.graph.graph_temporal_weight,
                     "entity_weight": settings.graph.graph_entity_weight,
                     "entity_max_df": settings.graph.graph_entity_max_df}
    report.counts = {"edges_followed": 0, "reached": 0, "boosted": 0}
    if not pool or beam <= 0 or depth <= 0 or gain <= 0 or not kinds:
        report.skipped = "graph walk off (beam, depth, gain or kinds)"
        return pool
    in_pool = {i.memory_id: i for i in pool}
    # The walk starts from the best matches as the query found them, questions included: a question that matches
    # is ranked below its reply (composite.question_factor), but it still points at that reply, its timeline
    # neighbour.
    matched = {i.memory_id: unasked(i, settings) for i in pool}
    starts = sorted(pool, key=lambda i: (-matched[i.memory_id], str(i.memory_id)))[:beam]
    frontier: dict[uuid.UUID, float] = {i.memory_id: matched[i.memory_id] for i in starts}
    visited = set(frontier)
    reached: dict[uuid.UUID, float] = {}
    for _ in range(depth):
        spread: dict[uuid.UUID, float] = {}
        near = neighbourhood(conn, tenant, list(frontier), now, settings, statuses)
        edges = [(e.memory_id, e.neighbour_id, e.weight) for e in near.edges]
        if near.timeline is not None:
            edges += [(src, dst, settings.graph.graph_temporal_weight) for src, dst in near.timeline]
            report.counts["temporal_adjacent"] = report.counts.get("temporal_adjacent", 0) + len(near.timeline)
        if near.entity is not None:
            edges += [(src, dst, settings.graph.graph_entity_weight) for src, dst in near.entity]
            report.counts["entity_shared"] = report.counts.get("entity_shared", 0) + len(near.entity)
        report.counts["edges_followed"] += len(edges)
        for source, target, weight in edges:
            a = frontier[source] * min(weight, 1.0)
            if a <= 0:
                continue
            spread[target] = spread.get(target, 0.0) + a
            reached[target] = reached.get(target, 0.0) + a
        fresh = sorted(((a, n) for n, a in spread.items() if n not in visited), key=lambda x: (-x[0], str(x[1])))
        frontier = {n: a for a, n in fresh[:beam]}
        visited.update(frontier)
        if not frontier:
            break
    if not report.counts["edges_followed"]:
        report.skipped = "no association edges around the top of the pool"
        return pool
    report.counts["reached"] = len(reached)
    for memory_id, a in reached.items():
        item = in_pool.get(memory_id)
        if item is None:
            continue
        boost = gain * min(a, 1.0) * (1 - item.score)
        item.score += boost
        item.stages["graph"] = {"activation": round(a, 6), "boost": round(boost, 6), "score": round(item.score, 6)}
        report.counts["boosted"] += 1
    return rank(pool)
