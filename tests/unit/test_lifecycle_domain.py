"""Lifecycle, pure: ACT-R activation (and the d-range refusal), Hebbian strengthening and its gate, the decay
rules, and the consolidation planner's phases and idempotency. No IO."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from domain.activation import (
    AGE_FLOOR_HOURS,
    activation,
    age_hours,
    check_decay,
    normalised_activation,
)
from domain.consolidation import ConsolidationConfig, Edge, Node, plan
from domain.decay import DecayPolicy, MemoryRefs, decide
from domain.hebbian import HEBBIAN_CAP, canonical, decayed, strengthen, validated_pairs

ROOT = Path(__file__).resolve().parents[2]
NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


# --- ACT-R ---------------------------------------------------------------------------------------------------

def test_activation_matches_the_formula() -> None:
    for n, age, d in [(0, 1.0, 0.5), (3, 10.0, 0.5), (10, 0.5, 0.3), (7, 2000.0, 0.6)]:
        assert activation(n, age, d) == pytest.approx(math.log(n + 1) - d * math.log(age / (n + 1)))
    assert activation(0, 1.0) == 0.0  # ln 1 − d·ln 1


def test_activation_grows_with_use_and_fades_with_age() -> None:
    assert activation(5, 24) > activation(1, 24) > activation(0, 24)
    assert activation(2, 1) > activation(2, 24) > activation(2, 24 * 30)
    # a larger d forgets faster once the age is past n + 1 hours
    assert activation(1, 500, 0.6) < activation(1, 500, 0.3)


def test_age_floor_keeps_activation_finite() -> None:
    assert activation(0, 0.0) == activation(0, AGE_FLOOR_HOURS)
    assert activation(0, -5.0) == activation(0, AGE_FLOOR_HOURS)  # a clock behind the access
    assert math.isfinite(activation(100, 0.0))


def test_normalised_activation_in_unit_interval_and_monotone() -> None:
    values = [normalised_activation(n, age) for n, age in [(0, 720), (0, 24), (0, 1), (3, 1), (10, 1), (50, 0)]]
    assert all(0.0 < v < 1.0 for v in values)
    assert values == sorted(values)
    assert normalised_activation(0, 1.0) == pytest.approx(0.5)
    assert normalised_activation(10, 1.0) == pytest.approx(1 / (1 + math.exp(-activation(10, 1.0))))


def test_age_hours_counts_from_last_access_else_recorded() -> None:
    recorded = NOW - timedelta(days=10)
    assert age_hours(NOW, None, recorded) == pytest.approx(240)
    assert age_hours(NOW, NOW - timedelta(hours=3), recorded) == pytest.approx(3)


@pytest.mark.parametrize("d", [0.29, 0.61, -1.0, 1.0, float("nan")])
def test_decay_outside_range_is_refused(d: float) -> None:
    with pytest.raises(ValueError, match=r"\[0.3, 0.6\]"):
        check_decay(d)
    with pytest.raises(ValueError):
        activation(1, 1.0, d)


@pytest.mark.parametrize("d", [0.3, 0.45, 0.6])
def test_decay_inside_range_is_accepted(d: float) -> None:
    assert check_decay(d) == d


def test_settings_refuse_decay_outside_range_at_load() -> None:
    from infra.settings import Settings

    old = os.environ.get("ENGRAMLOG_ACTR_DECAY")
    try:
        os.environ["ENGRAMLOG_ACTR_DECAY"] = "0.42"
        assert Settings().lifecycle.actr_decay == 0.42
        for bad in ("0.7", "0.1", "fast"):
            os.environ["ENGRAMLOG_ACTR_DECAY"] = bad
            with pytest.raises(ValueError, match="ENGRAMLOG_ACTR_DECAY"):
                Settings()
    finally:
        if old is None:
            os.environ.pop("ENGRAMLOG_ACTR_DECAY", None)
        else:
            os.environ["ENGRAMLOG_ACTR_DECAY"] = old


def test_a_process_with_bad_decay_does_not_start() -> None:
    env = {**os.environ, "ENGRAMLOG_ACTR_DECAY": "0.9"}
    out = subprocess.run([sys.executable, "-c", "from infra.settings import Settings; Settings()"], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    assert "ENGRAMLOG_ACTR_DECAY" in out.stderr and "[0.3, 0.6]" in out.stderr


# --- Hebbian -------------------------------------------------------------------------------------------------

def test_strengthening_is_log_space_and_capped() -> None:
    w = 0.0
    seen = []
    for _ in range(30):
        w = strengthen(w)
        seen.append(w)
    assert seen[:3] == pytest.approx([math.log(2), math.log(3), math.log(4)])
    steps = np.diff(seen[:20])
    assert all(steps > 0) and all(np.diff(steps) < 0)  # always up, by less each time
    assert max(seen) == pytest.approx(HEBBIAN_CAP) and seen[-1] == pytest.approx(HEBBIAN_CAP)


def test_validation_gate_needs_both_used_and_both_served() -> None:
    a, b, c, d = (uuid.UUID(int=i) for i in range(1, 5))
    assert validated_pairs([a, b, c], served=[a, b, c, d]) == [(a, b), (a, c), (b, c)]
    assert validated_pairs([a, d], served=[a, b, c]) == []  # d was not served by that recall
    assert validated_pairs([a], served=[a, b]) == []
    assert validated_pairs([b, a, a], served=[a, b]) == [(a, b)]  # distinct, canonical order


def test_hebbian_decay_half_life_and_canonical_order() -> None:
    assert decayed(2.0, NOW, NOW + timedelta(days=30)) == pytest.approx(1.0)
    assert decayed(2.0, NOW, NOW + timedelta(days=60)) == pytest.approx(0.5)
    assert decayed(2.0, NOW, NOW - timedelta(days=5)) == 2.0  # never grows
    assert decayed(0.7, NOW, NOW + timedelta(days=365), "semantic") == 0.7
    a, b = uuid.UUID(int=2), uuid.UUID(int=1)
    assert canonical(a, b, "hebbian") == (b, a)
    assert canonical(a, b, "causal") == (a, b)


# --- Darwinian decay rules -----------------------------------------------------------------------------------

POLICY = DecayPolicy(dormant_after_days=30, archive_after_days=90, staging_ttl_days=14)


def refs(status: str, days_ago: float, **kw: object) -> MemoryRefs:
    return MemoryRefs(status=status, recorded_at=NOW - timedelta(days=days_ago), **kw)  # type: ignore[arg-type]


def test_decay_rules() -> None:
    assert decide(refs("active", 29.9), NOW, POLICY) is None
    t = decide(refs("active", 31), NOW, POLICY)
    assert t and (t.from_status, t.to_status) == ("active", "dormant")
    assert t.inputs["ref_count"] == 0 and t.inputs["idle_days"] == pytest.approx(31)
    assert t.inputs["last_referenced_at"] == (NOW - timedelta(days=31)).isoformat()
    t = decide(refs("active", 100), NOW, POLICY)
    assert t and t.to_status == "archived"
    assert decide(refs("dormant", 80), NOW, POLICY) is None
    t = decide(refs("dormant", 91), NOW, POLICY)
    assert t and t.to_status == "archived"
    t = decide(refs("staging", 15), NOW, POLICY)
    assert t and t.to_status == "discarded"
    assert decide(refs("staging", 13), NOW, POLICY) is None
    for status in ("pending", "discarded", "superseded", "merged"):
        assert decide(refs(status, 1000), NOW, POLICY) is None


def test_an_access_resets_idleness() -> None:
    recent = NOW - timedelta(days=2)
    assert decide(refs("active", 100, ref_count=4, last_access_at=recent), NOW, POLICY) is None


def test_reactivation_when_referenced_after_the_transition() -> None:
    # the dormant decision saw 2 accesses; a third arrived since
    t = decide(refs("dormant", 60, ref_count=3, status_ref_count=2), NOW, POLICY)
    assert t and (t.from_status, t.to_status) == ("dormant", "active")
    t = decide(refs("archived", 300, ref_count=1, status_ref_count=0), NOW, POLICY)
    assert t and t.to_status == "active"
    assert decide(refs("dormant", 60, ref_count=2, status_ref_count=2), NOW, POLICY) is None
    # once reactivated (its clock counts as a reference), the same clock decides nothing
    assert decide(refs("active", 300, ref_count=1, status_ref_count=1, last_reactivated_at=NOW), NOW, POLICY) is None


# --- Consolidation planner -----------------------------------------------------------------------------------

def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def corpus(seed: int = 1) -> list[Node]:
    """Four topics of six paraphrases (cosine ≈ 0.6–0.8 inside a topic), each with one near-copy (> 0.95)."""
    rng = np.random.default_rng(seed)
    vectors = []
    for topic in rng.normal(size=(4, 64)):
        topic = _unit(topic)
        for _ in range(6):
            vectors.append(_unit(topic + rng.normal(size=64) * 0.09))
        vectors.append(_unit(vectors[-1] + rng.normal(size=64) * 0.01))
    return [Node(uuid.UUID(int=i + 1), "fact", f"memory {i}", NOW - timedelta(days=40 - i), i % 3, None, v)
            for i, v in enumerate(vectors)]


def apply_plan(p, nodes: list[Node], edges: list[Edge], clock: datetime):
    merged = {m for merge in p.merges for m in merge.merged_ids}
    by_key = {e.key: e for e in edges}
    for c in p.edges:
        key = (c.source_id, c.target_id, c.kind)
        if c.weight > 0:
            by_key[key] = Edge(*key, c.weight, clock)
        else:
            by_key.pop(key, None)
    return [n for n in nodes if n.memory_id not in merged], list(by_key.values())


def test_plan_phases_and_second_run_changes_nothing() -> None:
    nodes = corpus()
    ids = [n.memory_id for n in nodes]

    def edge(i: int, j: int, w: float, days: float) -> Edge:
        s, t = canonical(ids[i], ids[j], "hebbian")
        return Edge(s, t, "hebbian", w, NOW - timedelta(days=days))

    edges = [edge(0, 8, 3.0, 1), edge(1, 2, 2.5, 1), edge(3, 20, 0.01, 100), edge(6, 9, 1.0, 1)]
    edges.append(Edge(ids[10], ids[11], "causal", 1.0, NOW - timedelta(days=3)))
    config = ConsolidationConfig()
    first = plan(nodes, edges, {}, NOW, config)
    counts = first.counts()
    assert counts["merged"] == 4  # each topic's near-copy
    assert counts["strengthened"] > 0 and counts["bridged"] > 0
    assert counts["forgotten"] == 1  # the faint, old, unused edge
    assert counts["transferred"] >= 1  # memory 6's edge moved to the memory it merged into
    assert counts["capped"] >= 1
    assert not any(c.kind == "causal" for c in first.edges)  # causal edges are history: never touched
    # clusters respect the diameter
    sim = {n.memory_id: n.vector for n in nodes}
    for cluster in first.clusters:
        for a in cluster:
            for b in cluster:
                assert 1 - float(sim[a] @ sim[b]) <= config.cluster_max_distance + 1e-9
    # every memory within its cap after the run
    survivors, after = apply_plan(first, nodes, edges, NOW)
    totals: dict[uuid.UUID, float] = {}
    for e in after:
        for m in (e.source_id, e.target_id):
            totals[m] = totals.get(m, 0.0) + e.weight
    assert max(totals[n.memory_id] for n in survivors if n.memory_id in totals) <= config.node_cap + 1e-6

    second = plan(survivors, after, {}, NOW + timedelta(minutes=1), config)
    assert second.merges == [] and second.edges == []
    assert all(v == 0 for v in second.counts().values())


def test_merge_keeps_the_most_accessed_then_oldest() -> None:
    rng = np.random.default_rng(3)
    v = _unit(rng.normal(size=32))
    near = _unit(v + rng.normal(size=32) * 0.01)
    old_rare = Node(uuid.UUID(int=1), "fact", "old wording", NOW - timedelta(days=9), 0, None, v)
    new_popular = Node(uuid.UUID(int=2), "fact", "new wording", NOW - timedelta(days=1), 5, None, near)
    [merge] = plan([old_rare, new_popular], [], {}, NOW, ConsolidationConfig()).merges
    assert merge.memory_id == new_popular.memory_id and merge.merged_ids == (old_rare.memory_id,)
    assert merge.merged_content == "new wording" and merge.similarity > 0.85
    tie = Node(uuid.UUID(int=2), "fact", "new wording", NOW - timedelta(days=1), 0, None, near)
    [merge] = plan([tie, old_rare], [], {}, NOW, ConsolidationConfig()).merges
    assert merge.memory_id == old_rare.memory_id  # same accesses: the older one is kept
    other_kind = Node(uuid.UUID(int=3), "decision", "new wording", NOW, 0, None, near)
    assert plan([old_rare, other_kind], [], {}, NOW, ConsolidationConfig()).merges == []
