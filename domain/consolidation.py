"""The "sleep" cycle, pure: from a snapshot of one scope (memories, vectors, activity, edges) and a clock, plan
the decisions. The worker (workers/consolidation.py) reads the snapshot and appends the plan as events.

Phases, in the order they are reported:

1. cluster — greedy complete-linkage with an enforced diameter: memories are taken oldest first; each joins
   the existing cluster whose every member is within `cluster_max_distance` cosine distance of it (the one
   with the closest farthest member, at most `max_cluster_size` members), else starts its own.
2. strengthen — every pair inside a cluster gets a 'semantic' edge whose TARGET weight is the pair's cosine
   (rounded to 4 places). Targets, not increments: an edge already at its target is left alone.
3. bridge — each cluster of two or more links to its nearest other such cluster through their most similar
   cross pair, when that cosine is at least `bridge_min_similarity` ('semantic', reason "bridge").
   Any existing semantic edge of the scope that is no longer a cluster pair or a bridge is unlinked (weight 0).
4. decay and forget — Hebbian edges decay with their half-life (domain/hebbian.py); one whose decayed weight is
   below `edge_floor` is forgotten (weight 0) only when it is also old (not updated for `forget_min_age_days`)
   and unused (neither end accessed for `forget_idle_days`). Memories are never deleted.
5. prune near-duplicates — memories of the same kind with cosine > `duplicate_similarity` fold into one
   MemoriesMerged: the kept memory is the most accessed, then the oldest. Policy for `merged_content`: the kept
   memory's wording, unchanged (near-duplicates say the same thing; keeping it keeps its embedding, BM25
   postings and edges valid — why this differs from a reinforcement's merge, and the policy for confidence
   and access statistics, is in domain/reinforce.py). Nothing is lost: the merged memories stay in the log and
   in `memories` (status 'merged', merged_into = the kept id), and the event lists their ids. Their Hebbian
   edges move to the kept memory (the larger weight wins). The merge is decided on the snapshot, before
   clustering, so clusters and edges are computed over the survivors only — that is what makes an immediate
   second run change nothing: no two survivors are near-duplicates, so pruning them again merges nothing.
6. homeostasis — each memory's total edge weight is capped at `node_cap`. Causal (and other fixed) edges
   count but are never scaled; semantic edges are scaled first (from their targets, so the result is the
   same every run), then Hebbian edges share what is left. An edge between two capped memories takes the
   smaller factor. A second run finds every memory within its cap, so it scales nothing.

Idempotency: the plan's semantic edges are a function of the survivors' vectors alone, Hebbian edges only ever
go down (decay, forget, cap), and merges remove their memories from the next snapshot; so planning again on the
result (at the same or a slightly later clock) yields no change.

Scopes of any size (the worker, workers/consolidation.py): `prune` runs over the whole scope without an n×n
matrix (rows of similarities a block at a time, memory O(n·d + block)), then the survivors are planned in pages
of consecutive survivors (oldest first), each page with `plan(..., merges=its merges, merged_into=the scope's)`:
clusters and bridges form within a page, merges and edge transfers span the scope. Pages are cut from the
survivors alone, which a second run finds unchanged, so it cuts the same pages and changes nothing.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

import numpy as np

from domain.hebbian import canonical, decayed

PLASTIC_KINDS = ("semantic", "hebbian")
WEIGHT_PLACES = 6
_EPS = 1e-6
# Pruning: similarities are computed a block of rows at a time (at most this many entries, float32), and a pair
# found above (threshold − margin) there is confirmed with its exact float64 cosine, so the decision does not
# depend on how rows were blocked.
PRUNE_BLOCK_ENTRIES = 1 << 24
_PRUNE_MARGIN = 1e-4


@dataclass(frozen=True)
class ConsolidationConfig:
    cluster_max_distance: float = 0.45
    max_cluster_size: int = 16
    bridge_min_similarity: float = 0.3
    duplicate_similarity: float = 0.85
    edge_floor: float = 0.05
    forget_min_age_days: float = 7.0
    forget_idle_days: float = 7.0
    node_cap: float = 4.0


@dataclass(frozen=True)
class Node:
    memory_id: uuid.UUID
    kind: str
    content: str
    recorded_at: datetime
    access_count: int
    last_access_at: datetime | None
    vector: np.ndarray  # unit length (float32 or float64; similarities are computed in float64)


@dataclass(frozen=True)
class Edge:
    source_id: uuid.UUID
    target_id: uuid.UUID
    kind: str
    weight: float
    updated_at: datetime

    @property
    def key(self) -> tuple[uuid.UUID, uuid.UUID, str]:
        return self.source_id, self.target_id, self.kind


@dataclass(frozen=True)
class Merge:
    memory_id: uuid.UUID
    merged_ids: tuple[uuid.UUID, ...]
    similarity: float
    merged_content: str


EdgeKind = Literal["semantic", "hebbian"]  # the edges consolidation adjusts


@dataclass(frozen=True)
class EdgeChange:
    source_id: uuid.UUID
    target_id: uuid.UUID
    kind: EdgeKind
    weight: float
    reason: str
    phase: str


@dataclass
class Plan:
    merges: list[Merge] = field(default_factory=list)
    edges: list[EdgeChange] = field(default_factory=list)
    clusters: list[list[uuid.UUID]] = field(default_factory=list)
    memories: int = 0

    def counts(self) -> dict[str, int]:
        phases = {"strengthened": 0, "bridged": 0, "unlinked": 0, "forgotten": 0, "transferred": 0, "capped": 0}
        for e in self.edges:
            phases[e.phase] += 1
        return {"merged": sum(len(m.merged_ids) for m in self.merges), **phases}

    def observed(self) -> dict[str, int]:
        multi = [c for c in self.clusters if len(c) > 1]
        return {"memories": self.memories, "clusters": len(multi),
                "largest_cluster": max((len(c) for c in multi), default=0)}


def merge_content(kept: Node, merged: list[Node]) -> str:
    """The documented policy: the kept memory's wording, unchanged. Not domain/reinforce.merge_content on
    purpose: rewriting the kept memory would move its embedding and break idempotency (see that module)."""
    return kept.content


def _round(w: float) -> float:
    return round(float(w), WEIGHT_PLACES)


def cosine(a: Node, b: Node) -> float:
    """The exact cosine of two nodes (float64), independent of any blocking."""
    return float(np.dot(np.asarray(a.vector, dtype=np.float64), np.asarray(b.vector, dtype=np.float64)))


def prune(nodes: Sequence[Node], threshold: float, block_entries: int = PRUNE_BLOCK_ENTRIES) -> list[Merge]:
    """Phase 5 over a whole scope: greedy, in keep-priority order (most accessed, then oldest, then id), each
    memory not merged yet keeps every not-yet-merged memory of its kind with cosine > `threshold`. Rows of
    similarities are computed `block_entries // n` at a time: never an n×n matrix."""
    n = len(nodes)
    if n < 2:
        return []
    order = sorted(range(n), key=lambda i: (-nodes[i].access_count, nodes[i].recorded_at, str(nodes[i].memory_id)))
    rank = np.empty(n, dtype=int)
    rank[order] = np.arange(n)
    codes: dict[str, int] = {}
    kinds = np.array([codes.setdefault(x.kind, len(codes)) for x in nodes])
    matrix = np.stack([np.asarray(x.vector, dtype=np.float32) for x in nodes])
    free = np.ones(n, dtype=bool)
    merges: list[Merge] = []
    step = max(1, block_entries // n)
    for start in range(0, n, step):
        rows = [i for i in order[start:start + step] if free[i]]
        if not rows:
            continue
        block = matrix[rows] @ matrix.T
        for r, i in enumerate(rows):
            if not free[i]:
                continue
            free[i] = False
            candidates = np.flatnonzero(free & (block[r] > threshold - _PRUNE_MARGIN) & (kinds == kinds[i]))
            hits = [(j, c) for j in map(int, candidates) if (c := cosine(nodes[i], nodes[j])) > threshold]
            if not hits:
                continue
            hits.sort(key=lambda h: rank[h[0]])  # in keep-priority order
            free[[j for j, _ in hits]] = False
            kept, merged = nodes[i], [nodes[j] for j, _ in hits]
            merges.append(Merge(kept.memory_id, tuple(m.memory_id for m in merged),
                                round(min(c for _, c in hits), 4), merge_content(kept, merged)))
    return merges


def _cluster(idx: list[int], sim: np.ndarray, max_distance: float, max_size: int) -> list[list[int]]:
    floor = 1.0 - max_distance
    clusters: list[list[int]] = []
    # Row c: the lowest similarity of every memory to cluster c's members (vectorised over clusters).
    minsim = np.empty((max(len(idx), 1), sim.shape[0]))
    sizes = np.zeros(max(len(idx), 1), dtype=int)
    for j in idx:
        n = len(clusters)
        best = -1
        if n:
            column = minsim[:n, j]
            feasible = (column >= floor) & (sizes[:n] < max_size)
            if feasible.any():
                best = int(np.argmax(np.where(feasible, column, -np.inf)))  # ties: the earliest cluster
        if best < 0:
            clusters.append([j])
            minsim[n] = sim[j]
            sizes[n] = 1
        else:
            clusters[best].append(j)
            np.minimum(minsim[best], sim[j], out=minsim[best])
            sizes[best] += 1
    return clusters


def _bridges(multi: list[list[int]], sim: np.ndarray) -> list[tuple[float, int, int]]:
    """For each cluster of two or more, its most similar cross pair into any other such cluster."""
    if len(multi) < 2:
        return []
    order = [i for c in multi for i in c]
    starts = np.cumsum([0] + [len(c) for c in multi[:-1]])
    out = []
    for ci, members in enumerate(multi):
        row_max = sim[np.ix_(members, order)].max(axis=0)  # best similarity of each other memory to this cluster
        per_cluster = np.maximum.reduceat(row_max, starts)
        per_cluster[ci] = -np.inf
        cj = int(np.argmax(per_cluster))
        block = sim[np.ix_(members, multi[cj])]
        k = int(np.argmax(block))
        out.append((float(block.flat[k]), members[k // len(multi[cj])], multi[cj][k % len(multi[cj])]))
    return out


def plan(nodes: list[Node], edges: list[Edge], activity: dict[uuid.UUID, datetime | None], clock: datetime,
         config: ConsolidationConfig, merges: Sequence[Merge] | None = None,
         merged_into: Mapping[uuid.UUID, uuid.UUID] | None = None) -> Plan:
    """Plan one scope's consolidation, or one page of it. `nodes`: the recallable memories (sorted or not);
    `edges`: every edge touching any of them or any memory merged into them (any status); `activity`: last
    access of every edge endpoint.

    `merges` None: phase 5 is decided here, over `nodes`. Given (a scope planned in pages): the merges kept in
    this page, decided by `prune` over the whole scope, reported by this plan; `merged_into` then maps every
    memory merged anywhere in the scope to its kept memory (for the edges that cross pages)."""
    nodes = sorted(nodes, key=lambda n: (n.recorded_at, str(n.memory_id)))
    result = Plan(memories=len(nodes))

    # 5 (decided first, on the snapshot). Near-duplicates fold into their kept memory.
    result.merges = prune(nodes, config.duplicate_similarity) if merges is None else list(merges)
    merged_into = dict(merged_into or {})
    merged_into.update({m: k.memory_id for k in result.merges for m in k.merged_ids})
    nodes = [n for n in nodes if n.memory_id not in merged_into]
    ids = [n.memory_id for n in nodes]
    vectors = np.stack([np.asarray(n.vector, dtype=np.float64) for n in nodes]) if nodes else np.zeros((0, 1))
    sim = vectors @ vectors.T
    survivors = list(range(len(nodes)))

    # 1. Cluster the survivors.
    clusters = _cluster(survivors, sim, config.cluster_max_distance, config.max_cluster_size)
    result.clusters = [[ids[i] for i in c] for c in clusters]

    # 2 + 3. Desired semantic edges: raw targets (before homeostasis) and the phase that wants them.
    desired: dict[tuple[uuid.UUID, uuid.UUID, str], tuple[float, str]] = {}
    for members in clusters:
        for a_pos, a in enumerate(members):
            for b in members[a_pos + 1:]:
                s, t = canonical(ids[a], ids[b], "semantic")
                desired[(s, t, "semantic")] = (round(float(sim[a, b]), 4), "strengthened")
    multi = [c for c in clusters if len(c) > 1]
    for value, a, b in _bridges(multi, sim):
        if value >= config.bridge_min_similarity:
            s, t = canonical(ids[a], ids[b], "semantic")
            desired.setdefault((s, t, "semantic"), (round(value, 4), "bridged"))

    current = {e.key: e for e in edges}
    changes: dict[tuple[uuid.UUID, uuid.UUID, str], EdgeChange] = {}

    # 4 + transfer. Hebbian edges at the clock: forget the faint, old, unused ones; move the merged ones' edges.
    hebbian: dict[tuple[uuid.UUID, uuid.UUID, str], float] = {}
    existing: dict[tuple[uuid.UUID, uuid.UUID, str], float] = {}  # kept Hebbian edges, decayed to the clock
    fixed_total: dict[uuid.UUID, float] = defaultdict(float)
    for e in edges:
        if e.kind not in PLASTIC_KINDS:
            fixed_total[e.source_id] += e.weight
            fixed_total[e.target_id] += e.weight
            continue
        if e.kind != "hebbian":
            continue
        w = decayed(e.weight, e.updated_at, clock, "hebbian")
        if e.source_id in merged_into or e.target_id in merged_into:
            changes[e.key] = EdgeChange(e.source_id, e.target_id, "hebbian", 0.0, "moved to the kept memory",
                                        "transferred")
            s, t = merged_into.get(e.source_id, e.source_id), merged_into.get(e.target_id, e.target_id)
            if s != t:
                s, t = canonical(s, t, "hebbian")
                hebbian[(s, t, "hebbian")] = max(hebbian.get((s, t, "hebbian"), 0.0), w)
            continue
        age_days = (clock - e.updated_at).total_seconds() / 86400.0
        idle = all(_idle_days(activity.get(m), clock) >= config.forget_idle_days for m in (e.source_id, e.target_id))
        if w < config.edge_floor and age_days >= config.forget_min_age_days and idle:
            changes[e.key] = EdgeChange(e.source_id, e.target_id, "hebbian", 0.0,
                                        f"decayed to {w:.4f} < floor {config.edge_floor}", "forgotten")
            continue
        existing[e.key] = w
        hebbian[e.key] = max(hebbian.get(e.key, 0.0), w)

    # 6. Homeostasis over the final picture: fixed edges count, semantic scaled from targets, Hebbian share the rest.
    semantic_total: dict[uuid.UUID, float] = defaultdict(float)
    for (s, t, _), (w, _) in desired.items():
        semantic_total[s] += w
        semantic_total[t] += w
    in_scope = {ids[i] for i in survivors}

    def factor(node: uuid.UUID, total: float, budget: float) -> float:
        if node not in in_scope or total <= budget * (1 + _EPS) + _EPS:
            return 1.0
        return max(0.0, budget) / total

    sem_factor = {m: factor(m, semantic_total[m], config.node_cap - fixed_total[m]) for m in semantic_total}
    final_semantic: dict[tuple[uuid.UUID, uuid.UUID, str], tuple[float, str, bool]] = {}
    semantic_after: dict[uuid.UUID, float] = defaultdict(float)
    for key, (w, phase) in desired.items():
        f = min(sem_factor.get(key[0], 1.0), sem_factor.get(key[1], 1.0))
        weight = _round(w * f)
        final_semantic[key] = (weight, phase, f < 1.0)
        semantic_after[key[0]] += weight
        semantic_after[key[1]] += weight
    hebbian_total: dict[uuid.UUID, float] = defaultdict(float)
    for (s, t, _), w in hebbian.items():
        hebbian_total[s] += w
        hebbian_total[t] += w
    heb_factor = {m: factor(m, hebbian_total[m], config.node_cap - fixed_total[m] - semantic_after[m])
                  for m in hebbian_total}

    for key, (weight, phase, capped) in final_semantic.items():
        old = current.get(key)
        if old is not None and abs(old.weight - weight) <= _EPS:
            continue
        if old is None:
            reason = f"cosine {desired[key][0]:.4f} within a cluster" if phase == "strengthened" else \
                f"bridge between clusters at cosine {desired[key][0]:.4f}"
        else:
            phase = "capped" if capped and weight < old.weight else phase
            reason = f"target {weight:.6f} (cosine {desired[key][0]:.4f}{', capped' if capped else ''})"
        changes[key] = EdgeChange(key[0], key[1], "semantic", weight, reason, phase)
    for key, e in current.items():
        if e.kind == "semantic" and key not in desired and e.weight > 0:
            changes[key] = EdgeChange(key[0], key[1], "semantic", 0.0, "no longer clustered or bridged", "unlinked")
    for key, w in hebbian.items():
        f = min(heb_factor.get(key[0], 1.0), heb_factor.get(key[1], 1.0))
        moved = key not in existing or w > existing[key] + _EPS  # a merged memory's edge landed here
        if f < 1.0:
            changes[key] = EdgeChange(key[0], key[1], "hebbian", _floor(w * f),
                                      f"node total over cap {config.node_cap}: scaled by {f:.4f}", "capped")
        elif moved:
            changes[key] = EdgeChange(key[0], key[1], "hebbian", _floor(w), "moved from a merged memory",
                                      "transferred")
    result.edges = sorted(changes.values(), key=lambda c: (c.phase, str(c.source_id), str(c.target_id), c.kind))
    return result


def _floor(w: float) -> float:
    scale = 10 ** WEIGHT_PLACES
    return float(np.floor(w * scale) / scale)


def _idle_days(last_access_at: datetime | None, clock: datetime) -> float:
    if last_access_at is None:
        return float("inf")
    return (clock - last_access_at).total_seconds() / 86400.0
